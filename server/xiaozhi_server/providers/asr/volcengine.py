"""Volcengine (Doubao) streaming speech recognition over its binary
WebSocket protocol (volc_frames), the classic and the big-model service.

- classic, `cluster` set (doc "流式语音识别", /api/v2/asr): the header
  `Authorization: Bearer; <token>`, and `app` {appid, token, cluster} in
  the request; results carry `code` (1000 = success), `sequence` and
  `result` [{text, utterances}].
- big model, `resource_id` set (doc "大模型流式语音识别API",
  /api/v3/sauc/bigmodel): the headers X-Api-App-Key, X-Api-Access-Key,
  X-Api-Resource-Id, X-Api-Connect-Id; results carry `result` {text,
  utterances} and the sequence in the frame header.

One connection per utterance: a gzipped JSON full client request, then
audio-only requests of `packet_ms` of 16 kHz PCM as the child speaks (the
doc asks for 100-200 ms packets), the last one flagged. With `result_type`
full each response holds the whole text so far (the partial); the response
with a negative sequence (or the last-message flag) after our last packet
is the final text. An error message (type 0b1111, code and message), a
result whose code is not 1000, a refused handshake, a cut or a frame that
is not the protocol ends the utterance with an AsrError.

Config keys: `appid`, `token` (else `$XIAOZHI_VOLC_TOKEN` or the variable
`token_env` names), `cluster` (classic, e.g. volcengine_streaming_common)
or `resource_id` (big model, e.g. volc.bigasr.sauc.duration), `url` (the
service's for the kind), `language` (classic: zh-CN), `uid` (xiaozhi),
`packet_ms` (200), `connect_timeout` (3 s), `final_timeout` (5 s from the
end of speech), `extra` (merged into the request's `request` object).
"""
import uuid

from .. import volc_frames as vf
from .base import SAMPLE_RATE, StreamingAsr
from ..registry import register
from .ws_stream import END, WsAsrStream


CLASSIC_URL = "wss://openspeech.bytedance.com/api/v2/asr"
BIGMODEL_URL = "wss://openspeech.bytedance.com/api/v3/sauc/bigmodel"
SUCCESS = 1000          # classic results' code
AUTH_CODES = (1002,)    # classic: no access (bad token, appid or cluster)


@register("asr", "volcengine")
class VolcengineAsr(StreamingAsr):
    # The config keys read here (registry.options; config.py refuses others at start).
    OPTIONS = ("appid", "token", "token_env", "cluster", "resource_id", "url", "packet_ms", "connect_timeout",
               "final_timeout", "uid", "language", "extra")

    def __init__(self, config):
        self.config = config
        self.name = config.get("name") or "volcengine"
        self.appid = str(config.get("appid") or "")
        self.token = vf.volc_token(config, "XIAOZHI_VOLC_TOKEN")
        self.cluster = config.get("cluster")
        self.resource_id = config.get("resource_id")
        if not self.appid or not (self.cluster or self.resource_id):
            raise ValueError("volcengine ASR needs appid and a cluster (classic) or resource_id (big model)")
        self.bigmodel = bool(self.resource_id)
        self.url = config.get("url") or (BIGMODEL_URL if self.bigmodel else CLASSIC_URL)
        if not self.url.startswith(("ws://", "wss://")):
            raise ValueError("volcengine url must start with ws:// or wss://, not %r" % self.url)
        self.packet_bytes = SAMPLE_RATE * 2 * int(config.get("packet_ms", 200)) // 1000
        self.connect_timeout = float(config.get("connect_timeout", 3))
        self.final_timeout = float(config.get("final_timeout", 5))

    def __repr__(self):
        return "VolcengineAsr(%s, %s)" % (self.url, self.resource_id or self.cluster)

    def headers(self, connect_id):
        if self.bigmodel:
            return {"X-Api-App-Key": self.appid, "X-Api-Access-Key": self.token,
                    "X-Api-Resource-Id": self.resource_id, "X-Api-Connect-Id": connect_id}
        return {"Authorization": "Bearer; %s" % self.token}

    def request(self, reqid, language):
        audio = {"format": "pcm" if self.bigmodel else "raw", "codec": "raw", "rate": SAMPLE_RATE,
                 "bits": 16, "channel": 1}
        req = {"show_utterances": True, "result_type": "full"}
        msg = {"user": {"uid": self.config.get("uid", "xiaozhi")}, "audio": audio, "request": req}
        if self.bigmodel:
            req.update({"model_name": "bigmodel", "enable_itn": True, "enable_punc": True})
        else:
            msg["app"] = {"appid": self.appid, "token": self.token, "cluster": self.cluster}
            audio["language"] = self.config.get("language") or _language(language)
            req.update({"reqid": reqid, "nbest": 1, "sequence": 1,
                        "workflow": "audio_in,resample,partition,vad,fe,decode,itn,nlu_punctuate"})
        req.update(self.config.get("extra") or {})
        return msg

    async def connect(self, connect_id):
        from websockets.asyncio.client import connect
        return await connect(self.url, additional_headers=self.headers(connect_id), proxy=None,
                             logger=vf.WS_LOG, open_timeout=None, ping_interval=None, compression=None,
                             max_size=1 << 20, close_timeout=2)

    def open_stream(self, language=None, on_partial=None):
        return VolcengineAsrStream(self, language, on_partial)


