#include "xz_resample.h"

#include <math.h>
#include <string.h>

#define HIST (XZ_RS_TAPS - 1)
#define PI_F 3.14159265358979f /* M_PI is not in strict C99 */

int xz_rs_init(xz_rs_t *r, uint32_t up, uint32_t down) {
    uint32_t n, len, big;
    float fc, mid;
    if (up < 1 || up > XZ_RS_MAX_UP || down < 1 || down > 3) {
        return -1;
    }
    memset(r, 0, sizeof(*r));
    r->up = up;
    r->down = down;
    len = XZ_RS_TAPS * up;
    big = up > down ? up : down;
    /* Cutoff in cycles per upsampled sample: just below the lower of the
     * two Nyquist frequencies, so nothing folds back when decimating. */
    fc = 0.46f / (float)big;
    mid = (float)(len - 1) / 2.0f;
    for (n = 0; n < len; n++) {
        float x = (float)n - mid;
        float s = x == 0.0f ? 2.0f * fc : sinf(2.0f * PI_F * fc * x) / (PI_F * x);
        float w = 0.42f - 0.5f * cosf(2.0f * PI_F * (float)n / (float)(len - 1))
                  + 0.08f * cosf(4.0f * PI_F * (float)n / (float)(len - 1));
        /* Gain `up` restores the level lost by zero-stuffing. */
        float c = s * w * (float)up * 32768.0f;
        r->coef[n] = (int16_t)(c >= 0 ? c + 0.5f : c - 0.5f);
    }
    return 0;
}

uint32_t xz_rs_max_out(const xz_rs_t *r, uint32_t n) {
    return (n * r->up + r->down - 1) / r->down + 1;
}

static int16_t sat16(int32_t v) {
    if (v > 32767) {
        return 32767;
    }
    if (v < -32768) {
        return -32768;
    }
    return (int16_t)v;
}

int xz_rs_process(xz_rs_t *r, const int16_t *in, uint32_t n, int16_t *out, uint32_t cap) {
    uint32_t produced = 0, limit = n * r->up;
    if (n > XZ_RS_MAX_IN || cap < xz_rs_max_out(r, n)) {
        return -1;
    }
    memcpy(r->work + HIST, in, n * sizeof(int16_t));
    while (r->acc < limit) {
        uint32_t idx = r->acc / r->up, ph = r->acc % r->up, k;
        const int16_t *x = r->work + HIST + idx;
        int64_t sum = 0; /* 64-bit: a full-scale square wave can exceed 2^31 */
        for (k = 0; k < XZ_RS_TAPS; k++) {
            sum += (int32_t)r->coef[ph + k * r->up] * x[-(int32_t)k];
        }
        out[produced++] = sat16((int32_t)((sum + (1 << 14)) >> 15));
        r->acc += r->down;
    }
    r->acc -= limit;
    /* Keep the newest HIST inputs as the history for the next call. */
    memmove(r->work, r->work + n, HIST * sizeof(int16_t));
    return (int)produced;
}
