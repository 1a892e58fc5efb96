# The few targets people type. Everything installs what it needs.
#   make demo   - the headline experiment (BBR vs CUBIC under random loss)
#   make test   - every test (Rust + Python; emulator tests need root)
#   make bench  - benchmarks (figures go to BENCHMARKS.md)
#   make setup  - .venv with bloatlab compiled in release mode (idempotent)
#   make dist   - dist/bloatlab-*.whl: pip install it anywhere (glibc >= 2.34) for every verb

SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.bloatlab-stamp
SOURCES := $(shell find crates python -type f \( -name '*.rs' -o -name '*.py' -o -name 'Cargo.toml' \) 2>/dev/null) Cargo.toml pyproject.toml

.PHONY: setup demo test test-rust test-python bench clean dist

setup: $(STAMP)

$(STAMP): $(SOURCES)
	@bash scripts/setup.sh
	@touch $(STAMP)

demo: setup
	$(BIN)/python -m bloatlab.demo

test: setup
	bash scripts/test.sh

bench: setup
	bash scripts/bench.sh

dist: setup
	bash scripts/dist.sh

clean:
	rm -rf target $(VENV)
