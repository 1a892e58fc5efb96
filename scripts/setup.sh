#!/usr/bin/env bash
# Build .venv with bloatlab compiled in release mode, and the helper binaries.
# Idempotent: re-running only rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$SECONDS

if ! command -v cargo >/dev/null; then
  echo "setup: cargo (Rust) is required: https://rustup.rs" >&2
  exit 2
fi
if ! command -v uv >/dev/null; then
  python3 -m pip install --quiet --disable-pip-version-check uv
fi
if [ ! -x .venv/bin/python ]; then
  uv venv --quiet --python "$(command -v python3)" .venv
fi
export VIRTUAL_ENV="$PWD/.venv"
# --compile-bytecode: with PYTHONDONTWRITEBYTECODE set (as on the CI machines) nothing is cached at
# import, and every `bloatlab` process compiled pandas/pydantic/... from source again.
# The Python dependencies are pyproject.toml's (the package's, and its study and test extras): one list.
uv pip install --quiet --compile-bytecode --python .venv/bin/python maturin -r pyproject.toml --all-extras
# The extension module, in release mode, installed into the venv (editable: python/ is used in place).
# Say so first: the first build compiles for minutes with nothing else on the screen.
echo "setup: Python dependencies ready in $((SECONDS - t0)) s"
# Profile-guided: an instrumented build trained on the ready scenarios first (scripts/pgo.sh says why and how;
# BLOATLAB_PGO=0 skips it), the module then built with the profile in target/pgo-use.
source scripts/pgo.sh
if [ "${BLOATLAB_PGO:-1}" != 0 ]; then
  pgo_profile || true
else
  rm -f "$PGO_PROFILE"
fi
native_build_env
echo "setup: building bloatlab's native module (release$([ "$NATIVE_TARGET_DIR" = target ] || echo ", with the profile"); the first build takes 1-3 min on 2 cores, later ones seconds) ..."
env "${NATIVE_ENV[@]}" .venv/bin/maturin develop --release --quiet --uv --target-dir "$NATIVE_TARGET_DIR" 2>&1 \
  | grep -vE '^(📦|🔗|🐍|⚠️|🛠|💻|📡|✏️|🍹)' || true
.venv/bin/python -c "import bloatlab._native" || { echo "setup: building the native module failed" >&2; exit 1; }
# bloatlab's own modules too (the editable install imports python/ in place; a stale .pyc is
# recompiled by its source's mtime as usual).
.venv/bin/python -m compileall -q python/bloatlab > /dev/null || true
# Helper binaries next to the venv's python, where bloatlab._bin finds them. Without the profile their dependencies
# shared with the native module (serde, schemars, arrow-array, ...) resolve to the same features as in maturin's build
# above and are not compiled again (crates/py/Cargo.toml's syn and crates/schema/Cargo.toml's once_cell say why;
# BENCHMARKS.md, "make test's time"); with it the module's were built in target/pgo-use, under other flags.
echo "setup: building bloatlab-probe and bloatlab-emu ($((SECONDS - t0)) s so far) ..."
cargo build --release --quiet -p bloatlab-probe -p bloatlab-emu
for b in bloatlab-probe bloatlab-emu; do
  if [ -x "target/release/$b" ]; then install -m 0755 "target/release/$b" ".venv/bin/$b"; fi
done
# The probe's static build (x86-64 musl: one binary for any Linux, docs/probe.md "One binary anywhere");
# crates/probe/tests/static_chroot.rs runs it in an empty chroot (scripts/test.sh builds it).
rustup target add x86_64-unknown-linux-musl >/dev/null 2>&1 || echo "setup: could not add the musl target (the static-binary test will skip)" >&2
# cargo-fuzz for the probe's fuzz targets (crates/probe/fuzz; run for a bounded time by scripts/test.sh):
# it needs a nightly toolchain; without one the fuzz step says so and the stable-Rust random-input tests remain.
if rustup toolchain list 2>/dev/null | grep -q '^nightly' && ! command -v cargo-fuzz >/dev/null; then
  cargo install --quiet --locked cargo-fuzz || echo "setup: could not install cargo-fuzz (the fuzz step will skip)" >&2
fi
# iperf3 (Debian's) for the probe's interop tests (crates/probe/tests/iperf3.rs); without it they print SKIPPED.
if [ "$(id -u)" = 0 ] && ! command -v iperf3 >/dev/null; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iperf3 >/dev/null) || echo "setup: could not install iperf3 (the iperf3 interop tests will skip)" >&2
fi
# Headless Chromium renders the HTML reports in the tests (tests/test_study_report.py); CI runs as root.
if [ "$(id -u)" = 0 ] && ! command -v chromium >/dev/null; then
  (apt-get update -qq && apt-get install -y -qq chromium >/dev/null) || echo "setup: could not install chromium (the report test will skip)" >&2
fi
echo "setup: .venv ready in $((SECONDS - t0)) s (CLI: .venv/bin/bloatlab)"
