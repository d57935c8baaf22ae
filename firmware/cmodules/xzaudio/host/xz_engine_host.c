/* The audio engine of xz_engine.h on a host (the unix port): files and
 * pipes stand in for I2S, pthreads for the FreeRTOS tasks, and sox for
 * esp_audio_codec, so the binding's AudioIn/AudioOut/Mp3Player run
 * unchanged and the core's rings, framer, resamplers and libopus settings
 * are the board's.
 *
 *   mic      XZAUDIO_MIC: what the I2S RX line carries, at the mic rate
 *            (xzaudio.start's mic_rate, else its rate; 24 kHz by default),
 *            a file or a FIFO, opened at each AudioIn.start(); unset: no
 *            input. Read without blocking, so the writer sets the pace.
 *              DUPLEX   s16le mono
 *              TDM      s16le frames of tdm_slots slots: the mic is slot
 *                       mic_slot, the reference slot ref_slot (as the
 *                       board's ES7210 delivers them)
 *              SIMPLEX  s32le mono slots, the sample in the top bits (as
 *                       an INMP441 delivers it)
 *            The board's own helpers (core/xz_pcm) pick the slots and
 *            convert, then the path is the board's: 24 kHz through the
 *            2:3 resampler, 16 kHz as is, to the speech engine and Opus.
 *   speaker  XZAUDIO_SPK: what is played (speech, else MP3), appended as
 *            s16le mono at the speaker rate, opened again each time an
 *            AudioOut is made; unset: discarded. Silence is not written.
 *            (SIMPLEX's 32-bit slots are core/xz_pcm's, tested there.)
 *   MP3      the bytes MicroPython feeds (as on the board: it reads the
 *            file) go through a ring to `sox`'s stdin; sox decodes them
 *            to mono PCM at the engine rate (the board re-clocks I2S to
 *            the file's rate instead).
 *
 * Pacing: the codec thread runs as fast as there is audio to move and
 * sleeps one 10 ms block when there is none, so tests do not wait on the
 * wall clock and an idle engine costs nothing. What it played counts as
 * sounding for as long as it would take to hear it at its rate (no more
 * than the board's queues hold ahead of the ear, plus the echo tail; a
 * flush leaves the tail): the speech stand-in (xz_speech_host.c) listens
 * by that.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "xz_engine.h"
#include "xz_frame.h"
#include "xz_opus.h"
#include "xz_pcm.h"
#include "xz_resample.h"
#include "xz_ring.h"
#include "xz_speech.h"

extern char **environ;

#define BLOCK_MS 10
#define BLOCK_MAX 480        /* 10 ms at 48 kHz */
#define FRAME_MAX 1440       /* 60 ms at 24 kHz */
#define MIC_RING (8 * 1024)
#define SPK_RING (16 * 1024)
#define PCM_RING (32 * 1024)
#define IN_RING (16 * 1024) /* fed MP3 bytes, as on the board */
#define EVENTS 16
/* What the board can hold ahead of the ear: the speech ring (40 frames of
 * 60 ms) and the DMA queue. The host decodes everything at once. */
#define SPK_AHEAD_US (2460 * 1000)
#define IN_ENDED 1
#define IN_FAILED 2
/* The end mark is published after the last fed bytes and read before the
 * ring, so a thread that sees it also sees them. */
#define END_STORE(v) __atomic_store_n(&H.in_end, (v), __ATOMIC_RELEASE)
#define END_LOAD() __atomic_load_n(&H.in_end, __ATOMIC_ACQUIRE)

