/* The speech engine on the board: esp-sr (declared in idf_component.yml,
 * not vendored). Two tasks of its own:
 *
 *   feed    the codec task's 16 kHz blocks (mic, or mic + reference
 *           interleaved, "MR") from a PSRAM ring, one AFE feed chunk at a
 *           time, into afe->feed (echo cancellation runs here).
 *   detect  afe->fetch: WakeNet's verdict comes with each result; the
 *           cleaned mono audio then goes to MultiNet for the command
 *           words. Events go to the queue the binding polls.
 *
 * The AFE is esp-sr's speech-recognition type in its low-cost mode, with
 * AEC only when the wiring has a reference, noise suppression and VAD;
 * its memory mostly in PSRAM. MultiNet runs on every fetched chunk while
 * it has command words (continuous recognition: after a result or a
 * timeout its state is cleaned and it listens again). Nothing here runs
 * on the host: the unix port uses ../host/xz_speech_host.c.
 */
#include "xz_speech.h"

#include <string.h>

#include "esp_afe_config.h"
#include "esp_afe_sr_iface.h"
#include "esp_afe_sr_models.h"
#include "esp_heap_caps.h"
#include "esp_log.h"
#include "esp_mn_iface.h"
#include "esp_mn_models.h"
#include "esp_mn_speech_commands.h"
#include "esp_wn_iface.h"
#include "esp_wn_models.h"
#include "freertos/FreeRTOS.h"
#include "freertos/semphr.h"
#include "freertos/task.h"
#include "model_path.h"

#include "xz_engine.h"
#include "xz_pcm.h"
#include "xz_ring.h"
#include "xz_words.h"

#define TAG "xz_speech"
#define PARTITION "model"  /* esp-sr's model partition (partitions.csv) */
#define FEED_STACK (8 * 1024)
#define FEED_PRIO 7        /* under the codec task (8): it must never starve I2S */
#define FEED_CORE 1
#define DETECT_STACK (12 * 1024)
#define DETECT_PRIO 5
#define DETECT_CORE 0      /* beside Wi-Fi and the MP3 task, off the codec task's core */
#define PCM_RING (32 * 1024) /* ~0.5 s of "MR" frames: rides over a slow detection step */
#define BLOCK_MAX 480
#define MN_TIMEOUT_MS 6000 /* MultiNet's detection window, after which it is cleaned */
#define WAKE_WORDS 3       /* esp-sr's AFE_MAX_WAKEWORD_NUM */
#define APPLY_WAIT_MS 5000

static struct {
    volatile int running, paused, reset;
    int aec, channels, feed_chunk;
    srmodel_list_t *models;
    const esp_afe_sr_iface_t *afe;
    esp_afe_sr_data_t *afe_data;
    esp_mn_iface_t *mn;
    model_iface_data_t *mn_data;
    char wn_name[MODEL_NAME_MAX_LENGTH], mn_name[MODEL_NAME_MAX_LENGTH];
    char wake[WAKE_WORDS][XZ_WORDS_TEXT_MAX];
    int n_wake;
    xz_ring_t pcm;
    uint8_t *pcm_store;
    int16_t *feed_buf;
    int16_t pair[2 * BLOCK_MAX];
    xz_words_t words;
    xz_word_t *word_store;
    /* A command change, applied by the detection task (MultiNet's calls
     * must not race its detect). */
    volatile int apply;
    int rejected[XZ_SPEECH_MAX_COMMANDS], n_rejected;
    SemaphoreHandle_t applied, feed_lock, done;
    TaskHandle_t feed_task, detect_task;
    uint32_t unheard, fed;
} S;

static void *psram(size_t n) {
    void *p = heap_caps_calloc(1, n, MALLOC_CAP_SPIRAM | MALLOC_CAP_8BIT);
    return p ? p : heap_caps_calloc(1, n, MALLOC_CAP_8BIT);
}

/* ---- from the codec task ---- */

void xz_speech_feed(const int16_t *mic, const int16_t *ref, uint32_t n, int playing) {
    const int16_t *src = mic;
    uint32_t bytes = n * sizeof(int16_t);
    if (!S.running || n > BLOCK_MAX) return;
    if (!xz_speech_hears(S.paused, S.aec, playing)) {
        S.unheard++;
        return;
    }
    if (S.aec) {
        /* Without a reference sample the AFE cannot cancel: feed "MR" only
         * when the wiring gave both. */
        if (!ref) return;
        xz_pcm_interleave2(mic, ref, n, S.pair);
        src = S.pair;
        bytes *= 2;
    }
    if (xz_ring_free(&S.pcm) < bytes) {
        S.pcm.dropped++; /* whole blocks or none: the channels stay in step */
        return;
    }
    xz_ring_write(&S.pcm, (const uint8_t *)src, bytes);
    S.fed++;
}

