# Host I2S: the mic yields Opus frames, the speaker takes Opus frames,
# both paced on the simulated clock like the board's I2S DMA.
#
# The board encodes and decodes Opus in a C module next to I2S, so the HAL
# boundary is the Opus frame. Host sources and sinks:
#   mic.feed_frames(dir_or_list)  pre-encoded frames (any interpreter):
#                                 a directory of files, one frame each,
#                                 taken in name order, or a list of bytes
#   mic.feed_wav(path)            16 kHz mono WAV, encoded here (CPython)
#   speaker                       one reply per begin_reply()/end_reply():
#                                 reply_NNNN.wav (decoded, CPython) and
#                                 reply_NNNN/ with the raw frames (always);
#                                 where xzaudio has the I/O streams (the
#                                 unix build of `make micropython`) every
#                                 frame also goes through the board's C
#                                 speaker path (audio.AudioOut), which
#                                 appends the PCM it plays to
#                                 speaker/played.pcm (24 kHz, s16le mono)
import os

import audio
import log
from hal.amp import SPEAKER
from hal.host import fs, opus, wav

_log = log.get("audio")

FRAME_MS = 60
_SPEAKER_LEAD_MS = 240  # what the I2S DMA buffers ahead before write blocks


def _frames_from_dir(path):
    return [fs.read_bytes(fs.join(path, n)) for n in sorted(_listdir(path))]


def _listdir(path):
    import os
    return [n for n in os.listdir(path) if not n.startswith(".")]


class HostMic:
    # path: the board's front end (hal/host/frontend.py); while its
    # mic_fault() names a reason, what reaches the mic is lost, as sound
    # is while a codec's ADC is down.
    def __init__(self, clock, sample_rate=16000, frame_ms=FRAME_MS, path=None):
        self._clock = clock
        self._path = path
        self.lost = 0        # frames that arrived while the mic path was off
        self._said = None
        self.sample_rate = sample_rate
        self.frame_ms = frame_ms
        self._queue = []
        self._running = False
        self._next_at = None

    def feed_frames(self, frames):
        if isinstance(frames, str):
            frames = _frames_from_dir(frames)
        self._queue.extend(frames)

    def feed_wav(self, path):
        rate, channels, pcm = wav.read(path)
        if rate != self.sample_rate or channels != 1:
            raise ValueError("%s: mic input must be %d Hz mono" % (path, self.sample_rate))
        self._queue.extend(opus.encode_pcm(pcm, rate, self.frame_ms))

    def pending(self):
        return len(self._queue)

    def start(self):
        self._running = True
        self._next_at = self._clock.ticks_ms()

    def stop(self):
        self._running = False

    async def read_frame(self, buf):
        """Wait for the next frame slot; copy one Opus frame into buf.

        Returns its length, or 0 for a slot with nothing to say (silence,
        like Opus DTX). A frame larger than buf raises ValueError.
        """
        if not self._running:
            self.start()
        self._next_at += self.frame_ms
        wait = self._next_at - self._clock.ticks_ms()
        if wait > 0:
            await self._clock.sleep_ms(wait)
        elif wait < -self.frame_ms * 4:
            self._next_at = self._clock.ticks_ms()  # the reader fell behind
        if not self._queue:
            return 0
        frame = self._queue.pop(0)
        why = self._path.mic_fault() if self._path is not None else None
        if why != self._said:
            self._said = why
            if why:
                _log.warn("mic: silent: %s", why)
        if why:
            self.lost += 1
            return 0
        n = len(frame)
        if n > len(buf):
            raise ValueError("Opus frame of %d bytes > buffer %d" % (n, len(buf)))
        buf[:n] = frame
        return n


