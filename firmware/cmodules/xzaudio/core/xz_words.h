/* The speech engine's command table and event queue, portable: the
 * board's esp-sr engine and the unix port's stand-in keep their command
 * words and hand events to the binding through these, so the host tests
 * run the board's code for both.
 *
 * The table belongs to the MicroPython task (set, and word lookups for
 * events); the event queue is the core's SPSC ring: the detection task
 * posts, the MicroPython task pops. Storage is supplied by the caller.
 */
#ifndef XZ_WORDS_H
#define XZ_WORDS_H

#include <stdint.h>

#include "xz_ring.h"

#define XZ_WORDS_TEXT_MAX 64 /* bytes with the NUL: esp-sr's phrase limit is 63 */
#define XZ_WORDS_EVENTS 512  /* bytes of queue: ~36 events */

typedef struct {
    uint8_t kind;   /* XZ_SPEECH_WAKE or XZ_SPEECH_PHRASE (xz_speech.h) */
    int16_t id;     /* the command id; for a wake word its index in the model, from 1 */
    float score;    /* MultiNet's probability; < 0 when the engine gives none */
    float level_db; /* the input volume the AFE measured for this result, in dB */
} xz_speech_event_t;

typedef struct {
    int id;
    const char *text; /* what MultiNet is given: pinyin for Chinese, words for English */
    const char *word; /* what the event reports (the phrase as the app knows it) */
} xz_command_t;

typedef struct {
    int id;
    char text[XZ_WORDS_TEXT_MAX];
    char word[XZ_WORDS_TEXT_MAX];
} xz_word_t;

typedef struct {
    xz_word_t *words;
    int cap, n;
    xz_ring_t events;
    uint8_t ev_store[XZ_WORDS_EVENTS];
    uint32_t posted;
} xz_words_t;

void xz_words_init(xz_words_t *w, xz_word_t *store, int cap);
/* Copies the commands; -1 (nothing changed) when there are more than the
 * capacity, or a text or word is empty or longer than XZ_WORDS_TEXT_MAX - 1. */
int xz_words_set(xz_words_t *w, const xz_command_t *cmds, int n);
/* The word of command `id`, or NULL. */
const char *xz_words_word(const xz_words_t *w, int id);
/* 0, or -1 when the queue is full (the event is dropped and counted). */
int xz_words_post(xz_words_t *w, const xz_speech_event_t *ev);
int xz_words_pop(xz_words_t *w, xz_speech_event_t *ev); /* 1, or 0 when empty */
int xz_words_pending(const xz_words_t *w);

#endif
