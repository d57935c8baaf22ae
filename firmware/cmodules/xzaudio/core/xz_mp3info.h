/* MP3 (MPEG-1, -2 and -2.5 Layer III) frame-header parser: how long a file
 * plays, without decoding it. Used to report lesson lengths and to check a
 * file before the player opens it.
 *
 * Order of trust: a Xing/Info or VBRI tag's frame count (minus the LAME
 * tag's encoder delay and padding when present), else the number of frames
 * found by walking the headers. ID3v2 tags (any number, with footers) are
 * skipped; junk between frames is skipped by resynchronising on a header
 * whose successor also parses. Never reads outside [buf, buf+len).
 */
#ifndef XZ_MP3INFO_H
#define XZ_MP3INFO_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint8_t version;      /* 10 = MPEG-1, 20 = MPEG-2, 25 = MPEG-2.5 */
    uint8_t channels;     /* 1 or 2 */
    uint8_t has_crc;
    uint8_t padding;
    uint32_t sample_rate; /* Hz */
    uint32_t bitrate;     /* kbit/s */
    uint32_t samples;     /* per frame: 1152 or 576 */
    uint32_t length;      /* bytes, header included */
} xz_mp3_frame_t;

#define XZ_MP3_FROM_XING 1u  /* frame count from a Xing/Info tag */
#define XZ_MP3_FROM_VBRI 2u  /* frame count from a VBRI tag */
#define XZ_MP3_LAME_GAP 4u   /* encoder delay/padding removed */
#define XZ_MP3_VBR 8u        /* bitrate varies (tag says so, or frames differ) */

typedef struct {
    uint32_t sample_rate;
    uint32_t channels;
    uint32_t frames;       /* audio frames (an info-tag frame is not counted) */
    uint64_t samples;      /* per channel, after gap removal */
    uint32_t duration_ms;  /* samples * 1000 / rate, rounded */
    uint32_t avg_bitrate;  /* kbit/s */
    uint32_t audio_offset; /* byte offset of the first frame */
    uint32_t flags;        /* XZ_MP3_* */
} xz_mp3_info_t;

/* Parses the 4 header bytes at h. Returns 0, or -1 when they are not a
 * Layer III header we can play (free format, reserved values). */
int xz_mp3_parse_header(const uint8_t *h, xz_mp3_frame_t *f);

/* Size in bytes of the ID3v2 tag at buf (0 when there is none). */
uint32_t xz_mp3_id3v2_size(const uint8_t *buf, size_t len);

/* Scans a whole file held in memory. Returns 0, or -1 when no MPEG audio
 * frame was found. */
int xz_mp3_info(const uint8_t *buf, size_t len, xz_mp3_info_t *out);

#endif
