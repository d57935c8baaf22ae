"""The speaker's replies as WAV files: the host HAL saves each reply's Opus
frames in STATE/speaker/reply_NNNN/ (and, under CPython, the decoded
reply_NNNN.wav). Under MicroPython there is no decoder on the board side,
so the sim decodes the frames here. Each new reply is reported once.

    watcher = ReplyWatcher(state_dir)
    for ev in watcher.new_replies():   # {"event": "reply", "index", "frames", "seconds", "wav"}
        ...
"""
import os
import re
import wave

_NAME = re.compile(r"^reply_(\d{4})$")
RATE = 24000
FRAME_MS = 60


def decode_frames(frame_dir, wav_path, rate=RATE):
    import opuslib
    dec = opuslib.Decoder(rate, 1)
    n = rate * FRAME_MS // 1000
    parts = []
    for name in sorted(os.listdir(frame_dir)):
        with open(os.path.join(frame_dir, name), "rb") as f:
            data = f.read()
        try:
            parts.append(dec.decode(data, n))
        except opuslib.OpusError:  # a corrupt frame plays as silence, as on the board
            parts.append(bytes(2 * n))
    with wave.open(wav_path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(b"".join(parts))


class ReplyWatcher:
    def __init__(self, state_dir, rate=RATE):
        self.dir = os.path.join(state_dir, "speaker")
        self.rate = rate
        self._seen = set(self._indexes())  # replies of earlier runs are not news

    def _indexes(self):
        if not os.path.isdir(self.dir):
            return []
        return sorted(int(m.group(1)) for m in map(_NAME.match, os.listdir(self.dir)) if m)

    def new_replies(self):
        out = []
        for i in self._indexes():
            if i in self._seen:
                continue
            self._seen.add(i)
            frames_dir = os.path.join(self.dir, "reply_%04d" % i)
            wav_path = frames_dir + ".wav"
            frames = len(os.listdir(frames_dir))
            if not os.path.exists(wav_path):
                decode_frames(frames_dir, wav_path, self.rate)
            with wave.open(wav_path, "rb") as w:
                seconds = round(w.getnframes() / w.getframerate(), 2)
            out.append({"event": "reply", "index": i, "frames": frames, "seconds": seconds,
                        "wav": os.path.abspath(wav_path)})
        return out