/* ---- the feed task ---- */

static void feed_task(void *unused) {
    uint32_t chunk = (uint32_t)(S.feed_chunk * S.channels) * sizeof(int16_t);
    (void)unused;
    while (S.running) {
        if (xz_ring_used(&S.pcm) < chunk) {
            vTaskDelay(1); /* one tick: about one I2S block at 100 Hz */
            continue;
        }
        xz_ring_read(&S.pcm, (uint8_t *)S.feed_buf, chunk);
        xSemaphoreTake(S.feed_lock, portMAX_DELAY);
        S.afe->feed(S.afe_data, S.feed_buf);
        xSemaphoreGive(S.feed_lock);
    }
    xSemaphoreGive(S.done);
    vTaskDelete(NULL);
}

/* ---- the detection task ---- */

static void apply_commands(void) {
    int i;
    esp_mn_error_t *err;
    S.n_rejected = 0;
    esp_mn_commands_clear();
    for (i = 0; i < S.words.n; i++) {
        const xz_word_t *w = &S.words.words[i];
        if (esp_mn_commands_add(w->id, w->text) != ESP_OK) {
            S.rejected[S.n_rejected++] = w->id; /* not in the form this model takes */
        }
    }
    err = esp_mn_commands_update();
    for (i = 0; err && i < err->num && S.n_rejected < XZ_SPEECH_MAX_COMMANDS; i++) {
        S.rejected[S.n_rejected++] = err->phrases[i]->command_id;
    }
    S.mn->clean(S.mn_data);
}

static void post(uint8_t kind, int id, float score, float level) {
    xz_speech_event_t ev = {.kind = kind, .id = (int16_t)id, .score = score, .level_db = level};
    xz_words_post(&S.words, &ev);
}

static void detect(const afe_fetch_result_t *res) {
    esp_mn_state_t st;
    if (res->wakeup_state == WAKENET_DETECTED) {
        /* The AFE says only that WakeNet crossed its threshold: no score. */
        post(XZ_SPEECH_WAKE, res->wake_word_index, -1.0f, res->data_volume);
        if (S.mn_data) S.mn->clean(S.mn_data); /* a phrase does not run across a wake word */
        return;
    }
    if (!S.mn_data || !S.words.n) return;
    st = S.mn->detect(S.mn_data, res->data);
    if (st == ESP_MN_STATE_DETECTED) {
        esp_mn_results_t *r = S.mn->get_results(S.mn_data);
        if (r->num > 0) post(XZ_SPEECH_PHRASE, r->command_id[0], r->prob[0], res->data_volume);
        S.mn->clean(S.mn_data);
    } else if (st == ESP_MN_STATE_TIMEOUT) {
        S.mn->clean(S.mn_data);
    }
}

static void detect_task(void *unused) {
    (void)unused;
    while (S.running) {
        afe_fetch_result_t *res;
        if (S.apply) {
            if (S.mn_data) apply_commands();
            S.apply = 0;
            xSemaphoreGive(S.applied);
        }
        if (S.reset) {
            /* After a pause: the ring's old audio is not what is said now.
             * Reset with the feed side held, between two fetches. */
            xSemaphoreTake(S.feed_lock, portMAX_DELAY);
            S.afe->reset_buffer(S.afe_data);
            xSemaphoreGive(S.feed_lock);
            if (S.mn_data) S.mn->clean(S.mn_data);
            S.reset = 0;
        }
        res = S.afe->fetch_with_delay(S.afe_data, pdMS_TO_TICKS(100));
        if (!res || res->ret_value == ESP_FAIL || !res->data) continue; /* nothing fed (paused) */
        detect(res);
    }
    xSemaphoreGive(S.done);
    vTaskDelete(NULL);
}

/* ---- setup ---- */

static void take_wake_words(void) {
    char *words = esp_srmodel_get_wake_words(S.models, S.wn_name);
    const char *p = words;
    S.n_wake = 0;
    while (p && *p && S.n_wake < WAKE_WORDS) {
        const char *end = strchr(p, ';');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len >= XZ_WORDS_TEXT_MAX) len = XZ_WORDS_TEXT_MAX - 1;
        memcpy(S.wake[S.n_wake], p, len);
        S.wake[S.n_wake++][len] = '\0';
        p = end ? end + 1 : NULL;
    }
    free(words);
}

