# The device's entry channels wired together: the gateway, MQTT control,
# alarms on the DS3231, offline command words, boot resolution and the
# pending_task record. Device calls into it at a few points (boot, wake,
# phrase, player events, channel end, standby).
#
#   entry = Entry(board, cfg, bus, player, state, standby, session)
#   task, why = entry.boot_task()       # after Wi-Fi, before the first connect
#   entry.start()                       # MQTT and the alarm watcher
#
# What it is given, and nothing else: the board (clock, NVS, I2C, the RTC's
# INT pin, the wake cause), the configuration, the event bus, the SD player,
# the device state (for reports), standby(cause) (the power path), and the
# conversation `session` (connect, listen, stop_all, tools_listed, call:
# app/entry/handoff.py's needs).
#
# Its parts are imported where first needed, not at the top: on the unix
# port every module costs heap (the board runs them frozen), and a plain
# boot into chat with no broker needs none of them. app/heap.py forgets
# the boot's parts after it.
import asyncio

import ds3231
import log
import nvs_store
import proto
from app import heap
from app.entry.task import REC_CACHED, REC_PENDING
from app.player.player import IDLE
from flag import Flag

_ASSET_PATHS = ("/assets/commands.json", "assets/commands.json", "firmware/assets/commands.json")

EVENT_ALARM_MISSED = "alarm_missed"   # rpt/state event; its `alarm` field: mqtt/state.json

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
    def __init__(self, board, cfg, bus, player=None, state=None, standby=None, session=None):
        self.board = board
        self.cfg = cfg
        self.bus = bus
        self.player = player
        self.state = state
        self.standby = standby
        self.session = session
        self.clock = board.clock
        self.records = nvs_store.RecordStore(board.nvs("xiaozhi"))
        self.rtc = ds3231.DS3231(board.i2c)
        grace = cfg.get("alarm_grace_min")
        self.alarm_grace_s = None if grace is None else int(grace) * 60   # None: run however late
        self._alarms = None
        self._gateway = None
        self._commands = None
        self.remote = None        # the MQTT side (app/control/remote.py) when configured
        self.missed_alarms = []   # alarms the boot skipped as too late: reported once MQTT starts
        self._alarm_flag = Flag()
        self._menu_gen = 0        # the voice menu opened last (a newer one or an answer ends it)

    @property
    def gateway(self):
        if self._gateway is None:
            from app.entry.handoff import HandOff
            from app.entry.gateway import Gateway
            self._gateway = Gateway(HandOff(self.player, self.session), self.bus)
        return self._gateway

    def player_event(self, event):
        if self._gateway is not None:
            self._gateway.player_event(event)

    def channel_closed(self):
        if self._gateway is not None:
            self._gateway.channel_closed()

    def alarm_table(self):
        """The alarm table (app/entry/alarms.py), loaded when first asked."""
        if self._alarms is None:
            from app.entry.alarms import Alarms
            tz = int(self.cfg.get("timezone_offset_min", 0)) * 60
            self._alarms = Alarms(self.rtc, nvs_store.RecordStore(self.board.nvs("xzalarms"), 2048), tz,
                                  pending_store=self.records)
        return self._alarms

    alarms = property(alarm_table)

    def drop_alarms(self):
        """Let the alarm table go (loaded again when the chip fires or
        SET_ALARM comes): a plain boot keeps its heap."""
        self._alarms = None
        heap.forget("app.entry.alarms")

    @property
    def commands(self):
        if self._commands is None:
            from app.entry import commands as commands_mod
            self._commands = commands_mod.Commands(_load_commands(commands_mod, self.cfg.get("commands_path")),
                                                   self.clock, self.player.files)
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
        from app.entry import boot_resolver
        t, why = boot_resolver.boot(self)
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
            self.standby(proto.STANDBY_POWER_OFF)
            return None
        out = await self.gateway.start_app_task(t["app_id"], t["task_id"], t["params"], t["source"],
                                                t.get("alarm_id"))
        if why == "cached_mqtt":
            cached = self.records.get(REC_CACHED) or {}
            if out["code"] != proto.ACK_FAILED:
                self.records.delete(REC_CACHED)
            if cached.get("req_id") and self.remote is not None:
                self.remote.ack_late(cached["req_id"], out)
        elif why == "alarm" and out["code"] != proto.ACK_ACCEPTED:
            await self.report("alarm_failed", "alarm %s: %s" % (t.get("alarm_id"), out["message"]))
        if out["code"] == proto.ACK_REFUSED:
            await self._default_chat()   # the task cannot run (a missing lesson): chat
        return out

    async def _default_chat(self):
        # The boot's default chat is no hand-off: the server opens every
        # session in chat and speaks first. Connect and listen, no gateway.
        await self.session.listen(connect=True)

    def start(self):
        rtc_int = self.board.rtc_int
        rtc_int.irq(lambda _pin: self._alarm_flag.set(), rtc_int.IRQ_FALLING)
        asyncio.create_task(self._alarm_loop())
        m = self.cfg.get("mqtt") or {}
        if m.get("url"):
            from app.control import remote     # the largest part: only with a broker
            self.remote = remote.Remote(m, self.board.wifi.mac_str(), self.gateway, self.alarm_table,
                                        self.records, self.rtc, self.bus, self.player, self.state)
        for miss in self.missed_alarms:
            self.report_missed(miss)

    async def report(self, event, message=None, **fields):
        """Tell the parents (rpt/state); kept for the connect when the broker
        has not answered yet; nothing without a broker."""
        if self.remote is not None:
            await self.remote.report(event, message, **fields)

    def report_missed(self, miss):
        msg = "alarm %s of %d skipped: the board came up %d s late (grace %d s)" % (
            miss["alarm_id"], miss["at"], miss["late_s"], miss["grace_s"])
        asyncio.create_task(self.report(EVENT_ALARM_MISSED, msg, alarm=miss))

    # ---- alarms while on ----

    async def _alarm_loop(self):
        while True:
            await self._alarm_flag.wait()
            # The full date is checked against the table, whatever the chip's flag says.
            entry = self.alarms.fired(self.now())
            if entry is None:
                continue
            from app.entry.alarms import task_of   # loaded by alarm_table() above
            t = task_of(entry)
            verdict, why = self.gateway.verdict(proto.SOURCE_SCHEDULE)
            from priority import REFUSE      # loaded with the gateway
            if verdict == REFUSE:
                _log.warn("alarm %s skipped: %s", entry["alarm_id"], why)
                self.bus.emit("alarm", alarm_id=entry["alarm_id"], at=self.now(), what="fired",
                                  skipped=why)
                await self.report("alarm_skipped", "alarm %s skipped: %s" % (entry["alarm_id"], why))
                continue
            self.bus.emit("alarm", alarm_id=entry["alarm_id"], at=self.now(), what="fired")
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
        from priority import REFUSE          # loaded with the gateway
        if verdict != REFUSE:
            return True
        _log.info("wake word %r ignored: %s", word, why)
        self.bus.emit("task", app_id=proto.DEFAULT_APP_ID, task_id=proto.DEFAULT_TASK_ID,
                          source=proto.SOURCE_VOICE, outcome=proto.ACK_REFUSED, reason="busy",
                          message="wake word ignored: " + why)
        return False

    async def on_phrase(self, text):
        r = self.commands.match(text)
        kind = r[0]
        if kind == "menu":
            _log.info("command word %r: menu %s (%s)", text, r[1], ", ".join(self.commands.phrases()))
            self._menu_gen += 1
            asyncio.create_task(self._menu(r[1], self._menu_gen))
            return
        if kind == "unknown":
            _log.info("command word %r is not in step %s", text, self.commands.current_step())
            return
        if kind == "reserved":
            msg = "%s.%s is not available yet" % (r[1], r[2])
            _log.info("command word %r: %s", text, msg)
            self.bus.emit("task", app_id=r[1], task_id=r[2], source=proto.SOURCE_VOICE,
                              outcome=proto.ACK_REFUSED, reason="not_available", message=msg)
            return
        _log.info("command word %r -> %s.%s", text, r[1], r[2])
        out = await self.gateway.start_app_task(r[1], r[2], r[3], proto.SOURCE_VOICE)
        if out["code"] == proto.ACK_REFUSED:
            await self.report("voice_refused", "%s: %s" % (text, out["message"]))

    async def _menu(self, step, gen):
        """Ask the menu's question aloud (offline: app/entry/prompts.py), wait
        for the answer, and say the timeout line when none comes. A lesson
        that plays is not stopped for it: the menu then stays silent."""
        cmds = self.commands
        choices = cmds.choices(step)
        speak = self.player is None or self.player.state == IDLE
        talking = False
        if speak:
            talking = await self.session.stop_all("voice_menu")
            await self.say(step)
            cmds.restart_timer()
        # Once asked: the menu waits for its answer from now on.
        self.bus.emit("menu", step=step, what="open", choices=choices, timeout_ms=cmds.menu_ms, spoken=speak)
        await self.clock.sleep_ms(cmds.menu_ms)
        if gen != self._menu_gen or cmds.step != step:
            return                      # answered (or opened again)
        cmds.reset()
        _log.info("menu %s: no answer within %d ms", step, cmds.menu_ms)
        if speak:
            await self.say("menu_timeout")
        self.bus.emit("menu", step=step, what="timeout", choices=choices, timeout_ms=cmds.menu_ms, spoken=speak)
        if talking:
            await self.session.listen()

    async def say(self, key):
        """Speak a rendered prompt (app/entry/prompts.py); the frames played (0: none on the card)."""
        from app.entry import prompts
        path = prompts.find(key, self.cfg.get("language") or prompts.FALLBACK_LANG)
        if path is None:
            _log.warn("no prompt %s on the card (tools/render_prompts.py)", key)
            return 0
        return await prompts.play(self.board.speaker, path)

    async def shutdown(self):
        if self.remote is not None:
            await self.remote.shutdown()
