"""The control plane's connection to the MQTT broker.

One long-lived aiomqtt client: it subscribes to every device's reports
(rpt/ack, rpt/state), hands each report to `on_report(kind, device_id,
payload)`, and publishes requests with QoS 1, never retained (a retained
command would reach the device again at every connect). A retained report
is dropped: it is what some client left on the broker, not news. When the broker goes away it
reconnects with a growing back-off; while it is away `publish` fails at
once with BrokerUnavailable instead of queueing (an immediate command must
not fire hours later). `on_connect()` runs after every (re)connect so the
owner can send what never got an ack. Given an identifier, the link keeps
its MQTT 5 session on the broker across reconnects (SESSION_EXPIRY_S), so
reports sent while it reconnects are not lost to it.

Another client taking that session over (a second node given the same
login and client id, or one logging in with the node's client id) is not
an outage: reconnecting would take it back and the two would kick each
other in a loop, each missing reports. It is told by the broker's
DISCONNECT 0x8E ("session taken over") where the broker sends one, else
(Debian's mosquitto 2.0 just closes the socket) by KICKS_IN_A_ROW
connections in a row that the broker ended within KICKED_WITHIN_S of
coming up, each reconnect taken at once (an outage refuses the reconnect).
The link says so in one error line and stops; publish then fails with
that reason (`taken_over`).

What one device may cost: each kind of report (ack, state) of one device
passes a token bucket of REPORTS_PER_S with bursts of REPORTS_BURST, as a
WebSocket connection's text frames do; reports over it are dropped before
anything decodes them, counted per device (`dropped`), and logged through
a LogThrottle: one line per kind per interval, then one summary line.
"""
import asyncio
import collections
import logging
import time

import aiomqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from .. import protocol as proto
from ..logthrottle import LogThrottle
from ..protocol.backoff import Backoff
from ..tokenbucket import TokenBucket
from ..errors import BrokerUnavailable

log = logging.getLogger(__name__)

REPORT_TOPICS = (proto.topic(proto.TOPIC_RPT_ACK, "+"), proto.topic(proto.TOPIC_RPT_STATE, "+"))
PUBLISH_TIMEOUT_S = 3.0
# The broker keeps this node's subscriptions and the reports sent to them
# this long while its link is down (MQTT 5 session expiry): an ack a board
# sends while the link reconnects (the broker restarted, the network
# blinked) reaches this node when it is back, rather than no node at all.
SESSION_EXPIRY_S = 120
SESSION_TAKEN_OVER = 0x8E      # MQTT 5 DISCONNECT reason: another client took this session
KICKS_IN_A_ROW = 3              # connections ended right after they came up: a takeover, not an outage
KICKED_WITHIN_S = 10.0
# Per device and kind of report. A board reports a state change at a time and
# acks at most the 8 requests the pacer lets wait for it; the burst covers a
# reconnect that sends its late acks and reports at once.
REPORTS_PER_S = 20
REPORTS_BURST = 60
MAX_BUCKETS = 10000         # devices tracked at once; idle (full) buckets are dropped first


def report_of(topic):
    """(kind, device_id) of snlp/v1/{id}/rpt/{ack|state}, or None for anything else."""
    parts = topic.split("/")
    if len(parts) != 5 or parts[0] != "snlp" or parts[1] != "v1" or parts[3] != "rpt" or parts[4] not in ("ack", "state"):
        return None
    return parts[4], parts[2]



def settle(client):
    """Mark a lost connection's error as seen. aiomqtt keeps an unexpected
    disconnect as a future's exception and, when its context is then left,
    never reads it: asyncio would log "Future exception was never retrieved"
    after every outage. (A private attribute: aiomqtt offers no public one.)"""
    lost = getattr(client, "_disconnected", None)
    if lost is not None and lost.done() and not lost.cancelled():
        lost.exception()

