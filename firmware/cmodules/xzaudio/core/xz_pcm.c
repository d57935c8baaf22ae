#include "xz_pcm.h"

void xz_pcm_take_slot(const int16_t *in, uint32_t frames, uint32_t slots, uint32_t slot, int16_t *out) {
    uint32_t i;
    for (i = 0; i < frames; i++) {
        out[i] = in[i * slots + slot];
    }
}

void xz_pcm_from_i32(const int32_t *in, uint32_t n, uint32_t shift, int16_t *out) {
    uint32_t i;
    for (i = 0; i < n; i++) {
        /* >> on a negative int32 is arithmetic on every compiler the
         * board and the host use (gcc documents it). */
        int32_t v = in[i] >> shift;
        out[i] = (int16_t)(v > INT16_MAX ? INT16_MAX : v < INT16_MIN ? INT16_MIN : v);
    }
}

void xz_pcm_to_i32(const int16_t *in, uint32_t n, int32_t *out) {
    uint32_t i;
    for (i = 0; i < n; i++) {
        out[i] = (int32_t)((uint32_t)(uint16_t)in[i] << 16);
    }
}

void xz_pcm_interleave2(const int16_t *a, const int16_t *b, uint32_t n, int16_t *out) {
    uint32_t i;
    for (i = 0; i < n; i++) {
        out[2 * i] = a[i];
        out[2 * i + 1] = b[i];
    }
}
