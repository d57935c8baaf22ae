/* The audio engine (on the board: I2S in one of three wirings, the codec
 * task that owns every libopus call and feeds the speech engine, and the
 * MP3 task). The MicroPython binding talks to it only through this header;
 * all calls are non-blocking except xz_engine_call, which runs a function
 * on the codec task's large stack and waits for it.
 *
 * The board's engine (xz_engine.c, xz_i2s.c, xz_mp3task.c) needs ESP-IDF
 * 5.x (driver/i2s_std.h and i2s_tdm.h, FreeRTOS, espressif/esp_audio_codec);
 * the unix port implements this header with ../host/xz_engine_host.c.
 */
#ifndef XZ_ENGINE_H
#define XZ_ENGINE_H

#include <stdint.h>

/* I2S wiring modes (xzaudio.MODE_*):
 *   DUPLEX   one controller, standard (Philips) TX and RX sharing MCLK
 *            (256 fs), BCLK and WS; 16-bit mono; one rate. An ES8311
 *            alone.
 *   TDM      one controller: TX standard Philips (16-bit data in 32-bit
 *            slots, so its frame is the RX frame's 64 BCLK: RX is TX's
 *            slave, xz_i2s.h), RX TDM (16-bit slots,
 *            tdm_slots of them) on the same MCLK/BCLK/WS; the mic is slot
 *            mic_slot, the playback reference (for echo cancellation)
 *            slot ref_slot, or none (-1). ES8311 + ES7210, as
 *            xiaozhi-esp32's BoxAudioCodec reads the ES7210.
 *   SIMPLEX  no codec, no MCLK: the speaker on I2S0 (bclk, ws, dout),
 *            the mic on I2S1 (mic_bclk, mic_ws, din), each 32-bit slots,
 *            left channel, each at its own rate (INMP441 + MAX98357A). */
#define XZ_MODE_DUPLEX 0
#define XZ_MODE_TDM 1
#define XZ_MODE_SIMPLEX 2
#define XZ_TDM_SLOTS_MAX 8

/* Field names are xzaudio.start()'s keywords (a host test compares the
 * defaults below with the binding's). */
typedef struct {
    int mode;
    uint32_t rate;                 /* speaker I2S rate (24000) */
    uint32_t mic_rate;             /* mic I2S rate, 16000 or 24000; 0 = rate (the
                                    * binding checks the whole set before a start) */
    int mclk, bclk, ws, dout, din; /* GPIO numbers; -1 = unused */
    int mic_bclk, mic_ws;          /* SIMPLEX: the mic's own clock pins */
    int tdm_slots, mic_slot, ref_slot; /* TDM: slots per frame, mic, reference (-1: none) */
} xz_pins_t;

/* The wiring an audio object starts the engine with when xzaudio.start()
 * was not called: the sening profile's pins (xiaozhi-esp32's Lichuang
 * ESP32-S3), but DUPLEX with no reference slot, the mono mic the unix
 * port's tests feed. The board never runs on it: hal/esp32/board.py starts
 * the engine at boot with the profile's whole wiring (TDM, reference slot
 * 1 for sening), before the codecs (docs/hardware.md). */
#define XZ_PINS_DEFAULT {.mode = 0, .rate = 24000, .mic_rate = 0, .mclk = 38, .bclk = 14, .ws = 13, \
                         .dout = 45, .din = 12, .mic_bclk = -1, .mic_ws = -1, .tdm_slots = 4, \
                         .mic_slot = 0, .ref_slot = -1}

/* Reading the wiring: a playback reference reaches the mic side. */
#define XZ_PINS_HAVE_REF(p) ((p)->mode == XZ_MODE_TDM && (p)->ref_slot >= 0)

int xz_engine_start(const xz_pins_t *pins); /* 0 or an esp_err_t */
void xz_engine_stop(void);

/* Runs fn(arg) on the codec task (40+ KB stack for libopus) and waits. */
int xz_engine_call(void (*fn)(void *), void *arg);

/* Microphone: 16 kHz Opus packets of frame_ms, one per queue entry. */
int xz_mic_start(uint32_t opus_rate, uint32_t frame_ms);
void xz_mic_stop(void);
int xz_mic_pop(uint8_t *dst, uint32_t cap); /* length, -1 empty, -2 dst too small */
int xz_mic_readable(void);

/* Speaker: Opus packets at the rate the server announced. */
int xz_spk_start(uint32_t opus_rate);
int xz_spk_push(const uint8_t *pkt, uint32_t len); /* 0, or -1 queue full (dropped) */
int xz_spk_writable(uint32_t len);
void xz_spk_flush(void);
void xz_spk_volume(int percent);

/* MP3 fed by the MicroPython task. It opens and reads the file itself:
 * the board mounts the SD card with MicroPython's os.mount, a VFS that
 * ESP-IDF's fopen cannot see, so the engine never opens files. The MP3
 * task decodes the fed bytes from a ring, which gives back-pressure: a
 * feed takes a chunk only when the whole of it fits. Events as in the
 * binding. */
#define XZ_MP3_EV_END 1
#define XZ_MP3_EV_STOPPED 2
#define XZ_MP3_EV_ERROR 3
#define XZ_MP3_IDLE 0
#define XZ_MP3_PLAYING 1
#define XZ_MP3_PAUSED 2
#define XZ_MP3_CHUNK 2048 /* the most one feed takes */
/* A new stream (stops the one playing, waiting for its task): 0 or -1. */
int xz_mp3_begin(void);
/* n when taken; 0 when it does not fit yet; -1 when the stream takes no
 * more bytes (stopped, ended, failed, or never begun). n <= XZ_MP3_CHUNK. */
int xz_mp3_feed(const uint8_t *src, uint32_t n);
/* Worth polling for: feeds of XZ_MP3_CHUNK bytes would not answer 0 (half
 * the ring is free, or the stream takes no more). */
int xz_mp3_feed_ready(void);
/* No more bytes: the file ended (failed = 0), or reading it failed
 * (failed = 1, reported as XZ_MP3_EV_ERROR). */
void xz_mp3_end(int failed);
void xz_mp3_pause(int paused);
void xz_mp3_stop(void);
int xz_mp3_state(void);
int xz_mp3_event(void); /* next event or -1 */
int xz_mp3_event_pending(void);

/* mic_dropped, spk_dropped, spk_underruns, mic_frames */
void xz_engine_stats(uint32_t out[4]);

/* 1 once xz_engine_start succeeded (and until xz_engine_stop). */
int xz_engine_running(void);
/* The wiring the engine runs with (valid while it runs). */
const xz_pins_t *xz_engine_pins(void);

#endif
