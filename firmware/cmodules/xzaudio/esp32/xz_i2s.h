/* The board's I2S in the three wirings of xz_engine.h (IDF 5
 * driver/i2s_std.h and driver/i2s_tdm.h). The codec task sees 16-bit
 * mono blocks whatever the wire carries: TDM slots are picked apart and
 * 32-bit slots converted here (core/xz_pcm). ESP-IDF only. */
#ifndef XZ_I2S_H
#define XZ_I2S_H

#include <stddef.h>
#include <stdint.h>

#include "xz_engine.h"

#define XZ_I2S_BLOCK_MS 10 /* one DMA frame: the codec task's tick */

int xz_i2s_open(const xz_pins_t *pins);
void xz_i2s_close(void);
/* Up to `frames` mic frames at the mic rate: the mic into mic[], and the
 * playback reference into ref[] when the wiring has one (ref may be NULL
 * otherwise). Blocks at most timeout_ms; returns the frames read. */
size_t xz_i2s_read(int16_t *mic, int16_t *ref, size_t frames, uint32_t timeout_ms);
/* Blocks at most timeout_ms; returns the samples written. */
size_t xz_i2s_write(const int16_t *src, size_t samples, uint32_t timeout_ms);
/* Re-clocks the speaker (MP3 files at 44.1 kHz, for instance). With one
 * controller (DUPLEX, TDM) the mic follows; in SIMPLEX it keeps its own. */
int xz_i2s_set_rate(uint32_t rate);

#endif
