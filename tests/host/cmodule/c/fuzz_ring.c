/* Random operation sequences on the ring, the packet queue, the frame
 * assembler and the resampler, checked against a plain model (a flat FIFO)
 * under the sanitizers: every byte comes out once, in order, or is counted
 * as dropped. */
#include <string.h>

#include "fuzz_common.h"
#include "xz_frame.h"
#include "xz_resample.h"
#include "xz_ring.h"

#define MODEL (1u << 20)

static uint8_t model[MODEL];
static uint32_t m_head, m_tail;

static int check_ring(void) {
    uint32_t cap = 2u << fz_below(12), ops;
    uint8_t *store = malloc(cap), src[8192], dst[8192];
    xz_ring_t r;
    m_head = m_tail = 0;
    if (xz_ring_init(&r, store, cap) != 0) return 1;
    for (ops = 0; ops < 400; ops++) {
        uint32_t n = fz_below(cap * 2 < 8192 ? cap * 2 : 8192), i, k;
        if (fz_below(2)) {
            uint32_t space = cap - (m_head - m_tail), want;
            for (i = 0; i < n; i++) src[i] = (uint8_t)fz_rand();
            k = xz_ring_write(&r, src, n);
            want = n < space ? n : space;
            if (k != want) return 1;
            for (i = 0; i < k; i++) model[(m_head + i) % MODEL] = src[i];
            m_head += k;
        } else {
            k = xz_ring_read(&r, dst, n);
            if (k != (n < m_head - m_tail ? n : m_head - m_tail)) return 1;
            for (i = 0; i < k; i++) if (dst[i] != model[(m_tail + i) % MODEL]) return 1;
            m_tail += k;
        }
        if (xz_ring_used(&r) != m_head - m_tail) return 1;
    }
    free(store);
    return 0;
}

static int check_packets(void) {
    uint32_t cap = 64u << fz_below(8), ops, qn = 0, qhead = 0;
    uint8_t *store = malloc(cap), pkt[2048], out[2048];
    static uint32_t lens[4096];
    static uint8_t first[4096];
    xz_ring_t r;
    xz_ring_init(&r, store, cap);
    for (ops = 0; ops < 400; ops++) {
        if (fz_below(2)) {
            uint32_t len = fz_below(300), i;
            int fits = len + 2 <= xz_ring_free(&r);
            for (i = 0; i < len; i++) pkt[i] = (uint8_t)(qhead + qn + i);
            if ((xz_pkt_push(&r, pkt, len) == 0) != fits) return 1;
            if (fits) {
                lens[(qhead + qn) % 4096] = len;
                first[(qhead + qn) % 4096] = (uint8_t)(qhead + qn);
                qn++;
            }
        } else {
            uint32_t cap_out = fz_below(320);
            int n = xz_pkt_pop(&r, out, cap_out);
            if (qn == 0) {
                if (n != -1) return 1;
            } else if (lens[qhead % 4096] > cap_out) {
                if (n != -2) return 1;
            } else {
                if ((uint32_t)n != lens[qhead % 4096]) return 1;
                if (n && out[0] != first[qhead % 4096]) return 1;
                qhead++;
                qn--;
            }
        }
    }
    free(store);
    return 0;
}

static int check_framer_resampler(void) {
    static int16_t store[1440], in[XZ_RS_MAX_IN], out[XZ_RS_MAX_IN * XZ_RS_MAX_UP + 2];
    static xz_rs_t rs;
    xz_framer_t f;
    uint32_t fs = 1 + fz_below(1440), i, got = 0, fed = 0;
    uint64_t rs_in = 0, rs_out = 0;
    uint32_t up = 1 + fz_below(3), down = 1 + fz_below(3);
    xz_framer_init(&f, store, fs);
    for (i = 0; i < 50; i++) {
        uint32_t n = fz_below(XZ_RS_MAX_IN + 1), off = 0, k;
        int m;
        for (k = 0; k < n; k++) in[k] = (int16_t)fz_rand();
        while (off < n) {
            k = xz_framer_feed(&f, in + off, n - off);
            off += k;
            fed += k;
            if (xz_framer_full(&f)) {
                got += fs;
                xz_framer_take(&f);
            } else if (k == 0) {
                return 1;
            }
        }
        if (i == 0) xz_rs_init(&rs, up, down);
        m = xz_rs_process(&rs, in, n, out, (uint32_t)(sizeof(out) / sizeof(out[0])));
        if (m < 0 || (uint32_t)m > xz_rs_max_out(&rs, n)) return 1;
        rs_in += n;
        rs_out += (uint32_t)m;
    }
    if (fed - got != f.fill) return 1;
    /* Over a long run the output count tracks in*up/down to one sample. */
    if (rs_out * down > rs_in * up + down || rs_out * down + down < rs_in * up) return 1;
    return 0;
}

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 2.0, end;
    unsigned long iters = 0;
    if (argc > 2) fz_state ^= strtoull(argv[2], NULL, 10) * 0x100000001B3ull;
    end = fz_now() + secs;
    while (fz_now() < end) {
        int bad = check_ring() ? 1 : check_packets() ? 2 : check_framer_resampler() ? 3 : 0;
        if (bad) {
            fprintf(stderr, "model mismatch in check %d after %lu iterations\n", bad, iters);
            return 1;
        }
        iters++;
    }
    printf("fuzz_ring iterations=%lu\n", iters);
    return 0;
}
