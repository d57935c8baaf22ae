/* Single-producer single-consumer byte ring and a packet queue on top of it.
 *
 * The producer (I2S DMA task or codec task) and the consumer (MicroPython
 * task) may run on different cores, so the two indices are published with
 * acquire/release atomics and each side only ever writes its own index.
 * Storage is supplied by the caller: nothing here allocates.
 *
 * Limits: capacity must be a power of two between 2 and 2^30 bytes.
 * Packets are at most 65535 bytes (u16 length prefix).
 */
#ifndef XZ_RING_H
#define XZ_RING_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint8_t *buf;
    uint32_t mask;      /* capacity - 1 */
    uint32_t head;      /* total bytes ever written (producer owns) */
    uint32_t tail;      /* total bytes ever read (consumer owns) */
    uint32_t dropped;   /* bytes or packets refused because the ring was full */
    uint32_t underruns; /* reads that wanted more than was there */
} xz_ring_t;

/* Returns 0, or -1 when cap is not a power of two in range. */
int xz_ring_init(xz_ring_t *r, uint8_t *storage, uint32_t cap);
uint32_t xz_ring_capacity(const xz_ring_t *r);
uint32_t xz_ring_used(const xz_ring_t *r);
uint32_t xz_ring_free(const xz_ring_t *r);

/* Byte stream: writes what fits (the rest is counted in `dropped`) and
 * returns the number of bytes written; reads up to n bytes and returns
 * the number read (a short read counts one underrun). */
uint32_t xz_ring_write(xz_ring_t *r, const uint8_t *src, uint32_t n);
uint32_t xz_ring_read(xz_ring_t *r, uint8_t *dst, uint32_t n);

/* Packet queue: a packet goes in whole or not at all (a full queue drops
 * the newest packet and counts it), and comes out whole. */
int xz_pkt_push(xz_ring_t *r, const uint8_t *pkt, uint32_t len);
/* Length of the next packet, or -1 when the queue is empty. */
int xz_pkt_peek_len(const xz_ring_t *r);
/* Copies the next packet into dst. Returns its length, -1 when empty, or
 * -2 when dst is too small (the packet stays queued). */
int xz_pkt_pop(xz_ring_t *r, uint8_t *dst, uint32_t cap);

/* Discards the next packet; returns its length, or -1 when empty. */
int xz_pkt_skip(xz_ring_t *r);

#endif
