"""The control plane: what the parents' API asks for, turned into MQTT
requests to a device, with the store keeping schedules and acks.

    plane = ControlPlane(registry, store, link_factory, devices=None, pacer=Pacer())
    await plane.start()
    req = await plane.start_task("dev1", "english_learning", "repeater", {"name": "a.mp3"})
    ack = await plane.wait_ack(req["req_id"], 5)

Requests are checked (registry, params schema, envelope schema) before
anything is published, and paced per device (pacer.py: a bounded number
waiting for acks, DeviceBusy beyond). An ack is matched to its request by
req_id; a malformed ack or one for a request we never sent is logged and
dropped.

Several nodes may share one store and one broker (docs/deploy.md). Each
reads every device's reports; the store decides which node does what
follows, once: the first to record an ack updates the schedule, the one
that claims a device's re-send round makes its unacked schedules due
again. A schedule's SET_ALARM / UNSET_ALARM goes out only from the node
that claimed its delivery (store/deliveries.py): the node whose API wrote
it, at once, else any node's dispatcher, which takes over the claims of a
dead node with their req_ids. Schedules whose request has no ack become
due again when the broker comes back and when the device reports its
state: only that device's, at most one round per RESEND_INTERVAL_S, so a
stream of reports cannot turn into a stream of requests. A task start goes
out from the node that took the API call, once; its ack wakes that node's
waiter wherever it is recorded.

Reports that are dropped (not JSON, not fitting their schema, acks for
requests never sent) are logged one line per kind per interval, then one
summary line (LogThrottle): one device's flood writes a few lines, not one
per report. A device's reports are also rate-bounded before they get here
(mqtt.py). Two boards sharing one device id are noticed (duplicates.py)
and shown in the device's record.
"""
from __future__ import annotations

import asyncio
import logging
import time
import uuid
from typing import TYPE_CHECKING, Any, Callable, Collection

from .. import protocol as proto
from ..logthrottle import LogThrottle
from . import checks
from ..store import store as st
from .duplicates import DuplicateWatch
from ..errors import (BadRequest, BrokerUnavailable, Conflict, DeviceBusy, NotFound, PreconditionFailed,
                     StoreUnavailable)
from .family import Family
from .pacer import Pacer
from .plane_family import FamilyPlane
from ..store.fleet import DRAINING

if TYPE_CHECKING:
    from ..runtime.registry import Registry
    from .devices import Devices
    from ..store.store import Store

log = logging.getLogger(__name__)

MAX_WAIT_S = 30.0
RECENT_ACKS = 10
# Acks are awaited for the most recent requests only; older ones are still
# recorded in the store when their ack comes.
MAX_WAITERS = 1000
# A state report re-sends a schedule request only once it has had this long to be acked...
RESEND_AFTER_S = 2.0
# ...and starts at most one re-send round per device in this long. A re-send
# repeats the request's req_id: the board runs a req_id once and answers a
# copy with the ack it gave (firmware app/control/control.py), but keeps those
# acks in RAM for its last 16 requests only: after a reboot it drops the copy
# unanswered. So the periodic sweep sends a new req_id for a request whose
# board reported at least ACK_LOST_AFTER_S ago, after the request went out, and
# never acked it: the board had it, its ack was lost, and the same req_id
# might bring no answer (setting an alarm again sets it once).
RESEND_INTERVAL_S = 30.0
ACK_LOST_AFTER_S = 10.0
ALARM_MISSED = "alarm_missed"   # rpt/state event of a board that skipped an alarm (mqtt/state.json)
# Live schedules per device: the board keeps at most 8 alarms (firmware/app/entry/alarms.py MAX_ALARMS).
MAX_SCHEDULES = 8
# The dispatcher looks for due deliveries this often (sooner when woken), taking this many at a time.
DISPATCH_EVERY_S = 0.5
DISPATCH_BATCH = 50
# A delivery given back because its device has no free pacing slot is due again after this long.
BUSY_RETRY_S = 1.0
# Conversations older than conversation.keep_hours are erased this often (by every node: it is one UPDATE).
PURGE_EVERY_S = 600.0


