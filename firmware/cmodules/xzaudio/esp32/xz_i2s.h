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

/* The wire format on the shared controller (DUPLEX, TDM). ESP-IDF makes
 * RX a slave of TX's BCLK and WS there (i2s_std.c / i2s_tdm.c, "Force to
 * set rx as slave"), so both directions must count the same BCLKs per
 * frame: the ES7210's 4 x 16-bit TDM frame is 64 BCLK, so TX carries its
 * 16-bit samples in 32-bit slots (2 x 32 = 64), as esp_codec_dev widens
 * the playback side next to a 4-channel input (audio_codec_data_i2s.c).
 * hal/host/i2s_model.py reads these three (a host test compares). */
#define XZ_I2S_TX_DATA_BITS 16
#define XZ_I2S_TX_SLOT_BITS 32
#define XZ_I2S_RX_SLOT_BITS 16

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
