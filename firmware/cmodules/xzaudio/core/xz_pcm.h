/* Sample-format helpers between the I2S wire and the engine's 16-bit
 * mono PCM: picking slots out of a TDM frame stream (ES7210), and the
 * 32-bit slots of codec-less boards (INMP441 microphone, MAX98357A
 * amplifier). Portable C99; the board's I2S glue and the host engine use
 * the same functions, so the host tests check what the board runs.
 */
#ifndef XZ_PCM_H
#define XZ_PCM_H

#include <stdint.h>

/* The INMP441 sends 24-bit samples left-aligned in 32-bit slots; taking
 * bits 12..27 (a shift of 12, saturated) gives it 24 dB over the top 16
 * bits, the gain xiaozhi-esp32's stock firmware reads it with. */
#define XZ_PCM_INMP441_SHIFT 12

/* out[i] = in[i * slots + slot] for i < frames (one slot of an
 * interleaved TDM stream). */
void xz_pcm_take_slot(const int16_t *in, uint32_t frames, uint32_t slots, uint32_t slot, int16_t *out);

/* 32-bit slots to 16-bit: arithmetic shift right, saturated to int16. */
void xz_pcm_from_i32(const int32_t *in, uint32_t n, uint32_t shift, int16_t *out);

/* 16-bit samples to 32-bit slots, the sample in the upper half (a
 * 32-bit I2S amplifier plays the top bits). */
void xz_pcm_to_i32(const int16_t *in, uint32_t n, int32_t *out);

/* out = a0 b0 a1 b1 ...: the channel-interleaved layout esp-sr's AFE is
 * fed ("MR": microphone, then playback reference). */
void xz_pcm_interleave2(const int16_t *a, const int16_t *b, uint32_t n, int16_t *out);

#endif
