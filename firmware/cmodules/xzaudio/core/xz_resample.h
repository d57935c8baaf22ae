/* Rational resampler for the two rate pairs the board needs: 24 kHz duplex
 * I2S -> 16 kHz Opus upstream (up=2, down=3) and 16 kHz -> 24 kHz
 * (up=3, down=2). Polyphase FIR, 32 taps per phase, Blackman-windowed sinc
 * cut at 92 % of the lower Nyquist; Q15 coefficients computed once at init
 * (floating point only there), integer-only per sample.
 *
 * Limits: up, down in 1..3; at most XZ_RS_MAX_IN input samples per call;
 * a call with n inputs yields floor or ceil of n*up/down outputs (the
 * fraction is carried over, so long runs are exact).
 */
#ifndef XZ_RESAMPLE_H
#define XZ_RESAMPLE_H

#include <stdint.h>

#define XZ_RS_TAPS 32
#define XZ_RS_MAX_UP 3
#define XZ_RS_MAX_IN 1440 /* 60 ms at 24 kHz */

typedef struct {
    uint32_t up, down;
    uint32_t acc; /* position of the next output, in upsampled samples */
    int16_t coef[XZ_RS_TAPS * XZ_RS_MAX_UP];
    int16_t work[XZ_RS_TAPS - 1 + XZ_RS_MAX_IN];
} xz_rs_t;

int xz_rs_init(xz_rs_t *r, uint32_t up, uint32_t down);
/* Largest number of outputs one call with n inputs can produce. */
uint32_t xz_rs_max_out(const xz_rs_t *r, uint32_t n);
/* Returns the number of samples written to out, or -1 when n is over the
 * limit or cap is below xz_rs_max_out(n). */
int xz_rs_process(xz_rs_t *r, const int16_t *in, uint32_t n, int16_t *out, uint32_t cap);

#endif
