# MicroPython unix port with the xzaudio C module (docs/firmware.md,
# "MicroPython builds"): the firmware's interpreter on the host, 64-bit and
# 32-bit (the board's word size, so its heap figures hold).
#
#   make micropython MICROPY_SRC=path/to/micropython-1.28.0-src.tar.xz
#   make micropython MICROPY_SRC=path/to/micropython   (git checkout of v1.28.0
#                                                        with its submodules)
#
# The source is remembered in build/micropython/SOURCE, so later runs (and
# `make test`) need no MICROPY_SRC. File targets only: a second run does
# nothing while the source, the C module and this file are unchanged.

MP_OUT    := build/micropython
MP_ABS    := $(abspath $(MP_OUT))
MICROPY_SRC ?= $(shell cat $(MP_OUT)/SOURCE 2>/dev/null)
MP_CMODS  := $(abspath firmware/cmodules)
MP_INPUTS := $(shell find firmware/cmodules -name '*.[ch]' -o -name micropython.mk) mk/micropython.mk
MP_JOBS   ?= 2
# A tarball is unpacked under build/; a checkout is built in place, with
# every object file under build/ (BUILD=) so the checkout stays clean.
ifneq ($(filter %.tar.xz %.tar.gz %.tgz %.tar,$(MICROPY_SRC)),)
MP_TOP    := $(MP_OUT)/src
MP_STAMP  := $(MP_TOP)/.unpacked
else
MP_TOP    := $(MICROPY_SRC:%/=%)
MP_STAMP  := $(MP_TOP)/py/mpconfig.h
endif
MP_XCROSS := $(MP_ABS)/mpy-cross/mpy-cross
# btree needs the berkeley-db submodule the trimmed source does not carry;
# the firmware does not use it.
MP_PORT_ARGS = -C $(MP_TOP)/ports/unix -j$(MP_JOBS) VARIANT=standard MICROPY_PY_BTREE=0 \
	USER_C_MODULES=$(MP_CMODS) MICROPY_MPYCROSS=$(MP_XCROSS) MICROPY_MPYCROSS_DEPENDENCY=$(MP_XCROSS)
# The i386 .pc files first, so libffi and libopus resolve to their 32-bit builds.
MP_PKG32  := PKG_CONFIG_LIBDIR=/usr/lib/i386-linux-gnu/pkgconfig:/usr/share/pkgconfig

MP_BINS   := $(MP_OUT)/unix64/micropython $(MP_OUT)/unix32/micropython
# $(call mp_make,what,log,command): one line while it builds, the compiler's
# hundreds of lines in the log; the log's tail when it fails.
mp_make = @echo "micropython: building $(1) (log: $(MP_OUT)/$(2).log)"; mkdir -p $(MP_OUT); \
	$(3) > $(MP_OUT)/$(2).log 2>&1 || { tail -30 $(MP_OUT)/$(2).log; \
	echo "make micropython: $(1) failed; the whole log: $(MP_OUT)/$(2).log" >&2; false; }
