#!/usr/bin/env bash
# bloatlab-probe side by side with sockperf, irtt (UDP round trips) and iperf3
# (TCP goodput), on loopback and through a veth pair between two network
# namespaces (bloatlab-bench-a/b, removed on exit). Writes bench/probe/RESULTS.md.
# Usage: bench/probe/run.sh   (root for the namespace half; env N, T, PPS_COUNT)
set -euo pipefail
cd "$(dirname "$0")/../.."
need=()
for t in sockperf irtt iperf3; do command -v "$t" >/dev/null || need+=("$t"); done
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
cargo build -q --release -p bloatlab-probe
export PROBE="$CARGO_TARGET_DIR/release/bloatlab-probe"
echo "== probe server soak (hostile mix, 60 s) =="
bash bench/probe/soak.sh
exec python3 bench/probe/bench.py "$@"