class MqttLink:
    def __init__(self, host, port, username=None, password=None, on_report=None, on_connect=None,
                 backoff_first_s=0.2, backoff_max_s=5.0, keepalive_s=30, log_interval_s=10.0,
                 clock=time.monotonic, identifier=None):
        """identifier: this node's MQTT client id, one per process (its session
        on the broker); None: a new one at every connect, no session kept."""
        self.host, self.port = host, port
        self.identifier = identifier
        self.transport = "tcp"      # "unix": host is the path of the broker's socket
        self.tls_context = None     # an ssl.SSLContext: TLS to the broker (mqtts://)
        self.username, self.password = username, password
        self.on_report = on_report
        self.on_connect = on_connect
        # The board's reconnect schedule (protocol/backoff.py, generated for both sides).
        self.backoff = Backoff(int(backoff_first_s * 1000), int(backoff_max_s * 1000))
        self.keepalive_s = keepalive_s
        self.connected = asyncio.Event()
        self.connects = 0          # how many times a connection came up (tests, logs)
        self.taken_over = None     # why the link stopped: another client took its session
        self._disconnect_rc = None
        self._client = None
        self._task = None
        self._handlers = set()
        self.clock = clock
        self._buckets = {}                          # (kind, device_id) -> TokenBucket
        self.dropped = collections.Counter()        # device_id -> reports dropped over the rate
        self.log_throttle = LogThrottle(log, interval_s=log_interval_s, burst=1)

    async def start(self, wait_s=2.0):
        """Start connecting; wait up to wait_s for the first connection (not an error if none)."""
        self._task = asyncio.create_task(self._run(), name="control-mqtt")
        try:
            await asyncio.wait_for(self.connected.wait(), wait_s)
        except asyncio.TimeoutError:
            log.warning("MQTT broker %s:%d not reachable yet; retrying in the background", self.host, self.port)
        return self

    async def stop(self):
        if self._task is not None:
            # gather, not `except CancelledError: pass`: that would also swallow a
            # cancellation of stop() itself.
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        for t in list(self._handlers):
            t.cancel()

    def idle(self):
        """True when every report received so far has been handled."""
        return not self._handlers

    async def publish(self, topic, message):
        """Publish a request dict as compact JSON with QoS 1; BrokerUnavailable if we cannot."""
        client = self._client
        if self.taken_over is not None:
            raise BrokerUnavailable(self.taken_over)
        if client is None or not self.connected.is_set():
            raise BrokerUnavailable("the MQTT broker at %s:%d is not reachable" % (self.host, self.port))
        try:
            await client.publish(topic, proto.encode(message).encode(), qos=1, retain=False,
                                 timeout=PUBLISH_TIMEOUT_S)
        except aiomqtt.MqttError as e:
            raise BrokerUnavailable("publishing to the MQTT broker at %s:%d failed: %s" % (self.host, self.port, e))

    async def _run(self):
        kicks = 0
        while True:
            up_at = None
            client = aiomqtt.Client(self.host, self.port, username=self.username, password=self.password,
                                    keepalive=self.keepalive_s, timeout=PUBLISH_TIMEOUT_S,
                                    transport=self.transport, tls_context=self.tls_context, **self._session())
            try:
                async with client:
                    self._disconnect_rc = None
                    self._note_disconnects(client)
                    up_at = self.clock()
                    for t in REPORT_TOPICS:
                        await client.subscribe(t, qos=1)
                    self._client = client
                    self.connected.set()
                    self.connects += 1
                    self.backoff.reset()
                    log.info("control plane connected to MQTT %s:%d", self.host, self.port)
                    if self.on_connect is not None:
                        self._spawn(self.on_connect())
                    async for message in client.messages:
                        self._dispatch(message)
            except aiomqtt.MqttError as e:
                if up_at is None:
                    kicks = 0       # the broker refused or is away: an outage
                elif self.clock() - up_at < KICKED_WITHIN_S:
                    kicks += 1
                else:
                    kicks = 1
                if self._disconnect_rc == SESSION_TAKEN_OVER or kicks >= KICKS_IN_A_ROW:
                    self.taken_over = ("another MQTT client took over this node's session on %s:%d (client id %s, "
                                       "login %s): does another node use the same broker login? Each node needs "
                                       "its own (docs/deploy.md); this node no longer shares it and stops its "
                                       "control link" % (self.host, self.port, self.identifier, self.username))
                    log.error("%s", self.taken_over)
                    return
                if self.connected.is_set():
                    log.warning("lost the MQTT broker %s:%d (%s); reconnecting", self.host, self.port, e)
                elif self.tls_context is not None and "certificate" in str(e).lower():
                    # A broker that is not the one we trust is not a passing outage.
                    self.log_throttle.log(logging.WARNING, ("tls",), "MQTT broker %s:%d: its certificate is "
                                          "refused (%s); not connecting", self.host, self.port, e)
                else:
                    log.debug("MQTT broker %s:%d: %s; trying again", self.host, self.port, e)
            finally:
                self.connected.clear()
                self._client = None
                settle(client)
            await asyncio.sleep(self.backoff.next_ms() / 1000)

    def _note_disconnects(self, client):
        """Keep the reason code of the broker's DISCONNECT: aiomqtt's error
        says only "Disconnected during message iteration". (Its paho client
        is reached through a private attribute; without it, no takeover is
        told apart from an outage.)"""
        paho = getattr(client, "_client", None)
        handler = getattr(paho, "on_disconnect", None)
        if handler is None:
            return

        def on_disconnect(*args):
            rc = args[3] if len(args) > 3 else None
            self._disconnect_rc = getattr(rc, "value", rc)
            return handler(*args)
        paho.on_disconnect = on_disconnect

    def _session(self):
        if self.identifier is None:
            return {}
        props = Properties(PacketTypes.CONNECT)
        props.SessionExpiryInterval = SESSION_EXPIRY_S
        return {"identifier": self.identifier, "protocol": aiomqtt.ProtocolVersion.V5, "clean_start": False,
                "properties": props}

    def _dispatch(self, message):
        where = report_of(message.topic.value)
        if where is None or self.on_report is None:
            return
        kind, device_id = where
        if not self._admit(kind, device_id):
            return
        if message.retain:
            self.log_throttle.log(logging.WARNING, ("retained", kind),
                                  "ignored a retained %s report for %s", kind, device_id)
            return
        self._spawn(self.on_report(kind, device_id, message.payload))

    def _admit(self, kind, device_id):
        """True if this device's reports of this kind are within their rate."""
        now = self.clock()
        bucket = self._buckets.get((kind, device_id))
        if bucket is None:
            if len(self._buckets) >= MAX_BUCKETS:
                self._buckets = {k: b for k, b in self._buckets.items()
                                 if b.tokens + (now - b.stamp) * b.rate < b.burst}
            bucket = self._buckets[(kind, device_id)] = TokenBucket(REPORTS_PER_S, REPORTS_BURST, now)
        if bucket.take(now):
            return True
        self.dropped[device_id] += 1
        if len(self.dropped) > MAX_BUCKETS:
            self.dropped = collections.Counter(dict(self.dropped.most_common(MAX_BUCKETS // 2)))
        self.log_throttle.log(logging.WARNING, ("over the rate", kind),
                              "%s reports from %s over %d/s are dropped", kind, device_id, REPORTS_PER_S)
        return False

    def _spawn(self, coro):
        # Handlers run beside the reader so a slow store never stalls the socket.
        t = asyncio.create_task(coro)
        self._handlers.add(t)
        t.add_done_callback(self._done)

    def _done(self, t):
        self._handlers.discard(t)
        if not t.cancelled() and t.exception() is not None:
            log.error("control plane handler failed", exc_info=t.exception())
