# MQTT control: requests from the parents' app on cmd/ctl and cmd/task
# (every action on either), acks on rpt/ack, reports on rpt/state.
#
#   ctl = Control(device_id, publish, actions, clock, store)
#   await ctl.on_message(topic, payload)        # from lib/mqtt.py
#
# Each request is checked with proto.decode_mqtt_request. Outcomes:
# - valid: actions[action](request) -> (code, reason, message), acked;
# - invalid but a req_id can be read: refused with the validator's words;
# - no req_id at all (not JSON, no header): logged, nothing to ack to;
# - PLAY_MEDIA: refused as legacy, it never starts an app;
# - too big to be read (over the client's receive limit): refused when the
#   req_id can be found in the payload's first bytes (senders put the header
#   first), else reported on rpt/state.
# A req_id seen among the last RECENT requests is not executed again (the
# broker re-delivers QoS 1 messages, and a retained request comes back at
# every connect); since this boot it is answered with the ack it had (a
# server re-sends the same req_id when the ack may be lost), before that
# only ignored. Beyond the ring, the board keeps
# the newest header timestamp it handled from each sender (header.sender,
# a server node; absent: one anonymous sender), for the SENDERS most recent
# senders: a request older than that is refused `replayed`, not run, however
# many requests came between (a sender stamps its requests in the order it
# publishes them).
# Both survive reboots: short digests of req_ids and senders, kept as one
# record in NVS (`store`, the firmware's RecordStore), written once per new
# request.
# A request whose header timestamp (unix ms, or s when below 1e11) is more
# than STALE_S older than our clock is refused as stale, not run: a "start
# now" must not fire at the next boot. Only when the clock is set (after
# CLOCK_SET); without a timestamp only the ring protects.
import binascii
import hashlib
import json

import log
import proto

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

RECENT = const(16)
MAX_REMEMBERED = const(120)    # characters of an ack message kept to answer a repeat
SENDERS = const(8)             # the newest timestamp is kept for this many senders
STALE_S = const(900)           # generous: the simulated board's clock may run fast
CLOCK_SET = const(1700000000)  # 2023-11: a clock before this has not been set
REC_SEEN = "req_seen"
_log = log.get("control")


def _digest(rid):
    # 48 bits of the req_id's SHA-256: 16 of them fit a small NVS record.
    return binascii.hexlify(hashlib.sha256(rid.encode()).digest()[:6]).decode()


def _seconds(ts):
    return ts // 1000 if ts > 100000000000 else ts


def _millis(ts):
    return ts if ts > 100000000000 else ts * 1000


def _scan_req_id(head):
    """The req_id in the first bytes of a payload too big to parse: the
    string after `"req_id":`, if it is plain (no escapes) and short."""
    i = head.find(b'"req_id"')
    if i < 0:
        return None
    i = head.find(b":", i + 8)
    j = head.find(b'"', i + 1) if i >= 0 else -1
    k = head.find(b'"', j + 1) if j >= 0 else -1
    if k < 0 or not 0 < k - j - 1 <= 64 or head[i + 1:j].strip() or b"\\" in head[j + 1:k]:
        return None
    try:
        return head[j + 1:k].decode()
    except UnicodeError:
        return None


def _peek_req_id(payload):
    """The req_id of a request that failed validation, if it can be read."""
    try:
        if len(payload) > proto.MQTT_MAX_PAYLOAD:
            return None
        obj = json.loads(bytes(payload))
        rid = obj["header"]["req_id"]
        action = obj.get("action")
    except Exception:
        return None
    if isinstance(rid, str) and 0 < len(rid) <= 64:
        return rid, action if isinstance(action, str) and len(action) <= 32 else None
    return None


