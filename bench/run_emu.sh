#!/usr/bin/env bash
# The emulator's benchmarks (bench/emu/): throughput ceiling, delay accuracy, lateness.
exec bash "$(dirname "$0")/emu/run.sh"
