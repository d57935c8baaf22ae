# The entry gateway: every channel (MQTT, alarm, offline words, wake word,
# boot) starts a task through start_app_task(app_id, task_id, params,
# source). The priority table (lib/priority.py, generated: the server
# decides with the same code) ranks mqtt_immediate 3, schedule 2, voice 1,
# default_chat 0: higher preempts, equal replaces (last wins), lower is
# refused with a reason. A finished task holds no
# priority any more: the device is back in the default chat.
#
#   gw = Gateway(runner)        # await runner.stop_all(), await runner.hand_off(task),
#                               # await runner.back_to_default(), runner.playing()
#   out = await gw.start_app_task("english_learning", "repeater", {...}, "mqtt_immediate")
#   out -> {"code": "accepted"|"refused"|"failed", "reason", "message", "mode"}
#
# Preempting and replacing use the one generic stop (runner.stop_all: the
# player, listening, a reply in flight), then hand the task to the server
# (runner.hand_off: open the channel if needed, app/start_task), which
# runs the task's skills. Requests are served one at a time.
#
# When does a task finish? The device does not know the registry: a task
# that played something on the SD player has finished when the player is
# done with its passes (or was stopped by something else); a PLAY_AUDIO
# task whose player is idle holds no priority (it played nothing, or its
# file could not be played); any other task ends when the server
# connection ends. A lesson the player still plays goes on through a lost
# connection: the server it reconnects to asks the player and takes the
# lesson up again with its priority (a boot plays nothing: no task). A task
# the server refused leaves the device in the default chat, listening
# again if it was in a conversation when the task came.
import asyncio

import log
import priority
import proto
from app.entry.task import default_task, is_default, key, task

_log = log.get("gateway")


class HandOffError(Exception):
    """The server could not be asked (code failed) or said no (code refused)."""

    def __init__(self, code, reason, message):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message


def decide(current, source):
    """(verdict, reason) for a request from `source` while task `current` runs."""
    if current is None:
        return priority.decide(None, source)
    return priority.decide(current["source"], source, key(current))


def outcome(code, reason, message, mode=None):
    return {"code": code, "reason": reason, "message": message, "mode": mode}


class Gateway:
    def __init__(self, runner, bus=None):
        self._runner = runner
        self._bus = bus
        self.current = default_task()
        self.mode = proto.MODE_CHAT
        self._played = False       # the current task used the SD player
        self._stopping = False
        self._lock = asyncio.Lock()

    def verdict(self, source):
        self._expire()
        return decide(self.current, source)

    def _expire(self):
        # Asked at every decision: an idle player ends a PLAY_AUDIO task
        # even when no player event said so (nothing ever played).
        if self.mode == proto.MODE_PLAY_AUDIO and not self._stopping and not is_default(self.current) \
                and not self._runner.playing():
            self._finish(False)

    def _emit(self, t, out):
        if self._bus is not None:
            self._bus.emit("task", app_id=t["app_id"], task_id=t["task_id"], source=t["source"],
                           outcome=out["code"], reason=out["reason"], message=out["message"])

    async def start_app_task(self, app_id, task_id, params=None, source=proto.SOURCE_VOICE,
                             alarm_id=None):
        t = task(app_id, task_id, params, source, alarm_id)
        async with self._lock:
            out = await self._start(t)
        _log.info("%s from %s: %s (%s)", key(t), source, out["code"], out["message"])
        self._emit(t, out)
        return out

    async def _start(self, t):
        verdict, why = self.verdict(t["source"])
        if verdict == priority.REFUSE:
            return outcome(proto.ACK_REFUSED, "busy", why)
        self._stopping = True
        try:
            await self._runner.stop_all()
        finally:
            self._stopping = False
        self.current = t
        self.mode = None           # not known until the server answers
        self._played = False
        try:
            result = await self._runner.hand_off(t)
        except HandOffError as e:
            await self._back_to_default()
            return outcome(e.code, e.reason, e.message)
        if not result.get("accepted"):
            # The server is in its default task again (or kept its own): so are we.
            await self._back_to_default()
            return outcome(proto.ACK_REFUSED, result.get("code") or "server_refused",
                           result.get("reason") or "the server refused the task")
        self.mode = result.get("interaction_mode") or proto.MODE_CHAT
        return outcome(proto.ACK_ACCEPTED, verdict, "%s started (%s)" % (key(t), why), self.mode)

    async def _back_to_default(self):
        self.current = default_task()
        self.mode = proto.MODE_CHAT
        self._played = False
        await self._runner.back_to_default()

    def user_wake(self):
        """A user wake word: (verdict, reason) as for a voice request. Unless
        refused, the task it may replace (a voice-started lesson or
        translation) ends here and the device is back in chat, as the server
        is on the listen detect that follows."""
        verdict, why = self.verdict(proto.SOURCE_VOICE)
        if verdict != priority.REFUSE and not is_default(self.current):
            self._finish(False)
            self._emit(default_task(proto.SOURCE_VOICE),
                       outcome(proto.ACK_ACCEPTED, "wake", "back to chat: wake word", proto.MODE_CHAT))
        return verdict, why

    # ---- what ends a task ----

    def player_event(self, event):
        if self._stopping:
            return
        if event == "playing":
            self._played = True
        elif self._played and event in ("done", "stopped"):
            self._finish(event == "done")

    def channel_closed(self):
        if not is_default(self.current) and not (self._played and self._runner.playing()):
            self._finish(False)

    def _finish(self, natural):
        t = self.current
        self.current = default_task()
        self.mode = proto.MODE_CHAT
        self._played = False
        _log.info("%s from %s finished (%s)", key(t), t["source"], "natural" if natural else "stopped")
