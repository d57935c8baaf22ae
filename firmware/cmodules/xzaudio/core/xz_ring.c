#include "xz_ring.h"

#include <string.h>

/* GCC builtins exist on both the host gcc and the Xtensa toolchain; they
 * give the ordering the two cores of the ESP32-S3 need without an RTOS. */
#define LOAD_ACQ(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE_REL(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define LOAD_RLX(p) __atomic_load_n((p), __ATOMIC_RELAXED)

int xz_ring_init(xz_ring_t *r, uint8_t *storage, uint32_t cap) {
    if (cap < 2 || cap > (1u << 30) || (cap & (cap - 1)) != 0 || storage == NULL) {
        return -1;
    }
    r->buf = storage;
    r->mask = cap - 1;
    r->head = r->tail = 0;
    r->dropped = r->underruns = 0;
    return 0;
}

uint32_t xz_ring_capacity(const xz_ring_t *r) {
    return r->mask + 1;
}

uint32_t xz_ring_used(const xz_ring_t *r) {
    return LOAD_ACQ(&r->head) - LOAD_ACQ(&r->tail);
}

uint32_t xz_ring_free(const xz_ring_t *r) {
    return xz_ring_capacity(r) - xz_ring_used(r);
}

/* Copy in/out at a logical position, split at the wrap point. */
static void copy_in(xz_ring_t *r, uint32_t pos, const uint8_t *src, uint32_t n) {
    uint32_t off = pos & r->mask;
    uint32_t first = xz_ring_capacity(r) - off;
    if (first > n) {
        first = n;
    }
    memcpy(r->buf + off, src, first);
    memcpy(r->buf, src + first, n - first);
}

static void copy_out(const xz_ring_t *r, uint32_t pos, uint8_t *dst, uint32_t n) {
    uint32_t off = pos & r->mask;
    uint32_t first = xz_ring_capacity(r) - off;
    if (first > n) {
        first = n;
    }
    memcpy(dst, r->buf + off, first);
    memcpy(dst + first, r->buf, n - first);
}

uint32_t xz_ring_write(xz_ring_t *r, const uint8_t *src, uint32_t n) {
    uint32_t head = LOAD_RLX(&r->head);
    uint32_t space = xz_ring_capacity(r) - (head - LOAD_ACQ(&r->tail));
    uint32_t k = n < space ? n : space;
    if (k) {
        copy_in(r, head, src, k);
        STORE_REL(&r->head, head + k);
    }
    if (k < n) {
        r->dropped += n - k;
    }
    return k;
}

uint32_t xz_ring_read(xz_ring_t *r, uint8_t *dst, uint32_t n) {
    uint32_t tail = LOAD_RLX(&r->tail);
    uint32_t avail = LOAD_ACQ(&r->head) - tail;
    uint32_t k = n < avail ? n : avail;
    if (k) {
        copy_out(r, tail, dst, k);
        STORE_REL(&r->tail, tail + k);
    }
    if (k < n) {
        r->underruns++;
    }
    return k;
}

int xz_pkt_push(xz_ring_t *r, const uint8_t *pkt, uint32_t len) {
    uint32_t head = LOAD_RLX(&r->head);
    uint32_t space = xz_ring_capacity(r) - (head - LOAD_ACQ(&r->tail));
    uint8_t hdr[2];
    if (len > 0xFFFFu || len + 2 > space) {
        r->dropped++;
        return -1;
    }
    hdr[0] = (uint8_t)(len >> 8);
    hdr[1] = (uint8_t)len;
    copy_in(r, head, hdr, 2);
    copy_in(r, head + 2, pkt, len);
    /* Publish header and body together: the consumer never sees half. */
    STORE_REL(&r->head, head + 2 + len);
    return 0;
}

int xz_pkt_peek_len(const xz_ring_t *r) {
    uint32_t tail = LOAD_RLX(&r->tail);
    uint8_t hdr[2];
    if (LOAD_ACQ(&r->head) - tail < 2) {
        return -1;
    }
    copy_out(r, tail, hdr, 2);
    return (hdr[0] << 8) | hdr[1];
}

int xz_pkt_pop(xz_ring_t *r, uint8_t *dst, uint32_t cap) {
    int len = xz_pkt_peek_len(r);
    uint32_t tail;
    if (len < 0) {
        r->underruns++;
        return -1;
    }
    if ((uint32_t)len > cap) {
        return -2;
    }
    tail = LOAD_RLX(&r->tail);
    copy_out(r, tail + 2, dst, (uint32_t)len);
    STORE_REL(&r->tail, tail + 2 + (uint32_t)len);
    return len;
}

int xz_pkt_skip(xz_ring_t *r) {
    int len = xz_pkt_peek_len(r);
    if (len >= 0) {
        STORE_REL(&r->tail, LOAD_RLX(&r->tail) + 2u + (uint32_t)len);
    }
    return len;
}
