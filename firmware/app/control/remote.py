# The device's MQTT side: the client (lib/mqtt.py), control requests
# (app/control/control.py) turned into gateway and alarm calls, acks, and reports
# on rpt/state for the parents' app. Loaded only when config.json names a
# broker (mqtt.url).
#
# Limits (the unix port's 256 KB heap holds them; docs/entry.md): a request
# up to RX_PACKET bytes is read, a longer one is refused unread; acks and
# reports up to TX_BYTES.
import asyncio

import mqtt
import priority
import proto
from app.control import control as control_mod
from app.entry.task import REC_CACHED

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

RX_PACKET = const(2048)   # a SET_ALARM with its pending task is a few hundred bytes
TX_BYTES = const(2048)    # an ack: the header and up to 500 chars (CJK: 3 bytes each) of message


def _parse_url(url):
    # mqtt://host[:port] or mqtts://host[:port] (TLS: lib/trust.py checks the broker)
    secure = url.startswith("mqtts://")
    rest = url.split("://", 1)[-1].rstrip("/")
    host, _, port = rest.partition(":")
    return host, int(port) if port else (8883 if secure else 1883), secure


class Remote:
    """Given only what it uses: the mqtt config section, the device id, the
    gateway (tasks), alarm_table() (loaded when a SET_ALARM comes), the
    NVS records (the cached command), the chip (the time), the event bus,
    and the player and device state for the reports."""

    LATE_MAX = const(5)   # kept for the connect: the boot's late ack and four reports

    def __init__(self, m, dev_id, gateway, alarm_table, records, rtc, bus, player, state):
        self.gateway = gateway
        self._alarms = alarm_table
        self.records = records
        self.rtc = rtc
        self.bus = bus
        self.player = player
        self.state = state
        # Said before the broker answered, sent at the connect: (req_id, outcome)
        # acks of cached commands the boot ran, (event, message, fields) reports.
        self._late = []
        self.control = control_mod.Control(dev_id, self._publish, {
            proto.ACTION_START_APP_TASK: self._start_app_task,
            proto.ACTION_SET_ALARM: self._set_alarm,
            proto.ACTION_UNSET_ALARM: self._unset_alarm,
        }, rtc, records)
        self.control.on_ack = self._acked
        host, port, secure = _parse_url(m["url"])
        # The client id is the login: brokers bind the one to the other, so
        # no device can take another's session (docs/security.md).
        c = mqtt.MQTTClient(host, port, m.get("user") or "xz-" + dev_id, on_message=self._on_message,
                            keepalive=m.get("keepalive", 60), user=m.get("user") or None,
                            password=m.get("password") or None, on_oversize=self._on_oversize,
                            on_connect=self._on_connect, max_packet=RX_PACKET, send_buf=TX_BYTES,
                            secure=secure, on_refused=self._on_refused)
        for tp in self.control.topics:
            c.subscribe(tp, 1)
        self.mqtt = c
        bus.listen(self._forward)
        asyncio.create_task(c.run())

    def ack_late(self, req_id, outcome):
        """The ack of a cached command the boot ran: sent once connected."""
        self._late.append((req_id, outcome))

    def _acked(self, req_id, action, code, reason, message):
        self.bus.emit("mqtt", action=action, req_id=req_id, ok=code == proto.ACK_ACCEPTED,
                          code=code, reason=reason, message=message)

    async def _publish(self, topic, data, qos=1):
        if self.mqtt is None:
            return False
        return await self.mqtt.publish(topic, data, qos)

    def _on_refused(self, reason):
        self.bus.emit("untrusted", channel="mqtt", reason=reason)

    def _on_message(self, topic, payload):
        # Off the reading task: an action waits for the server, and our own
        # acks need the reader to see their PUBACKs.
        asyncio.create_task(self.control.on_message(topic, bytes(payload)))

    def _on_oversize(self, topic, size, head):
        # head is the client's buffer: copied before the client reads on.
        asyncio.create_task(self.control.on_oversize(topic, size, bytes(head), RX_PACKET))

    async def _on_connect(self):
        self.bus.emit("mqtt", action="CONNECT", req_id=None, ok=True)
        await self.report("online")
        late, self._late = self._late, []
        for item in late:
            if len(item) == 2:
                rid, out = item
                await self.control.ack(rid, out["code"], out["message"], proto.ACTION_START_APP_TASK,
                                       out["reason"])
            else:
                await self.report(item[0], item[1], **item[2])

    async def report(self, event, message=None, player=None, **fields):
        if self.mqtt is None or not self.mqtt.connected:
            # Said at boot before the broker answered (an alarm's lesson that
            # failed, a missed alarm): kept for the connect, a few at most.
            if len(self._late) < self.LATE_MAX:
                self._late.append((event, message, fields))
            return
        g = self.gateway
        if player is None:
            st = self.player.status()
            player = {"state": st["state"], "name": st["name"], "repeat_left": st["repeat_left"]}
        await self.control.report(self.state.state, event=event, message=message,
                                  active_app_id=g.current["app_id"], active_task_id=g.current["task_id"],
                                  source=g.current["source"], player=player, **fields)

    def _forward(self, ev):
        # Device events the parents' app hears about on rpt/state.
        name = ev["event"]
        if name == "task":
            asyncio.create_task(self.report("task", ev.get("message")))
        elif name == "player" and ev.get("state") == "done":
            # The player is idle by now and names nothing: the report names
            # the lesson that ended (the parents' usage counts it).
            asyncio.create_task(self.report("player_done", ev.get("message"), player={
                "state": "done", "name": ev.get("name"), "repeat_left": 0}))

    async def _start_app_task(self, req):
        p = req["payload"]
        verdict, why = self.gateway.verdict(proto.SOURCE_MQTT_IMMEDIATE)
        if verdict == priority.REFUSE:
            return proto.ACK_REFUSED, "busy", why
        # Kept until it has run: a power cut or an unreachable server leaves
        # it for the next boot (boot order, rule 1).
        self.records.put(REC_CACHED, {
            "req_id": req["header"]["req_id"], "app_id": p["app_id"], "task_id": p["task_id"],
            "params": p.get("params") or {}})
        out = await self.gateway.start_app_task(p["app_id"], p["task_id"], p.get("params") or {},
                                                proto.SOURCE_MQTT_IMMEDIATE)
        if out["code"] == proto.ACK_FAILED:
            return out["code"], out["reason"], out["message"] + "; kept for the next boot"
        self.records.delete(REC_CACHED)
        return out["code"], out["reason"], out["message"]

    async def _set_alarm(self, req):
        p = req["payload"]
        table = self._alarms()
        why = table.set(p, self.rtc.time())
        if why:
            return proto.ACK_REFUSED, "invalid_alarm", why
        a = table.armed() or {}
        self.bus.emit("alarm", alarm_id=a.get("alarm_id"), at=a.get("at"), what="set")
        return proto.ACK_ACCEPTED, "stored", "alarm %s stored; next alarm %s at %s" % (
            p["alarm_id"], a.get("alarm_id"), a.get("at"))

    async def _unset_alarm(self, req):
        aid = req["payload"]["alarm_id"]
        if not self._alarms().unset(aid, self.rtc.time()):
            # Idempotent: a request sent again after a power cut cut off our ack.
            return proto.ACK_ACCEPTED, "already_absent", "alarm %s is not set (already absent)" % aid
        self.bus.emit("alarm", alarm_id=aid, at=None, what="cleared")
        return proto.ACK_ACCEPTED, "removed", "alarm %s removed" % aid


    async def shutdown(self):
        await self.mqtt.disconnect()
