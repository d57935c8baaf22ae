/* The codec task: every 10 ms it reads one I2S block from the mic, writes
 * one block to the speaker, and runs queued calls. It owns libopus, so
 * libopus only ever runs on this task's 40 KB stack (MicroPython's task
 * has 16 KB). Queues to and from MicroPython are the core's SPSC rings.
 *
 *   mic:  I2S (24 kHz -> resample 2:3, or 16 kHz) -> 16 kHz
 *           -> the speech engine (with the reference, when the wiring has one)
 *           -> 60 ms framer -> Opus -> mic ring (while AudioIn is started)
 *   spk:  spk ring -> Opus decode (24 kHz, or 16 kHz then 3:2) -> volume -> I2S
 *         when no speech is queued, PCM from the MP3 task's ring instead.
 */
#include <string.h>

#include "esp_heap_caps.h"
#include "freertos/FreeRTOS.h"
#include "freertos/queue.h"
#include "freertos/task.h"

#include "xz_engine.h"
#include "xz_frame.h"
#include "xz_i2s.h"
#include "xz_mp3task.h"
#include "xz_opus.h"
#include "xz_resample.h"
#include "xz_ring.h"
#include "xz_speech.h"

#define CODEC_STACK (40 * 1024)
#define CODEC_PRIO 8
#define CODEC_CORE 1
#define MIC_RING (8 * 1024)    /* ~2.4 s of 16 kHz speech packets */
#define SPK_RING (16 * 1024)   /* 40 frames of 60 ms at up to ~400 B each */
#define BLOCK_MAX 480          /* 10 ms at 48 kHz */
#define FRAME_MAX 1440         /* 60 ms at 24 kHz */

typedef struct {
    void (*fn)(void *);
    void *arg;
    TaskHandle_t caller;
} job_t;

static struct {
    xz_pins_t pins;
    TaskHandle_t task;
    QueueHandle_t jobs;
    volatile int running;
    xz_ring_t mic, spk;
    uint8_t *mic_store, *spk_store;
    xz_enc_t *enc;
    xz_dec_t *dec;
    xz_rs_t *rs_mic, *rs_ref, *rs_spk;
    xz_framer_t framer;
    int16_t frame[FRAME_MAX];
    int16_t block[BLOCK_MAX];
    int16_t mic_in[BLOCK_MAX], ref_in[BLOCK_MAX]; /* one block at the mic's I2S rate */
    int16_t mic16[BLOCK_MAX], ref16[BLOCK_MAX];   /* the same at 16 kHz */
    int16_t pcm[FRAME_MAX * 3 / 2 + 2]; /* decoded (and maybe resampled) speech */
    int16_t dec_out[FRAME_MAX];
    uint8_t pkt[XZ_OPUS_MAX_PACKET];
    uint32_t pcm_len, pcm_pos;
    volatile int mic_on, spk_on;
    volatile uint32_t spk_rate, volume_q15;
    volatile uint32_t want_rate; /* MP3 task asks the codec task to re-clock */
    uint32_t rate;               /* current speaker I2S rate */
    uint32_t echo_blocks;        /* blocks until the speaker's sound has died away */
    uint32_t spk_underruns, mic_frames;
} E;

static void *psram(size_t n) {
    /* PSRAM first: internal RAM is kept for stacks and DMA. */
    void *p = heap_caps_malloc(n, MALLOC_CAP_SPIRAM | MALLOC_CAP_8BIT);
    return p ? p : heap_caps_malloc(n, MALLOC_CAP_8BIT);
}

/* The mic's I2S rate now, or 0 while it is not one the path takes: with
 * one controller the mic follows the speaker's clock, which an MP3 may
 * have moved. */
static uint32_t mic_rate_now(void) {
    uint32_t rate = E.pins.mode == XZ_MODE_SIMPLEX ? E.pins.mic_rate : E.rate;
    return rate == 24000 || rate == 16000 ? rate : 0;
}

/* One block of n frames at `rate` to 16 kHz in dst; the sample count. */
static uint32_t to_16k(xz_rs_t *rs, const int16_t *src, size_t n, uint32_t rate, int16_t *dst) {
    int m;
    if (rate == 16000) {
        memcpy(dst, src, n * sizeof(int16_t));
        return (uint32_t)n;
    }
    m = xz_rs_process(rs, src, (uint32_t)n, dst, BLOCK_MAX);
    return m < 0 ? 0 : (uint32_t)m;
}

static void mic_block(size_t n) {
    uint32_t rate = mic_rate_now(), m, off = 0;
    int ref = XZ_PINS_HAVE_REF(&E.pins);
    if (!rate || !n || (!E.mic_on && !xz_speech_running())) {
        return; /* no mic while the I2S clock follows an MP3's rate */
    }
    m = to_16k(E.rs_mic, E.mic_in, n, rate, E.mic16);
    if (ref && to_16k(E.rs_ref, E.ref_in, n, rate, E.ref16) != m) {
        return; /* both resamplers see the same counts, so this does not happen */
    }
    xz_speech_feed(E.mic16, ref ? E.ref16 : NULL, m, E.echo_blocks > 0);
    if (!E.mic_on) {
        return;
    }
    while (off < m) {
        off += xz_framer_feed(&E.framer, E.mic16 + off, m - off);
        if (xz_framer_full(&E.framer)) {
            int len = xz_enc_encode(E.enc, E.frame, E.framer.frame_samples, E.pkt, sizeof(E.pkt));
            if (len > 0) {
                xz_pkt_push(&E.mic, E.pkt, (uint32_t)len); /* full: dropped and counted */
                E.mic_frames++;
            }
            xz_framer_take(&E.framer);
        }
    }
}

