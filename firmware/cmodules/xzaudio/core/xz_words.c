#include "xz_words.h"

#include <string.h>

void xz_words_init(xz_words_t *w, xz_word_t *store, int cap) {
    w->words = store;
    w->cap = cap;
    w->n = 0;
    w->posted = 0;
    xz_ring_init(&w->events, w->ev_store, XZ_WORDS_EVENTS);
}

static int fits(const char *s) {
    size_t len = s ? strlen(s) : 0;
    return len > 0 && len < XZ_WORDS_TEXT_MAX;
}

int xz_words_set(xz_words_t *w, const xz_command_t *cmds, int n) {
    int i;
    if (n < 0 || n > w->cap) return -1;
    for (i = 0; i < n; i++) {
        if (!fits(cmds[i].text) || !fits(cmds[i].word)) return -1;
    }
    for (i = 0; i < n; i++) {
        w->words[i].id = cmds[i].id;
        strcpy(w->words[i].text, cmds[i].text);
        strcpy(w->words[i].word, cmds[i].word);
    }
    w->n = n;
    return 0;
}

const char *xz_words_word(const xz_words_t *w, int id) {
    int i;
    for (i = 0; i < w->n; i++) {
        if (w->words[i].id == id) return w->words[i].word;
    }
    return NULL;
}

int xz_words_post(xz_words_t *w, const xz_speech_event_t *ev) {
    if (xz_pkt_push(&w->events, (const uint8_t *)ev, sizeof(*ev)) != 0) return -1;
    w->posted++;
    return 0;
}

int xz_words_pop(xz_words_t *w, xz_speech_event_t *ev) {
    return xz_pkt_pop(&w->events, (uint8_t *)ev, sizeof(*ev)) == (int)sizeof(*ev);
}

int xz_words_pending(const xz_words_t *w) {
    return xz_pkt_peek_len(&w->events) >= 0;
}
