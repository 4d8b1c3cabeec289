#!/usr/bin/env bash
# Runs the benchmark (issue 3); see docs/performance.md.
#
#   bench/run.sh              the full table: both blocks, every shape, 1 and 2 threads
#   bench/run.sh --quick      a smoke run: 1x128, 1 thread, short timing
#   bench/run.sh --help       options (--block, --shape, --threads, --systems, --reps ...)
#
# Prints one markdown table per (block, shape, threads) and writes them all to
# bench/out/results.md. Set up first with bench/setup.sh.
set -euo pipefail

BENCH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY="$BENCH/.venv/bin/python"
[[ -x "$PY" ]] || { echo "bench/run.sh: bench/.venv missing: run bench/setup.sh" >&2; exit 1; }
exec "$PY" "$BENCH/run.py" "$@"
