#!/usr/bin/env bash
# Every test: Rust unit/integration tests, then the Python suite. Each stage's header says when it started, and a
# line before the last part how long each took (BENCHMARKS.md, "make test's time": where the minutes go).
set -euo pipefail
cd "$(dirname "$0")/.."
times=()
stage() {  # stage NAME: close the stage before (its seconds), open NAME
  if [ -n "${name:-}" ]; then times+=("$name $((SECONDS - t0)) s"); fi
  name="$1"; t0=$SECONDS
  echo "== $1 (at $(date -u +%T), $SECONDS s into the tests) =="
}
stage "the probe's static build (x86_64-unknown-linux-musl, for tests/static_chroot.rs)"
cargo build --release --quiet -p bloatlab-probe --target x86_64-unknown-linux-musl || echo "no static build (the chroot test will skip)"
# The Rust tests build in release's optimisation without its thin LTO (a profile of this script's own, its artifacts in
# target/test-opt/): with LTO each of the ~20 test binaries' links generated the code of the whole dependency tree
# again. Measured (BENCHMARKS.md, "make test's time"): the workspace's tests built in 564 CPU-s with LTO, in 227 plus
# 217 once for the dependencies without. The shipped binaries (.venv/bin, the wheel, the static probe) stay release's,
# and the Python tests run those.
opt=(--config 'profile.test-opt.inherits="release"' --config 'profile.test-opt.lto=false' --profile test-opt)
stage "cargo test: its build (release's optimisation, no LTO)"
cargo test "${opt[@]}" --workspace --exclude bloatlab-py --no-run --quiet
stage "cargo benches build (they run in make bench; built here so they do not rot)"
cargo build "${opt[@]}" --workspace --exclude bloatlab-py --benches --quiet
# The fuzz targets (cargo-fuzz, FUZZ_SECONDS each) are built and run at nice 19 while the Rust tests run: those
# mostly wait on loopback and namespace traffic in real time (122 s of wall, 58 s of CPU, 2026-11-29), so the fuzz
# build takes the CPU they leave, and at nice 19 gives it back whenever a test wants it (BENCHMARKS.md, "make test's
# time"). The targets are built once (cargo fuzz build: every target, ASan and debug assertions as `run` builds them)
# in 16 codegen units instead of cargo-fuzz's default 1, the only change to the build: on 2 cores the nightly build
# of the probe's dependencies took most of the fuzz's time. Each target then fuzzes for its FUZZ_SECONDS on a core
# of its own, at most nproc at a time.
fuzz() {
  local t0f=$SECONDS fz=(--codegen-units 16) log
  log="$(mktemp)"
  if ! (cd crates/probe/fuzz && cargo +nightly fuzz build "${fz[@]}") >"$log" 2>&1; then
    tail -n 40 "$log"; echo "the fuzz targets did not build"; rm -f "$log"; return 1
  fi
  rm -f "$log"
  echo "fuzz targets built in $((SECONDS - t0f)) s"
  local targets=(packet control iperf3) logs=() pids=() t i fail=0
  for t in "${targets[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$(nproc)" ]; do sleep 0.5; done
    log="$(mktemp)"; logs+=("$log")
    (cd crates/probe/fuzz && exec cargo +nightly fuzz run "${fz[@]}" "$t" -- -max_total_time="${FUZZ_SECONDS:-15}") >"$log" 2>&1 &
    pids+=($!)
  done
  for i in "${!targets[@]}"; do
    t="${targets[$i]}"; log="${logs[$i]}"
    if wait "${pids[$i]}"; then
      echo "$t: $(grep -E '^Done' "$log" | tail -n 1)"
    else
      tail -n 40 "$log"; echo "fuzz target $t failed (the input is in crates/probe/fuzz/artifacts/$t)"; fail=1
    fi
    rm -f "$log"
  done
  echo "fuzz: $((SECONDS - t0f)) s in all"
  return "$fail"
}
stage "cargo test: the tests, the fuzz targets (cargo-fuzz, ${FUZZ_SECONDS:-15} s each) built and run beside them at nice 19"
fuzz_log="$(mktemp)"; fuzz_pid=
if command -v cargo-fuzz >/dev/null && rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  nice -n 19 bash -c "$(declare -f fuzz); fuzz" >"$fuzz_log" 2>&1 &
  fuzz_pid=$!
else
  echo "fuzz skipped: cargo-fuzz or a nightly toolchain is missing (scripts/setup.sh installs cargo-fuzz where nightly exists)" >"$fuzz_log"
fi
cargo_rc=0
cargo test "${opt[@]}" --workspace --exclude bloatlab-py --quiet 2>&1 | grep -vE '^\s*$' | tail -n 200 || cargo_rc=$?
# the fuzz's figures after the tests' (a failed test waits for them too: no fuzz left running after this script)
fuzz_rc=0
if [ -n "$fuzz_pid" ]; then
  echo "(the Rust tests ended $SECONDS s into the tests; waiting for the fuzz targets)"
  wait "$fuzz_pid" || fuzz_rc=$?
fi
cat "$fuzz_log"; rm -f "$fuzz_log"
[ "$cargo_rc" = 0 ] && [ "$fuzz_rc" = 0 ] || exit 1
# The simulator's tests on every core (pytest-xdist, the test extra; a file's tests on one worker, so a module's
# fixture is built once), then, alone on an idle machine, the ones that run in real time or read a wall clock (marked
# serial by tests/conftest.py): a loaded machine perturbs those. Both parts run; either failing fails the whole.
stage "pytest: the simulator's tests, on every core"
if .venv/bin/python -c "import xdist" 2>/dev/null; then par=(-n auto --dist loadfile); else par=(); fi
rc=0
.venv/bin/python -m pytest -q -rsR --durations=10 "${par[@]}" -m "not serial" tests || rc=$?
stage "pytest: real time and wall clock, alone"
# the times so far here, so that pytest's closing line stays the last (this part's time is in it)
echo "make test's stages so far: $(IFS=';'; echo "${times[*]}")"
.venv/bin/python -m pytest -q -rsR --durations=10 -p no:xdist -m serial tests || rc=$?
exit "$rc"
