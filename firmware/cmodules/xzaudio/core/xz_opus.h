/* Opus encoder/decoder with the xiaozhi settings, over the libopus API.
 *
 * Up (mic -> server): mono, VOIP application, VBR on, DTX on, complexity 0,
 * bitrate left to libopus (OPUS_AUTO), so a packet from here is bit-identical
 * to one from any libopus with the same settings. Down (server -> speaker):
 * mono decoder at the rate the server announced (24 kHz by default).
 *
 * State lives in caller memory of xz_enc_size()/xz_dec_size() bytes
 * (measured sizes in docs/cmodule.md), so the binding can put it in
 * PSRAM and nothing allocates per frame. Every call below is reentrant
 * per state; one state must not be used by two tasks at once.
 */
#ifndef XZ_OPUS_H
#define XZ_OPUS_H

#include <stddef.h>
#include <stdint.h>

/* Errors of our own; libopus errors (-1..-7) are passed through. */
#define XZ_ERR_ARG (-100)   /* bad rate, frame length or buffer */
#define XZ_ERR_FRAME (-101) /* pcm is not exactly one frame */
#define XZ_ERR_SPACE (-102) /* output buffer too small for the packet's samples */

#define XZ_OPUS_MAX_PACKET 1276 /* largest single-frame Opus packet (RFC 6716) */

typedef struct xz_enc xz_enc_t;
typedef struct xz_dec xz_dec_t;

size_t xz_enc_size(void);
/* rate: 8000, 12000, 16000, 24000 or 48000; frame_ms: 10, 20, 40 or 60. */
int xz_enc_init(xz_enc_t *e, uint32_t rate, uint32_t frame_ms);
uint32_t xz_enc_frame_samples(const xz_enc_t *e);
/* Encodes exactly one frame; returns the packet length (1..cap; with DTX a
 * silent frame may come out as 1-2 bytes) or a negative error. */
int xz_enc_encode(xz_enc_t *e, const int16_t *pcm, uint32_t n_samples,
                  uint8_t *out, uint32_t cap);

size_t xz_dec_size(void);
int xz_dec_init(xz_dec_t *d, uint32_t rate);
/* Decodes one packet into out (cap samples). A NULL or empty packet asks for
 * loss concealment of one frame as long as the previous one. Returns the
 * number of samples written or a negative error; never writes past cap. */
int xz_dec_decode(xz_dec_t *d, const uint8_t *pkt, uint32_t len,
                  int16_t *out, uint32_t cap);

#endif
