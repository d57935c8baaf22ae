#include "xz_frame.h"

#include <string.h>

uint32_t xz_frame_samples(uint32_t rate, uint32_t ms) {
    uint64_t prod = (uint64_t)rate * ms;
    if (prod % 1000u) {
        return 0;
    }
    return (uint32_t)(prod / 1000u);
}

void xz_framer_init(xz_framer_t *f, int16_t *storage, uint32_t frame_samples) {
    f->buf = storage;
    f->frame_samples = frame_samples;
    f->fill = 0;
}

uint32_t xz_framer_feed(xz_framer_t *f, const int16_t *src, uint32_t n) {
    uint32_t room = f->frame_samples - f->fill;
    uint32_t k = n < room ? n : room;
    if (k) {
        memcpy(f->buf + f->fill, src, k * sizeof(int16_t));
        f->fill += k;
    }
    return k;
}

int xz_framer_full(const xz_framer_t *f) {
    return f->fill == f->frame_samples;
}

void xz_framer_take(xz_framer_t *f) {
    f->fill = 0;
}
