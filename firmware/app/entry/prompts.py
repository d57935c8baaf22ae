# Lines the device speaks by itself, with no server: a menu's question and
# its timeout line. They were rendered at build time (tools/render_prompts.py,
# the server's own voices) into assets/prompts/KEY.LANG.opus: 24 kHz mono
# 60 ms Opus frames, each preceded by its length (2 bytes, big-endian).
#
#   path = prompts.find("voice_entry", "zh")     # None when not on the card
#   await prompts.play(board.speaker, path)      # frames to the speaker, drained
#
# One frame buffer, allocated once; a frame longer than it (a damaged file)
# ends the line early, it never raises mid-conversation.
import log

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

RATE = const(24000)
FRAME_MS = const(60)
MAX_FRAME = const(512)
FALLBACK_LANG = "zh"
_DIRS = ("/assets/prompts", "assets/prompts", "firmware/assets/prompts")

_log = log.get("prompts")
_buf = bytearray(MAX_FRAME)


def find(key, lang):
    """The file of line `key` in `lang` (else in FALLBACK_LANG), or None."""
    for lg in (lang, FALLBACK_LANG):
        for d in _DIRS:
            p = "%s/%s.%s.opus" % (d, key, lg)
            try:
                open(p, "rb").close()
                return p
            except OSError:
                continue
    return None


async def play(speaker, path):
    """Speak one rendered line; the speaker's rate is put back after it.
    Returns the frames played."""
    before = speaker.sample_rate
    speaker.configure(RATE, FRAME_MS)
    mv = memoryview(_buf)
    n = 0
    speaker.begin_reply()
    try:
        with open(path, "rb") as f:
            while True:
                head = f.read(2)
                if len(head) < 2:
                    break
                size = (head[0] << 8) | head[1]
                if size > MAX_FRAME or f.readinto(mv[:size]) != size:
                    _log.warn("%s: damaged at frame %d", path, n)
                    break
                await speaker.write_frame(mv[:size])
                n += 1
        await speaker.drain()
    finally:
        speaker.end_reply()
        if before != RATE:
            speaker.configure(before, FRAME_MS)
    return n
