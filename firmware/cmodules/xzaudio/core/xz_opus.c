#include "xz_opus.h"

#include <opus.h>

/* The libopus state follows our header in the same block; the header is
 * padded to 16 bytes so the state keeps the alignment libopus expects. */
struct xz_enc {
    uint32_t rate;
    uint32_t frame_samples;
    uint32_t pad[2];
};

struct xz_dec {
    uint32_t rate;
    uint32_t last_samples;
    uint32_t pad[2];
};

#define ENC_ST(e) ((OpusEncoder *)((uint8_t *)(e) + sizeof(struct xz_enc)))
#define DEC_ST(d) ((OpusDecoder *)((uint8_t *)(d) + sizeof(struct xz_dec)))

static int rate_ok(uint32_t rate) {
    return rate == 8000 || rate == 12000 || rate == 16000 || rate == 24000 || rate == 48000;
}

size_t xz_enc_size(void) {
    return sizeof(struct xz_enc) + (size_t)opus_encoder_get_size(1);
}

int xz_enc_init(xz_enc_t *e, uint32_t rate, uint32_t frame_ms) {
    OpusEncoder *st = ENC_ST(e);
    int err;
    if (!rate_ok(rate) || !(frame_ms == 10 || frame_ms == 20 || frame_ms == 40 || frame_ms == 60)) {
        return XZ_ERR_ARG;
    }
    err = opus_encoder_init(st, (opus_int32)rate, 1, OPUS_APPLICATION_VOIP);
    if (err != OPUS_OK) {
        return err;
    }
    /* The settings the xiaozhi protocol expects upstream; complexity 0 is
     * what keeps the ESP32-S3 under real time with a 24 KB stack. */
    opus_encoder_ctl(st, OPUS_SET_VBR(1));
    opus_encoder_ctl(st, OPUS_SET_DTX(1));
    opus_encoder_ctl(st, OPUS_SET_COMPLEXITY(0));
    e->rate = rate;
    e->frame_samples = rate / 1000u * frame_ms;
    return 0;
}

uint32_t xz_enc_frame_samples(const xz_enc_t *e) {
    return e->frame_samples;
}

int xz_enc_encode(xz_enc_t *e, const int16_t *pcm, uint32_t n_samples,
                  uint8_t *out, uint32_t cap) {
    if (pcm == NULL || out == NULL || cap == 0) {
        return XZ_ERR_ARG;
    }
    if (n_samples != e->frame_samples) {
        return XZ_ERR_FRAME;
    }
    if (cap > XZ_OPUS_MAX_PACKET) {
        cap = XZ_OPUS_MAX_PACKET;
    }
    return opus_encode(ENC_ST(e), pcm, (int)n_samples, out, (opus_int32)cap);
}

size_t xz_dec_size(void) {
    return sizeof(struct xz_dec) + (size_t)opus_decoder_get_size(1);
}

int xz_dec_init(xz_dec_t *d, uint32_t rate) {
    int err;
    if (!rate_ok(rate)) {
        return XZ_ERR_ARG;
    }
    err = opus_decoder_init(DEC_ST(d), (opus_int32)rate, 1);
    if (err != OPUS_OK) {
        return err;
    }
    d->rate = rate;
    d->last_samples = rate / 1000u * 60u;
    return 0;
}

int xz_dec_decode(xz_dec_t *d, const uint8_t *pkt, uint32_t len,
                  int16_t *out, uint32_t cap) {
    int n;
    if (out == NULL || cap == 0) {
        return XZ_ERR_ARG;
    }
    if (pkt == NULL || len == 0) {
        if (d->last_samples > cap) {
            return XZ_ERR_SPACE;
        }
        return opus_decode(DEC_ST(d), NULL, 0, out, (int)d->last_samples, 0);
    }
    if (len > 0x7FFFFFFFu) {
        return XZ_ERR_ARG;
    }
    /* Check the packet's length in samples first, so a packet longer than
     * the caller's buffer is refused instead of being silently truncated. */
    n = opus_packet_get_nb_samples(pkt, (opus_int32)len, (opus_int32)d->rate);
    if (n < 0) {
        return n;
    }
    if ((uint32_t)n > cap) {
        return XZ_ERR_SPACE;
    }
    n = opus_decode(DEC_ST(d), pkt, (opus_int32)len, out, (int)cap, 0);
    if (n > 0) {
        d->last_samples = (uint32_t)n;
    }
    return n;
}
