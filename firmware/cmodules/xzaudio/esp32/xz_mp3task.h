/* MP3 playback task (ESP-IDF only): takes the bytes MicroPython feeds
 * (xz_mp3_feed: it reads the file through its own VFS) from a ring in
 * small chunks, decodes them with Espressif's esp_audio_codec (declared in
 * idf_component.yml, not vendored), downmixes to mono and hands PCM to the
 * codec task through a ring. */
#ifndef XZ_MP3TASK_H
#define XZ_MP3TASK_H

#include <stddef.h>
#include <stdint.h>

int xz_mp3task_start(void);
void xz_mp3task_stop(void);
/* Called by the codec task: up to n samples of decoded PCM; returns count. */
size_t xz_mp3task_pcm(int16_t *dst, size_t n);

/* Provided by the engine. */
void xz_engine_request_rate(uint32_t rate);
uint32_t xz_engine_base_rate(void);

#endif
