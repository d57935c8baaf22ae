"""FunASR runtime server over its own WebSocket protocol (Paraformer,
SenseVoice; the server most Chinese xiaozhi deployments hear with).

Protocol (FunASR runtime/docs/websocket_protocol.md): one connection per
utterance; a first JSON message with `mode` (offline, online or 2pass),
`chunk_size`, `chunk_interval`, `wav_name`, `wav_format` pcm, `audio_fs`,
`is_speaking` true, `hotwords` (a JSON string of {word: weight}), `itn`;
then binary 16 kHz int16 PCM while the child speaks; then
`{"is_speaking": false}`. The server answers JSON results with `text`,
`mode` and `is_final`: in 2pass, `2pass-online` messages carry the next
few streaming words (a piece to append) and `2pass-offline` the corrected
text of a whole segment (it replaces that segment's streaming pieces);
the answer to the end of speech has `is_final` true (the C++ runtime's
2pass server). Servers differ in that flag: the C++ offline server marks
its one result false, FunASR's Python server sends `is_final` =
`is_speaking` (true on every result while the child speaks, false on the
last). So nothing is final before our end of speech; after it, a
`2pass-offline` (or `online` in online mode) result flagged final by a
server that did not flag while the child spoke is final at once, an
`offline` result in offline mode too, and any other result is final when
the server has said nothing more for `final_settle_s`.

Config keys: `url` (ws://host:10095), `mode` (2pass), `chunk_size`
([5, 10, 5]: 600 ms chunks), `chunk_interval` (10), `hotwords` ({word:
weight} or a list of words, weight 20), `itn` (true), `ssl` (true: wss even
if the url says ws), `ssl_ca` (a PEM file of the certificate to trust, such
as the runtime image's self-signed one), `ssl_verify` (true; false accepts
any certificate), `svs_lang` (SenseVoice's language, sent when set),
`api_key` / `api_key_env` (sent as a bearer token, for a proxy in front of
the server; the runtime itself has no auth), `connect_timeout` (3 s),
`final_timeout` (s from the end of speech to the final text, default 5),
`final_settle_s` (0.3: quiet after an unflagged last result, see above).
"""
import asyncio
import json
import os
import ssl as ssl_lib
import uuid

from .base import StreamingAsr
from ..registry import register
from ..ws_log import connection_logger
from .ws_stream import END, WsAsrStream

_WS_LOG = connection_logger("funasr")   # the bearer token stays out of websockets' DEBUG lines

MODES = ("offline", "online", "2pass")


def hotwords_json(hotwords):
    """The `hotwords` field: a JSON string of {word: weight}."""
    if not hotwords:
        return ""
    if isinstance(hotwords, str):
        hotwords = hotwords.split()
    if isinstance(hotwords, (list, tuple)):
        hotwords = {str(w): 20 for w in hotwords}
    if not isinstance(hotwords, dict):
        raise ValueError("funasr hotwords must be a list of words or a mapping word: weight")
    return json.dumps({str(k): int(v) for k, v in hotwords.items()}, ensure_ascii=False)


@register("asr", "funasr")
class FunAsr(StreamingAsr):
    # The config keys read here (registry.options; config.py refuses others at start).
    OPTIONS = ("url", "ssl", "ssl_ca", "ssl_verify", "mode", "chunk_size", "chunk_interval", "hotwords",
               "connect_timeout", "final_timeout", "final_settle_s", "api_key", "api_key_env", "itn", "svs_lang")

    def __init__(self, config):
        self.config = config
        self.name = config.get("name") or "funasr"
        url = config.get("url") or "ws://127.0.0.1:10095"
        if config.get("ssl") and url.startswith("ws://"):
            url = "wss://" + url[len("ws://"):]
        if not url.startswith(("ws://", "wss://")):
            raise ValueError("funasr url must start with ws:// or wss://, not %r" % url)
        self.url = url
        self.mode = config.get("mode", "2pass")
        if self.mode not in MODES:
            raise ValueError("funasr mode must be one of %s, not %r" % (", ".join(MODES), self.mode))
        self.chunk_size = [int(n) for n in config.get("chunk_size", [5, 10, 5])]
        if len(self.chunk_size) != 3 or self.chunk_size[1] <= 0:
            raise ValueError("funasr chunk_size must be three numbers like [5, 10, 5], not %r" % self.chunk_size)
        self.hotwords = hotwords_json(config.get("hotwords"))
        self.connect_timeout = float(config.get("connect_timeout", 3))
        self.final_timeout = float(config.get("final_timeout", 5))
        self.final_settle_s = float(config.get("final_settle_s", 0.3))
        key = config.get("api_key") or os.environ.get(config.get("api_key_env") or "XIAOZHI_FUNASR_API_KEY")
        self._headers = {"Authorization": "Bearer %s" % key} if key else None
        self._ssl = None
        if url.startswith("wss://"):
            self._ssl = ssl_lib.create_default_context(cafile=config.get("ssl_ca"))
            if config.get("ssl_verify", True) is False:
                self._ssl.check_hostname = False
                self._ssl.verify_mode = ssl_lib.CERT_NONE

    def __repr__(self):
        return "FunAsr(%s, mode=%s)" % (self.url, self.mode)

    def first_message(self, wav_name, words=()):
        """words: the session's (the child's name, command words), weighed
        like a list in `hotwords`, beside the config's."""
        hotwords = self.hotwords
        if words:
            merged = dict.fromkeys((str(w) for w in words), 20)
            merged.update(json.loads(self.hotwords) if self.hotwords else {})
            hotwords = hotwords_json(merged)
        msg = {"mode": self.mode, "chunk_size": self.chunk_size,
               "chunk_interval": int(self.config.get("chunk_interval", 10)), "wav_name": wav_name,
               "wav_format": "pcm", "audio_fs": 16000, "is_speaking": True, "hotwords": hotwords,
               "itn": bool(self.config.get("itn", True))}
        if hotwords:
            # FunASR's Python server reads `hotword`, words separated by spaces.
            msg["hotword"] = " ".join(json.loads(hotwords))
        if self.config.get("svs_lang"):
            msg["svs_lang"] = self.config["svs_lang"]
        return msg

    async def connect(self):
        from websockets.asyncio.client import connect
        return await connect(self.url, subprotocols=["binary"], additional_headers=self._headers,
                             ssl=self._ssl, proxy=None, logger=_WS_LOG, open_timeout=None,
                             ping_interval=None, compression=None, max_size=1 << 20, close_timeout=2)

    def open_stream(self, language=None, on_partial=None):
        return FunAsrStream(self, on_partial)


