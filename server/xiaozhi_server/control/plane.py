"""The control plane: what the parents' API asks for, turned into MQTT
requests to a device, with the store keeping schedules and acks.

    plane = ControlPlane(registry, store, link_factory)
    await plane.start()
    req = await plane.start_task("dev1", "english_learning", "repeater", {"name": "a.mp3"})
    ack = await plane.wait_ack(req["req_id"], 5)

Requests are checked (registry, params schema, envelope schema) before
anything is published. An ack is matched to its request by req_id; a
malformed ack or one for a request we never sent is logged and dropped.
Schedules whose SET_ALARM/UNSET_ALARM has no ack are sent again when the
broker comes back and when the device reports its state.
"""
import asyncio
import logging
import time
import uuid

from .. import protocol as proto
from . import checks
from . import store as st
from .errors import BadRequest, BrokerUnavailable, Conflict, NotFound

log = logging.getLogger(__name__)

MAX_WAIT_S = 30.0
RECENT_ACKS = 10
# Acks are awaited for the most recent requests only; older ones are still
# recorded in the store when their ack comes.
MAX_WAITERS = 1000
# A state report re-sends a schedule request only once it has had this long to be acked.
RESEND_AFTER_S = 2.0


def new_req_id():
    return "r" + uuid.uuid4().hex


def new_alarm_id():
    return "a" + uuid.uuid4().hex[:12]


def _now_ms():
    return int(time.time() * 1000)


