# xiaozhi-apps: one entry point for every job.
# `make run` and `make test` set the machine up themselves (tools/setup.sh).

VENV   ?= .venv
PY     := $(VENV)/bin/python
PORT   ?=
ARGS   ?=
BOARD  ?= sening# a board profile, firmware/boards/$(BOARD).json

.PHONY: setup run sim test test-fast bench flash proto proto-check clean

setup:
	@tools/setup.sh

run: setup
	$(PY) -m xiaozhi_server run $(ARGS)

sim: setup
	$(PY) tools/sim.py --sample-lesson $(if $(filter command line,$(origin BOARD)),--board $(BOARD)) $(ARGS)

# micropython-maybe: the MicroPython builds the firmware tests run on
# (mk/micropython.mk), or a line saying why they are not built.
test: setup micropython-maybe
	$(PY) -m pytest -q $(ARGS)

bench: setup
	$(PY) -m bench $(ARGS)

flash: setup
	$(PY) tools/flash.py --board $(BOARD) $(if $(PORT),--port $(PORT)) $(ARGS)

# Regenerate the CPython and MicroPython protocol code from shared/protocol.
proto: setup
	$(PY) shared/protocol/generate.py

proto-check: setup
	$(PY) shared/protocol/generate.py --check

clean:
	rm -rf build .pytest_cache

# Fragments of other layers (C module build, ...) add their own targets.
-include mk/*.mk
