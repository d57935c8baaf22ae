# The device's life: boot, the channel's life, the MCP tools, power, the
# player; it ties the state machine, the channel and the conversation
# together.
#
#   dev = Device(board, cfg, bus)
#   await dev.run()          # boot, then serve until quit or standby
#
# The conversation (listening, the reply, barge-in: what the wake word, the
# button and the server's tts/stt/llm start) is app/voice/conversation.py.
# The device's own reactions (docs/firmware.md, States):
# - any end of the channel: the conversation ends (mic off, reply ended,
#   player resumed, idle); the next wake reconnects (and, if configured, a
#   background retry with backoff, but not after the server said another
#   device of the household answers: a new session would greet); a connect
#   that fails asks OTA again (its server may be gone) and tries the server
#   it names.
# - a server certificate the board refuses (lib/trust.py; WebSocket or MQTT,
#   the `untrusted` event): said aloud once per boot (the `server_untrusted`
#   prompt) and never retried in plain.
#
# Entry channels (app/entry/): boot resolution picks the first task, the
# gateway arbitrates MQTT, alarms and command words, and hands an accepted
# task to the server (app/start_task) through the conversation (its
# `session`); the answer goes back to the caller through the channel's
# call(), never through this module.
import asyncio
import binascii
import gc
import os

import log
import proto
from app import heap
from app.events import Bus
from app.player import mp3_backend, player as player_mod
from app.power import PowerPath
from app.voice import mcp_server, tools
from app.voice.channel import Channel, Identity
from app.voice.conversation import Conversation
from app.voice.state import DeviceState
from backoff import Backoff
from flag import Flag

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

_REASK_OTA_MS = const(3000)  # per OTA URL when a connect failed: another may answer
# The server's goodbye when another device of the household answers the
# wake word (docs/server.md): this one stays idle until its next wake.
ANSWERED_ELSEWHERE = "another_device_answered"

_log = log.get("device")


def client_id(board):
    """A UUID made once and kept in NVS: the Client-Id header."""
    ns = board.nvs("xiaozhi")
    buf = bytearray(36)
    try:
        n = ns.get_blob("client_id", buf)
        cid = bytes(buf[:n]).decode()
        if n == 36 and cid.count("-") == 4:
            return cid
        _log.warn("NVS client_id %r is not a UUID: a new one is made", cid)
    except OSError:
        pass   # none yet, or larger than a UUID (NVS_INVALID_LENGTH): made anew
    except UnicodeError:
        _log.warn("NVS client_id does not decode: a new one is made")
    h = binascii.hexlify(os.urandom(16)).decode()
    cid = "%s-%s-4%s-a%s-%s" % (h[:8], h[8:12], h[13:16], h[17:20], h[20:32])
    ns.set_blob("client_id", cid.encode())
    ns.commit()
    return cid


