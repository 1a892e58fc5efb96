#!/usr/bin/env bash
# Every test: Rust unit/integration tests, then the Python suite.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== the probe's static build (x86_64-unknown-linux-musl, for tests/static_chroot.rs) =="
cargo build --release --quiet -p bloatlab-probe --target x86_64-unknown-linux-musl || echo "no static build (the chroot test will skip)"
echo "== cargo test (release) =="
cargo test --release --workspace --exclude bloatlab-py --quiet 2>&1 | grep -vE '^\s*$' | tail -n 200
echo "== cargo benches build (they run in make bench; built here so they do not rot) =="
cargo build --release --workspace --exclude bloatlab-py --benches --quiet
echo "== fuzz (cargo-fuzz, ${FUZZ_SECONDS:-15} s per target) =="
if command -v cargo-fuzz >/dev/null && rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  for t in packet control iperf3; do
    log="$(mktemp)"
    if ! (cd crates/probe/fuzz && cargo +nightly fuzz run "$t" -- -max_total_time="${FUZZ_SECONDS:-15}" >"$log" 2>&1); then
      tail -n 40 "$log"; echo "fuzz target $t failed (the input is in crates/probe/fuzz/artifacts/$t)"; rm -f "$log"; exit 1
    fi
    echo "$t: $(grep -E '^Done' "$log" | tail -n 1)"; rm -f "$log"
  done
else
  echo "skipped: cargo-fuzz or a nightly toolchain is missing (scripts/setup.sh installs cargo-fuzz where nightly exists)"
fi
echo "== pytest =="
.venv/bin/python -m pytest -q -rsR tests
