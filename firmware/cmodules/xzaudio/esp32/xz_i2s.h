/* I2S standard (Philips) full duplex with MCLK, IDF 5 driver/i2s_std.h.
 * One controller, TX and RX sharing BCLK/WS/MCLK as the ES8311 codec
 * wants; 16-bit mono samples. ESP-IDF only. */
#ifndef XZ_I2S_H
#define XZ_I2S_H

#include <stddef.h>
#include <stdint.h>

#include "xz_engine.h"

#define XZ_I2S_BLOCK_MS 10 /* one DMA frame: the codec task's tick */

int xz_i2s_open(const xz_pins_t *pins);
void xz_i2s_close(void);
/* Both calls block at most timeout_ms; they return the bytes moved. */
size_t xz_i2s_read(int16_t *dst, size_t samples, uint32_t timeout_ms);
size_t xz_i2s_write(const int16_t *src, size_t samples, uint32_t timeout_ms);
/* Re-clocks both directions (MP3 files at 44.1 kHz, for instance). */
int xz_i2s_set_rate(uint32_t rate);

#endif
