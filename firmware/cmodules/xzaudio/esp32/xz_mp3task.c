#include "xz_mp3task.h"

#include <stdio.h>
#include <string.h>

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
#define CHUNK 2048             /* bytes read from the SD card per step */
#define OUT_START 4608         /* one MPEG-1 stereo frame of PCM: 1152 * 2 * 2 */
#define PCM_RING (32 * 1024)   /* ~0.7 s at 24 kHz: rides over SD card stalls */
#define PATH_MAX_LEN 128
#define EVENTS 16

static struct {
    TaskHandle_t task;
    volatile int running, state, cmd_stop;
    char path[PATH_MAX_LEN];
    xz_ring_t pcm, events;
    uint8_t *pcm_store;
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

static int play_file(const char *path) {
    esp_audio_simple_dec_cfg_t cfg = {.dec_type = ESP_AUDIO_SIMPLE_DEC_TYPE_MP3, .dec_cfg = NULL, .cfg_size = 0};
    esp_audio_simple_dec_handle_t dec = NULL;
    esp_audio_simple_dec_raw_t raw = {0};
    esp_audio_simple_dec_out_t out = {0};
    esp_audio_simple_dec_info_t info = {0};
    FILE *fp = fopen(path, "rb");
    int rc = XZ_MP3_EV_END, have_info = 0;
    size_t got;
    if (!fp) return XZ_MP3_EV_ERROR;
    if (esp_audio_simple_dec_open(&cfg, &dec) != ESP_AUDIO_ERR_OK) {
        fclose(fp);
        return XZ_MP3_EV_ERROR;
    }
    do {
        got = fread(M.in, 1, CHUNK, fp);
        raw.buffer = M.in;
        raw.len = (uint32_t)got;
        raw.eos = got < CHUNK;
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
    } while (got == CHUNK && rc == XZ_MP3_EV_END && !M.cmd_stop);
    esp_audio_simple_dec_close(dec);
    fclose(fp);
    if (M.cmd_stop) return XZ_MP3_EV_STOPPED;
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
        M.cmd_stop = 0;
        M.rate = 0;
        ev = play_file(M.path);
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
    M.out = heap_caps_malloc(OUT_START, MALLOC_CAP_SPIRAM | MALLOC_CAP_8BIT);
    M.out_cap = OUT_START;
    if (!M.pcm_store || !M.out) return -1;
    xz_ring_init(&M.pcm, M.pcm_store, PCM_RING);
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

int xz_mp3_play(const char *path) {
    size_t len = strlen(path);
    if (len >= PATH_MAX_LEN || !M.running) return -1;
    if (M.state != XZ_MP3_IDLE) {
        xz_mp3_stop();
        /* One tick, not pdMS_TO_TICKS(5): at the port's 100 Hz that is 0
         * ticks, a bare yield that would spin this task until the stop lands. */
        while (M.state != XZ_MP3_IDLE) vTaskDelay(1);
    }
    memcpy(M.path, path, len + 1);
    M.state = XZ_MP3_PLAYING;
    xTaskNotifyGive(M.task);
    return 0;
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