/* Refills E.pcm from the next speech packet; 0 when none is queued. */
static int next_speech(void) {
    int len, n;
    if (E.spk_rate != E.rate && !(E.spk_rate == 16000 && E.rate == 24000)) {
        return 0; /* I2S re-clocked for an MP3: speech waits until it is back */
    }
    len = xz_pkt_pop(&E.spk, E.pkt, sizeof(E.pkt));
    if (len < 0) {
        return 0;
    }
    n = xz_dec_decode(E.dec, E.pkt, (uint32_t)len, E.dec_out, FRAME_MAX);
    if (n <= 0) {
        n = xz_dec_decode(E.dec, NULL, 0, E.dec_out, FRAME_MAX); /* conceal a bad packet */
    }
    if (n <= 0) {
        return 0;
    }
    if (E.spk_rate == E.rate) {
        memcpy(E.pcm, E.dec_out, (size_t)n * sizeof(int16_t));
    } else {
        n = xz_rs_process(E.rs_spk, E.dec_out, (uint32_t)n, E.pcm, sizeof(E.pcm) / sizeof(E.pcm[0]));
        if (n <= 0) return 0;
    }
    E.pcm_len = (uint32_t)n;
    E.pcm_pos = 0;
    return 1;
}

static void spk_block(size_t n) {
    size_t i = 0;
    uint32_t gain = E.volume_q15;
    int sounded = 0;
    while (i < n) {
        if (E.pcm_pos < E.pcm_len) {
            uint32_t k = E.pcm_len - E.pcm_pos;
            if (k > n - i) k = (uint32_t)(n - i);
            memcpy(E.block + i, E.pcm + E.pcm_pos, k * sizeof(int16_t));
            E.pcm_pos += k;
            i += k;
            sounded = 1;
        } else if (!(E.spk_on && next_speech())) {
            /* No speech: MP3 PCM if playing, else silence. */
            size_t got = xz_mp3task_pcm(E.block + i, n - i);
            if (got < n - i && xz_mp3_state() == XZ_MP3_IDLE && E.spk_on) {
                E.spk_underruns++;
            }
            sounded |= got > 0;
            memset(E.block + i + got, 0, (n - i - got) * sizeof(int16_t));
            i = n;
        }
    }
    /* The speech engine is told the speaker sounds until the echo tail is over. */
    if (sounded) {
        E.echo_blocks = XZ_SPEECH_ECHO_TAIL_MS / XZ_I2S_BLOCK_MS;
    } else if (E.echo_blocks) {
        E.echo_blocks--;
    }
    for (i = 0; i < n; i++) {
        E.block[i] = (int16_t)(((int32_t)E.block[i] * (int32_t)gain) >> 15);
    }
    xz_i2s_write(E.block, n, 2 * XZ_I2S_BLOCK_MS);
}

static void codec_task(void *unused) {
    job_t job;
    (void)unused;
    while (E.running) {
        size_t n = E.rate * XZ_I2S_BLOCK_MS / 1000, got;
        size_t mic_n = (E.pins.mode == XZ_MODE_SIMPLEX ? E.pins.mic_rate : E.rate) * XZ_I2S_BLOCK_MS / 1000;
        while (xQueueReceive(E.jobs, &job, 0) == pdTRUE) {
            job.fn(job.arg);
            xTaskNotifyGive(job.caller);
        }
        if (E.want_rate && E.want_rate != E.rate) {
            if (xz_i2s_set_rate(E.want_rate) == 0) E.rate = E.want_rate;
            E.want_rate = 0;
        }
        /* The blocking read paces the loop at the mic's I2S clock (the
         * speaker's write blocks on its own DMA queue at the same 10 ms). */
        got = xz_i2s_read(E.mic_in, E.ref_in, mic_n, 2 * XZ_I2S_BLOCK_MS);
        mic_block(got);
        spk_block(n);
    }
    vTaskDelete(NULL);
}

