#!/usr/bin/env bash
# Emulator benchmarks (root + /dev/net/tun): bench/emu/RESULTS.md. BENCH_QUICK=1 for a short run.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "$(id -u)" != 0 ] || [ ! -e /dev/net/tun ]; then
  echo "bench/emu: skipped (needs root and /dev/net/tun)"
  exit 0
fi
.venv/bin/python bench/emu/bench.py ${BENCH_QUICK:+--quick}
# GSO super-packets at 1-10 Gbit/s beside the old path, the method's ceiling and the kernel's tbf (issue 13 §1): bench/emu/GSO.md
.venv/bin/python bench/emu/gso.py ${BENCH_QUICK:+--quick}
# the fidelity suite (issue 10 §3): 31 scenarios on both engines -> docs/fidelity.md, bench/emu/fidelity.json
.venv/bin/python bench/emu/fidelity.py ${BENCH_QUICK:+01 03}
# the fidelity matrix: BBR vs CUBIC over buffer x rate on both engines, errors per point and heatmaps
rm -rf bench/out/fidelity-matrix
.venv/bin/bloatlab fidelity bench/emu/fidelity-matrix.toml --out bench/out/fidelity-matrix -q