# Inputs after whose change the port builds from scratch: another source,
# or another list of module files (the port's incremental qstr scan only
# looks at files newer than its last scan, so an added old file would be missed).
MP_FRESH  := $(MP_OUT)/SOURCE mk/micropython.mk $(wildcard firmware/cmodules/*/micropython.mk)

.PHONY: micropython micropython-maybe micropython-frozen micropython-clean micropython-source

micropython: $(MP_BINS)

# For `make test`: build when a source is known, else say why and go on.
micropython-maybe:
ifeq ($(MICROPY_SRC),)
	@echo "micropython: MICROPY_SRC is not set and no earlier build recorded one, so the"
	@echo "  tests run on the pip 'micropython' (64-bit, no xzaudio; tests that need them skip)."
	@echo "  Build them once with: make micropython MICROPY_SRC=<micropython-1.28.0 tarball or checkout>"
else ifeq ($(wildcard $(MICROPY_SRC)),)
	@echo "micropython: the source $(MICROPY_SRC) is gone, so the builds are not refreshed; the tests"
	@echo "  use $(if $(wildcard $(MP_OUT)/unix32/micropython),the last 32-bit build,the pip 'micropython')."
	@echo "  Give another with: make micropython MICROPY_SRC=<micropython-1.28.0 tarball or checkout>"
else
	@$(MAKE) --no-print-directory micropython
endif

micropython-source:
ifeq ($(MICROPY_SRC),)
	@echo "make micropython: no MicroPython source. Set MICROPY_SRC to a v1.28.0 source tarball" >&2
	@echo "  (.tar.xz/.tar.gz) or to a git checkout of tag v1.28.0 with its submodules" >&2
	@echo "  (git clone -b v1.28.0 https://github.com/micropython/micropython &&" >&2
	@echo "   make -C micropython/ports/unix submodules), e.g." >&2
	@echo "  make micropython MICROPY_SRC=../micropython-1.28.0-src.tar.xz" >&2
	@false
else
	@test -f "$(MICROPY_SRC)" || test -f "$(MICROPY_SRC)/py/mpconfig.h" || \
	  { echo "make micropython: MICROPY_SRC=$(MICROPY_SRC) is neither a source tarball nor a MicroPython checkout" >&2; false; }
endif

# Remember a given source (only when it exists); its file changes only when
# the source does, which rebuilds from scratch.
ifneq ($(wildcard $(MICROPY_SRC)),)
ifneq ($(abspath $(MICROPY_SRC)),$(shell cat $(MP_OUT)/SOURCE 2>/dev/null))
$(shell mkdir -p $(MP_OUT) && echo '$(abspath $(MICROPY_SRC))' > $(MP_OUT)/SOURCE)
endif
endif

$(MP_OUT)/SOURCE:
	@$(MAKE) --no-print-directory micropython-source

$(MP_OUT)/src/.unpacked: $(MP_OUT)/SOURCE $(MICROPY_SRC)
	rm -rf $(MP_OUT)/src && mkdir -p $(MP_OUT)/src
	tar -xf $(MICROPY_SRC) -C $(MP_OUT)/src --strip-components=1
	@touch $@

$(MP_XCROSS): $(MP_OUT)/SOURCE $(MP_STAMP)
	@$(if $(filter $(MP_OUT)/SOURCE,$?),rm -rf $(MP_ABS)/mpy-cross)
	$(call mp_make,mpy-cross,mpy-cross,$(MAKE) -C $(MP_TOP)/mpy-cross -j$(MP_JOBS) BUILD=$(MP_ABS)/mpy-cross)

$(MP_OUT)/unix64/micropython: $(MP_OUT)/SOURCE $(MP_STAMP) $(MP_XCROSS) $(MP_INPUTS)
	@$(if $(filter $(MP_FRESH),$?),rm -rf $(MP_ABS)/unix64/obj)
	$(call mp_make,the 64-bit unix port,unix64,$(MAKE) $(MP_PORT_ARGS) BUILD=$(MP_ABS)/unix64/obj)
	@cp $(MP_ABS)/unix64/obj/micropython $@

$(MP_OUT)/unix32/micropython: $(MP_OUT)/SOURCE $(MP_STAMP) $(MP_XCROSS) $(MP_INPUTS)
	@$(if $(filter $(MP_FRESH),$?),rm -rf $(MP_ABS)/unix32/obj)
	$(call mp_make,the 32-bit unix port,unix32,$(MP_PKG32) $(MAKE) $(MP_PORT_ARGS) MICROPY_FORCE_32BIT=1 BUILD=$(MP_ABS)/unix32/obj)
	@cp $(MP_ABS)/unix32/obj/micropython $@

# The firmware frozen into the 32-bit port, as firmware/manifest.py freezes
# it into the board image (docs/firmware.md, "Heap"): run it with
#   build/micropython/unix32-frozen/micropython -X heapsize=256K -m main --state DIR
# Rebuilt whenever a firmware module changes, so apart from `make micropython`.
MP_FW_PY := $(shell find firmware -name '*.py')
MP_FROZEN := $(MP_OUT)/unix32-frozen/micropython

micropython-frozen: $(MP_FROZEN)

$(MP_FROZEN): $(MP_OUT)/SOURCE $(MP_STAMP) $(MP_XCROSS) $(MP_INPUTS) $(MP_FW_PY)
	@mkdir -p $(MP_OUT)/frozen
	@$(if $(filter $(MP_FRESH),$?),rm -rf $(MP_ABS)/unix32-frozen/obj)
	@echo "VERSION = 'host-$$(git rev-parse --short HEAD 2>/dev/null || echo unknown)'" > $(MP_OUT)/frozen/fwversion.py
	$(call mp_make,the 32-bit unix port with the firmware frozen,unix32-frozen,$(MP_PKG32) $(MAKE) $(MP_PORT_ARGS) \
	  MICROPY_FORCE_32BIT=1 BUILD=$(MP_ABS)/unix32-frozen/obj FROZEN_MANIFEST=$(abspath firmware/manifest_unix.py))
	@cp $(MP_ABS)/unix32-frozen/obj/micropython $@

micropython-clean:
	rm -rf $(MP_OUT)

# Heap of the frozen firmware: plain boot, broker configured, a lesson
# playing (docs/firmware.md, "Heap on the board's word size").
.PHONY: bench-firmware-heap
bench-firmware-heap: setup micropython-frozen
	$(PY) bench/firmware_heap.py
