#include "xz_mp3info.h"

#include <string.h>

static const uint16_t BR_V1[16] = {0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 0};
static const uint16_t BR_V2[16] = {0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160, 0};
static const uint32_t SR_V1[3] = {44100, 48000, 32000};

static uint32_t be32(const uint8_t *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

int xz_mp3_parse_header(const uint8_t *h, xz_mp3_frame_t *f) {
    uint32_t ver_bits, br_idx, sr_idx;
    if (h[0] != 0xFF || (h[1] & 0xE0) != 0xE0) {
        return -1;
    }
    ver_bits = (h[1] >> 3) & 3u;
    if (ver_bits == 1 || ((h[1] >> 1) & 3u) != 1) { /* reserved version; not Layer III */
        return -1;
    }
    br_idx = h[2] >> 4;
    sr_idx = (h[2] >> 2) & 3u;
    if (br_idx == 0 || br_idx == 15 || sr_idx == 3) { /* free format or reserved */
        return -1;
    }
    f->version = ver_bits == 3 ? 10 : ver_bits == 2 ? 20 : 25;
    f->sample_rate = SR_V1[sr_idx] >> (ver_bits == 3 ? 0 : ver_bits == 2 ? 1 : 2);
    f->bitrate = ver_bits == 3 ? BR_V1[br_idx] : BR_V2[br_idx];
    f->has_crc = (h[1] & 1u) == 0;
    f->padding = (h[2] >> 1) & 1u;
    f->channels = (h[3] >> 6) == 3 ? 1 : 2;
    f->samples = ver_bits == 3 ? 1152 : 576;
    /* bytes = samples/8 * bitrate / rate (+1 padding byte for Layer III). */
    f->length = (f->samples / 8u) * f->bitrate * 1000u / f->sample_rate + f->padding;
    return 0;
}

uint32_t xz_mp3_id3v2_size(const uint8_t *buf, size_t len) {
    uint32_t size;
    if (len < 10 || memcmp(buf, "ID3", 3) != 0 || buf[3] == 0xFF || buf[4] == 0xFF ||
        ((buf[6] | buf[7] | buf[8] | buf[9]) & 0x80)) {
        return 0;
    }
    /* Sync-safe: 7 bits per byte. A footer (flag 0x10) adds 10 bytes. */
    size = ((uint32_t)buf[6] << 21) | ((uint32_t)buf[7] << 14) | ((uint32_t)buf[8] << 7) | buf[9];
    return 10u + size + ((buf[5] & 0x10) ? 10u : 0u);
}

static int same_stream(const xz_mp3_frame_t *a, const xz_mp3_frame_t *b) {
    return a->version == b->version && a->sample_rate == b->sample_rate;
}

/* A frame header at pos that we believe: it parses, and the frame after it
 * parses too with the same stream parameters, or the data ends exactly
 * (or within a short trailing tag) after it. */
static int frame_at(const uint8_t *buf, size_t len, size_t pos, xz_mp3_frame_t *f) {
    xz_mp3_frame_t next;
    size_t end;
    if (pos + 4 > len || xz_mp3_parse_header(buf + pos, f) != 0) {
        return 0;
    }
    end = pos + f->length;
    if (end > len) {
        return 0;
    }
    if (end + 4 > len) {
        return 1;
    }
    if (xz_mp3_parse_header(buf + end, &next) == 0) {
        return same_stream(f, &next);
    }
    /* An ID3v1 tag ("TAG", 128 bytes) may close the file. */
    return len - end <= 128 && memcmp(buf + end, "TAG", 3) == 0;
}

/* Reads an info tag in the first frame, if any. Returns 1 when it was found
 * and filled frames (and maybe the LAME gap). */
static int read_info_tag(const uint8_t *fr, const xz_mp3_frame_t *f,
                         uint32_t *frames, uint32_t *gap, uint32_t *flags) {
    uint32_t side = f->version == 10 ? (f->channels == 1 ? 17u : 32u) : (f->channels == 1 ? 9u : 17u);
    uint32_t off = 4u + side + (f->has_crc ? 2u : 0u);
    uint32_t xflags, p;
    if (off + 12 <= f->length && (memcmp(fr + off, "Xing", 4) == 0 || memcmp(fr + off, "Info", 4) == 0)) {
        xflags = be32(fr + off + 4);
        if (!(xflags & 1u)) {
            return 0;
        }
        *frames = be32(fr + off + 8);
        *flags |= XZ_MP3_FROM_XING | (fr[off] == 'X' ? XZ_MP3_VBR : 0u);
        p = off + 12u + ((xflags & 2u) ? 4u : 0u) + ((xflags & 4u) ? 100u : 0u) + ((xflags & 8u) ? 4u : 0u);
        /* LAME-style extension (LAME, and ffmpeg's Lavf/Lavc): encoder delay
         * and padding, 12 bits each, 21 bytes after the encoder name. */
        if (p + 24 <= f->length && (memcmp(fr + p, "LAME", 4) == 0 || memcmp(fr + p, "Lavf", 4) == 0 ||
                                    memcmp(fr + p, "Lavc", 4) == 0)) {
            const uint8_t *g = fr + p + 21;
            *gap = ((uint32_t)g[0] << 4 | g[1] >> 4) + (((uint32_t)g[1] & 0x0Fu) << 8 | g[2]);
            *flags |= XZ_MP3_LAME_GAP;
        }
        return 1;
    }
    off = 4u + 32u;
    if (off + 18 <= f->length && memcmp(fr + off, "VBRI", 4) == 0) {
        *frames = be32(fr + off + 14);
        *flags |= XZ_MP3_FROM_VBRI | XZ_MP3_VBR;
        return 1;
    }
    return 0;
}

int xz_mp3_info(const uint8_t *buf, size_t len, xz_mp3_info_t *out) {
    xz_mp3_frame_t first, f;
    size_t pos = 0, first_pos;
    uint32_t tag, walked = 0, tag_frames = 0, gap = 0, flags = 0, first_br = 0;
    uint64_t bytes = 0, total;

    memset(out, 0, sizeof(*out));
    while (pos < len && (tag = xz_mp3_id3v2_size(buf + pos, len - pos)) != 0) {
        if (tag > len - pos) {
            return -1;
        }
        pos += tag;
    }
    while (pos < len && !frame_at(buf, len, pos, &first)) {
        pos++;
    }
    if (pos >= len) {
        return -1;
    }
    first_pos = pos;
    if (read_info_tag(buf + pos, &first, &tag_frames, &gap, &flags)) {
        pos += first.length; /* the tag frame holds no audio */
    }
    /* Walk the frames: needed for CBR files without a tag, and gives the
     * byte count for the average bitrate in every case. */
    while (pos + 4 <= len) {
        if (xz_mp3_parse_header(buf + pos, &f) == 0 && same_stream(&f, &first) && pos + f.length <= len) {
            if (walked == 0) {
                first_br = f.bitrate;
            } else if (f.bitrate != first_br) {
                flags |= XZ_MP3_VBR;
            }
            walked++;
            bytes += f.length;
            pos += f.length;
            continue;
        }
        if (memcmp(buf + pos, "TAG", 3) == 0 && len - pos <= 128) {
            break;
        }
        /* Junk or a torn frame: resynchronise on a trusted header. */
        pos++;
        while (pos < len && !frame_at(buf, len, pos, &f)) {
            pos++;
        }
    }
    out->frames = (flags & (XZ_MP3_FROM_XING | XZ_MP3_FROM_VBRI)) ? tag_frames : walked;
    total = (uint64_t)out->frames * first.samples;
    if (gap < total) {
        total -= gap;
    }
    out->sample_rate = first.sample_rate;
    out->channels = first.channels;
    out->samples = total;
    out->duration_ms = (uint32_t)((total * 1000u + first.sample_rate / 2u) / first.sample_rate);
    out->avg_bitrate = total ? (uint32_t)((bytes * 8u * first.sample_rate + total * 500u) / (total * 1000u)) : 0;
    out->audio_offset = (uint32_t)first_pos;
    out->flags = flags;
    return 0;
}