int xz_engine_start(const xz_pins_t *pins) {
    int err;
    if (E.running) {
        return 0;
    }
    E.pins = *pins;
    if (!E.pins.mic_rate) E.pins.mic_rate = E.pins.rate;
    E.rate = pins->rate;
    E.volume_q15 = 32768u * 70u / 100u;
    E.mic_store = psram(MIC_RING);
    E.spk_store = psram(SPK_RING);
    E.enc = psram(xz_enc_size());
    E.dec = psram(xz_dec_size());
    E.rs_mic = psram(sizeof(xz_rs_t));
    E.rs_ref = psram(sizeof(xz_rs_t));
    E.rs_spk = psram(sizeof(xz_rs_t));
    E.jobs = xQueueCreate(4, sizeof(job_t));
    if (!E.mic_store || !E.spk_store || !E.enc || !E.dec || !E.rs_mic || !E.rs_ref || !E.rs_spk || !E.jobs) {
        return -1;
    }
    xz_ring_init(&E.mic, E.mic_store, MIC_RING);
    xz_ring_init(&E.spk, E.spk_store, SPK_RING);
    xz_rs_init(E.rs_mic, 2, 3);
    xz_rs_init(E.rs_ref, 2, 3);
    xz_rs_init(E.rs_spk, 3, 2);
    err = xz_i2s_open(&E.pins);
    if (err != 0) {
        return err;
    }
    err = xz_mp3task_start();
    if (err != 0) {
        return err;
    }
    E.running = 1;
    if (xTaskCreatePinnedToCore(codec_task, "xz_codec", CODEC_STACK, NULL, CODEC_PRIO, &E.task,
                                CODEC_CORE) != pdPASS) {
        E.running = 0;
        return -1;
    }
    return 0;
}

void xz_engine_stop(void) {
    xz_speech_stop();
    E.running = 0; /* the task exits after its current block */
    vTaskDelay(pdMS_TO_TICKS(4 * XZ_I2S_BLOCK_MS));
    xz_mp3task_stop();
    xz_i2s_close();
}

int xz_engine_call(void (*fn)(void *), void *arg) {
    job_t job = {fn, arg, xTaskGetCurrentTaskHandle()};
    if (!E.running) {
        return -1;
    }
    xQueueSend(E.jobs, &job, portMAX_DELAY);
    ulTaskNotifyTake(pdTRUE, portMAX_DELAY);
    return 0;
}

typedef struct {
    uint32_t rate, ms;
    int rc;
} enc_job_t;

static void mic_setup(void *arg) {
    enc_job_t *j = arg;
    j->rc = xz_enc_init(E.enc, j->rate, j->ms);
    if (j->rc == 0) {
        /* The resamplers run on (the speech engine hears the mic too),
         * in step with each other: only the framer starts afresh. */
        xz_framer_init(&E.framer, E.frame, xz_enc_frame_samples(E.enc));
    }
}

uint32_t xz_engine_base_rate(void) {
    return E.pins.rate;
}

int xz_engine_running(void) {
    return E.running;
}

const xz_pins_t *xz_engine_pins(void) {
    return &E.pins;
}

int xz_mic_start(uint32_t opus_rate, uint32_t frame_ms) {
    enc_job_t j = {opus_rate, frame_ms, -1};
    E.mic_on = 0;
    /* Encoder init touches libopus: do it on the codec task. */
    if (xz_engine_call(mic_setup, &j) != 0 || j.rc != 0) {
        return j.rc ? j.rc : -1;
    }
    E.mic_on = 1;
    return 0;
}

void xz_mic_stop(void) {
    E.mic_on = 0;
}

int xz_mic_pop(uint8_t *dst, uint32_t cap) {
    return xz_pkt_pop(&E.mic, dst, cap);
}

int xz_mic_readable(void) {
    return xz_pkt_peek_len(&E.mic) >= 0;
}

static void spk_setup(void *arg) {
    enc_job_t *j = arg;
    j->rc = xz_dec_init(E.dec, j->rate);
    xz_rs_init(E.rs_spk, 3, 2);
    E.pcm_len = E.pcm_pos = 0;
}

int xz_spk_start(uint32_t opus_rate) {
    enc_job_t j = {opus_rate, 60, -1};
    if (opus_rate != E.rate && !(opus_rate == 16000 && E.rate == 24000)) {
        return XZ_ERR_ARG; /* only 24 kHz direct, or 16 kHz through the 3:2 resampler */
    }
    E.spk_on = 0;
    if (xz_engine_call(spk_setup, &j) != 0 || j.rc != 0) {
        return j.rc ? j.rc : -1;
    }
    E.spk_rate = opus_rate;
    E.spk_on = 1;
    return 0;
}

int xz_spk_push(const uint8_t *pkt, uint32_t len) {
    return xz_pkt_push(&E.spk, pkt, len);
}

int xz_spk_writable(uint32_t len) {
    return xz_ring_free(&E.spk) >= len + 2;
}

static void spk_drain(void *unused) {
    (void)unused;
    /* Consumer side of the ring, so it must run where the consumer runs. */
    while (xz_pkt_skip(&E.spk) >= 0) {
    }
    E.pcm_len = E.pcm_pos = 0;
}

void xz_spk_flush(void) {
    xz_engine_call(spk_drain, NULL);
}

void xz_spk_volume(int percent) {
    if (percent < 0) percent = 0;
    if (percent > 100) percent = 100;
    E.volume_q15 = 32768u * (uint32_t)percent / 100u;
}

void xz_engine_request_rate(uint32_t rate) {
    E.want_rate = rate;
}

void xz_engine_stats(uint32_t out[4]) {
    out[0] = E.mic.dropped;
    out[1] = E.spk.dropped;
    out[2] = E.spk_underruns;
    out[3] = E.mic_frames;
}
