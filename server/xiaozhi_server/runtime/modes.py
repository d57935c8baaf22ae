"""What the child's words lead to in each interaction mode (docs/server.md,
One turn, step 4): one handler per mode name, the registry's
`interaction_mode`. The runtime's route() looks the handler up; no code
asks which app is running, so an app is its apps.json entry.

CHAT -> the chat LLM (the one mode whose answer is prepared before the
words are final, docs/server.md); TRANSLATION -> the translate tool, never
the chat LLM; PLAY_AUDIO -> words go to no LLM, and the device opening its
microphone (not right after our own line) is a wake: back to the default
task if priority allows.

A handler's lines are the mode's own (translation that fails); what an app
says lives in its apps.json entry (Task.line).
"""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from .. import protocol as proto

if TYPE_CHECKING:
    from ..pipeline.listener import Utterance
    from .runtime import AppRuntime

log = logging.getLogger(__name__)

LINES = {
    "zh": {"no_translate": "翻译功能现在用不了。", "not_translated": "这句我没翻译好，请再说一遍。"},
    "en": {"no_translate": "Translation is not available right now.",
           "not_translated": "I could not translate that, please say it again."},
}


def plain(text: str) -> str:
    """Words as phrases are matched: lowercase, without spaces, punctuation or
    the erhua 儿 (ASR writes 「聊会儿天吧！」 as often as 「聊会天吧」)."""
    return "".join(c for c in text.lower() if c.isalnum() and c != "儿")


def _line(session, key):
    return LINES.get(session.language, LINES["en"])[key]


class Mode:
    """The default: words are heard only once final and lead nowhere."""

    def answers_early(self, runtime: AppRuntime, text: str) -> bool:
        """May the answer be prepared before the words are final?"""
        return False

    async def words(self, runtime: AppRuntime, text: str, utterance: Utterance | None) -> None:
        log.info("[%s] %s: %r not sent to the LLM", runtime.session.device_id, runtime.mode, text)

    async def listen_start(self, runtime: AppRuntime) -> None:
        """The device opened its microphone (listen start)."""


class Chat(Mode):
    def answers_early(self, runtime, text):
        # Leaving is not prepared ahead: it waits until the words are final.
        return not runtime.session.is_exit_phrase(text)

    async def words(self, runtime, text, utterance):
        session = runtime.session
        if session.is_exit_phrase(text):
            session.say_farewell(text)
        else:
            session.start_reply(session.chat_reply, text, utterance)


class Translation(Mode):
    async def words(self, runtime, text, utterance):
        if self.is_exit(runtime.cfg, text):
            await runtime.start_default(proto.SOURCE_VOICE)
            return
        runtime.session.start_reply(self._translate, runtime.session, text)

    @staticmethod
    def is_exit(cfg: dict, text: str) -> bool:
        """An exit phrase inside a short utterance; a longer sentence quoting one is translated."""
        t = plain(text)
        return len(t) <= 24 and any(plain(p) and plain(p) in t for p in cfg.get("exit_translation_phrases", ()))

    async def _translate(self, session, text):
        tool = session.tools.get("translate")
        policy = session.dialogue.tool_policy
        if tool is None or not session.tools.allowed(tool, policy):
            await session.speaker.say(_line(session, "no_translate"))
            return
        out = await session.tools.call(tool.llm_name, {"text": text}, policy)
        if out.is_error or not out.text.strip():
            log.warning("[%s] translate failed: %s", session.device_id, out.text)
            await session.speaker.say(_line(session, "not_translated"))
            return
        await session.send_json(proto.llm("neutral", session_id=session.id, text="🙂"))
        await session.speaker.say(out.text.strip())


class PlayAudio(Mode):
    async def listen_start(self, runtime):
        # Stock devices send listen start after every tts stop: one soon after
        # our own line is that automatic return, not the child asking for chat.
        if time.monotonic() - runtime.session.last_tts_stop < runtime.cfg.get("auto_listen_grace_s", 1.5):
            return
        await runtime.on_wake("")


HANDLERS = {
    proto.MODE_CHAT: Chat(),
    proto.MODE_TRANSLATION: Translation(),
    proto.MODE_PLAY_AUDIO: PlayAudio(),
}