static int make_afe(void) {
    afe_config_t *cfg = afe_config_init(S.aec ? "MR" : "M", S.models, AFE_TYPE_SR, AFE_MODE_LOW_COST);
    if (!cfg) return XZ_SPEECH_ENOMEM;
    cfg->aec_init = S.aec;
    cfg->ns_init = true;
    cfg->vad_init = true;
    cfg->wakenet_init = true;
    cfg->wakenet_model_name = S.wn_name;
    cfg->wakenet_model_name_2 = NULL;
    cfg->memory_alloc_mode = AFE_MEMORY_ALLOC_MORE_PSRAM;
    cfg->afe_perferred_core = DETECT_CORE;
    cfg->afe_perferred_priority = DETECT_PRIO;
    afe_config_check(cfg); /* the combination esp-sr supports; the pipeline is logged below */
    S.afe = esp_afe_handle_from_config(cfg);
    S.afe_data = S.afe ? S.afe->create_from_config(cfg) : NULL;
    afe_config_free(cfg);
    if (!S.afe_data) return XZ_SPEECH_ENOMEM;
    S.afe->print_pipeline(S.afe_data);
    S.feed_chunk = S.afe->get_feed_chunksize(S.afe_data);
    S.channels = S.afe->get_feed_channel_num(S.afe_data);
    return S.channels == (S.aec ? 2 : 1) ? 0 : XZ_SPEECH_ENOMEM;
}

static void make_multinet(const char *lang) {
    char *name = esp_srmodel_filter(S.models, ESP_MN_PREFIX, strcmp(lang, "en") ? ESP_MN_CHINESE : ESP_MN_ENGLISH);
    if (!name) {
        ESP_LOGW(TAG, "no %s MultiNet model in the partition: command words are off", lang);
        return;
    }
    strncpy(S.mn_name, name, sizeof(S.mn_name) - 1);
    S.mn = esp_mn_handle_from_name(S.mn_name);
    S.mn_data = S.mn ? S.mn->create(S.mn_name, MN_TIMEOUT_MS) : NULL;
    if (S.mn_data && S.mn->get_samp_chunksize(S.mn_data) != S.afe->get_fetch_chunksize(S.afe_data)) {
        ESP_LOGE(TAG, "%s takes %d samples, the AFE gives %d: command words are off", S.mn_name,
                 S.mn->get_samp_chunksize(S.mn_data), S.afe->get_fetch_chunksize(S.afe_data));
        S.mn->destroy(S.mn_data);
        S.mn_data = NULL;
    }
    if (S.mn_data && esp_mn_commands_alloc(S.mn, S.mn_data) != ESP_OK) {
        S.mn->destroy(S.mn_data);
        S.mn_data = NULL;
    }
    if (!S.mn_data) S.mn_name[0] = '\0';
}

static void release(void) {
    if (S.mn_data) {
        esp_mn_commands_free();
        S.mn->destroy(S.mn_data);
    }
    if (S.afe_data) S.afe->destroy(S.afe_data);
    if (S.models) esp_srmodel_deinit(S.models);
    S.mn_data = NULL;
    S.afe_data = NULL;
    S.models = NULL;
    S.wn_name[0] = S.mn_name[0] = '\0';
}

