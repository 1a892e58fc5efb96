#!/usr/bin/env bash
# Soak of the probe server (issue 16 §1): a seeded mix of hostile TCP and UDP
# clients for BLOATLAB_SOAK_S seconds (default 60) against `bloatlab-probe
# server` on 127.0.0.1, then real clients measure; prints the server's peak
# RSS, threads, open files and average CPU as one JSON line (crates/probe/tests/soak.rs).
set -euo pipefail
cd "$(dirname "$0")/../.."
BLOATLAB_SOAK_S="${BLOATLAB_SOAK_S:-60}" cargo test -q --release -p bloatlab-probe --test soak -- --nocapture \
  the_server_survives 2>&1 | grep '^soak:'
