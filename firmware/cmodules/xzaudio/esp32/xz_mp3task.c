#include "xz_mp3task.h"

#include "esp_audio_dec_default.h"
#include "esp_audio_simple_dec.h"
#include "esp_audio_simple_dec_default.h"
#include "esp_heap_caps.h"
#include "freertos/FreeRTOS.h"
#include "freertos/task.h"

#include "xz_engine.h"
#include "xz_ring.h"

#define MP3_STACK (12 * 1024) /* the vendor decoder keeps its state on the heap */
#define MP3_PRIO 6
#define MP3_CORE 0
#define CHUNK XZ_MP3_CHUNK     /* bytes taken from the input ring per decode step */
#define OUT_START 4608         /* one MPEG-1 stereo frame of PCM: 1152 * 2 * 2 */
#define PCM_RING (32 * 1024)   /* ~0.7 s at 24 kHz: rides over SD card stalls */
#define IN_RING (16 * 1024)    /* MP3 bytes fed by MicroPython: 1 s at 128 kbit/s */
#define EVENTS 16
#define IN_ENDED 1
#define IN_FAILED 2
/* The end mark is published after the last fed bytes (release) and read
 * before the ring (acquire), so a task that sees it also sees them. */
#define END_STORE(v) __atomic_store_n(&M.in_end, (v), __ATOMIC_RELEASE)
#define END_LOAD() __atomic_load_n(&M.in_end, __ATOMIC_ACQUIRE)

static struct {
    TaskHandle_t task;
    volatile int running, state, cmd_stop;
    int in_end; /* 0, IN_ENDED or IN_FAILED: written by the feeding side only */
    xz_ring_t pcm, events, input;
    uint8_t *pcm_store, *in_store;
    uint8_t ev_store[EVENTS];
    uint8_t in[CHUNK];
    uint8_t *out;
    uint32_t out_cap;
    uint32_t rate; /* the playing file's sample rate, 0 before its first frame */
} M;

static void post(uint8_t ev) {
    xz_ring_write(&M.events, &ev, 1);
}

/* Mono int16: the speaker is mono; stereo files are averaged. */
static uint32_t to_mono(uint8_t *buf, uint32_t bytes, uint32_t channels) {
    int16_t *s = (int16_t *)buf;
    uint32_t frames = bytes / (2u * channels), i;
    if (channels == 2) {
        for (i = 0; i < frames; i++) {
            s[i] = (int16_t)(((int32_t)s[2 * i] + s[2 * i + 1]) / 2);
        }
    }
    return frames * 2u;
}

static void push_pcm(const uint8_t *p, uint32_t n) {
    /* Back-pressure: wait for the codec task to play what is queued. */
    while (n && !M.cmd_stop) {
        uint32_t k = xz_ring_write(&M.pcm, p, n);
        p += k;
        n -= k;
        if (n) vTaskDelay(pdMS_TO_TICKS(10));
        while (M.state == XZ_MP3_PAUSED && !M.cmd_stop) vTaskDelay(pdMS_TO_TICKS(20));
    }
}

/* The next fed bytes into M.in, waiting for MicroPython to feed more.
 * *end is the end mark seen before the read; 0 bytes with no mark means a stop. */
static uint32_t next_input(int *end) {
    while (!M.cmd_stop) {
        uint32_t got;
        *end = END_LOAD();
        got = xz_ring_read(&M.input, M.in, CHUNK);
        if (got || *end) return got;
        vTaskDelay(pdMS_TO_TICKS(10));
    }
    *end = 0;
    return 0;
}

static int play_stream(void) {
    esp_audio_simple_dec_cfg_t cfg = {.dec_type = ESP_AUDIO_SIMPLE_DEC_TYPE_MP3, .dec_cfg = NULL, .cfg_size = 0};
    esp_audio_simple_dec_handle_t dec = NULL;
    esp_audio_simple_dec_raw_t raw = {0};
    esp_audio_simple_dec_out_t out = {0};
    esp_audio_simple_dec_info_t info = {0};
    int rc = XZ_MP3_EV_END, have_info = 0, end = 0;
    if (esp_audio_simple_dec_open(&cfg, &dec) != ESP_AUDIO_ERR_OK) return XZ_MP3_EV_ERROR;
    do {
        uint32_t got = next_input(&end);
        if (M.cmd_stop) break;
        if (end == IN_FAILED) { rc = XZ_MP3_EV_ERROR; break; }
        raw.buffer = M.in;
        raw.len = got;
        raw.eos = end && xz_ring_used(&M.input) == 0;
        while ((raw.len || raw.eos) && !M.cmd_stop) {
            esp_audio_err_t err;
            out.buffer = M.out;
            out.len = M.out_cap;
            err = esp_audio_simple_dec_process(dec, &raw, &out);
            if (err == ESP_AUDIO_ERR_BUFF_NOT_ENOUGH) {
                /* The decoder says how much it needs; grow once and retry. */
                uint8_t *bigger = heap_caps_realloc(M.out, out.needed_size, MALLOC_CAP_SPIRAM | MALLOC_CAP_8BIT);
                if (!bigger) { rc = XZ_MP3_EV_ERROR; break; }
                M.out = bigger;
                M.out_cap = out.needed_size;
                continue;
            }
            if (err != ESP_AUDIO_ERR_OK) { rc = XZ_MP3_EV_ERROR; break; }
            if (out.decoded_size) {
                if (!have_info) {
                    esp_audio_simple_dec_get_info(dec, &info);
                    M.rate = info.sample_rate;
                    xz_engine_request_rate(info.sample_rate);
                    have_info = 1;
                }
                push_pcm(M.out, to_mono(M.out, out.decoded_size, info.channel ? info.channel : 1));
            }
            raw.buffer += raw.consumed;
            raw.len -= raw.consumed;
            if (raw.eos && raw.len == 0 && out.decoded_size == 0) break;
        }
    } while (!raw.eos && rc == XZ_MP3_EV_END && !M.cmd_stop);
    esp_audio_simple_dec_close(dec);
    if (M.cmd_stop) return XZ_MP3_EV_STOPPED;
    if (!have_info) rc = XZ_MP3_EV_ERROR; /* not one frame decoded: not an MP3 */
    /* A natural end counts only once the last sample has left the ring. */
    while (rc == XZ_MP3_EV_END && xz_ring_used(&M.pcm) && !M.cmd_stop) vTaskDelay(pdMS_TO_TICKS(10));
    return M.cmd_stop ? XZ_MP3_EV_STOPPED : rc;
}

