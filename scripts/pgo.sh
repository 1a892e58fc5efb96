#!/usr/bin/env bash
# The native module's profile for profile-guided optimisation (PGO), and the build settings that use it.
#
#   bash scripts/pgo.sh profile   # build an instrumented module, train it, write target/pgo/bloatlab.profdata
#   source scripts/pgo.sh         # native_build_env: the flags setup.sh and dist.sh build the module with
#
# Why: the simulator's time is per-event work spread over a dozen functions (the dispatch loop, the event queue,
# on_ack, the link and its FIFO; none above ~12 %, BENCHMARKS.md "The imc2019 grid"), the kind of branchy code whose
# layout and inlining a profile improves and no single source change does. Measured on the imc2019 grid (640 runs),
# a workload the training below never runs: 0.76-0.85x the CPU, every stored run bit for bit the same
# (BENCHMARKS.md). The technique is CPython's --enable-optimizations and rustc's own release build: compile with
# counters (-Cprofile-generate), run a representative workload, merge the counts (llvm-profdata, rustup's
# llvm-tools, the same LLVM as rustc), compile again with them (-Cprofile-use).
#
# The training (scripts/pgo_train.py, 16-34 s): every ready scenario and the --quick version of the reproductions
# but imc2019, in one process (a sweep's forked workers are killed at its end and would write no counts).
#
# Not maturin's own --pgo (maturin >= 1.15): it trains in a fresh virtualenv it installs every dependency into, and
# builds both phases into the one target directory under a temporary profile path, so the next `maturin build` (make
# dist, tests/test_wheel.py) and the helper binaries' build (setup.sh, sharing target/release's dependencies)
# compiled everything again. Here the instrumented module builds in target/pgo-gen, the optimised one in
# target/pgo-use under a fixed profile path, and dist.sh's build finds it up to date.
#
# BLOATLAB_PGO=0 skips it (a plain release build, as before: quicker to rebuild while developing). Where the LLVM
# tools cannot be had, setup says so and builds plainly.

PGO_DIR=target/pgo
PGO_PROFILE=$PGO_DIR/bloatlab.profdata

# native_build_env: NATIVE_TARGET_DIR (maturin's --target-dir) and NATIVE_ENV (what `env` runs maturin with) for the
# native module's build: the profile's where setup made one (pgo.sh profile), else target/ and the caller's
# environment as it is (an empty RUSTFLAGS would hide a cargo config's build.rustflags)
native_build_env() {
  if [ "${BLOATLAB_PGO:-1}" != 0 ] && [ -s "$PGO_PROFILE" ]; then
    NATIVE_TARGET_DIR=target/pgo-use
    NATIVE_ENV=("RUSTFLAGS=${RUSTFLAGS:-} -Cprofile-use=$PWD/$PGO_PROFILE")
  else
    NATIVE_TARGET_DIR=target
    NATIVE_ENV=()
  fi
}

# llvm-profdata of rustc's own LLVM (rustup's llvm-tools component; added if missing)
_llvm_profdata() {
  local sysroot host p
  sysroot=$(rustc --print sysroot) || return 1
  host=$(rustc -vV | sed -n 's/^host: //p')
  p="$sysroot/lib/rustlib/$host/bin/llvm-profdata"
  if [ ! -x "$p" ] && command -v rustup >/dev/null; then
    rustup component add llvm-tools >/dev/null 2>&1 || true
  fi
  [ -x "$p" ] && echo "$p"
}

# what the profile is made from: the Rust sources and lock file, the compiler, the training. A change to Python
# alone (setup runs again on any) keeps the profile, and the module is not compiled again: a new profile file would
# rebuild every crate under it, ~1-2 min
_pgo_inputs() {
  { rustc -vV
    find crates -name target -prune -o \( -name '*.rs' -o -name Cargo.toml \) -print | LC_ALL=C sort \
      | xargs sha256sum Cargo.toml Cargo.lock scripts/pgo.sh scripts/pgo_train.py
  } | sha256sum | cut -d' ' -f1
}

# pgo_profile: the instrumented build, its training and the merged profile (PGO_PROFILE); 1 with the reason on
# stderr where any step fails (the profile is then removed, and the module builds without it)
pgo_profile() {
  local profdata raw train inputs t0=$SECONDS
  inputs=$(_pgo_inputs)
  if [ -s "$PGO_PROFILE" ] && [ "$(cat "$PGO_DIR/inputs" 2>/dev/null)" = "$inputs" ]; then
    echo "setup: the PGO profile is up to date ($PGO_PROFILE)"
    return 0
  fi
  rm -f "$PGO_PROFILE" "$PGO_DIR/inputs"
  echo "setup: building bloatlab's native module with counters for its profile (PGO: 1-2 min on 2 cores) ..."
  if ! profdata=$(_llvm_profdata); then
    echo "setup: no llvm-profdata for this rustc (rustup component add llvm-tools): the native module builds without PGO" >&2
    return 1
  fi
  raw="$PWD/$PGO_DIR/raw"
  train="$PWD/$PGO_DIR/train"
  rm -rf "$raw" "$train"
  mkdir -p "$raw" "$train"
  # the instrumented module; PYO3_PYTHON as maturin's build sets it (the venv's interpreter)
  if ! RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-generate=$raw" PYO3_PYTHON="$PWD/.venv/bin/python" \
      cargo build --release --quiet -p bloatlab-py --target-dir target/pgo-gen; then
    echo "setup: the instrumented build failed: the native module builds without PGO" >&2
    return 1
  fi
  # the package as the checkout has it, with the instrumented module in place of the installed one
  cp -r python/bloatlab "$train/bloatlab"
  rm -f "$train"/bloatlab/_native*.so
  cp target/pgo-gen/release/lib_native.so "$train/bloatlab/_native.abi3.so"
  echo "setup: training the instrumented module (scripts/pgo_train.py) ..."
  if ! LLVM_PROFILE_FILE="$raw/%m_%p.profraw" PYTHONPATH="$train" .venv/bin/python scripts/pgo_train.py; then
    echo "setup: the PGO training failed: the native module builds without PGO" >&2
    rm -rf "$raw" "$train"
    return 1
  fi
  if ! "$profdata" merge -o "$PGO_PROFILE" "$raw"/*.profraw; then
    echo "setup: llvm-profdata merge failed: the native module builds without PGO" >&2
    rm -f "$PGO_PROFILE"
    return 1
  fi
  rm -rf "$raw" "$train"
  echo "$inputs" > "$PGO_DIR/inputs"
  echo "setup: PGO profile written in $((SECONDS - t0)) s ($PGO_PROFILE)"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  cd "$(dirname "$0")/.."
  case "${1:-}" in
    profile) pgo_profile ;;
    *) echo "usage: bash scripts/pgo.sh profile" >&2; exit 2 ;;
  esac
fi
