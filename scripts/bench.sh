#!/usr/bin/env bash
# Benchmarks. Figures are written to bench/**/RESULTS*.md and summarised in BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
for b in bench/run_*.sh; do
  [ -e "$b" ] || continue
  echo "== $b =="
  bash "$b"
done
