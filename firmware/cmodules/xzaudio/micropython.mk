# xzaudio on make-based MicroPython ports (unix, for instance): Encoder and
# Decoder only (XZ_HAVE_IO is not set), libopus from the system. The board
# build uses micropython.cmake instead.
XZAUDIO_MOD_DIR := $(USERMOD_DIR)

SRC_USERMOD_C += $(XZAUDIO_MOD_DIR)/mod_xzaudio.c
SRC_USERMOD_LIB_C += $(addprefix $(XZAUDIO_MOD_DIR)/core/, xz_ring.c xz_frame.c xz_opus.c xz_resample.c xz_mp3info.c)

CFLAGS_USERMOD += -I$(XZAUDIO_MOD_DIR) -I$(XZAUDIO_MOD_DIR)/core $(shell pkg-config --cflags opus 2>/dev/null || echo -I/usr/include/opus)
LDFLAGS_USERMOD += $(shell pkg-config --libs opus 2>/dev/null || echo -lopus) -lm
