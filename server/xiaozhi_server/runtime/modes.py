"""What the child's words lead to in each interaction mode (docs/server.md,
One turn, step 4): one handler per mode name, the registry's
`interaction_mode`. The runtime's route() looks the handler up; no code
asks which app is running, so an app is its apps.json entry.

CHAT -> the chat LLM (the one mode whose answer is prepared before the
words are final, docs/server.md); TRANSLATION -> the translate tool, never
the chat LLM; PLAY_AUDIO -> words go to no LLM, and the device opening its
microphone (not right after our own line) is a wake: back to the default
task if priority allows.

What a handler says comes from the lines file (data/lines.json), like
what an app says (its task's lines there, or in its apps.json entry).
"""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from .. import protocol as proto
from ..pipeline.care import write_later
from ..pipeline.reply import committed, one
from ..text.phrases import says

if TYPE_CHECKING:
    from ..config import AppsConfig
    from ..pipeline.reply import Reply, Turn
    from .port import ModeDriver, SessionPort

log = logging.getLogger(__name__)

GOODBYE_MAX_CHARS = 20       # a goodbye is a short utterance, not a sentence that quotes one
EXIT_TRANSLATION_MAX_CHARS = 24


def _line(session, key):
    return session.lines.get(key, session.language)


class Mode:
    """The default: words are heard only once final and lead nowhere."""

    talks = False       # does the child talk with the companion here (a family's limits apply)?

    def answers_early(self, runtime: ModeDriver, text: str) -> bool:
        """May the answer be prepared before the words are final?"""
        return False

    async def words(self, runtime: ModeDriver, turn: Turn) -> None:
        log.info("[%s] %s: %r not sent to the LLM", runtime.session.device_id, runtime.mode, turn.text)

    async def listen_start(self, runtime: ModeDriver) -> None:
        """The device opened its microphone (listen start)."""


def says_goodbye(runtime: ModeDriver, text: str) -> bool:
    return says(text, runtime.session_cfg.exit_phrases, GOODBYE_MAX_CHARS)


class Chat(Mode):
    talks = True

    def answers_early(self, runtime, text):
        # Leaving is not prepared ahead: it waits until the words are final.
        return not says_goodbye(runtime, text)

    async def words(self, runtime, turn):
        session = runtime.session
        if says_goodbye(runtime, turn.text):
            session.floor.farewell(turn.text)
        else:
            await runtime.memory.ready()    # the first turn's prompt holds what is remembered
            app = runtime.task.app_id if runtime.task else None
            session.floor.start(lambda reply: chat_reply(session, reply, app), turn)


def keep_turn(session: SessionPort, app: str, child: str, reply: str) -> None:
    """One turn into the transcripts (the store keeps it only if the parent turned them on)."""
    if session.care is not None and reply:
        write_later("turn", session.device_id, session.care.add_turn(session.device_id, app, child, reply))


async def chat_reply(session: SessionPort, reply: Reply, app: str | None = None) -> None:
    """The CHAT reply to reply.turn: the LLM's answer, spoken as it streams
    (dialogue -> speaker), its emotion shown once the words are final, and
    the turn's latency marks kept for the benchmarks. app: the child's turn
    is kept for the transcripts under this app (None: words of our own, an
    opener cue)."""
    turn = reply.turn
    assert turn is not None, "a chat reply answers words"
    marks: dict = {"heard": time.monotonic(), "ended": turn.ended_at}

    async def on_emotion(emotion):
        if not reply.cancelled and await committed(turn):
            marks["first_text"] = time.monotonic()
            await session.show_emotion(emotion)

    sentences = session.dialogue.reply(turn, on_emotion=on_emotion)
    try:
        ok = await session.floor.speak(reply, sentences)
    finally:
        count_talk(session, reply)
    if app is not None and reply.said and await committed(turn):
        keep_turn(session, app, turn.text, " ".join(reply.said))
    marks["first_audio"] = reply.first_audio_at
    marks["done"] = time.monotonic()
    marks["completed"] = ok
    session.turn_log.append(marks)


def count_talk(session: SessionPort, reply: Reply, translation: bool = False) -> None:
    """Add one answered turn to the day's talk time: the child's speech (as
    the VAD heard it) and the reply as spoken, from its first frame to its
    end or its cut (docs/api.md says what counts). Written off the reply,
    so a reply cut by barge-in still counts what was heard."""
    family = session.family
    if family is None or session.device_id is None:
        return
    turn = reply.turn
    if turn is not None and turn.withdrawn:
        return      # the child went on: these words are part of the next turn
    seconds = turn.audio_ms / 1000.0 if turn is not None else 0.0
    first = reply.first_audio_at
    if first is not None:
        seconds += max(0.0, time.monotonic() - first)
    session.spawn(family.count_talk(session.device_id, seconds))
    if translation:
        session.spawn(family.count_translation(session.device_id))


class Translation(Mode):
    talks = True

    async def words(self, runtime, turn):
        if self.is_exit(runtime.cfg, turn.text):
            await runtime.start_default(proto.SOURCE_VOICE)
            return
        app = runtime.task.app_id if runtime.task else "translation"
        session = runtime.session
        session.floor.start(lambda reply: self._translate(session, reply, app), turn)

    @staticmethod
    def is_exit(cfg: AppsConfig, text: str) -> bool:
        """An exit phrase inside a short utterance; a longer sentence quoting one is translated."""
        return says(text, cfg.exit_translation_phrases, EXIT_TRANSLATION_MAX_CHARS)

    async def _translate(self, session, reply, app):
        try:
            await self._translated(session, reply, reply.turn.text, app)
        finally:
            count_talk(session, reply, translation=True)

    async def _translated(self, session, reply, text, app):
        tool = session.tools.get("translate")
        policy = session.dialogue.tool_policy
        floor = session.floor
        if tool is None or not session.tools.allowed(tool, policy):
            await floor.speak(reply, one(_line(session, "translate_unavailable")))
            return
        out = await session.tools.call(tool.llm_name, {"text": text}, policy)
        if out.is_error or not out.text.strip():
            log.warning("[%s] translate failed: %s", session.device_id, out.text)
            await floor.speak(reply, one(_line(session, "not_translated")))
            return
        await session.show_emotion("neutral")
        if await floor.speak(reply, one(out.text.strip())):
            keep_turn(session, app, text, out.text.strip())


class PlayAudio(Mode):
    async def listen_start(self, runtime):
        # Stock devices send listen start after every tts stop: one soon after
        # our own line is that automatic return, not the child asking for chat.
        if time.monotonic() - runtime.session.floor.last_tts_stop < runtime.cfg.auto_listen_grace_s:
            return
        await runtime.on_wake("")


HANDLERS = {
    proto.MODE_CHAT: Chat(),
    proto.MODE_TRANSLATION: Translation(),
    proto.MODE_PLAY_AUDIO: PlayAudio(),
}
