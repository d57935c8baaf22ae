# The device's entry channels wired together: the gateway, MQTT control,
# alarms on the DS3231, offline command words, boot resolution and the
# pending_task record. Device calls into it at a few points (boot, wake,
# phrase, player events, channel end, standby).
#
#   entry = Entry(device)
#   task, why = entry.boot_task()       # after Wi-Fi, before the first connect
#   entry.start()                       # MQTT and the alarm watcher
import asyncio

import ds3231
import log
import nvs_store
import proto
from app import heap
from flag import Flag

REC_PENDING = "pending"
_ASSET_PATHS = ("/assets/commands.json", "assets/commands.json", "firmware/assets/commands.json")

_log = log.get("entry")


def _load_commands(commands_mod, path):
    for p in ((path,) if path else _ASSET_PATHS):
        try:
            return commands_mod.load(p)
        except (OSError, ValueError):
            continue
    _log.warn("no command table found: offline command words are off")
    return {"steps": {"main": []}}


class Entry:
    # The record of an immediate MQTT command kept until it has run (app/control/remote.py
    # writes it): a power cut or an unreachable server leaves it for the next boot.
    REC_CACHED = "mqtt_cmd"

    def __init__(self, device):
        self.dev = device
        b = device.board
        self.clock = b.clock
        self.records = nvs_store.RecordStore(b.nvs("xiaozhi"))
        self.rtc = ds3231.DS3231(b.i2c)
        self._alarms = None
        self._gateway = None
        self._commands = None
        self.remote = None        # the MQTT side (app/control/remote.py) when configured
        self.late_acks = []      # (req_id, outcome) of cached commands run at boot
        self.late_reports = []   # (event, message) said before MQTT was connected
        self._alarm_flag = Flag()

    # The gateway, the alarm table and the command words are loaded when
    # first needed: on the unix port every module costs heap (the board runs
    # them frozen). A plain boot into chat with no broker needs none of them.

    @property
    def gateway(self):
        if self._gateway is None:
            runner = heap.load("app.entry.handoff").HandOff(self.dev)
            self._gateway = heap.load("app.entry.gateway").Gateway(runner, self.dev.bus)
        return self._gateway

    def player_event(self, event):
        if self._gateway is not None:
            self._gateway.player_event(event)

    def channel_closed(self):
        if self._gateway is not None:
            self._gateway.channel_closed()

    @property
    def alarms(self):
        if self._alarms is None:
            alarms_mod = heap.load("app.entry.alarms")
            tz = int(self.dev.cfg.get("timezone_offset_min", 0)) * 60
            self._alarms = alarms_mod.Alarms(self.rtc, nvs_store.RecordStore(self.dev.board.nvs("xzalarms"), 2048),
                                             tz, pending_store=self.records)
        return self._alarms

    def drop_alarms(self):
        """Let the alarm table go (loaded again when the chip fires or
        SET_ALARM comes): a plain boot keeps its heap."""
        self._alarms = None
        heap.forget("app.entry.alarms")

    @property
    def commands(self):
        if self._commands is None:
            commands_mod = heap.load("app.entry.commands")
            self._commands = commands_mod.Commands(_load_commands(commands_mod, self.dev.cfg.get("commands_path")),
                                                   self.clock, self.dev.player.files)
        return self._commands

    def now(self):
        return self.rtc.time()

    def pending(self):
        """The stored pending_task record (None when there is none)."""
        return self.records.get(REC_PENDING)

    # ---- boot ----

    def boot_task(self):
        """(task, why) for this boot: app/entry/boot_resolver.py, loaded for
        the boot and dropped after it with the modules it used."""
        t, why = heap.load("app.entry.boot_resolver").boot(self)
        heap.forget("app.entry.boot_resolver")
        heap.forget("app.entry.task")            # the gateway loads it again
        return t, why

    async def run_boot_task(self, t, why):
        if why == "default":
            return await self._default_chat()
        if why == "not_due":
            # Woken for an intermediate alarm (or a month-blind early match):
            # the chip is armed again, the board goes back to standby.
            _log.info("alarm wake before any alarm is due: back to standby")
            self.dev.power.request(proto.STANDBY_POWER_OFF)
            return None
        out = await self.gateway.start_app_task(t["app_id"], t["task_id"], t["params"], t["source"],
                                                t.get("alarm_id"))
        if why == "cached_mqtt":
            cached = self.records.get(self.REC_CACHED) or {}
            if out["code"] != proto.ACK_FAILED:
                self.records.delete(self.REC_CACHED)
            if cached.get("req_id"):
                self.late_acks.append((cached["req_id"], out))
        elif why == "alarm" and out["code"] != proto.ACK_ACCEPTED:
            await self.report("alarm_failed", "alarm %s: %s" % (t.get("alarm_id"), out["message"]))
        if out["code"] == proto.ACK_REFUSED:
            await self._default_chat()   # the task cannot run (a missing lesson): chat
        return out

    async def _default_chat(self):
        # The boot's default chat is no hand-off: the server opens every
        # session in chat and speaks first. Connect and listen, no gateway.
        await self.dev.listen(connect=True)

    def start(self):
        rtc_int = self.dev.board.rtc_int
        rtc_int.irq(lambda _pin: self._alarm_flag.set(), rtc_int.IRQ_FALLING)
        asyncio.create_task(self._alarm_loop())
        url = (self.dev.cfg.get("mqtt") or {}).get("url")
        if url:
            self._start_mqtt(url)

    def _start_mqtt(self, url):
        # Loaded only when MQTT is configured (app/heap.py).
        self.remote = heap.load("app.control.remote").Remote(self, url)

    async def report(self, event, message=None):
        if self.remote is None:
            return
        if not self.remote.mqtt.connected:
            # Said at boot before the broker answered (an alarm's lesson that
            # failed): kept for the connect, a few at most.
            if len(self.late_reports) < 4:
                self.late_reports.append((event, message))
            return
        await self.remote.report(event, message)

    # ---- alarms while on ----

    async def _alarm_loop(self):
        while True:
            await self._alarm_flag.wait()
            # The full date is checked against the table, whatever the chip's flag says.
            entry = self.alarms.fired(self.now())
            if entry is None:
                continue
            t = heap.load("app.entry.alarms").task_of(entry)
            verdict, why = self.gateway.verdict(proto.SOURCE_SCHEDULE)
            if verdict == heap.load("priority").REFUSE:
                _log.warn("alarm %s skipped: %s", entry["alarm_id"], why)
                self.dev.bus.emit("alarm", alarm_id=entry["alarm_id"], at=self.now(), what="fired",
                                  skipped=why)
                await self.report("alarm_skipped", "alarm %s skipped: %s" % (entry["alarm_id"], why))
                continue
            self.dev.bus.emit("alarm", alarm_id=entry["alarm_id"], at=self.now(), what="fired")
            out = await self.gateway.start_app_task(t["app_id"], t["task_id"], t["params"], t["source"],
                                                    t.get("alarm_id"))
            if out["code"] != proto.ACK_ACCEPTED:
                await self.report("alarm_failed", "alarm %s: %s" % (entry["alarm_id"], out["message"]))

    # ---- voice ----

    def wake_allowed(self, word):
        """A user wake returns to chat (the gateway ends a voice-started
        lesson or translation) unless a task of higher priority than voice
        runs (a parents' task, an alarm's lesson): then it is refused."""
        if self._gateway is None:
            return True  # nothing but the default chat has run
        verdict, why = self._gateway.user_wake()
        if verdict != heap.load("priority").REFUSE:
            return True
        _log.info("wake word %r ignored: %s", word, why)
        self.dev.bus.emit("task", app_id=proto.DEFAULT_APP_ID, task_id=proto.DEFAULT_TASK_ID,
                          source=proto.SOURCE_VOICE, outcome=proto.ACK_REFUSED, reason="busy",
                          message="wake word ignored: " + why)
        return False

    async def on_phrase(self, text):
        r = self.commands.match(text)
        kind = r[0]
        if kind == "menu":
            _log.info("command word %r: menu %s (%s)", text, r[1], ", ".join(self.commands.phrases()))
            return
        if kind == "unknown":
            _log.info("command word %r is not in step %s", text, self.commands.current_step())
            return
        if kind == "reserved":
            msg = "%s.%s is not available yet" % (r[1], r[2])
            _log.info("command word %r: %s", text, msg)
            self.dev.bus.emit("task", app_id=r[1], task_id=r[2], source=proto.SOURCE_VOICE,
                              outcome=proto.ACK_REFUSED, reason="not_available", message=msg)
            return
        _log.info("command word %r -> %s.%s", text, r[1], r[2])
        out = await self.gateway.start_app_task(r[1], r[2], r[3], proto.SOURCE_VOICE)
        if out["code"] == proto.ACK_REFUSED:
            await self.report("voice_refused", "%s: %s" % (text, out["message"]))

    async def shutdown(self):
        if self.remote is not None:
            await self.remote.shutdown()
