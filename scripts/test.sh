#!/usr/bin/env bash
# Every test: Rust unit/integration tests, then the Python suite.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== cargo test (release) =="
cargo test --release --workspace --exclude bloatlab-py --quiet 2>&1 | grep -vE '^\s*$' | tail -n 200
echo "== pytest =="
.venv/bin/python -m pytest -q -rs tests