class HostSpeaker:
    # path: the board's front end; while its speaker_fault() names a
    # reason, frames are paced but not heard (counted in `unheard`, no reply
    # file), and the level follows the DAC's volume register.
    # Frames go to STATE/speaker/reply_NNNN/ as they arrive, not into a list:
    # a reply of several seconds would not fit the unix port's 256 KB heap
    # next to the app. `replies` reads them back (tests only).
    # amp: the board's amplifier power (hal/amp.py), held from a reply's
    # first frame to its end.
    def __init__(self, clock, out_dir, sample_rate=24000, frame_ms=FRAME_MS, path=None, amp=None):
        self._clock = clock
        self._path = path
        self._amp = amp
        self._sounding = False   # the amplifier is held for this reply
        self.unheard = 0
        self._said = None
        self.out_dir = out_dir
        self.sample_rate = sample_rate
        self.frame_ms = frame_ms
        self.volume = 70
        self.bad_frames = 0  # frames the decoder rejected
        self._open = False   # between begin_reply() and end_reply()
        self._base = None    # this reply's frame directory, made at its first frame
        self._frames = 0
        self._dirs = []      # reply directories of this run
        self._play_until = 0
        self._count = len([n for n in _listdir(out_dir) if n.startswith("reply_") and
                           not n.endswith(".wav")]) if fs.isdir(out_dir) else 0
        self.c_dropped = 0   # frames the C speaker's full queue refused
        self._c = None
        self._open_c()

    def _open_c(self):
        if not (hasattr(audio, "AudioOut") and hasattr(os, "putenv")):
            return
        fs.makedirs(self.out_dir)
        os.putenv("XZAUDIO_SPK", fs.join(self.out_dir, "played.pcm"))
        try:
            self._c = audio.AudioOut(self.sample_rate)
        except ValueError:  # a rate the engine cannot play: the frames are still kept
            self._c = None
            return
        self._c.set_volume(self._soft_volume())

    @property
    def replies(self):
        """The frames of each reply of this run, one list per reply."""
        return [_frames_from_dir(d) for d in self._dirs]

    def configure(self, sample_rate, frame_ms=FRAME_MS):
        changed = sample_rate != self.sample_rate
        self.sample_rate = sample_rate
        self.frame_ms = frame_ms
        if changed:
            self._open_c()

    def set_volume(self, volume):
        self.volume = max(0, min(100, int(volume)))
        if self._c is not None:
            self._c.set_volume(self._soft_volume())
        if self._hw_volume():
            self._path.set_volume(self.volume)

    def _hw_volume(self):
        return self._path is not None and self._path.hw_volume

    def _soft_volume(self):
        """The engine's own scaling: full scale when a codec sets the volume."""
        return 100 if self._hw_volume() else self.volume

    def begin_reply(self):
        if self._open:
            self.end_reply()
        self._open = True
        self._base = None
        self._frames = 0

    async def write_frame(self, frame):
        """Queue one Opus frame; waits while the DMA buffer is full."""
        if not self._open:
            self.begin_reply()
        if not self._sounding and self._amp is not None:
            self._amp.hold(SPEAKER)
            self._sounding = True
        now = self._clock.ticks_ms()
        if self._play_until < now:
            self._play_until = now
        ahead = self._play_until - now
        if ahead > _SPEAKER_LEAD_MS:
            await self._clock.sleep_ms(ahead - _SPEAKER_LEAD_MS)
        why = self._path.speaker_fault() if self._path is not None else None
        if why != self._said:
            self._said = why
            if why:
                _log.warn("speaker: silent: %s", why)
        if why:
            self.unheard += 1
            self._play_until += self.frame_ms
            return
        if self._base is None:
            self._count += 1
            self._base = fs.join(self.out_dir, "reply_%04d" % self._count)
            fs.makedirs(self._base)
            self._dirs.append(self._base)
        with open(fs.join(self._base, "%05d.opus" % self._frames), "wb") as f:
            f.write(frame)
        if self._c is not None and not self._c.play(frame):
            self.c_dropped += 1
        self._frames += 1
        self._play_until += self.frame_ms

    async def drain(self):
        """Wait until every queued frame has been played."""
        left = self._play_until - self._clock.ticks_ms()
        if left > 0:
            await self._clock.sleep_ms(left)

    def end_reply(self):
        """Close the reply and write it out; returns the WAV path or None."""
        base, self._base = self._base, None
        self._open = False
        if self._sounding:
            self._sounding = False
            self._amp.release(SPEAKER)
        if base is None or not opus.available():
            return None
        dec = opus.Decoder(self.sample_rate, self.frame_ms)
        silence = bytes(self.sample_rate * self.frame_ms // 1000 * 2)
        parts = []
        for fr in _frames_from_dir(base):
            try:
                parts.append(dec.decode(fr))
            except Exception:  # a corrupt frame plays as silence, as on the board
                self.bad_frames += 1
                parts.append(silence)
        level = self._path.speaker_percent() if self._hw_volume() else self.volume
        pcm = _scale(b"".join(parts), level)
        path = base + ".wav"
        wav.write(path, self.sample_rate, pcm)
        return path


def _scale(pcm, volume):
    """Apply the speaker volume the way the board's amp does (linear gain)."""
    if volume >= 100:
        return pcm
    import array
    a = array.array("h", pcm)
    for i in range(len(a)):
        a[i] = a[i] * volume // 100
    return bytes(a)
