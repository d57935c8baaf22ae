# xiaozhi-apps: one entry point for every job.
# `make run` and `make test` set the machine up themselves (tools/setup.sh).

VENV   ?= .venv
PY     := $(VENV)/bin/python
PORT   ?=
ARGS   ?=
BOARD  ?= sening# a board profile, firmware/boards/$(BOARD).json
# pytest-xdist workers for make test: most tests wait on sockets and child
# processes, so 4 workers keep 2 cores busy; the CPU-heavy tests share one
# worker (tests/testkit/groups.py, docs/testing.md). 0 runs in one process.
TEST_WORKERS ?= 4
TEST_DIST := $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadgroup)

.PHONY: setup run sim test test-fast bench flash proto proto-check clean

setup:
	@tools/setup.sh

# `make run` also brings the offline chat model (1.1 GB, once; tools/setup.sh llm):
# the default LLM when no OpenAI-compatible endpoint is configured. `make test` does not.
run: setup
	@tools/setup.sh llm
	$(PY) -m xiaozhi_server run $(ARGS)

sim: setup
	$(PY) tools/sim.py --sample-lesson $(if $(filter command line,$(origin BOARD)),--board $(BOARD)) $(ARGS)

# micropython-maybe: the MicroPython builds the firmware tests run on
# (mk/micropython.mk), or a line saying why they are not built.
test: setup micropython-maybe
	$(PY) -m pytest -q $(TEST_DIST) $(ARGS)

# The quick part: everything not marked slow (no type check, firmware
# suites, C builds, fuzzing, network namespaces or browser).
test-fast: setup micropython-maybe
	$(PY) -m pytest -q $(TEST_DIST) -m "not slow" $(ARGS)

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
