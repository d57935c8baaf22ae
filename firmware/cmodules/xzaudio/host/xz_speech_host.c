/* The speech engine of xz_speech.h on a host (the unix port): a stand-in
 * for esp-sr. It recognises nothing; what it would have heard is written
 * as lines to a file, and it runs everything around recognition the way
 * the board does, so the binding's event path, the command table and the
 * listening rule are the board's:
 *
 *   models   XZAUDIO_SR_MODELS: a folder laid out like esp-sr's model
 *            folder (what its srmodels.bin packs): one folder per model,
 *            named as esp-sr names them (wn9_nihaoxiaozhi_tts, mn7_cn),
 *            each with its _MODEL_INFO_ line. Wake words are read from
 *            that line as esp-sr reads them. Unset, or no WakeNet model:
 *            start() fails as the board's does with an empty partition.
 *   events   XZAUDIO_SPEECH: a file or FIFO, read from its end as lines
 *            arrive (a thread, every 10 ms):
 *              wake [SCORE [LEVEL_DB]]     WakeNet fired (SCORE defaults
 *                                          to none, as the board's AFE gives none)
 *              phrase SCORE TEXT           MultiNet recognised TEXT, which
 *                                          must be one of the command texts
 *                                          set (pinyin for Chinese)
 *            A line is heard only under xz_speech_hears(): not paused, and
 *            while the speaker sounds (host engine: until the audio it
 *            played would have been heard at its rate, plus the echo
 *            tail) only when the wiring has a reference. Lines not heard
 *            are counted (stats[2]); on the board that count is of blocks
 *            not fed.
 *
 * Command texts are checked as MultiNet takes them (Chinese: lowercase
 * pinyin syllables separated by single spaces; English: letters, spaces
 * and apostrophes); others are refused, by id, as esp-sr refuses them.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "xz_engine.h"
#include "xz_speech.h"
#include "xz_words.h"

#define NAME_MAX_ 64
#define WAKE_WORDS 3
#define LINE_MAX_ 256

/* The host engine's view of the speaker: 1 while what it played would
 * still be sounding (xz_engine_host.c). */
int xz_host_speaker_sounding(void);

static struct {
    pthread_t thread;
    pthread_mutex_t lock; /* the table against the reading thread's lookups */
    volatile int running, paused;
    int aec, en, fd;
    char wn_name[NAME_MAX_], mn_name[NAME_MAX_];
    char wake[WAKE_WORDS][XZ_WORDS_TEXT_MAX];
    int n_wake;
    xz_word_t store[XZ_SPEECH_MAX_COMMANDS];
    int refused[XZ_SPEECH_MAX_COMMANDS], n_refused;
    xz_words_t words;
    char line[LINE_MAX_];
    size_t line_len;
    uint32_t unheard, fed;
} T = {.lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1};

static void nap_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- the model folder ---- */

static int read_info(const char *dir, const char *name, char *out, size_t cap) {
    char path[512];
    FILE *f;
    size_t n;
    snprintf(path, sizeof(path), "%s/%s/_MODEL_INFO_", dir, name);
    f = fopen(path, "r");
    if (!f) return -1;
    n = fread(out, 1, cap - 1, f);
    fclose(f);
    out[n] = '\0';
    out[strcspn(out, "\r\n")] = '\0';
    return 0;
}

/* Every fourth '_' field from the third: the wake words, as esp-sr reads
 * "(type)_(version)_(word)_(window)_(threshold 90)_(threshold 95)_...". */
static void take_wake_words(char *info) {
    char *save = NULL, *tok = strtok_r(info, "_", &save);
    int i = 1;
    T.n_wake = 0;
    for (; tok && T.n_wake < WAKE_WORDS; tok = strtok_r(NULL, "_", &save), i++) {
        if (i % 4 == 3) {
            snprintf(T.wake[T.n_wake++], XZ_WORDS_TEXT_MAX, "%s", tok);
        }
    }
}

