/* Frame assembler: I2S DMA hands over blocks of any size; the encoder wants
 * exactly one frame (60 ms = 960 samples at 16 kHz). Samples are copied
 * into caller-owned storage until a frame is full.
 *
 * Use: while (n) { k = xz_framer_feed(f, src, n); src += k; n -= k;
 *                  if (xz_framer_full(f)) { encode(f->buf); xz_framer_take(f); } }
 */
#ifndef XZ_FRAME_H
#define XZ_FRAME_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int16_t *buf;
    uint32_t frame_samples;
    uint32_t fill;
} xz_framer_t;

/* Samples in one frame of `ms` milliseconds at `rate` Hz, or 0 when the
 * duration is not a whole number of samples. */
uint32_t xz_frame_samples(uint32_t rate, uint32_t ms);

void xz_framer_init(xz_framer_t *f, int16_t *storage, uint32_t frame_samples);
/* Copies up to n samples, stopping when the frame is full; returns the
 * number of samples consumed (0 while a full frame waits to be taken). */
uint32_t xz_framer_feed(xz_framer_t *f, const int16_t *src, uint32_t n);
int xz_framer_full(const xz_framer_t *f);
/* Marks the full frame consumed so the next one can start. */
void xz_framer_take(xz_framer_t *f);

#endif