def _language(language):
    return {"en": "en-US", "zh": "zh-CN"}.get((language or "zh")[:2], "zh-CN")


class VolcengineAsrStream(WsAsrStream):
    """One utterance on one connection (ws_stream.py): Volcengine's frames."""

    def __init__(self, asr, language=None, on_partial=None):
        super().__init__(asr, on_partial)
        self.language = language
        self.reqid = str(uuid.uuid4())

    def _connect(self):
        return self.asr.connect(self.reqid)

    async def _send_all(self, ws):
        await ws.send(vf.client_frame(vf.FULL_CLIENT_REQUEST, self.asr.request(self.reqid, self.language)))
        packet = bytearray()
        while True:
            item = await self._outbox.get()
            if item is END:
                break
            packet += item
            size = self.asr.packet_bytes
            while len(packet) > size:   # the last packet must carry audio: keep some back
                await ws.send(vf.client_frame(vf.AUDIO_ONLY_REQUEST, bytes(packet[:size]), serialization=vf.RAW))
                del packet[:size]
        self._ended = True
        await ws.send(vf.client_frame(vf.AUDIO_ONLY_REQUEST, bytes(packet), last=True, serialization=vf.RAW))

    def _take(self, data):
        """Apply one server message; True when the stream is over."""
        try:
            frame = vf.parse_server_frame(data)
        except vf.FrameError as exc:
            self._fail("bad_response", "not a Volcengine ASR message: %s" % exc)
            return True
        if frame.type == vf.ERROR_RESPONSE:
            self._fail("auth" if frame.code in AUTH_CODES else "refused",
                       "error %s: %s" % (frame.code, frame.error_text()))
            return True
        if frame.type != vf.FULL_SERVER_RESPONSE:
            self._fail("bad_response", "unexpected message type %d" % frame.type)
            return True
        msg = frame.payload
        code = msg.get("code", SUCCESS)
        if code != SUCCESS and code != 20000000:   # the big model's success code, where it sends one
            self._fail("auth" if code in AUTH_CODES else "refused", "error %s: %s" % (code, frame.error_text()))
            return True
        text = _text(msg.get("result"))
        if text is None:
            self._fail("bad_response", "a result with no text: %r" % (str(msg)[:80],))
            return True
        if text or self.partial:
            self._set_partial(text)
        sequence = msg.get("sequence")
        last = frame.last or (isinstance(sequence, int) and sequence < 0)
        if last and self._ended:
            self._result.set_result(text.strip())
            return True
        return False


def _text(result):
    """The text of a result: classic [{text, utterances}], big model {text, utterances}.
    "" when there is none yet (a response to the request, or silence); None when it is not a result."""
    if result is None:
        return ""
    if isinstance(result, list):
        result = result[0] if result else {}
    if not isinstance(result, dict):
        return None
    text = result.get("text")
    if text is None:
        utterances = result.get("utterances") or []
        if not all(isinstance(u, dict) and isinstance(u.get("text"), str) for u in utterances):
            return None
        text = "".join(u["text"] for u in utterances)
    return text if isinstance(text, str) else None