class FunAsrStream(WsAsrStream):
    """One utterance on one connection (ws_stream.py): FunASR's messages."""

    def __init__(self, asr, on_partial=None):
        super().__init__(asr, on_partial)
        self.wav_name = "xiaozhi-" + uuid.uuid4().hex[:12]
        self._segments = ""      # corrected text of the segments the server closed
        self._online = ""        # streaming pieces of the segment still open
        self._inverted = False   # the server flags is_final while the child speaks
        self._settle = None      # timer that makes an unflagged last result final

    def _connect(self):
        return self.asr.connect()

    async def _send_all(self, ws):
        await ws.send(json.dumps(self.asr.first_message(self.wav_name, self.words), ensure_ascii=False))
        while True:
            item = await self._outbox.get()
            if item is END:
                break
            await ws.send(item)
        self._ended = True
        await ws.send(json.dumps({"is_speaking": False}))

    def _server_closed(self):
        if self._ended and not self._result.done():
            # A server that closes cleanly after the end of speech has said all it will.
            self._result.set_result(self._text())
        self._fail("closed", "%s closed the connection before the end of speech" % self.asr.url)

    def _text(self):
        return (self._segments + self._online).strip()

    def _take(self, frame):
        """Apply one server message; True when the stream is over (final text or garbage)."""
        try:
            msg = json.loads(frame) if isinstance(frame, str) else None
        except ValueError:
            msg = None
        if not isinstance(msg, dict) or not isinstance(msg.get("text", ""), str):
            self._fail("bad_response", "not a FunASR result: %r" % (frame[:80],))
            return True
        mode, text = msg.get("mode"), msg.get("text", "")
        if mode in ("2pass-online", "online"):
            self._online += text
        elif mode in ("2pass-offline", "offline"):
            self.streamed = self.partial   # what the streaming pass had said (asr.base.AsrStream)
            self._segments += text   # the corrected segment replaces its streaming pieces
            self._online = ""
        else:
            self._fail("bad_response", "unknown result mode %r" % (mode,))
            return True
        self._set_partial(self._text())
        flagged = msg.get("is_final") is True
        if not self._ended:
            # Nothing is final before our end of speech; a server that flags
            # results while the child speaks (FunASR's Python server sends
            # is_final = is_speaking) has its flag the other way round.
            self._inverted = self._inverted or flagged
            return False
        if self._is_final(mode, flagged):
            self._result.set_result(self._text())
            return True
        # A result that does not say it is the last: more may follow (an
        # earlier segment's correction), so the text is final once the
        # server has been quiet for final_settle_s.
        if self._settle is not None:
            self._settle.cancel()
        self._settle = asyncio.get_running_loop().call_later(self.asr.final_settle_s, self._settled)
        return False

    def _is_final(self, mode, flagged):
        if self.asr.mode == "offline":
            return mode == "offline"   # the offline servers send one result, flagged either way
        wanted = "online" if self.asr.mode == "online" else "2pass-offline"
        return flagged and not self._inverted and mode == wanted

    def _settled(self):
        if not self._result.done():
            self._result.set_result(self._text())
