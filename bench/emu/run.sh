#!/usr/bin/env bash
# Emulator benchmarks (root + /dev/net/tun): bench/emu/RESULTS.md. BENCH_QUICK=1 for a short run.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "$(id -u)" != 0 ] || [ ! -e /dev/net/tun ]; then
  echo "bench/emu: skipped (needs root and /dev/net/tun)"
  exit 0
fi
.venv/bin/python bench/emu/bench.py ${BENCH_QUICK:+--quick}