class ControlPlane:
    def __init__(self, registry, store, make_link):
        """make_link(on_report, on_connect) -> an MqttLink-like object."""
        self.registry = registry
        self.store = store
        self.link = make_link(self._on_report, self._on_connect)
        self._waiters = {}        # req_id -> Future of the ack
        self._resending = asyncio.Lock()

    async def start(self):
        await self.store.open()
        await self.link.start()
        return self

    async def stop(self):
        await self.link.stop()
        for f in self._waiters.values():
            f.cancel()
        await self.store.close()

    @property
    def broker_connected(self):
        return self.link.connected.is_set()

    # ---- requests ----

    async def _send(self, device_id, topic_template, action, payload, on_recorded=None):
        """Build, check, record and publish one request; its req_id.
        The request (and, through on_recorded(req_id), whatever points at it)
        is stored before publishing, so a fast ack always finds it."""
        req_id = new_req_id()
        msg = proto.mqtt_request({"device_id": device_id, "req_id": req_id, "timestamp": _now_ms()},
                                 action, payload)
        err = proto.validate("mqtt.envelope", msg, "request")
        if err:
            raise BadRequest(err)
        await self.store.add_request(req_id, device_id, action, payload)
        if on_recorded is not None:
            await on_recorded(req_id)
        self._waiters[req_id] = asyncio.get_running_loop().create_future()
        while len(self._waiters) > MAX_WAITERS:
            self._waiters.pop(next(iter(self._waiters))).cancel()
        try:
            await self.link.publish(proto.topic(topic_template, device_id), msg)
        except BrokerUnavailable:
            self._waiters.pop(req_id).cancel()
            raise
        await self.store.mark_sent(req_id)
        return req_id

    async def start_task(self, device_id, app_id, task_id=None, params=None):
        checks.device_id(device_id)
        task = checks.task(self.registry, app_id, task_id, params)
        payload = {"app_id": task.app_id, "task_id": task.id, "source": proto.SOURCE_MQTT_IMMEDIATE}
        if params:
            payload["params"] = params
        req_id = await self._send(device_id, proto.TOPIC_CMD_TASK, proto.ACTION_START_APP_TASK, payload)
        log.info("START_APP_TASK %s to %s (%s)", task.key, device_id, req_id)
        return {"req_id": req_id, "device_id": device_id, "action": proto.ACTION_START_APP_TASK, "payload": payload}

    async def wait_ack(self, req_id, timeout_s):
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

    async def add_schedule(self, device_id, body):
        """Store a schedule (a SET_ALARM payload, alarm_id optional) and send it.
        On BrokerUnavailable the schedule is kept (pending_ack) and the error
        carries it: it goes out when the broker is back."""
        checks.device_id(device_id)
        if not isinstance(body, dict):
            raise BadRequest("the body must be a JSON object (a SET_ALARM payload)")
        payload = dict(body)
        payload.setdefault("alarm_id", new_alarm_id())
        err = proto.validate("mqtt.set_alarm", payload, "schedule")
        if err:
            raise BadRequest(err)
        pt = payload["pending_task"]
        checks.task(self.registry, pt["app_id"], pt["task_id"], pt.get("params"), "pending_task.")
        if "at" in payload and payload["at"] <= time.time():
            raise BadRequest("schedule.at is in the past (%d)" % payload["at"])
        old = await self.store.get_schedule(device_id, payload["alarm_id"])
        if old is not None and old["state"] != st.DELETED:
            raise Conflict("schedule %s already exists on %s; delete it first" % (payload["alarm_id"], device_id))
        now = time.time()
        sched = {"device_id": device_id, "alarm_id": payload["alarm_id"], "pending_task": pt,
                 "created_at": now, "updated_at": now, "state": st.PENDING_ACK, "last_req_id": None}
        for k in ("at", "time", "days"):
            if k in payload:
                sched[k] = payload[k]
        await self.store.save_schedule(sched)
        try:
            await self._send_schedule(sched)
        except BrokerUnavailable as e:
            e.message += "; the schedule is stored and will be sent when the broker is back"
            e.extra["schedule"] = await self.store.get_schedule(device_id, sched["alarm_id"])
            raise
        return await self.store.get_schedule(device_id, sched["alarm_id"])

    async def _send_schedule(self, sched):
        """SET_ALARM for a live schedule, UNSET_ALARM for a deleted one."""
        if sched["state"] == st.DELETED:
            action, payload = proto.ACTION_UNSET_ALARM, {"alarm_id": sched["alarm_id"]}
        else:
            action = proto.ACTION_SET_ALARM
            payload = {"alarm_id": sched["alarm_id"], "pending_task": sched["pending_task"]}
            for k in ("at", "time", "days"):
                if k in sched:
                    payload[k] = sched[k]
        def point_at(req_id):
            return self.store.set_schedule_state(sched["device_id"], sched["alarm_id"], sched["state"],
                                                 last_req_id=req_id)
        req_id = await self._send(sched["device_id"], proto.TOPIC_CMD_CTL, action, payload, point_at)
        log.info("%s %s to %s (%s)", action, sched["alarm_id"], sched["device_id"], req_id)
        return req_id

    async def get_schedule(self, device_id, alarm_id):
        checks.device_id(device_id)
        s = await self.store.get_schedule(device_id, alarm_id)
        if s is None:
            raise NotFound("no schedule %s on device %s" % (alarm_id, device_id))
        return await self._with_ack(s)

    async def list_schedules(self, device_id):
        checks.device_id(device_id)
        return [await self._with_ack(s) for s in await self.store.list_schedules(device_id)]

    async def delete_schedule(self, device_id, alarm_id):
        """Mark it deleted and send UNSET_ALARM (kept for re-sending if the broker is down)."""
        s = await self.get_schedule(device_id, alarm_id)
        if s["state"] == st.DELETED:
            raise NotFound("schedule %s on device %s is already deleted" % (alarm_id, device_id))
        await self.store.set_schedule_state(device_id, alarm_id, st.DELETED)
        s["state"] = st.DELETED
        try:
            await self._send_schedule(s)
        except BrokerUnavailable as e:
            e.message += "; the schedule is deleted here and UNSET_ALARM will be sent when the broker is back"
            e.extra["schedule"] = await self.store.get_schedule(device_id, alarm_id)
            raise
        return await self.get_schedule(device_id, alarm_id)

    async def _with_ack(self, s):
        req = await self.store.get_request(s["last_req_id"]) if s.get("last_req_id") else None
        s["last_ack"] = req["ack"] if req else None
        return s

    async def device(self, device_id):
        checks.device_id(device_id)
        requests = await self.store.recent_requests(device_id, RECENT_ACKS)
        return {"device_id": device_id,
                "broker_connected": self.broker_connected,
                "state": await self.store.get_state(device_id),
                "recent_requests": requests,
                "schedules": await self.list_schedules(device_id)}

    # ---- reports from devices ----

    async def _on_report(self, kind, device_id, raw):
        try:
            msg = proto.decode_json(bytes(raw).decode("utf-8", "replace"), proto.MQTT_MAX_PAYLOAD)
        except proto.ProtoError as e:
            log.warning("ignored %s report from %s: %s", kind, device_id, e)
            return
        if kind == "state":
            await self._on_state(device_id, msg)
        else:
            await self._on_ack(device_id, msg)

    async def _on_state(self, device_id, msg):
        err = proto.validate("mqtt.state", msg, "state")
        if err:
            log.warning("ignored state report from %s: %s", device_id, err)
            return
        await self.store.save_state(device_id, msg)
        # A device that reports is online: whatever it never acked goes again.
        await self.resend_unacked(device_id, RESEND_AFTER_S)

    async def _on_ack(self, device_id, ack):
        err = proto.validate("mqtt.ack", ack, "ack")
        if err:
            log.warning("ignored malformed ack from %s: %s", device_id, err)
            return
        req = await self.store.get_request(ack["req_id"]) if ack["req_id"] else None
        if req is None or req["device_id"] != device_id:
            log.warning("ignored ack from %s for unknown request %r: %s", device_id, ack["req_id"], ack["message"])
            return
        if req["ack"] is not None:
            log.info("ignored a second ack from %s for %s", device_id, ack["req_id"])
            return
        await self.store.record_ack(ack["req_id"], ack)
        log.info("ack from %s for %s %s: %s %s", device_id, req["action"], ack["req_id"], ack["code"], ack["message"])
        if req["action"] == proto.ACTION_SET_ALARM:
            state = st.ACTIVE if ack["ok"] else st.FAILED
            await self.store.set_schedule_state(device_id, req["payload"]["alarm_id"], state,
                                                only_if_req=ack["req_id"])
        fut = self._waiters.pop(ack["req_id"], None)
        if fut is not None and not fut.done():
            fut.set_result(ack)

    async def _on_connect(self):
        await self.resend_unacked()

    async def resend_unacked(self, device_id=None, min_age_s=0.0):
        """Send again every schedule request that never got an ack (new req_id each
        time: the device acks a req_id once, so a repeat of the old one could go unanswered)."""
        async with self._resending:
            for s in await self.store.unsent_schedules():
                if device_id is not None and s["device_id"] != device_id:
                    continue
                last = await self.store.get_request(s["last_req_id"]) if s["last_req_id"] else None
                if last and last["sent_at"] and time.time() - last["sent_at"] < min_age_s:
                    continue
                try:
                    await self._send_schedule(s)
                except BrokerUnavailable:
                    return  # gone again; the next connect tries again
                except Exception:
                    log.exception("could not re-send schedule %s to %s", s["alarm_id"], s["device_id"])
