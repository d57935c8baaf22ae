"""What every session shares: providers, server-side tools, and the hooks
through which the App Runtime decides what a session does.

Providers are built once per process from the config (models load lazily
and once). Sessions never build providers themselves, so a test or a
benchmark can hand in its own (e.g. providers that sleep like cloud ones).
"""
import logging

from .providers.llm_none import choose_llm
from .providers.registry import create

log = logging.getLogger(__name__)


class Services:
    def __init__(self, config, llm=None, asr=None, tts=None, vad=None):
        self.config = config
        self.llm = llm if llm is not None else choose_llm(config.get("llm"))
        self.asr = asr if asr is not None else create("asr", config["asr"])
        self.tts = tts if tts is not None else create("tts", config["tts"])
        self.vad = vad if vad is not None else create("vad", config["vad"])
        self.sessions = set()
        self._server_tools = []

    @property
    def llm_configured(self):
        return getattr(self.llm, "configured", True)

    def set_server_tools(self, tools):
        """Tools of the server's own MCP processes, offered to every new session."""
        self._server_tools = list(tools)

    def server_tools(self):
        return list(self._server_tools)

    # ---- hooks the sessions call ----

    async def on_session_ready(self, session):
        self.sessions.add(session)

    async def on_session_closed(self, session):
        self.sessions.discard(session)

    async def route_user_text(self, session, text, utterance=None):
        """What a user's words lead to. Here: the chat LLM's answer."""
        session.start_reply(session.chat_reply, text, utterance)
