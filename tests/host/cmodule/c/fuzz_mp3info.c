/* Fuzzes the MP3 parser with mutated real files (given on the command
 * line) and synthetic frame sequences; each input sits in an exactly-sized
 * heap block, so any read past the end is an AddressSanitizer report. */
#include <string.h>

#include "fuzz_common.h"
#include "xz_mp3info.h"

#define MAXF 8
#define CAP (256 * 1024)

static uint8_t files[MAXF][CAP];
static size_t file_len[MAXF];
static uint8_t work[CAP + 4096];

/* A plausible stream: ID3 header with a random size, then random headers
 * (often valid) each followed by their frame length of random bytes. */
static size_t synth(uint8_t *b, size_t cap) {
    size_t n = 0;
    if (fz_below(2)) {
        uint32_t sz = fz_below(600);
        uint8_t h[10] = {'I', 'D', '3', 4, 0, (uint8_t)(fz_below(2) ? 0x10 : 0), (uint8_t)(sz >> 21 & 0x7F),
                         (uint8_t)(sz >> 14 & 0x7F), (uint8_t)(sz >> 7 & 0x7F), (uint8_t)(sz & 0x7F)};
        memcpy(b, h, 10);
        n = 10;
    }
    while (n + 4 < cap && fz_below(40)) {
        xz_mp3_frame_t f;
        uint8_t *h = b + n;
        h[0] = 0xFF;
        h[1] = (uint8_t)(0xE0 | fz_below(4) << 3 | (fz_below(4) ? 1u : fz_below(4)) << 1 | fz_below(2));
        h[2] = (uint8_t)fz_rand();
        h[3] = (uint8_t)fz_rand();
        n += 4;
        if (xz_mp3_parse_header(h, &f) == 0) {
            size_t k = f.length - 4;
            if (fz_below(8) == 0 && k > 40) {
                memcpy(b + n + 17, fz_below(2) ? "Xing" : "Info", 4);
            }
            while (k-- && n < cap) b[n++] = (uint8_t)fz_rand();
        }
    }
    return n;
}

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 2.0, end;
    int nfiles = 0, a;
    unsigned long iters = 0, parsed = 0;
    if (argc > 2) fz_state ^= strtoull(argv[2], NULL, 10) * 0x100000001B3ull;
    for (a = 3; a < argc && nfiles < MAXF; a++, nfiles++) {
        file_len[nfiles] = fz_read_file(argv[a], files[nfiles], CAP);
    }
    end = fz_now() + secs;
    while (fz_now() < end) {
        uint32_t j;
        for (j = 0; j < 16; j++, iters++) {
            size_t len;
            xz_mp3_info_t info;
            uint8_t *exact;
            if (nfiles && fz_below(3)) {
                int f = (int)fz_below((uint32_t)nfiles);
                len = file_len[f];
                memcpy(work, files[f], len);
                fz_mutate(work, &len, sizeof(work));
            } else {
                len = synth(work, CAP);
                fz_mutate(work, &len, sizeof(work));
            }
            exact = malloc(len ? len : 1);
            memcpy(exact, work, len);
            if (xz_mp3_info(exact, len, &info) == 0) {
                parsed++;
                if (info.audio_offset >= len || info.sample_rate < 8000 || info.sample_rate > 48000) {
                    fprintf(stderr, "implausible result: offset %u of %zu, rate %u\n",
                            info.audio_offset, len, info.sample_rate);
                    return 1;
                }
            }
            free(exact);
        }
    }
    printf("fuzz_mp3info iterations=%lu parsed=%lu\n", iters, parsed);
    return 0;
}