static struct {
    pthread_t codec, mp3;
    pthread_mutex_t lock;
    pthread_cond_t job_cv, done_cv, mp3_cv;
    void (*job_fn)(void *);
    void *job_arg;
    int job_done;
    volatile int running, mic_on, spk_on;
    xz_pins_t pins;
    uint32_t rate, spk_rate, volume_q15;
    int mic_fd, spk_fd;
    xz_ring_t mic, spk, pcm, events, input;
    uint8_t mic_store[MIC_RING], spk_store[SPK_RING], pcm_store[PCM_RING], ev_store[EVENTS];
    uint8_t in_store[IN_RING];
    xz_enc_t *enc;
    xz_dec_t *dec;
    xz_rs_t rs_mic, rs_ref, rs_spk;
    xz_framer_t framer;
    int16_t frame[FRAME_MAX], block[BLOCK_MAX];
    int16_t mic_in[BLOCK_MAX], ref_in[BLOCK_MAX], mic16[BLOCK_MAX], ref16[BLOCK_MAX];
    uint8_t raw[BLOCK_MAX * XZ_TDM_SLOTS_MAX * 2]; /* one mic block as the wire carries it */
    uint32_t block_fill; /* bytes of the next mic block already read */
    int64_t sounding_until_us; /* when what was played would have been heard */
    int16_t speech[FRAME_MAX * 3 / 2 + 2], dec_out[FRAME_MAX];
    uint32_t speech_len, speech_pos;
    uint8_t pkt[XZ_OPUS_MAX_PACKET];
    uint32_t mic_frames;
    /* MP3: state written by the caller (play/pause/stop) and the MP3 thread. */
    volatile int mp3_state, mp3_stop, mp3_go;
    int in_end; /* 0, IN_ENDED or IN_FAILED: written by the feeding side only */
} H = {.mic_fd = -1, .spk_fd = -1, .lock = PTHREAD_MUTEX_INITIALIZER,
       .job_cv = PTHREAD_COND_INITIALIZER, .done_cv = PTHREAD_COND_INITIALIZER,
       .mp3_cv = PTHREAD_COND_INITIALIZER};

static void nap_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int open_env(const char *var, int flags) {
    const char *path = getenv(var);
    if (!path || !*path) return -1;
    return open(path, flags | O_CLOEXEC, 0644);
}

