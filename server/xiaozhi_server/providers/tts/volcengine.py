"""Volcengine (Doubao) speech synthesis over its binary WebSocket protocol
(doc "语音合成 WebSocket 接口", /api/v1/tts/ws_binary; framing in volc_frames).

One connection per text: the header `Authorization: Bearer; <token>` and
a gzipped JSON full client request (`app` {appid, token, cluster}, `user`,
`audio` {voice_type, encoding pcm, rate, speed/volume/pitch ratios},
`request` {reqid, text, text_type plain, operation submit}). The service
answers audio-only server responses (type 0b1011): a sequence number, a
payload size and raw PCM; a bare ACK has no sequence; the sequence is
negative on the last. Each piece is handed on as it comes, so the first
words play while the rest renders. An error message (type 0b1111: code and
message), a refused handshake, no audio within `first_audio_timeout`, a
pause longer than `chunk_timeout`, a cut or a frame that is not the
protocol is a TtsError, and the fallback chain speaks instead.

Config keys: `appid`, `token` (else the variable `token_env` names, else
`$XIAOZHI_VOLC_TTS_TOKEN`, else `$XIAOZHI_VOLC_TOKEN`), `cluster`
(volcano_tts), `voice` (the service's voice_type; a `voice` argument
overrides it), `rate` (24000), `speed_ratio`, `volume_ratio`,
`pitch_ratio` (1.0), `uid`, `url`, `connect_timeout` (3 s),
`first_audio_timeout` (5 s), `chunk_timeout` (5 s), `max_chars` (300),
`extra_audio` (merged into `audio`).
"""
import asyncio
import os
import uuid

from .. import volc_frames as vf
from ..audio import AudioChunk
from ..registry import register
from .base import TtsError, TtsProvider

URL = "wss://openspeech.bytedance.com/api/v1/tts/ws_binary"


@register("tts", "volcengine")
class VolcengineTts(TtsProvider):
    # The config keys read here (registry.options; config.py refuses others at start).
    OPTIONS = ("appid", "token", "token_env", "cluster", "voice", "rate", "url", "connect_timeout",
               "first_audio_timeout", "chunk_timeout", "speed_ratio", "volume_ratio", "pitch_ratio",
               "extra_audio", "uid")
    max_chars = 300

    def __init__(self, config):
        super().__init__(config)
        self.appid = str(config.get("appid") or "")
        if not self.appid:
            raise ValueError("volcengine TTS needs an appid")
        # The variable token_env names, else the TTS's own, else the account's shared one.
        self.token = vf.volc_token(config, "XIAOZHI_VOLC_TTS_TOKEN") or os.environ.get("XIAOZHI_VOLC_TOKEN", "")
        self.cluster = config.get("cluster", "volcano_tts")
        self.voice = config.get("voice", "zh_female_wanwanxiaohe_moon_bigtts")
        self.rate = int(config.get("rate", 24000))
        self.url = config.get("url") or URL
        if not self.url.startswith(("ws://", "wss://")):
            raise ValueError("volcengine url must start with ws:// or wss://, not %r" % self.url)
        self.connect_timeout = float(config.get("connect_timeout", 3))
        self.first_audio_timeout = float(config.get("first_audio_timeout", 5))
        self.chunk_timeout = float(config.get("chunk_timeout", 5))

    def __repr__(self):
        return "VolcengineTts(%s, %s)" % (self.url, self.voice)

    def request(self, text, voice):
        audio = {"voice_type": voice or self.voice, "encoding": "pcm", "rate": self.rate}
        for key in ("speed_ratio", "volume_ratio", "pitch_ratio"):
            audio[key] = float(self.config.get(key, 1.0))
        audio.update(self.config.get("extra_audio") or {})
        return {"app": {"appid": self.appid, "token": self.token, "cluster": self.cluster},
                "user": {"uid": self.config.get("uid", "xiaozhi")}, "audio": audio,
                "request": {"reqid": str(uuid.uuid4()), "text": text, "text_type": "plain",
                            "operation": "submit"}}

    async def stream(self, text, voice=None):
        from websockets.asyncio.client import connect
        from websockets.exceptions import ConnectionClosed, InvalidStatus
        try:
            ws = await asyncio.wait_for(connect(
                self.url, additional_headers={"Authorization": "Bearer; %s" % self.token}, proxy=None,
                logger=vf.WS_LOG, open_timeout=None, ping_interval=None, compression=None, max_size=1 << 22,
                close_timeout=2), self.connect_timeout)
        except asyncio.TimeoutError:
            raise TtsError("Volcengine TTS: could not connect to %s within %.1f s" % (self.url, self.connect_timeout))
        except InvalidStatus as exc:
            raise TtsError("Volcengine TTS refused (HTTP %d at the handshake)" % exc.response.status_code)
        except Exception as exc:
            raise TtsError("Volcengine TTS unreachable: %s: %s" % (self.url, exc or type(exc).__name__))
        try:
            await ws.send(vf.client_frame(vf.FULL_CLIENT_REQUEST, self.request(text, voice)))
            wait, heard, odd = self.first_audio_timeout, False, b""
            while True:
                try:
                    data = await asyncio.wait_for(ws.recv(), wait)
                except asyncio.TimeoutError:
                    raise TtsError("Volcengine TTS: %s within %.1f s" % ("no more audio" if heard else "no audio", wait))
                frame = self._frame(data)
                if frame.type != vf.AUDIO_ONLY_RESPONSE:
                    continue   # a frontend message (timings): not used
                if frame.payload:
                    heard, wait = True, self.chunk_timeout
                    pcm = odd + frame.payload
                    cut = len(pcm) & ~1   # whole samples; a split one waits for the next piece
                    odd = pcm[cut:]
                    if cut:
                        yield AudioChunk(pcm[:cut], self.rate)
                if frame.last:
                    break
            if not heard:
                raise TtsError("Volcengine TTS: the answer ended with no audio")
        except ConnectionClosed as exc:
            raise TtsError("Volcengine TTS: %s closed the connection before the last audio (%s)" % (self.url, exc))
        finally:
            ws.transport.abort()   # one text per connection: no close handshake to wait for

    @staticmethod
    def _frame(data):
        try:
            frame = vf.parse_server_frame(data)
        except vf.FrameError as exc:
            raise TtsError("Volcengine TTS answered something that is not its protocol: %s" % exc)
        if frame.type == vf.ERROR_RESPONSE:
            raise TtsError("Volcengine TTS error %s: %s" % (frame.code, frame.error_text()))
        if frame.type not in (vf.AUDIO_ONLY_RESPONSE, vf.FRONTEND_RESPONSE):
            raise TtsError("Volcengine TTS: unexpected message type %d" % frame.type)
        if frame.type == vf.AUDIO_ONLY_RESPONSE and not isinstance(frame.payload, (bytes, bytearray)):
            raise TtsError("Volcengine TTS: audio that is not raw bytes")
        return frame

    async def synthesize(self, text, voice=None):
        pcm = bytearray()
        async for chunk in self.stream(text, voice):
            pcm += chunk.pcm
        return AudioChunk(bytes(pcm), self.rate)