class Device:
    def __init__(self, board, cfg, bus=None):
        self.board = board
        self.cfg = cfg
        self.bus = bus or Bus()
        tls = cfg.get("tls") or {}
        if tls.get("ca_file"):     # a board without TLS never loads lib/trust.py
            import trust
            trust.configure(tls["ca_file"], tls.get("allow_plain") is True)
        self._told_untrusted = []     # channels whose refused certificate was said aloud
        self.bus.listen(self._untrusted)
        self.state = DeviceState()
        self.state.listen(self._state_changed)
        self.power = PowerPath(board, self.bus)
        self.power.hooks.append(self._shutdown)
        self.player = player_mod.RepeatPlayer(board.sd, mp3_backend.backend_for(board),
                                              board.clock, self.power.request)
        self.player.listen(self._player_event)
        self.mcp = mcp_server.McpServer(tools.device_tools(board, self.player, self.power),
                                        cfg.get("tools_page_bytes", proto.TOOLS_PAGE_BYTES))
        self.identity = Identity(board.wifi.mac_str(), client_id(board))
        self.conversation = talk = Conversation(board, self.state, self.player, self.bus,
                                                cfg.get("listen_mode", proto.LISTEN_MODE_AUTO),
                                                self._ensure_channel)
        # Downstream audio goes straight to the conversation: no hop per frame.
        self.channel = talk.channel = Channel(board.clock, self.identity, self._on_json,
                                              talk.on_audio, self._on_closed)
        self.ws_url = cfg["server_url"]
        self.ota_index = 0          # which of the OTA URLs answered last (app/boot/ota.py)
        self.token = cfg.get("token", "")
        self.version = cfg.get("protocol_version", 1)
        rc = cfg.get("reconnect") or {}
        self.backoff = Backoff(rc.get("first_ms", 1000), rc.get("max_ms", 30000))
        self.retry_attempts = rc.get("attempts", 0)
        self._retry = None
        self._stay_idle = False      # another device answered: no retry
        self._end = asyncio.Event()
        self._button = Flag()
        from app.entry.entry import Entry
        self.entry = Entry(board, cfg, self.bus, self.player, self.state, self.power.request, talk)

    # ---- events out ----

    def _state_changed(self, old, new):
        self.bus.emit("state", state=new, previous=old)

    def _player_event(self, event, info):
        self.bus.emit("player", state=event, name=info["name"], repeat_left=info["repeat_left"],
                      **{"pass": info["pass"]})
        self.entry.player_event(event)

    def _untrusted(self, ev):
        # A refused server certificate: the child hears why the companion is
        # silent, once (MQTT retries on its backoff, and both channels are
        # usually refused together: one line, not the same line twice).
        if ev["event"] != "untrusted" or ev["channel"] in self._told_untrusted:
            return
        self._told_untrusted.append(ev["channel"])
        if len(self._told_untrusted) == 1:
            asyncio.create_task(self._say_untrusted())

    async def _say_untrusted(self):
        frames = await self.entry.say("server_untrusted")
        self.bus.emit("prompt", key="server_untrusted", frames=frames)

    # ---- boot and main loop ----

    async def boot(self):
        b = self.board
        self.state.go(proto.STATE_STARTING)
        self.bus.emit("boot", wake_cause=b.wake_cause(), device_id=self.identity.device_id,
                      pending=self.entry.pending())
        wifi = self.cfg.get("wifi") or {}
        if not await b.wifi.connect(wifi.get("ssid", ""), wifi.get("password", ""),
                                    wifi.get("timeout_ms", 15000)):
            _log.error("Wi-Fi %r did not connect", wifi.get("ssid"))
            self.state.go(proto.STATE_WIFI_CONFIGURING)
            return False
        if (self.cfg.get("tls") or {}).get("ca_file"):
            self._clock_from_rtc()
        if self.cfg.get("ota_url"):
            from app.boot import ota     # with its HTTP client: dropped after boot (heap.AFTER_BOOT)
            await ota.configure(self)
        self.state.go(proto.STATE_IDLE)
        return True

    def _clock_from_rtc(self):
        # Certificates are checked against the board's clock, which only OTA
        # sets and a power cut resets (to 2000: every certificate "not yet
        # valid", OTA over https:// included). Before the first TLS connect
        # it takes the battery-backed chip's time, unless the chip lost it too.
        rtc = self.entry.rtc
        try:
            if not rtc.lost_power():
                self.board.clock.set_time(rtc.time())
        except (OSError, ValueError) as e:
            _log.warn("no time from the RTC before TLS: %s", e)

    async def run(self):
        if not await self.boot():
            return
        tasks = [asyncio.create_task(self._voice_loop()),
                 asyncio.create_task(self._button_loop()),
                 asyncio.create_task(self._power_loop())]
        btn = self.board.buttons.get("boot")
        if btn is not None:
            btn.irq(lambda _pin: self._button.set(), btn.IRQ_FALLING)
        for name in heap.AFTER_BOOT:
            heap.forget(name)
        task, why = self.entry.boot_task()
        self.entry.start()
        if hasattr(gc, "mem_free"):  # MicroPython: the figure docs/entry.md quotes
            gc.collect()
            _log.info("heap after boot: %d used, %d free", gc.mem_alloc(), gc.mem_free())
        # A task the device owes (an alarm's, a cached command) runs even
        # when the board is set not to connect at boot.
        if self.cfg.get("connect_at_boot", True) or why != "default":
            await self.entry.run_boot_task(task, why)
        await self._end.wait()
        for t in tasks:
            t.cancel()
        if self.power.cause is not None:
            await self.power.enter(self.power.cause)  # does not return
        await self.channel.close(proto.goodbye(session_id=self.channel.session_id))

    def quit(self):
        self._end.set()

    async def _power_loop(self):
        await self.power.wait()
        self._end.set()

    async def _voice_loop(self):
        voice = self.board.voice
        while True:
            kind, text = await voice.next_event()
            try:
                if kind == "wake":
                    await self.on_wake(text)
                else:
                    await self.entry.on_phrase(text)
            except Exception as e:
                # One wake that failed (a heap short for a moment) must not
                # leave the board deaf to the next.
                self._failed("wake word or phrase", e)

    async def _button_loop(self):
        while True:
            await self._button.wait()
            try:
                await self.conversation.on_button()
            except Exception as e:
                self._failed("button", e)

    def _failed(self, what, e):
        _log.error("%s failed: %r", what, e)
        gc.collect()
        if not self.channel.is_open():
            self.state.go_idle()

    # ---- user actions ----

    async def on_wake(self, word):
        _log.info("wake word %r in state %s", word, self.state.state)
        if not self.entry.wake_allowed(word):
            return  # a parents' or scheduled task runs: the wake does not reset it
        await self.conversation.on_wake(word)

    # ---- inside the device ----

    async def _ensure_channel(self):
        if self.channel.is_open():
            return True
        if not self.state.go(proto.STATE_CONNECTING):
            return False
        hello = proto.hello_device(1, "websocket", {
            "format": "opus", "sample_rate": proto.UPSTREAM_SAMPLE_RATE, "channels": 1,
            "frame_duration": proto.FRAME_DURATION_MS}, features={"mcp": True})
        ok = await self.channel.open(self.ws_url, self.token, self.version, hello)
        if not ok and self.channel.close_reason == "unreachable" and self.cfg.get("ota_url"):
            # Nothing listens there: the server may be gone, or draining
            # (docs/deploy.md); OTA names the one to use now.
            old = self.ws_url
            try:
                from app.boot import ota
                await ota.configure(self, _REASK_OTA_MS)
            except MemoryError:
                # No room for the OTA client now (a lesson plays): the
                # next attempt asks again; the state must not stay connecting.
                _log.warn("no memory to ask OTA: %s stays", old)
            finally:
                for name in heap.AFTER_BOOT:
                    heap.forget(name)
            if self.ws_url != old:
                _log.info("OTA moved us to %s", self.ws_url)
                ok = await self.channel.open(self.ws_url, self.token, self.version, hello)
        if not ok and self.channel.close_reason == "untrusted":
            self.bus.emit("untrusted", channel="websocket", reason=self.channel.refusal)
        if not ok:
            self.bus.emit("error", message="cannot reach the server")
            self.state.go(proto.STATE_IDLE)
            return False
        self.backoff.reset()
        self.bus.emit("channel", state="open")
        ap = self.channel.server_hello.get("audio_params") or {}
        self.board.speaker.configure(ap.get("sample_rate", proto.DOWNSTREAM_SAMPLE_RATE),
                                     ap.get("frame_duration", proto.FRAME_DURATION_MS))
        return True

    # ---- from the server ----

    async def _on_json(self, msg):
        t = msg["type"]
        if t == "mcp":
            await self._on_mcp(msg["payload"])
        elif t == "alert":
            self.bus.emit("error", message=msg["message"])
        elif t == "system" and msg["command"] == "reboot":
            self.board.power.reset()
        elif t == "goodbye":
            self._stay_idle = msg.get("reason") == ANSWERED_ELSEWHERE
            asyncio.create_task(self.channel.close())
        else:
            self.conversation.on_message(msg)

    async def _on_mcp(self, payload):
        # Answers to our own requests never come here: the channel takes them.
        reply = self.mcp.handle(payload)
        if reply is not None:
            await self.channel.send(proto.mcp(reply, self.channel.session_id))
            if payload.get("method") == "tools/list" and "result" in reply and \
                    "nextCursor" not in reply["result"]:
                self.conversation.tools_listed.set()

    def _on_closed(self, reason):
        self.conversation.channel_closed()
        self.entry.channel_closed()
        self.bus.emit("channel", state="closed", reason=reason)
        stay_idle, self._stay_idle = self._stay_idle, False
        if self.retry_attempts and self._retry is None and self.power.cause is None and not stay_idle:
            self._retry = asyncio.create_task(self._retry_loop())

    async def _retry_loop(self):
        try:
            for _ in range(self.retry_attempts):
                await self.board.clock.sleep_ms(self.backoff.next_ms())
                try:
                    async with self.conversation.busy:
                        if self.channel.is_open() or await self._ensure_channel():
                            return
                except Exception as e:
                    # Whatever one attempt met (a heap short for a moment
                    # included), the next one comes after the backoff.
                    self._failed("reconnect attempt", e)
        finally:
            self._retry = None

    async def _shutdown(self):
        self.player.stop()
        await self.entry.shutdown()
        await self.conversation.stop_listening()
        await self.channel.close(proto.goodbye(session_id=self.channel.session_id,
                                               reason=self.power.cause))