static void mp3_task(void *unused) {
    (void)unused;
    while (M.running) {
        int ev;
        ulTaskNotifyTake(pdTRUE, portMAX_DELAY);
        if (!M.running) break;
        M.rate = 0;
        ev = play_stream();
        M.state = XZ_MP3_IDLE;
        xz_engine_request_rate(xz_engine_base_rate());
        post((uint8_t)ev);
    }
    vTaskDelete(NULL);
}

int xz_mp3task_start(void) {
    static int registered;
    if (!registered) {
        esp_audio_dec_register_default();
        esp_audio_simple_dec_register_default();
        registered = 1;
    }
    M.pcm_store = heap_caps_malloc(PCM_RING, MALLOC_CAP_SPIRAM | MALLOC_CAP_8BIT);
    M.in_store = heap_caps_malloc(IN_RING, MALLOC_CAP_SPIRAM | MALLOC_CAP_8BIT);
    M.out = heap_caps_malloc(OUT_START, MALLOC_CAP_SPIRAM | MALLOC_CAP_8BIT);
    M.out_cap = OUT_START;
    if (!M.pcm_store || !M.in_store || !M.out) return -1;
    xz_ring_init(&M.pcm, M.pcm_store, PCM_RING);
    xz_ring_init(&M.input, M.in_store, IN_RING);
    xz_ring_init(&M.events, M.ev_store, EVENTS);
    M.running = 1;
    if (xTaskCreatePinnedToCore(mp3_task, "xz_mp3", MP3_STACK, NULL, MP3_PRIO, &M.task, MP3_CORE) != pdPASS) {
        M.running = 0;
        return -1;
    }
    return 0;
}

void xz_mp3task_stop(void) {
    M.cmd_stop = 1;
    M.running = 0;
    if (M.task) xTaskNotifyGive(M.task);
}

size_t xz_mp3task_pcm(int16_t *dst, size_t n) {
    if (M.state == XZ_MP3_IDLE) {
        /* Consumer side: drop what a stopped file left, so it never plays later. */
        while (xz_ring_read(&M.pcm, (uint8_t *)dst, (uint32_t)(n * 2)) == n * 2) {
        }
        return 0;
    }
    if (M.state != XZ_MP3_PLAYING) return 0;
    return xz_ring_read(&M.pcm, (uint8_t *)dst, (uint32_t)(n * 2)) / 2;
}

int xz_mp3_begin(void) {
    if (!M.running) return -1;
    if (M.state != XZ_MP3_IDLE) {
        xz_mp3_stop();
        /* One tick, not pdMS_TO_TICKS(5): at the port's 100 Hz that is 0
         * ticks, a bare yield that would spin this task until the stop lands. */
        while (M.state != XZ_MP3_IDLE) vTaskDelay(1);
    }
    /* The task is idle, so neither side touches the input ring. The stop
     * flag is cleared here, not by the task, so a stop() right after this
     * call is not lost. */
    xz_ring_init(&M.input, M.in_store, IN_RING);
    END_STORE(0);
    M.cmd_stop = 0;
    M.state = XZ_MP3_PLAYING;
    xTaskNotifyGive(M.task);
    return 0;
}

static int feed_open(void) {
    return M.state != XZ_MP3_IDLE && !M.cmd_stop && !M.in_end;
}

int xz_mp3_feed(const uint8_t *src, uint32_t n) {
    if (!feed_open()) return -1;
    if (n > CHUNK || xz_ring_free(&M.input) < n) return 0;
    xz_ring_write(&M.input, src, n);
    return (int)n;
}

/* Ready once half the ring is free, not one chunk: each wait of the
 * feeding task (asyncio's poller allocates a little per wait) then feeds
 * four chunks. */
int xz_mp3_feed_ready(void) {
    return !feed_open() || xz_ring_free(&M.input) >= IN_RING / 2;
}

void xz_mp3_end(int failed) {
    if (feed_open()) END_STORE(failed ? IN_FAILED : IN_ENDED);
}

void xz_mp3_pause(int paused) {
    if (M.state == XZ_MP3_IDLE) return;
    M.state = paused ? XZ_MP3_PAUSED : XZ_MP3_PLAYING;
    /* A TTS reply can only play at the base rate; the file's rate returns on resume. */
    xz_engine_request_rate(paused || !M.rate ? xz_engine_base_rate() : M.rate);
}

void xz_mp3_stop(void) {
    M.cmd_stop = 1;
}

int xz_mp3_state(void) {
    return M.state;
}

int xz_mp3_event(void) {
    uint8_t ev;
    return xz_ring_read(&M.events, &ev, 1) ? ev : -1;
}

int xz_mp3_event_pending(void) {
    return xz_ring_used(&M.events) > 0;
}