def new_req_id() -> str:
    return "r" + uuid.uuid4().hex


def new_alarm_id() -> str:
    return "a" + uuid.uuid4().hex[:12]


def _now_ms():
    return int(time.time() * 1000)


class ControlPlane(FamilyPlane):
    def __init__(self, registry: Registry, store: Store, make_link: Callable[..., Any],
                 devices: Devices | None = None, pacer: Pacer | None = None, node_id: str | None = None,
                 family: Family | None = None) -> None:
        """make_link(on_report, on_connect) -> an MqttLink-like object; node_id:
        this process's name among the nodes sharing the store (made up if None);
        family: the limits and usage of each device (family.py)."""
        self.registry = registry
        self.store = store
        self.devices = devices
        self.family = family or Family(store.family)
        # Other features' forget_device(device_id) coroutines, run when a parent removes a device.
        self.forgetters = []
        self.pacer = pacer or Pacer()
        self.node_id = node_id or "n" + uuid.uuid4().hex[:12]
        self.link = make_link(self._on_report, self._on_connect)
        self._waiters: dict[str, asyncio.Future] = {}        # req_id -> Future of the ack
        self._dispatch_now = asyncio.Event()
        self._dispatcher: asyncio.Task | None = None
        self._purger: asyncio.Task | None = None
        self.conversation_max_age_s = 24 * 3600.0     # conversation.keep_hours (wiring.py)
        self.on_drain_asked: Callable[[], None] | None = None    # the server's, for the API's node drain
        self.acks_recorded = 0    # since start, by this node (logs, the bench: stored rows are pruned)
        self.delivered = 0        # schedule requests this node published (the bench)
        self.duplicates = DuplicateWatch()
        self.log_throttle = LogThrottle(log, burst=1)
        self._last_stamp = 0

    def _stamp(self) -> int:
        """A request's header timestamp: unix ms, rising with every request
        this node sends, even within one ms or when the clock steps back."""
        self._last_stamp = max(_now_ms(), self._last_stamp + 1)
        return self._last_stamp

    async def start(self) -> ControlPlane:
        await self.store.open()
        if self.devices is not None:
            broker = self.devices.broker
            broker.on_takeover = self.duplicates.takeover
            # A broker started here has a socket of its own for the server's
            # link, known once it runs (broker.py).
            self.link.host, self.link.port, self.link.transport = broker.server_address()
            await self.devices.start()
        await self.link.start()
        self._dispatcher = asyncio.create_task(self._dispatch_loop(), name="control-dispatch")
        self._purger = asyncio.create_task(self._purge_loop(), name="conversation-purge")
        return self

    async def stop(self) -> None:
        for task in (self._dispatcher, self._purger):
            if task is None:
                continue
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
        await self.link.stop()
        for f in self._waiters.values():
            f.cancel()
        await self.store.close()

    @property
    def broker_connected(self) -> bool:
        return self.link.connected.is_set()

    # ---- requests ----

    async def _send(self, device_id, topic_template, action, payload, req_id=None, have_slot=False, wait=True):
        """Build, check, record and publish one request; its req_id. The request
        is stored before publishing, so a fast ack always finds it. A pacing
        slot is taken first (DeviceBusy) unless the caller holds one; it is
        held until the ack, or given back on failure."""
        req_id = req_id or new_req_id()
        header = {"device_id": device_id, "req_id": req_id, "timestamp": _now_ms(), "sender": self.node_id[:64]}
        msg = proto.mqtt_request(header, action, payload)
        err = proto.validate("mqtt.envelope", msg, "request")
        if not err and len(proto.encode(msg).encode()) > proto.MQTT_MAX_PAYLOAD:
            # The broker disconnects a client whose packet is over its limit (broker.py).
            err = "request: %d bytes encoded, over the %d byte limit of an MQTT request" % (
                len(proto.encode(msg).encode()), proto.MQTT_MAX_PAYLOAD)
        if err:
            if have_slot:
                self.pacer.release(device_id)
            raise BadRequest(err)
        if not have_slot:
            await self.pacer.acquire(device_id, wait)
        try:
            await self.store.add_request(req_id, device_id, action, payload)
            # A re-send of one request keeps its waiter (a `?wait=` caller may hold it).
            if req_id not in self._waiters:
                self._waiters[req_id] = asyncio.get_running_loop().create_future()
            while len(self._waiters) > MAX_WAITERS:
                self._waiters.pop(next(iter(self._waiters))).cancel()
            # Stamped now, with no await before the publish: the board drops a
            # request older than the newest it handled from this sender, so
            # stamps must rise in the order requests go out.
            header["timestamp"] = self._stamp()
            await self.link.publish(proto.topic(topic_template, device_id), msg)
        except BaseException:
            self.pacer.release(device_id)
            w = self._waiters.pop(req_id, None)
            if w is not None:
                w.cancel()
            raise
        self.pacer.hold(device_id, req_id)
        await self.store.mark_sent(req_id)
        return req_id

    async def start_task(self, device_id: str, app_id: str, task_id: str | None = None,
                         params: dict | None = None) -> dict:
        checks.device_id(device_id)
        task = checks.task(self.registry, app_id, task_id, params)
        payload = {"app_id": task.app_id, "task_id": task.id, "source": proto.SOURCE_MQTT_IMMEDIATE}
        if params:
            payload["params"] = params
        req_id = await self._send(device_id, proto.TOPIC_CMD_TASK, proto.ACTION_START_APP_TASK, payload)
        log.info("START_APP_TASK %s to %s (%s)", task.key, device_id, req_id)
        return {"req_id": req_id, "device_id": device_id, "action": proto.ACTION_START_APP_TASK, "payload": payload}

    async def wait_ack(self, req_id: str, timeout_s: float) -> dict | None:
        """The ack of a request sent by this server, or None after timeout_s."""
        fut = self._waiters.get(req_id)
        if fut is None:
            req = await self.store.get_request(req_id)
            return req["ack"] if req else None
        try:
            return await asyncio.wait_for(asyncio.shield(fut), min(timeout_s, MAX_WAIT_S))
        except asyncio.TimeoutError:
            return None

    # ---- schedules ----

    def _schedule_of(self, device_id, body, alarm_id=None):
        """The stored shape of a SET_ALARM payload, checked; BadRequest naming the field."""
        checks.device_id(device_id)
        if not isinstance(body, dict):
            raise BadRequest("the body must be a JSON object (a SET_ALARM payload)")
        payload = dict(body)
        if alarm_id is not None:
            if payload.setdefault("alarm_id", alarm_id) != alarm_id:
                raise BadRequest("schedule.alarm_id: %r is not the %r of the path" % (payload["alarm_id"], alarm_id))
        payload.setdefault("alarm_id", new_alarm_id())
        err = proto.validate("mqtt.set_alarm", payload, "schedule")
        if err:
            raise BadRequest(err)
        pt = payload["pending_task"]
        checks.task(self.registry, pt["app_id"], pt["task_id"], pt.get("params"), "pending_task.")
        if "at" in payload and payload["at"] <= time.time():
            raise BadRequest("schedule.at is in the past (%d)" % payload["at"])
        now = time.time()
        sched = {"device_id": device_id, "alarm_id": payload["alarm_id"], "pending_task": pt,
                 "created_at": now, "updated_at": now, "state": st.PENDING_ACK, "last_req_id": None}
        for k in ("at", "time", "days"):
            if k in payload:
                sched[k] = payload[k]
        return sched

    async def _write_and_send(self, device_id, alarm_id, write, gone):
        """Take a pacing slot, make one conditional write (write() -> None when
        done, else an error to raise), send the schedule as stored. The stored
        schedule is kept when the broker is away (the error carries it)."""
        await self.pacer.acquire(device_id)
        try:
            err = await write()
            if err is not None:
                raise err
            # Due at once: this node claims it and sends it now (another
            # node's dispatcher may have been quicker; then it sends it).
            s = await self.store.deliveries.claim_one(device_id, alarm_id, self.node_id)
        except BaseException:
            self.pacer.release(device_id)
            raise
        if s is None:
            self.pacer.release(device_id)
            return await self.get_schedule(device_id, alarm_id)
        try:
            await self._deliver(s, have_slot=True)
        except BrokerUnavailable as e:
            e.message += "; %s and %s when the broker is back" % (
                gone, "UNSET_ALARM will be sent" if s["state"] == st.DELETED else "it will be sent")
            e.extra["schedule"] = await self.get_schedule(device_id, alarm_id)
            self._dispatch_now.set()
            raise
        return await self.get_schedule(device_id, alarm_id)

    async def add_schedule(self, device_id: str, body: object) -> dict:
        """Store a new schedule (a SET_ALARM payload, alarm_id optional) and send it:
        Conflict when the device has a live one with that alarm_id (decided by one
        conditional insert, so of concurrent creates exactly one wins)."""
        sched = self._schedule_of(device_id, body)

        async def write():
            outcome = await self.store.create_schedule(sched, MAX_SCHEDULES)
            if outcome == "exists":
                return Conflict("schedule %s already exists on %s: change it with PUT (If-Match) or delete it first"
                                % (sched["alarm_id"], device_id))
            if outcome == "full":
                return Conflict("device %s already has %d schedules, as many as it can hold: delete one first"
                                % (device_id, MAX_SCHEDULES))
        return await self._write_and_send(device_id, sched["alarm_id"], write, "the schedule is stored")

    async def update_schedule(self, device_id: str, alarm_id: str, body: object,
                              if_match: Collection[int] | str | None = None) -> dict:
        """Replace a live schedule's time and task; with if_match (revisions, or
        "*"), only while the stored revision is one of them (else PreconditionFailed)."""
        sched = self._schedule_of(device_id, body, alarm_id)

        async def write():
            for rev in self._revisions(if_match):
                if await self.store.replace_schedule(sched, rev):
                    return None
            return await self._why_not(device_id, alarm_id, if_match)
        return await self._write_and_send(device_id, alarm_id, write, "the change is stored")

    async def delete_schedule(self, device_id: str, alarm_id: str,
                              if_match: Collection[int] | str | None = None) -> dict:
        """Mark it deleted and send UNSET_ALARM (kept for re-sending if the broker is down)."""
        checks.device_id(device_id)
        checks.text(alarm_id, "alarm_id")

        async def write():
            for rev in self._revisions(if_match):
                if await self.store.mark_deleted(device_id, alarm_id, rev):
                    return None
            return await self._why_not(device_id, alarm_id, if_match)
        return await self._write_and_send(device_id, alarm_id, write, "the schedule is deleted here")

    @staticmethod
    def _revisions(if_match):
        return [None] if if_match is None or if_match == "*" else list(if_match)

    async def _why_not(self, device_id, alarm_id, if_match):
        s = await self.store.get_schedule(device_id, alarm_id)
        if s is None:
            return NotFound("no schedule %s on device %s" % (alarm_id, device_id))
        if s["state"] == st.DELETED:
            return NotFound("schedule %s on device %s is already deleted" % (alarm_id, device_id))
        return PreconditionFailed('schedule %s is at revision %d (ETag "%d"), not the one If-Match names: '
                                  "read it again" % (alarm_id, s["revision"], s["revision"]), {"schedule": s})

    async def _deliver(self, sched, have_slot=False, wait=True):
        """Send a schedule this node claimed: SET_ALARM for a live one,
        UNSET_ALARM for a deleted one, as the claim's req_id. It is no longer
        due once published; on any failure the claim is given back, still due."""
        if sched["state"] == st.DELETED:
            action, payload = proto.ACTION_UNSET_ALARM, {"alarm_id": sched["alarm_id"]}
        else:
            action = proto.ACTION_SET_ALARM
            payload = {"alarm_id": sched["alarm_id"], "pending_task": sched["pending_task"]}
            for k in ("at", "time", "days"):
                if k in sched:
                    payload[k] = sched[k]
        device_id, req_id = sched["device_id"], sched["claim_req_id"]
        try:
            await self._send(device_id, proto.TOPIC_CMD_CTL, action, payload, req_id, have_slot, wait)
        except DeviceBusy:
            await self.store.deliveries.release(device_id, sched["alarm_id"], req_id, BUSY_RETRY_S)
            raise
        except BaseException:
            await asyncio.shield(self.store.deliveries.release(device_id, sched["alarm_id"], req_id))
            raise
        await self.store.deliveries.delivered(device_id, sched["alarm_id"], req_id)
        self.delivered += 1
        log.info("%s %s to %s (%s%s)", action, sched["alarm_id"], device_id, req_id,
                 ", the same request again: it may have gone out before" if sched.get("taken_over") else "")
        return req_id

    async def get_schedule(self, device_id: str, alarm_id: str) -> dict:
        checks.device_id(device_id)
        checks.text(alarm_id, "alarm_id")
        s = await self.store.get_schedule(device_id, alarm_id)
        if s is None:
            raise NotFound("no schedule %s on device %s" % (alarm_id, device_id))
        return await self._with_ack(s)

    async def list_schedules(self, device_id: str) -> list[dict]:
        checks.device_id(device_id)
        return [await self._with_ack(s) for s in await self.store.list_schedules(device_id)]

    async def _with_ack(self, s):
        req = await self.store.get_request(s["last_req_id"]) if s.get("last_req_id") else None
        s["last_ack"] = req["ack"] if req else None
        return s

    async def device(self, device_id: str) -> dict:
        checks.device_id(device_id)
        requests = await self.store.recent_requests(device_id, RECENT_ACKS)
        return {"device_id": device_id,
                "broker_connected": self.broker_connected,
                "state": await self.store.get_state(device_id),
                "duplicate": self.duplicates.record(device_id),
                "reports_dropped": self._dropped(device_id),
                "recent_requests": requests,
                "schedules": await self.list_schedules(device_id)}

    def _dropped(self, device_id):
        """Reports of this device dropped over the rate since the server started."""
        dropped = getattr(self.link, "dropped", None)
        return dropped.get(device_id, 0) if dropped is not None else 0

    # ---- each device's conversation (kept so it goes on on another node) ----

    async def conversation(self, device_id: str) -> dict:
        """{"device_id", "keep": bool, "turns": n}: whether the device's
        conversation is kept, and how many of the child's turns are now."""
        checks.device_id(device_id)
        return dict(await self.store.conversations.conversation_setting(device_id, self.conversation_max_age_s),
                    device_id=device_id)

    async def set_conversation(self, device_id: str, body: object) -> dict:
        """{"keep": false} opts the device out (and erases what is kept); {"keep": true} in again."""
        checks.device_id(device_id)
        if not isinstance(body, dict) or not isinstance(body.get("keep"), bool):
            raise BadRequest('keep: expected true or false ({"keep": false} stops keeping the conversation)')
        extra = sorted(set(body) - {"keep", "turns"})
        if extra:
            raise BadRequest("%s: unknown field (expected keep)" % extra[0])
        await self.store.conversations.set_conversation_keep(device_id, body["keep"])
        log.info("conversation of %s: %s", device_id, "kept" if body["keep"] else "not kept (erased)")
        return await self.conversation(device_id)

    async def erase_conversation(self, device_id: str) -> dict:
        """Erase the device's kept conversation now (whether it is kept from now on stays)."""
        checks.device_id(device_id)
        erased = await self.store.conversations.erase_conversation(device_id)
        return dict(await self.conversation(device_id), erased=erased)

    async def _purge_loop(self) -> None:
        while True:
            try:
                n = await self.store.conversations.purge_conversations(self.conversation_max_age_s)
                if n:
                    log.info("erased %d conversations older than %.0f h", n, self.conversation_max_age_s / 3600)
            except StoreUnavailable as e:
                log.warning("old conversations wait to be erased: %s", e.message)
            except Exception:
                log.exception("erasing old conversations failed; trying again later")
            await asyncio.sleep(PURGE_EVERY_S)

    # ---- the nodes sharing the store ----

    async def nodes(self) -> list[dict]:
        return await self.store.fleet.nodes()

    async def drain_node(self, node_id: str) -> dict:
        """Ask a node (`self`: this one) to drain: it stops taking devices,
        lets replies finish, closes its sessions and stops. The node's row."""
        checks.text(node_id, "node_id")
        if node_id == "self":
            node_id = self.node_id
        if not await self.store.fleet.set_node_state(node_id, DRAINING):
            raise NotFound("no node %s (GET /api/nodes lists them)" % node_id)
        if node_id == self.node_id and self.on_drain_asked is not None:
            self.on_drain_asked()
        log.warning("node %s asked to drain", node_id)
        return next((n for n in await self.store.fleet.nodes() if n["node_id"] == node_id), {"node_id": node_id})

    # ---- reports from devices ----

    def _ignored(self, kind, msg, *args):
        self.log_throttle.log(logging.WARNING, kind, msg, *args)

    async def _on_report(self, kind, device_id, raw):
        try:
            msg = proto.decode_json(bytes(raw).decode("utf-8", "replace"), proto.MQTT_MAX_PAYLOAD)
        except proto.ProtoError as e:
            self._ignored(("unreadable", kind), "ignored %s report from %s: %s", kind, device_id, e)
            return
        if kind == "state":
            await self._on_state(device_id, msg)
        else:
            await self._on_ack(device_id, msg)

    async def _on_state(self, device_id, msg):
        err = proto.validate("mqtt.state", msg, "state")
        if err:
            self._ignored("malformed state", "ignored state report from %s: %s", device_id, err)
            return
        if msg.get("event") == "online":        # the board reports it at every connect
            self.duplicates.connected(device_id)
        await self.store.save_state(device_id, msg)
        await self.count_lesson_report(device_id, msg)
        if msg.get("event") == ALARM_MISSED and "alarm" in msg:
            # The parents see it with the schedule (GET .../schedules), not only
            # in the last report, which the board's next one replaces.
            miss = dict(msg["alarm"], reported_at=msg.get("timestamp"), message=msg.get("message"))
            if not await self.store.record_miss(device_id, msg["alarm"]["alarm_id"], miss):
                log.info("missed alarm %s reported by %s is not a schedule here", msg["alarm"]["alarm_id"], device_id)
            else:
                log.warning("device %s missed alarm %s (%d s late)", device_id, msg["alarm"]["alarm_id"],
                            msg["alarm"]["late_s"])
        # A device that reports is online: whatever it never acked goes again,
        # once per interval however often it reports and however many nodes read it.
        if await self.store.deliveries.claim_resend_round(device_id, RESEND_INTERVAL_S):
            await self.resend_unacked(device_id, RESEND_AFTER_S, "its state report")

    async def _on_ack(self, device_id, ack):
        err = proto.validate("mqtt.ack", ack, "ack")
        if err:
            self._ignored("malformed ack", "ignored malformed ack from %s: %s", device_id, err)
            return
        req = await self.store.get_request(ack["req_id"]) if ack["req_id"] else None
        if req is None or req["device_id"] != device_id:
            self._ignored("stray ack", "ignored ack from %s for unknown request %r: %s",
                          device_id, ack["req_id"], ack["message"][:80])
            return
        # Every node reads this ack; the request is ours when it went out from here.
        ours = ack["req_id"] in self._waiters
        if ours:
            self.pacer.acked(ack["req_id"])
        schedule = None
        if req["action"] == proto.ACTION_SET_ALARM:
            schedule = (device_id, req["payload"]["alarm_id"], st.ACTIVE if ack["ok"] else st.FAILED)
        recorded = None if req["ack"] is not None else await self.store.record_ack(ack["req_id"], ack, schedule)
        if recorded is not None:
            self.acks_recorded += 1
            log.info("ack from %s for %s %s: %s %s", device_id, req["action"], ack["req_id"], ack["code"],
                     ack["message"])
        elif ours or not self.store.shared:
            self.log_throttle.log(logging.INFO, "second ack", "ignored a second ack from %s for %s",
                                  device_id, ack["req_id"])
        fut = self._waiters.pop(ack["req_id"], None)
        if fut is not None and not fut.done():
            fut.set_result(ack)

    async def _on_connect(self):
        await self.resend_unacked(min_age_s=RESEND_AFTER_S, why="the broker connect")

    async def resend_unacked(self, device_id: str | None = None, min_age_s: float = 0.0, why: str = "asked",
                             ack_lost_after_s: float | None = None) -> None:
        """Send again every schedule request of the device (or of all) that never
        got an ack and went out at least min_age_s ago, with its own req_id:
        its ack may only be late (the board away, its request waiting in the
        broker), and the board runs a req_id once, so a schedule is never set
        twice (a copy of one it ran is answered with its ack again, while the
        board remembers it). They become due, and the dispatchers of the nodes
        send each once. ack_lost_after_s (the periodic sweep): a request its
        board must have had, since the board reported well after it went out,
        goes with a new req_id (store/deliveries.py: mark_due): its ack was
        lost, and a board that rebooted since would drop the copy unanswered."""
        try:
            n = await self.store.deliveries.mark_due(device_id, min_age_s, ack_lost_after_s)
            if n:
                # Which re-send sent a schedule twice, if one did, is read here.
                log.info("%d unacked schedule requests%s due again (after %s)", n,
                         " of %s" % device_id if device_id else "", why)
                self._dispatch_now.set()
        except StoreUnavailable as e:
            log.warning("could not look for unacked schedules: %s", e.message)

    async def _dispatch_loop(self) -> None:
        """Claim and send due schedule deliveries while the broker is here.
        Every RESEND_INTERVAL_S it also makes due again what no ack answered
        in that long: a request lost with a node that died as it sent it, to
        a device that sends no report to start a re-send round."""
        loop = asyncio.get_running_loop()
        swept = loop.time()
        while True:
            try:
                await asyncio.wait_for(self._dispatch_now.wait(), DISPATCH_EVERY_S)
            except asyncio.TimeoutError:
                pass
            self._dispatch_now.clear()
            if not self.broker_connected:
                continue
            if loop.time() - swept >= RESEND_INTERVAL_S:
                swept = loop.time()
                await self.resend_unacked(min_age_s=RESEND_INTERVAL_S, why="the periodic sweep",
                                          ack_lost_after_s=ACK_LOST_AFTER_S)
            try:
                while await self.dispatch_once() == DISPATCH_BATCH:
                    pass
            except StoreUnavailable as e:
                log.warning("schedule deliveries wait for the control database: %s", e.message)
                await asyncio.sleep(DISPATCH_EVERY_S * 4)
            except Exception:
                log.exception("schedule dispatcher failed; trying again")

    async def dispatch_once(self) -> int:
        """One claim of due deliveries, sent; how many were claimed."""
        batch = await self.store.deliveries.claim_due(self.node_id, DISPATCH_BATCH)
        busy: set[str] = set()
        for i, s in enumerate(batch):
            try:
                if s["device_id"] in busy:
                    raise DeviceBusy("busy")
                await self._deliver(s, wait=False)
            except DeviceBusy:
                if s["device_id"] not in busy:
                    busy.add(s["device_id"])
                else:
                    await self.store.deliveries.release(s["device_id"], s["alarm_id"], s["claim_req_id"], BUSY_RETRY_S)
            except BrokerUnavailable:
                for rest in batch[i + 1:]:
                    await self.store.deliveries.release(rest["device_id"], rest["alarm_id"], rest["claim_req_id"])
                return 0    # gone again; the next connect makes them due
            except StoreUnavailable:
                raise
            except Exception:
                log.exception("could not send schedule %s to %s", s["alarm_id"], s["device_id"])
        return len(batch)
