# Host build of the portable C audio core (firmware/cmodules/xzaudio/core):
# a shared library for the pytest ctypes tests and sanitizer-built fuzz
# harnesses. The board build goes through USER_C_MODULES instead
# (docs/cmodule.md). File targets only, so a second run does nothing.

CMOD_CORE  := firmware/cmodules/xzaudio/core
CMOD_BUILD := build/cmodule
CMOD_SRC   := $(wildcard $(CMOD_CORE)/*.c)
CMOD_HDR   := $(wildcard $(CMOD_CORE)/*.h)
CMOD_FUZZ  := tests/host/cmodule/c
CMOD_CC    ?= gcc
# Debian libopus-dev; pkg-config when present, else its standard paths.
CMOD_OPUS_CFLAGS := $(shell pkg-config --cflags opus 2>/dev/null || echo -I/usr/include/opus)
CMOD_OPUS_LIBS   := $(shell pkg-config --libs opus 2>/dev/null || echo -lopus)
CMOD_WARN  := -std=c99 -Wall -Wextra -Wpedantic -Werror
CMOD_SAN   := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
CMOD_HARNESSES := fuzz_opus_dec fuzz_mp3info fuzz_ring

.PHONY: cmodule-host cmodule-clean

cmodule-host: $(CMOD_BUILD)/libxzaudio.so $(addprefix $(CMOD_BUILD)/,$(CMOD_HARNESSES))

$(CMOD_BUILD):
	@mkdir -p $@

$(CMOD_BUILD)/libxzaudio.so: $(CMOD_SRC) $(CMOD_HDR) mk/cmodule.mk | $(CMOD_BUILD)
	$(CMOD_CC) $(CMOD_WARN) -O2 -fPIC -shared $(CMOD_OPUS_CFLAGS) -o $@ $(CMOD_SRC) $(CMOD_OPUS_LIBS) -lm

$(CMOD_BUILD)/fuzz_%: $(CMOD_FUZZ)/fuzz_%.c $(CMOD_FUZZ)/fuzz_common.h $(CMOD_SRC) $(CMOD_HDR) mk/cmodule.mk | $(CMOD_BUILD)
	$(CMOD_CC) $(CMOD_WARN) -D_POSIX_C_SOURCE=200809L $(CMOD_SAN) -I$(CMOD_CORE) $(CMOD_OPUS_CFLAGS) -o $@ $< $(CMOD_SRC) $(CMOD_OPUS_LIBS) -lm

cmodule-clean:
	rm -rf $(CMOD_BUILD)