class Control:
    def __init__(self, device_id, publish, actions, clock=None, store=None):
        self.device_id = device_id
        self._publish = publish          # async fn(topic, bytes) -> bool
        self._actions = actions          # action -> async fn(request) -> (code, reason, message)
        self._clock = clock
        self._store = store              # get(name) / put(name, record): the ring across reboots
        self.on_ack = None               # fn(req_id, action, code, reason, message), for events
        self._recent = [None] * RECENT   # ring of digests of recent req_ids
        self._at = 0
        self._newest = {}                # digest of a sender -> newest handled timestamp (ms)
        # digest of a req_id in the ring -> its ack (code, reason, message, action),
        # in RAM only: the same request again gets its ack again (below).
        self._acked = {}
        self._load()
        self.ack_topic = proto.topic(proto.TOPIC_RPT_ACK, device_id)
        self.state_topic = proto.topic(proto.TOPIC_RPT_STATE, device_id)
        self.topics = (proto.topic(proto.TOPIC_CMD_CTL, device_id),
                       proto.topic(proto.TOPIC_CMD_TASK, device_id))

    def _load(self):
        if self._store is None:
            return
        try:
            rec = self._store.get(REC_SEEN)
        except Exception as e:  # an unreadable ring must not stop the MQTT side
            _log.warn("handled requests not read: %r", e)
            return
        if isinstance(rec, dict) and isinstance(rec.get("ids"), list):
            ids = [i for i in rec["ids"] if isinstance(i, str)][-RECENT:]
            for i in range(len(ids)):
                self._recent[i] = ids[i]
            at = rec.get("at")
            self._at = len(ids) if len(ids) < RECENT else (at % RECENT if isinstance(at, int) else 0)
        newest = rec.get("newest") if isinstance(rec, dict) else None
        if isinstance(newest, dict):
            for k in newest:
                if isinstance(k, str) and isinstance(newest[k], int) and len(self._newest) < SENDERS:
                    self._newest[k] = newest[k]

    def _seen(self, rid, header=None):
        """True for a req_id in the ring; else it joins the ring, and a
        request's header (sender, timestamp) moves its sender's newest."""
        d = _digest(rid)
        if d in self._recent:
            return True
        self._recent[self._at] = d
        self._at = (self._at + 1) % RECENT
        if header is not None and header.get("timestamp") is not None:
            self._handled(header)
        if self._store is not None:
            try:
                self._store.put(REC_SEEN, {"ids": [i for i in self._recent if i], "at": self._at,
                                           "newest": self._newest})
            except Exception as e:
                _log.warn("handled request %s not saved: %r", rid, e)
        return False

    def _handled(self, header):
        key = _digest(header.get("sender") or "")
        ts = _millis(header["timestamp"])
        if self._newest.get(key, -1) >= ts:
            return
        if key not in self._newest and len(self._newest) >= SENDERS:
            oldest = None
            for k in self._newest:       # the sender heard from longest ago makes room
                if oldest is None or self._newest[k] < self._newest[oldest]:
                    oldest = k
            del self._newest[oldest]
        self._newest[key] = ts

    def _replayed(self, header):
        """True when a newer request of the same sender was handled already."""
        ts = header.get("timestamp")
        if ts is None:
            return False
        newest = self._newest.get(_digest(header.get("sender") or ""))
        return newest is not None and _millis(ts) < newest

    def _age(self, req):
        """Seconds since the request was made, when both its timestamp and our clock say; else None."""
        ts = req["header"].get("timestamp")
        now = self._now()
        if ts is None or now is None or now < CLOCK_SET:
            return None
        return now - _seconds(ts)

    async def ack(self, req_id, code, message, action=None, reason=None):
        a = proto.mqtt_ack(req_id, code == proto.ACK_ACCEPTED, code, message[:500], action=action,
                           reason=reason[:64] if reason else None, device_id=self.device_id,
                           timestamp=self._now())
        _log.info("ack %s %s %s", req_id, code, message)
        self._remember(req_id, code, reason, message, action)
        if self.on_ack is not None:
            self.on_ack(req_id, action, code, reason, message)
        await self._publish(self.ack_topic, proto.encode(a).encode(), 1)

    def _remember(self, req_id, code, reason, message, action):
        d = _digest(req_id)
        if d not in self._recent:
            return
        if len(self._acked) >= RECENT:
            for k in list(self._acked):      # only what the ring still holds
                if k not in self._recent:
                    del self._acked[k]
        self._acked[d] = (code, reason, message[:MAX_REMEMBERED], action)

    async def report(self, state, event=None, message=None, **fields):
        r = proto.mqtt_state(self.device_id, state, event=event,
                             message=message[:500] if message else None, timestamp=self._now(),
                             **fields)
        await self._publish(self.state_topic, proto.encode(r).encode(), 1)

    def _now(self):
        return int(self._clock.time()) if self._clock is not None else None

    async def on_oversize(self, topic, size, head, limit):
        # The payload was thrown away unread; its head may still name the
        # request, so the sender hears why.
        if topic not in self.topics:
            return
        why = "request of %d bytes is over the device's %d byte limit" % (size, limit)
        _log.warn("request on %s dropped: %s", topic, why)
        rid = _scan_req_id(head)
        if rid is None:
            await self.report("idle", event="request_dropped", message=why)
        elif not self._seen(rid):
            await self.ack(rid, proto.ACK_REFUSED, why, reason="too_large")

    async def on_message(self, topic, payload):
        if topic not in self.topics:
            return
        try:
            req = proto.decode_mqtt_request(payload)
        except proto.ProtoError as e:
            got = _peek_req_id(payload)
            if got is None:
                _log.warn("unreadable request on %s ignored: %s", topic, e.reason)
                return
            rid, action = got
            if self._seen(rid):
                return
            await self.ack(rid, proto.ACK_REFUSED, e.reason, action=action, reason="invalid_request")
            return
        rid = req["header"]["req_id"]
        action = req["action"]
        if req["header"]["device_id"] != self.device_id:
            if not self._seen(rid):
                await self.ack(rid, proto.ACK_REFUSED, "request is for device %s" % req["header"]["device_id"],
                               action=action, reason="wrong_device")
            return
        replayed = self._replayed(req["header"])
        if self._seen(rid, req["header"]):
            # Not run again. Its ack may have been lost (the node that would
            # have stored it died): a server sends the same req_id again for
            # that, so the request is answered with the ack it had. After a
            # reboot the ack is no longer known, and it is only ignored.
            known = self._acked.get(_digest(rid))
            if known is None:
                _log.info("duplicate request %s ignored", rid)
                return
            code, reason, message, action = known
            _log.info("duplicate request %s: its ack again", rid)
            await self.ack(rid, code, message, action=action, reason=reason)
            return
        if replayed:
            await self.ack(rid, proto.ACK_REFUSED, "older than the newest request handled from its sender: not run",
                           action=action, reason="replayed")
            return
        age = self._age(req)
        if age is not None and age > STALE_S:
            await self.ack(rid, proto.ACK_REFUSED, "request made %d s ago (limit %d s): not run" % (age, STALE_S),
                           action=action, reason="stale")
            return
        if action == proto.ACTION_PLAY_MEDIA:
            await self.ack(rid, proto.ACK_REFUSED, "PLAY_MEDIA is legacy: use START_APP_TASK",
                           action=action, reason="legacy_action")
            return
        fn = self._actions.get(action)
        if fn is None:
            await self.ack(rid, proto.ACK_REFUSED, "action %s is not served" % action, action=action,
                           reason="unknown_action")
            return
        try:
            code, reason, message = await fn(req)
        except Exception as e:  # a failing action is a failed ack, never a crash
            _log.error("%s %s failed: %r", action, rid, e)
            code, reason, message = proto.ACK_FAILED, "internal", "device error: %r" % (e,)
        await self.ack(rid, code, message, action=action, reason=reason)
