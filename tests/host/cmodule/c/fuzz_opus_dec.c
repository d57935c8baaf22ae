/* Fuzzes the packet decoder: real packets from our encoder, then mutated
 * and random ones, decoded into exactly-sized heap buffers so that any
 * write past the caller's capacity is an AddressSanitizer report. */
#include <math.h>
#include <string.h>

#include "fuzz_common.h"
#include "xz_opus.h"

#define SEEDS 32

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 2.0, end;
    static uint8_t seeds[SEEDS][XZ_OPUS_MAX_PACKET];
    static size_t seed_len[SEEDS];
    static uint8_t pkt[XZ_OPUS_MAX_PACKET + 64];
    static int16_t pcm[1440];
    xz_enc_t *enc = malloc(xz_enc_size());
    xz_dec_t *dec = malloc(xz_dec_size());
    unsigned long iters = 0, decoded = 0;
    uint32_t i, rate = 24000;
    if (argc > 2) fz_state ^= strtoull(argv[2], NULL, 10) * 0x100000001B3ull;
    if (!enc || !dec || xz_enc_init(enc, rate, 60) != 0 || xz_dec_init(dec, rate) != 0) {
        fprintf(stderr, "init failed\n");
        return 2;
    }
    /* Seed corpus: tones, noise and silence, so mutations start from every
     * packet shape (SILK, CELT, hybrid, DTX). */
    for (i = 0; i < SEEDS; i++) {
        uint32_t k;
        for (k = 0; k < 1440; k++) {
            double t = (double)(i * 1440 + k) / rate;
            int v = i % 4 == 0 ? 0 : i % 4 == 1 ? (int)(9000 * sin(2 * 3.14159 * 300 * (1 + i) * t))
                                 : (int)fz_below(20000) - 10000;
            pcm[k] = (int16_t)v;
        }
        int n = xz_enc_encode(enc, pcm, 1440, seeds[i], XZ_OPUS_MAX_PACKET);
        if (n < 0) {
            fprintf(stderr, "seed encode failed %d\n", n);
            return 2;
        }
        seed_len[i] = (size_t)n;
    }
    end = fz_now() + secs;
    while (fz_now() < end) {
        uint32_t j;
        for (j = 0; j < 64; j++, iters++) {
            size_t len;
            uint32_t cap;
            int16_t *out;
            int n;
            if (fz_below(4) == 0) {
                len = fz_below(sizeof(pkt));
                for (i = 0; i < len; i++) pkt[i] = (uint8_t)fz_rand();
            } else {
                uint32_t s = fz_below(SEEDS);
                len = seed_len[s];
                memcpy(pkt, seeds[s], len);
                fz_mutate(pkt, &len, sizeof(pkt));
            }
            cap = fz_below(4) == 0 ? 1 + fz_below(5760) : 1440;
            out = malloc(cap * sizeof(int16_t));
            /* An exactly-sized packet copy makes over-reads visible too. */
            uint8_t *p = malloc(len ? len : 1);
            memcpy(p, pkt, len);
            n = xz_dec_decode(dec, fz_below(16) == 0 ? NULL : p, (uint32_t)len, out, cap);
            if (n > (int)cap) {
                fprintf(stderr, "decoder wrote %d samples into %u\n", n, cap);
                return 1;
            }
            if (n > 0) decoded++;
            free(p);
            free(out);
        }
        if (fz_below(8) == 0) xz_dec_init(dec, fz_below(2) ? 24000 : 16000);
    }
    printf("fuzz_opus_dec iterations=%lu decoded=%lu\n", iters, decoded);
    free(enc);
    free(dec);
    return 0;
}