int xz_speech_start(const char *lang) {
    char *wn;
    int rc;
    if (S.running) return 0;
    if (!xz_engine_running()) return XZ_SPEECH_ESTATE;
    if (!S.pcm_store) {
        S.pcm_store = psram(PCM_RING);
        S.word_store = psram(sizeof(xz_word_t) * XZ_SPEECH_MAX_COMMANDS);
        S.applied = xSemaphoreCreateBinary();
        S.feed_lock = xSemaphoreCreateMutex();
        S.done = xSemaphoreCreateCounting(2, 0);
        if (!S.pcm_store || !S.word_store || !S.applied || !S.feed_lock || !S.done) return XZ_SPEECH_ENOMEM;
        xz_words_init(&S.words, S.word_store, XZ_SPEECH_MAX_COMMANDS);
    }
    xz_ring_init(&S.pcm, S.pcm_store, PCM_RING);
    S.aec = XZ_PINS_HAVE_REF(xz_engine_pins());
    S.models = esp_srmodel_init(PARTITION);
    if (!S.models || S.models->num <= 0) {
        release();
        return XZ_SPEECH_ENOMODEL;
    }
    wn = esp_srmodel_filter(S.models, ESP_WN_PREFIX, "xiaozhi");
    if (!wn) wn = esp_srmodel_filter(S.models, ESP_WN_PREFIX, NULL);
    if (!wn) {
        release();
        return XZ_SPEECH_ENOMODEL;
    }
    strncpy(S.wn_name, wn, sizeof(S.wn_name) - 1);
    take_wake_words();
    rc = make_afe();
    if (rc != 0) {
        release();
        return rc;
    }
    make_multinet(lang);
    S.feed_buf = psram((size_t)(S.feed_chunk * S.channels) * sizeof(int16_t));
    if (!S.feed_buf) {
        release();
        return XZ_SPEECH_ENOMEM;
    }
    S.paused = 0;
    S.reset = 0;
    S.running = 1;
    if (xTaskCreatePinnedToCore(feed_task, "xz_sr_feed", FEED_STACK, NULL, FEED_PRIO, &S.feed_task,
                                FEED_CORE) != pdPASS) {
        S.running = 0;
        release();
        return XZ_SPEECH_ENOMEM;
    }
    if (xTaskCreatePinnedToCore(detect_task, "xz_sr_detect", DETECT_STACK, NULL, DETECT_PRIO,
                                &S.detect_task, DETECT_CORE) != pdPASS) {
        S.running = 0;
        xSemaphoreTake(S.done, portMAX_DELAY);
        release();
        return XZ_SPEECH_ENOMEM;
    }
    ESP_LOGI(TAG, "wake word %s (%s), command words %s, AEC %s, feed %d x %d", S.wn_name,
             S.n_wake ? S.wake[0] : "?", S.mn_name[0] ? S.mn_name : "off", S.aec ? "on" : "off",
             S.feed_chunk, S.channels);
    return 0;
}

void xz_speech_stop(void) {
    if (!S.running) return;
    S.running = 0;
    /* Each task gives `done` as it leaves (the detection task within one
     * 100 ms fetch, the feed task within one tick). */
    xSemaphoreTake(S.done, portMAX_DELAY);
    xSemaphoreTake(S.done, portMAX_DELAY);
    heap_caps_free(S.feed_buf);
    S.feed_buf = NULL;
    release();
}

void xz_speech_pause(int paused) {
    if (S.paused && !paused) S.reset = 1;
    S.paused = paused;
}

int xz_speech_set_commands(const xz_command_t *cmds, int n, int *rejected, int cap) {
    int i;
    if (!S.running) return XZ_SPEECH_ESTATE;
    if (xz_words_set(&S.words, cmds, n) != 0) return XZ_SPEECH_ENOMEM;
    if (!S.mn_data) return 0; /* no MultiNet: kept for the words, nothing to apply */
    xSemaphoreTake(S.applied, 0);
    S.apply = 1;
    if (xSemaphoreTake(S.applied, pdMS_TO_TICKS(APPLY_WAIT_MS)) != pdTRUE) return XZ_SPEECH_ESTATE;
    for (i = 0; i < S.n_rejected && i < cap; i++) rejected[i] = S.rejected[i];
    return S.n_rejected;
}

int xz_speech_event(xz_speech_event_t *out) {
    return S.word_store ? xz_words_pop(&S.words, out) : 0;
}

int xz_speech_event_pending(void) {
    return S.word_store && xz_words_pending(&S.words);
}

const char *xz_speech_word(const xz_speech_event_t *ev) {
    const char *w;
    if (ev->kind == XZ_SPEECH_WAKE) {
        return ev->id >= 1 && ev->id <= S.n_wake ? S.wake[ev->id - 1] : (S.n_wake ? S.wake[0] : "");
    }
    w = xz_words_word(&S.words, ev->id);
    return w ? w : "";
}

int xz_speech_running(void) {
    return S.running;
}

int xz_speech_aec(void) {
    return S.running && S.aec;
}

const char *xz_speech_wake_model(void) {
    return S.wn_name;
}

const char *xz_speech_command_model(void) {
    return S.mn_name;
}

void xz_speech_stats(uint32_t out[4]) {
    out[0] = S.words.posted;
    out[1] = S.words.events.dropped;
    out[2] = S.unheard;
    out[3] = S.fed;
}