/* The first model named with `prefix` and containing `keyword` (any when NULL),
 * as esp_srmodel_filter picks. */
static int find_model(const char *dir, const char *prefix, const char *keyword, char *out) {
    DIR *d = opendir(dir);
    struct dirent *e;
    int found = 0;
    char info[LINE_MAX_];
    if (!d) return 0;
    while (!found && (e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0) continue;
        if (keyword && !strstr(e->d_name, keyword)) continue;
        if (strlen(e->d_name) >= NAME_MAX_ || read_info(dir, e->d_name, info, sizeof(info)) != 0) continue;
        strcpy(out, e->d_name);
        found = 1;
    }
    closedir(d);
    return found;
}

/* ---- event lines ---- */

static int text_fits_model(const char *s) {
    int space = 1;
    if (!*s) return 0;
    for (; *s; s++) {
        if (*s == ' ') {
            if (space) return 0; /* leading or double space */
            space = 1;
        } else if (islower((unsigned char)*s) || (T.en && (isupper((unsigned char)*s) || *s == '\''))) {
            space = 0;
        } else {
            return 0; /* digits, punctuation, Han characters: MultiNet takes none */
        }
    }
    return !space;
}

static int command_of(const char *text) {
    int i, j;
    for (i = 0; i < T.words.n; i++) {
        int ok = 1;
        for (j = 0; j < T.n_refused; j++) ok &= T.refused[j] != T.words.words[i].id;
        if (ok && strcmp(T.words.words[i].text, text) == 0) return T.words.words[i].id;
    }
    return -1;
}

static void hear(char *line) {
    char *save = NULL, *kind = strtok_r(line, " \t", &save), *a, *rest;
    xz_speech_event_t ev = {.score = -1.0f, .level_db = -30.0f};
    if (!kind) return;
    if (!xz_speech_hears(T.paused, T.aec, xz_host_speaker_sounding())) {
        T.unheard++;
        return;
    }
    if (strcmp(kind, "wake") == 0) {
        ev.kind = XZ_SPEECH_WAKE;
        ev.id = 1;
        if ((a = strtok_r(NULL, " \t", &save)) != NULL) ev.score = strtof(a, NULL);
        if ((a = strtok_r(NULL, " \t", &save)) != NULL) ev.level_db = strtof(a, NULL);
    } else if (strcmp(kind, "phrase") == 0 && T.mn_name[0]) {
        int id;
        a = strtok_r(NULL, " \t", &save);
        rest = save;
        if (!a || !rest) return;
        while (*rest == ' ' || *rest == '\t') rest++;
        pthread_mutex_lock(&T.lock);
        id = command_of(rest);
        pthread_mutex_unlock(&T.lock);
        if (id < 0) return; /* MultiNet only ever answers with a command it was given */
        ev.kind = XZ_SPEECH_PHRASE;
        ev.id = (int16_t)id;
        ev.score = strtof(a, NULL);
    } else {
        return;
    }
    xz_words_post(&T.words, &ev);
}

static void *reader(void *unused) {
    (void)unused;
    while (T.running) {
        char buf[512];
        ssize_t k = T.fd >= 0 ? read(T.fd, buf, sizeof(buf)) : 0;
        ssize_t i;
        if (k <= 0) {
            nap_ms(10);
            continue;
        }
        for (i = 0; i < k; i++) {
            if (buf[i] == '\n') {
                T.line[T.line_len] = '\0';
                hear(T.line);
                T.line_len = 0;
            } else if (T.line_len < LINE_MAX_ - 1) {
                T.line[T.line_len++] = buf[i];
            }
        }
    }
    return NULL;
}

/* ---- xz_speech.h ---- */

