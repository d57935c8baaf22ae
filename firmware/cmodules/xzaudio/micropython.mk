# xzaudio on make-based MicroPython ports (the unix port: make micropython):
# Encoder/Decoder and the I/O objects (AudioIn, AudioOut, Mp3Player, Speech)
# over the host engine (host/xz_engine_host.c: files and pipes for I2S,
# pthreads for the board's tasks, sox for MP3; host/xz_speech_host.c for
# esp-sr), libopus from the system. The board build uses micropython.cmake
# and the ESP-IDF engine in esp32/ instead.
XZAUDIO_MOD_DIR := $(USERMOD_DIR)

SRC_USERMOD_C += $(XZAUDIO_MOD_DIR)/mod_xzaudio.c $(XZAUDIO_MOD_DIR)/mod_xzaudio_io.c \
	$(XZAUDIO_MOD_DIR)/mod_xzaudio_speech.c
SRC_USERMOD_LIB_C += $(addprefix $(XZAUDIO_MOD_DIR)/core/, xz_ring.c xz_frame.c xz_opus.c xz_resample.c xz_mp3info.c \
	xz_pcm.c xz_words.c)
SRC_USERMOD_LIB_C += $(XZAUDIO_MOD_DIR)/host/xz_engine_host.c $(XZAUDIO_MOD_DIR)/host/xz_speech_host.c

# esp32/ for xz_engine.h and xz_speech.h only: the engines' interfaces are the board's.
CFLAGS_USERMOD += -DXZ_HAVE_IO=1 -I$(XZAUDIO_MOD_DIR) -I$(XZAUDIO_MOD_DIR)/core -I$(XZAUDIO_MOD_DIR)/esp32 \
	$(shell pkg-config --cflags opus 2>/dev/null || echo -I/usr/include/opus)
LDFLAGS_USERMOD += $(shell pkg-config --libs opus 2>/dev/null || echo -lopus) -lm -lpthread