static void write_all(int fd, const void *p, size_t n) {
    const uint8_t *b = p;
    while (fd >= 0 && n) {
        ssize_t k = write(fd, b, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return; /* a gone reader loses the audio, not the engine */
        b += k;
        n -= (size_t)k;
    }
}

/* ---- codec thread ---- */

static int64_t now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int xz_host_speaker_sounding(void) {
    return now_us() < __atomic_load_n(&H.sounding_until_us, __ATOMIC_RELAXED);
}

static uint32_t mic_rate(void) {
    return H.pins.mode == XZ_MODE_SIMPLEX ? H.pins.mic_rate : H.rate;
}

/* Bytes per mic frame on the wire. */
static uint32_t frame_bytes(void) {
    if (H.pins.mode == XZ_MODE_TDM) return (uint32_t)H.pins.tdm_slots * 2;
    return H.pins.mode == XZ_MODE_SIMPLEX ? 4 : 2;
}

/* The wire's frames to 16-bit mic (and reference) samples: core/xz_pcm, as on the board. */
static void unpack(size_t n) {
    if (H.pins.mode == XZ_MODE_TDM) {
        uint32_t slots = (uint32_t)H.pins.tdm_slots;
        xz_pcm_take_slot((const int16_t *)H.raw, (uint32_t)n, slots, (uint32_t)H.pins.mic_slot, H.mic_in);
        if (H.pins.ref_slot >= 0) {
            xz_pcm_take_slot((const int16_t *)H.raw, (uint32_t)n, slots, (uint32_t)H.pins.ref_slot, H.ref_in);
        }
    } else if (H.pins.mode == XZ_MODE_SIMPLEX) {
        xz_pcm_from_i32((const int32_t *)H.raw, (uint32_t)n, XZ_PCM_INMP441_SHIFT, H.mic_in);
    } else {
        memcpy(H.mic_in, H.raw, n * 2);
    }
}

static uint32_t to_16k(xz_rs_t *rs, const int16_t *src, size_t n, uint32_t rate, int16_t *dst) {
    int m;
    if (rate == 16000) {
        memcpy(dst, src, n * sizeof(int16_t));
        return (uint32_t)n;
    }
    m = xz_rs_process(rs, src, (uint32_t)n, dst, BLOCK_MAX);
    return m < 0 ? 0 : (uint32_t)m;
}

/* One mic block when a whole one has arrived: to 16 kHz, to the speech
 * engine, framed, encoded. */
static int mic_tick(void) {
    uint32_t rate = mic_rate(), fb = frame_bytes(), want, off = 0, m;
    size_t n = rate * BLOCK_MS / 1000;
    int ref = XZ_PINS_HAVE_REF(&H.pins);
    ssize_t k;
    if (!H.mic_on || H.mic_fd < 0) return 0;
    want = (uint32_t)n * fb;
    k = read(H.mic_fd, H.raw + H.block_fill, want - H.block_fill);
    if (k <= 0) return 0; /* nothing yet (EAGAIN), or the end of a file */
    H.block_fill += (uint32_t)k;
    if (H.block_fill < want) return 1;
    H.block_fill = 0;
    unpack(n);
    m = to_16k(&H.rs_mic, H.mic_in, n, rate, H.mic16);
    if (ref) to_16k(&H.rs_ref, H.ref_in, n, rate, H.ref16);
    xz_speech_feed(H.mic16, ref ? H.ref16 : NULL, m, xz_host_speaker_sounding());
    while (off < m) {
        off += xz_framer_feed(&H.framer, H.mic16 + off, m - off);
        if (xz_framer_full(&H.framer)) {
            int len = xz_enc_encode(H.enc, H.frame, H.framer.frame_samples, H.pkt, sizeof(H.pkt));
            if (len > 0) {
                xz_pkt_push(&H.mic, H.pkt, (uint32_t)len);
                H.mic_frames++;
            }
            xz_framer_take(&H.framer);
        }
    }
    return 1;
}

static int next_speech(void) {
    int len = xz_pkt_pop(&H.spk, H.pkt, sizeof(H.pkt)), n;
    if (len < 0) return 0;
    n = xz_dec_decode(H.dec, H.pkt, (uint32_t)len, H.dec_out, FRAME_MAX);
    if (n <= 0) n = xz_dec_decode(H.dec, NULL, 0, H.dec_out, FRAME_MAX);
    if (n <= 0) return 0;
    if (H.spk_rate == H.rate) {
        memcpy(H.speech, H.dec_out, (size_t)n * sizeof(int16_t));
    } else {
        n = xz_rs_process(&H.rs_spk, H.dec_out, (uint32_t)n, H.speech, sizeof(H.speech) / sizeof(H.speech[0]));
        if (n <= 0) return 0;
    }
    H.speech_len = (uint32_t)n;
    H.speech_pos = 0;
    return 1;
}

/* A real speaker takes got / rate seconds to play a block, then echoes;
 * it is never further ahead of the ear than the board's queues hold. */
static void sounding(size_t got) {
    int64_t now = now_us(), tail = XZ_SPEECH_ECHO_TAIL_MS * 1000;
    int64_t until = __atomic_load_n(&H.sounding_until_us, __ATOMIC_RELAXED);
    int64_t start = until > now + tail ? until - tail : now;
    int64_t end = start + (int64_t)got * 1000000 / H.rate;
    if (end > now + SPK_AHEAD_US) end = now + SPK_AHEAD_US;
    __atomic_store_n(&H.sounding_until_us, end + tail, __ATOMIC_RELAXED);
}

/* One speaker block: speech first, else the MP3's PCM; silence is skipped. */
static int spk_tick(size_t n) {
    size_t got = 0, i;
    while (H.spk_on && got < n && (H.speech_pos < H.speech_len || next_speech())) {
        uint32_t k = H.speech_len - H.speech_pos;
        if (k > n - got) k = (uint32_t)(n - got);
        memcpy(H.block + got, H.speech + H.speech_pos, k * sizeof(int16_t));
        H.speech_pos += k;
        got += k;
    }
    if (got == 0 && H.mp3_state == XZ_MP3_PLAYING) {
        got = xz_ring_read(&H.pcm, (uint8_t *)H.block, (uint32_t)n * 2) / 2;
    }
    if (got == 0) return 0;
    for (i = 0; i < got; i++) H.block[i] = (int16_t)(((int32_t)H.block[i] * (int32_t)H.volume_q15) >> 15);
    write_all(H.spk_fd, H.block, got * 2);
    sounding(got);
    return 1;
}

static void *codec_thread(void *unused) {
    sigset_t pipe_sig;
    (void)unused;
    /* A speaker FIFO whose reader left gives EPIPE here, not a dead process. */
    sigemptyset(&pipe_sig);
    sigaddset(&pipe_sig, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_sig, NULL);
    while (H.running) {
        size_t n = H.rate * BLOCK_MS / 1000;
        int busy = 0;
        pthread_mutex_lock(&H.lock);
        if (H.job_fn) {
            H.job_fn(H.job_arg);
            H.job_fn = NULL;
            H.job_done = 1;
            pthread_cond_broadcast(&H.done_cv);
            busy = 1;
        }
        pthread_mutex_unlock(&H.lock);
        busy |= mic_tick();
        busy |= spk_tick(n);
        if (!busy) nap_ms(BLOCK_MS);
    }
    return NULL;
}

/* ---- MP3 thread: fed bytes -> sox's stdin, sox's stdout -> the PCM ring ---- */

typedef struct {
    pid_t pid;
    int to_sox, from_sox;                 /* non-blocking; -1 once closed */
    uint8_t in[XZ_MP3_CHUNK], pcm[2048];
    uint32_t in_len, in_off, pcm_len, pcm_off, pcm_total;
} sox_t;

static int spawn_sox(sox_t *x) {
    char rate[16];
    char *argv[] = {"sox", "-q", "-t", "mp3", "-", "-t", "raw", "-e", "signed-integer", "-b", "16",
                    "-c", "1", "-r", rate, "-", NULL};
    posix_spawn_file_actions_t fa;
    int in[2], out[2], rc;
    snprintf(rate, sizeof(rate), "%u", (unsigned)H.rate);
    if (pipe2(in, O_CLOEXEC) != 0) return -1;
    if (pipe2(out, O_CLOEXEC) != 0) {
        close(in[0]);
        close(in[1]);
        return -1;
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    /* Bytes sox cannot decode are MP3_ERROR, as on the board: no text. */
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    rc = posix_spawnp(&x->pid, "sox", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(in[0]);
    close(out[1]);
    if (rc != 0) {
        close(in[1]);
        close(out[0]);
        return -1;
    }
    x->to_sox = in[1];
    x->from_sox = out[0];
    /* The board holds fed bytes in its 16 KB ring only; a 64 KB pipe in
     * front of sox would keep the feeder's back-pressure from the tests. */
    fcntl(x->to_sox, F_SETPIPE_SZ, 4096);
    /* Neither pipe may block the thread: it must keep draining sox's
     * output while sox waits for input, or both would wait forever. */
    fcntl(x->to_sox, F_SETFL, O_NONBLOCK);
    fcntl(x->from_sox, F_SETFL, O_NONBLOCK);
    return 0;
}

static void close_fd(int *fd) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

/* Fed bytes to sox; the end mark closes its stdin. -1: the read failed. */
static int pump_in(sox_t *x) {
    ssize_t k;
    if (x->to_sox < 0) return 0;
    if (x->in_off == x->in_len) {
        int end = END_LOAD();
        x->in_len = xz_ring_read(&H.input, x->in, sizeof(x->in));
        x->in_off = 0;
        if (end == IN_FAILED) return -1;
        if (!x->in_len) {
            if (end) close_fd(&x->to_sox);
            return 0;
        }
    }
    k = write(x->to_sox, x->in + x->in_off, x->in_len - x->in_off);
    if (k > 0) x->in_off += (uint32_t)k;
    else if (k < 0 && errno != EAGAIN && errno != EINTR) close_fd(&x->to_sox); /* sox quit: its status says why */
    return 0;
}

/* sox's PCM into the ring while playing (back-pressure from the ring).
 * Returns 1 while there is more to come. */
static int pump_out(sox_t *x) {
    if (H.mp3_state == XZ_MP3_PAUSED) return 1;
    if (x->pcm_off == x->pcm_len && x->from_sox >= 0) {
        ssize_t k = read(x->from_sox, x->pcm, sizeof(x->pcm));
        if (k > 0) {
            x->pcm_len = (uint32_t)k;
            x->pcm_off = 0;
            x->pcm_total += (uint32_t)k;
        } else if (k == 0 || (errno != EAGAIN && errno != EINTR)) {
            close_fd(&x->from_sox);
        }
    }
    if (x->pcm_off < x->pcm_len) {
        x->pcm_off += xz_ring_write(&H.pcm, x->pcm + x->pcm_off, x->pcm_len - x->pcm_off);
    }
    return x->from_sox >= 0 || x->pcm_off < x->pcm_len;
}

static int run_sox(void) {
    static sox_t x;
    int rc = XZ_MP3_EV_END, status = 0, failed = 0;
    memset(&x, 0, sizeof(x));
    if (spawn_sox(&x) != 0) return XZ_MP3_EV_ERROR;
    while (!H.mp3_stop) {
        struct pollfd pf[2];
        nfds_t n = 0;
        if (pump_in(&x) != 0) {
            failed = 1;
            break;
        }
        if (!pump_out(&x)) break;
        /* Sleep until sox can take or give bytes; 1 ms at most, for the
         * ring, the fed bytes and pause/stop. */
        if (x.to_sox >= 0 && x.in_off < x.in_len) pf[n++] = (struct pollfd){x.to_sox, POLLOUT, 0};
        if (x.from_sox >= 0 && x.pcm_off == x.pcm_len && H.mp3_state != XZ_MP3_PAUSED) pf[n++] = (struct pollfd){x.from_sox, POLLIN, 0};
        poll(pf, n, 1);
    }
    close_fd(&x.to_sox);
    close_fd(&x.from_sox);
    if (H.mp3_stop || failed) kill(x.pid, SIGTERM);
    waitpid(x.pid, &status, 0);
    if (H.mp3_stop) return XZ_MP3_EV_STOPPED;
    if (failed || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || !x.pcm_total) rc = XZ_MP3_EV_ERROR;
    /* A natural end counts once the last sample has been played. */
    while (rc == XZ_MP3_EV_END && xz_ring_used(&H.pcm) && !H.mp3_stop) nap_ms(1);
    return H.mp3_stop ? XZ_MP3_EV_STOPPED : rc;
}

static void *mp3_thread(void *unused) {
    sigset_t pipe_sig;
    (void)unused;
    /* sox quitting on bad input makes our next write EPIPE, not a signal. */
    sigemptyset(&pipe_sig);
    sigaddset(&pipe_sig, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_sig, NULL);
    pthread_mutex_lock(&H.lock);
    while (H.running) {
        uint8_t ev;
        while (H.running && !H.mp3_go) pthread_cond_wait(&H.mp3_cv, &H.lock);
        if (!H.running) break;
        H.mp3_go = 0;
        pthread_mutex_unlock(&H.lock);
        ev = (uint8_t)run_sox();
        H.mp3_state = XZ_MP3_IDLE;
        xz_ring_write(&H.events, &ev, 1);
        pthread_mutex_lock(&H.lock);
    }
    pthread_mutex_unlock(&H.lock);
    return NULL;
}

/* ---- xz_engine.h ---- */

int xz_engine_start(const xz_pins_t *pins) {
    if (H.running) return 0;
    H.pins = *pins;
    if (!H.pins.mic_rate) H.pins.mic_rate = H.pins.rate;
    H.rate = pins->rate;
    H.volume_q15 = 32768u * 70u / 100u;
    H.enc = malloc(xz_enc_size());
    H.dec = malloc(xz_dec_size());
    if (!H.enc || !H.dec || H.rate * BLOCK_MS / 1000 > BLOCK_MAX) return -1;
    xz_ring_init(&H.mic, H.mic_store, MIC_RING);
    xz_ring_init(&H.spk, H.spk_store, SPK_RING);
    xz_ring_init(&H.pcm, H.pcm_store, PCM_RING);
    xz_ring_init(&H.events, H.ev_store, EVENTS);
    xz_ring_init(&H.input, H.in_store, IN_RING);
    xz_rs_init(&H.rs_mic, 2, 3);
    xz_rs_init(&H.rs_ref, 2, 3);
    xz_rs_init(&H.rs_spk, 3, 2);
    H.running = 1;
    if (pthread_create(&H.codec, NULL, codec_thread, NULL) != 0) {
        H.running = 0;
        return -1;
    }
    if (pthread_create(&H.mp3, NULL, mp3_thread, NULL) != 0) {
        xz_engine_stop();
        return -1;
    }
    return 0;
}

void xz_engine_stop(void) {
    xz_speech_stop();
    pthread_mutex_lock(&H.lock);
    H.running = 0;
    H.mp3_stop = 1;
    pthread_cond_broadcast(&H.mp3_cv);
    pthread_mutex_unlock(&H.lock);
    pthread_join(H.codec, NULL);
    pthread_join(H.mp3, NULL);
}

int xz_engine_call(void (*fn)(void *), void *arg) {
    if (!H.running) return -1;
    pthread_mutex_lock(&H.lock);
    while (H.job_fn) pthread_cond_wait(&H.done_cv, &H.lock);
    H.job_fn = fn;
    H.job_arg = arg;
    H.job_done = 0;
    while (!H.job_done) pthread_cond_wait(&H.done_cv, &H.lock);
    pthread_mutex_unlock(&H.lock);
    return 0;
}

typedef struct {
    uint32_t rate, ms;
    int rc;
} setup_t;

static void mic_setup(void *arg) {
    setup_t *s = arg;
    s->rc = xz_enc_init(H.enc, s->rate, s->ms);
    if (s->rc == 0) {
        xz_framer_init(&H.framer, H.frame, xz_enc_frame_samples(H.enc));
        xz_rs_init(&H.rs_mic, 2, 3);
        xz_rs_init(&H.rs_ref, 2, 3);
        if (H.mic_fd >= 0) close(H.mic_fd);
        H.mic_fd = open_env("XZAUDIO_MIC", O_RDONLY | O_NONBLOCK);
        H.block_fill = 0;
    }
}

int xz_mic_start(uint32_t opus_rate, uint32_t frame_ms) {
    setup_t s = {opus_rate, frame_ms, -1};
    H.mic_on = 0;
    if (xz_engine_call(mic_setup, &s) != 0 || s.rc != 0) return s.rc ? s.rc : -1;
    H.mic_on = 1;
    return 0;
}

void xz_mic_stop(void) {
    H.mic_on = 0;
}

int xz_mic_pop(uint8_t *dst, uint32_t cap) {
    return xz_pkt_pop(&H.mic, dst, cap);
}

int xz_mic_readable(void) {
    return xz_pkt_peek_len(&H.mic) >= 0;
}

static void spk_setup(void *arg) {
    setup_t *s = arg;
    s->rc = xz_dec_init(H.dec, s->rate);
    xz_rs_init(&H.rs_spk, 3, 2);
    H.speech_len = H.speech_pos = 0;
    if (H.spk_fd >= 0) close(H.spk_fd);
    H.spk_fd = open_env("XZAUDIO_SPK", O_WRONLY | O_CREAT | O_APPEND);
}

int xz_spk_start(uint32_t opus_rate) {
    setup_t s = {opus_rate, 60, -1};
    if (opus_rate != H.rate && !(opus_rate == 16000 && H.rate == 24000)) return XZ_ERR_ARG;
    H.spk_on = 0;
    if (xz_engine_call(spk_setup, &s) != 0 || s.rc != 0) return s.rc ? s.rc : -1;
    H.spk_rate = opus_rate;
    H.spk_on = 1;
    return 0;
}

int xz_spk_push(const uint8_t *pkt, uint32_t len) {
    return xz_pkt_push(&H.spk, pkt, len);
}

int xz_spk_writable(uint32_t len) {
    return xz_ring_free(&H.spk) >= len + 2;
}

static void spk_drain(void *unused) {
    int64_t tail = now_us() + XZ_SPEECH_ECHO_TAIL_MS * 1000;
    (void)unused;
    while (xz_pkt_skip(&H.spk) >= 0) {
    }
    H.speech_len = H.speech_pos = 0;
    /* What was flushed is never played: only the echo tail is left. */
    if (__atomic_load_n(&H.sounding_until_us, __ATOMIC_RELAXED) > tail) {
        __atomic_store_n(&H.sounding_until_us, tail, __ATOMIC_RELAXED);
    }
}

void xz_spk_flush(void) {
    xz_engine_call(spk_drain, NULL);
}

void xz_spk_volume(int percent) {
    if (percent < 0) percent = 0;
    if (percent > 100) percent = 100;
    H.volume_q15 = 32768u * (uint32_t)percent / 100u;
}

int xz_mp3_begin(void) {
    if (!H.running) return -1;
    if (H.mp3_state != XZ_MP3_IDLE) {
        H.mp3_stop = 1;
        while (H.mp3_state != XZ_MP3_IDLE) nap_ms(1);
    }
    /* The last file's unplayed PCM is not this file's. The codec thread
     * reads the ring only while PLAYING, so draining it here is safe; the
     * MP3 thread is idle, so neither side touches the input ring. */
    while (xz_ring_used(&H.pcm)) {
        uint8_t skip[256];
        xz_ring_read(&H.pcm, skip, sizeof(skip));
    }
    xz_ring_init(&H.input, H.in_store, IN_RING);
    END_STORE(0);
    pthread_mutex_lock(&H.lock);
    H.mp3_stop = 0;
    H.mp3_state = XZ_MP3_PLAYING;
    H.mp3_go = 1;
    pthread_cond_signal(&H.mp3_cv);
    pthread_mutex_unlock(&H.lock);
    return 0;
}

static int feed_open(void) {
    return H.mp3_state != XZ_MP3_IDLE && !H.mp3_stop && !H.in_end;
}

int xz_mp3_feed(const uint8_t *src, uint32_t n) {
    if (!feed_open()) return -1;
    if (n > XZ_MP3_CHUNK || xz_ring_free(&H.input) < n) return 0;
    xz_ring_write(&H.input, src, n);
    return (int)n;
}

/* Ready once half the ring is free, not one chunk: each wait of the
 * feeding task (asyncio's poller allocates a little per wait) then feeds
 * four chunks. */
int xz_mp3_feed_ready(void) {
    return !feed_open() || xz_ring_free(&H.input) >= IN_RING / 2;
}

void xz_mp3_end(int failed) {
    if (feed_open()) END_STORE(failed ? IN_FAILED : IN_ENDED);
}

void xz_mp3_pause(int paused) {
    if (H.mp3_state == XZ_MP3_IDLE) return;
    H.mp3_state = paused ? XZ_MP3_PAUSED : XZ_MP3_PLAYING;
}

void xz_mp3_stop(void) {
    if (H.mp3_state != XZ_MP3_IDLE) H.mp3_stop = 1;
}

int xz_mp3_state(void) {
    return H.mp3_state;
}

int xz_mp3_event(void) {
    uint8_t ev;
    return xz_ring_read(&H.events, &ev, 1) ? ev : -1;
}

int xz_mp3_event_pending(void) {
    return xz_ring_used(&H.events) > 0;
}

void xz_engine_stats(uint32_t out[4]) {
    out[0] = H.mic.dropped;
    out[1] = H.spk.dropped;
    out[2] = 0; /* no I2S clock to fall behind on the host */
    out[3] = H.mic_frames;
}

int xz_engine_running(void) {
    return H.running;
}

const xz_pins_t *xz_engine_pins(void) {
    return &H.pins;
}
