/* Deterministic random loop shared by the sanitizer-built fuzz harnesses:
 * same seed, same inputs, so a failure can be replayed exactly.
 * Usage of every harness: <harness> SECONDS SEED [seed files...] */
#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t fz_state = 0x9E3779B97F4A7C15ull;

static inline uint32_t fz_rand(void) {
    /* xorshift64*: tiny, fast and good enough to pick mutations. */
    fz_state ^= fz_state >> 12;
    fz_state ^= fz_state << 25;
    fz_state ^= fz_state >> 27;
    return (uint32_t)((fz_state * 2685821657736338717ull) >> 32);
}

static inline uint32_t fz_below(uint32_t n) {
    return n ? fz_rand() % n : 0;
}

static inline double fz_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Mutates buf[0..*len) in place (cap bytes available): bit flips, byte
 * sets, truncation, growth with random bytes, chunk duplication. */
static inline void fz_mutate(uint8_t *buf, size_t *len, size_t cap) {
    uint32_t rounds = 1 + fz_below(8), i;
    for (i = 0; i < rounds; i++) {
        size_t n = *len;
        switch (fz_below(6)) {
        case 0:
            if (n) buf[fz_below((uint32_t)n)] ^= (uint8_t)(1u << fz_below(8));
            break;
        case 1:
            if (n) buf[fz_below((uint32_t)n)] = (uint8_t)fz_rand();
            break;
        case 2:
            if (n) *len = fz_below((uint32_t)n + 1);
            break;
        case 3: {
            size_t add = fz_below(64);
            while (add-- && *len < cap) buf[(*len)++] = (uint8_t)fz_rand();
            break;
        }
        case 4:
            if (n) buf[fz_below((uint32_t)n)] = (uint8_t)(fz_below(2) ? 0xFF : 0x00);
            break;
        default:
            if (n > 8 && *len + 64 <= cap) {
                size_t from = fz_below((uint32_t)n - 4), k = 1 + fz_below(64), j;
                if (from + k > n) k = n - from;
                for (j = 0; j < k; j++) buf[(*len)++] = buf[from + j];
            }
            break;
        }
    }
}

static inline size_t fz_read_file(const char *path, uint8_t *buf, size_t cap) {
    FILE *fp = fopen(path, "rb");
    size_t n;
    if (!fp) {
        fprintf(stderr, "cannot open %s\n", path);
        exit(2);
    }
    n = fread(buf, 1, cap, fp);
    fclose(fp);
    return n;
}

#endif