int xz_speech_start(const char *lang) {
    const char *dir = getenv("XZAUDIO_SR_MODELS"), *events = getenv("XZAUDIO_SPEECH");
    char info[LINE_MAX_];
    if (T.running) return 0;
    if (!xz_engine_running()) return XZ_SPEECH_ESTATE;
    T.wn_name[0] = T.mn_name[0] = '\0';
    if (!dir || !*dir) return XZ_SPEECH_ENOMODEL;
    if (!find_model(dir, "wn", "xiaozhi", T.wn_name) && !find_model(dir, "wn", NULL, T.wn_name)) {
        return XZ_SPEECH_ENOMODEL;
    }
    read_info(dir, T.wn_name, info, sizeof(info));
    take_wake_words(info);
    T.en = strcmp(lang, "en") == 0;
    if (!find_model(dir, "mn", T.en ? "en" : "cn", T.mn_name)) T.mn_name[0] = '\0';
    xz_words_init(&T.words, T.store, XZ_SPEECH_MAX_COMMANDS);
    T.n_refused = 0;
    T.aec = XZ_PINS_HAVE_REF(xz_engine_pins());
    T.paused = 0;
    T.line_len = 0;
    T.fd = events && *events ? open(events, O_RDONLY | O_NONBLOCK | O_CLOEXEC) : -1;
    if (T.fd >= 0) lseek(T.fd, 0, SEEK_END); /* what was said before the start was not heard */
    T.running = 1;
    if (pthread_create(&T.thread, NULL, reader, NULL) != 0) {
        T.running = 0;
        return XZ_SPEECH_ENOMEM;
    }
    return 0;
}

void xz_speech_stop(void) {
    if (!T.running) return;
    T.running = 0;
    pthread_join(T.thread, NULL);
    if (T.fd >= 0) close(T.fd);
    T.fd = -1;
    T.wn_name[0] = T.mn_name[0] = '\0';
}

void xz_speech_pause(int paused) {
    T.paused = paused;
}

int xz_speech_set_commands(const xz_command_t *cmds, int n, int *rejected, int cap) {
    int i, rc;
    if (!T.running) return XZ_SPEECH_ESTATE;
    pthread_mutex_lock(&T.lock);
    rc = xz_words_set(&T.words, cmds, n);
    T.n_refused = 0;
    for (i = 0; rc == 0 && T.mn_name[0] && i < n; i++) {
        if (!text_fits_model(cmds[i].text)) T.refused[T.n_refused++] = cmds[i].id;
    }
    pthread_mutex_unlock(&T.lock);
    if (rc != 0) return XZ_SPEECH_ENOMEM;
    for (i = 0; i < T.n_refused && i < cap; i++) rejected[i] = T.refused[i];
    return T.n_refused;
}

int xz_speech_event(xz_speech_event_t *out) {
    return T.words.words ? xz_words_pop(&T.words, out) : 0;
}

int xz_speech_event_pending(void) {
    return T.words.words && xz_words_pending(&T.words);
}

const char *xz_speech_word(const xz_speech_event_t *ev) {
    const char *w;
    if (ev->kind == XZ_SPEECH_WAKE) {
        return ev->id >= 1 && ev->id <= T.n_wake ? T.wake[ev->id - 1] : (T.n_wake ? T.wake[0] : "");
    }
    w = xz_words_word(&T.words, ev->id);
    return w ? w : "";
}

int xz_speech_running(void) {
    return T.running;
}

int xz_speech_aec(void) {
    return T.running && T.aec;
}

const char *xz_speech_wake_model(void) {
    return T.wn_name;
}

const char *xz_speech_command_model(void) {
    return T.mn_name;
}

void xz_speech_stats(uint32_t out[4]) {
    out[0] = T.words.posted;
    out[1] = T.words.events.dropped;
    out[2] = T.unheard;
    out[3] = T.fed;
}

void xz_speech_feed(const int16_t *mic, const int16_t *ref, uint32_t n, int playing) {
    (void)mic;
    (void)ref;
    (void)n;
    if (T.running && xz_speech_hears(T.paused, T.aec, playing)) T.fed++;
}
