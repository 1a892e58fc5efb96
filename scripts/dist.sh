#!/usr/bin/env bash
# A wheel that brings every verb (issue 34 §4): bloatlab's Python package with its gallery, the native module, and
# the two helper binaries (bloatlab-probe, bloatlab-emu) in bloatlab/bin/, run by the wheel's console scripts of the
# same names (bloatlab._bin). Usage: make dist [DIST_DIR=dist]. The wheel's tag is maturin's: manylinux_2_34 on
# this machine (the native module and both binaries need glibc 2.34).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${DIST_DIR:-dist}"
cargo build --release --quiet -p bloatlab-probe -p bloatlab-emu
# the binaries enter the package only for the build: a checkout's own runs find .venv/bin's
rm -rf python/bloatlab/bin
mkdir -p python/bloatlab/bin
trap 'rm -rf python/bloatlab/bin' EXIT
install -m 0755 target/release/bloatlab-probe target/release/bloatlab-emu python/bloatlab/bin/
# -i: the interpreter maturin develop built with (setup.sh), so pyo3's build script sees the same PYO3_PYTHON and the
# native module is not compiled again (without it maturin found pyenv's python3.11: 27-63 s of test_wheel's fixture)
# native_build_env: the target directory and flags setup.sh built the module with (its profile, scripts/pgo.sh), so
# the wheel carries that module and it is not compiled again
source scripts/pgo.sh
native_build_env
env "${NATIVE_ENV[@]}" .venv/bin/maturin build --release --quiet -i "$PWD/.venv/bin/python" -o "$out" \
  --target-dir "$NATIVE_TARGET_DIR" 2>&1 | grep -vE '^(🍹|🐍|🔗|📡)' || true
ls "$out"/bloatlab-*.whl
