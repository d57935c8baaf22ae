/* The on-device speech engine: wake word and offline command words.
 *
 * On the board (xz_speech.c) this is Espressif's esp-sr: the AFE (echo
 * cancellation when the wiring has a playback reference, noise
 * suppression, VAD) with WakeNet inside it, and MultiNet on the AFE's
 * output for the command words, in two FreeRTOS tasks of its own. Models
 * come from the `model` flash partition (esp_srmodel_init). On the unix
 * port ../host/xz_speech_host.c stands in: no recognition, events injected
 * from a file, gated by the same rule, so the binding's event path runs in
 * the firmware tests.
 *
 * The codec task feeds it 16 kHz blocks (the mic, and the reference when
 * there is one); nothing here touches the MicroPython heap. Events go to
 * a queue the binding polls. Calls other than xz_speech_feed come from
 * the MicroPython task.
 */
#ifndef XZ_SPEECH_H
#define XZ_SPEECH_H

#include <stdint.h>

#include "xz_words.h" /* xz_speech_event_t, xz_command_t */

#define XZ_SPEECH_WAKE 1   /* the wake word */
#define XZ_SPEECH_PHRASE 2 /* a command word */

#define XZ_SPEECH_ENOMODEL (-200) /* no wake word model in the model partition */
#define XZ_SPEECH_ENOMEM (-201)   /* the AFE, a model or a task could not be made */
#define XZ_SPEECH_ESTATE (-202)   /* not started, or the audio engine is not running */

#define XZ_SPEECH_MAX_COMMANDS 64
/* After the speaker falls silent its sound still reaches the mic for a
 * while (DMA queue, room echo): a board without echo cancellation keeps
 * not listening this much longer. */
#define XZ_SPEECH_ECHO_TAIL_MS 300

/* Loads the models and starts the tasks; `lang` picks MultiNet ("cn" or
 * "en"). 0, or one of the XZ_SPEECH_E* codes. Needs the audio engine. */
int xz_speech_start(const char *lang);
void xz_speech_stop(void);
/* Detection pauses (the player's lesson, when CPU is short); the feed
 * stops, so a paused engine costs no CPU. */
void xz_speech_pause(int paused);
/* Replaces the command words (0..XZ_SPEECH_MAX_COMMANDS, copied). Returns
 * how many MultiNet refused (their ids in rejected[], up to cap), or an
 * XZ_SPEECH_E* code. Blocks until the detection task has applied them. */
int xz_speech_set_commands(const xz_command_t *cmds, int n, int *rejected, int cap);

int xz_speech_event(xz_speech_event_t *out); /* 1 and *out, or 0 when none */
int xz_speech_event_pending(void);
/* The word an event names: the command's word, or the model's wake word. */
const char *xz_speech_word(const xz_speech_event_t *ev);

/* 1 while started. */
int xz_speech_running(void);
/* 1 when echo cancellation runs (the wiring has a reference): the engine
 * then keeps listening while the device speaks. */
int xz_speech_aec(void);
/* The models in use ("" when none). */
const char *xz_speech_wake_model(void);
const char *xz_speech_command_model(void);
/* events posted, events dropped (queue full), 10 ms blocks not fed
 * (paused, or the speaker sounding without echo cancellation), blocks fed. */
void xz_speech_stats(uint32_t out[4]);

/* From the codec task: one 16 kHz block; ref is NULL without a
 * reference. `playing`: the speaker sounded within the echo tail. Never
 * blocks; a full ring drops the block. */
void xz_speech_feed(const int16_t *mic, const int16_t *ref, uint32_t n, int playing);

/* The one rule for when the engine hears (both engines use it): not
 * paused, and while the speaker sounds only with echo cancellation
 * (without it the device's own voice would reach WakeNet and MultiNet). */
static inline int xz_speech_hears(int paused, int aec, int playing) {
    return !paused && (aec || !playing);
}

#endif
