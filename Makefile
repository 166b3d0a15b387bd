.DEFAULT_GOAL := help
PYTHON ?= python3
.PHONY: help install build-dev build-prod format lint lint-rust lint-python test-rust test services bench-rust bench bench-table all

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  %-12s %s\n", $$1, $$2}'

install: ## install the package and its dev extra (editable, debug build)
	$(PYTHON) -m pip install -e '.[dev]'

build-dev: ## rebuild the extension in place (debug build)
	@rm -f python/ctxtrim/_core*.so
	maturin develop --uv 2>/dev/null || maturin develop

build-prod: ## rebuild the extension in place (release build, for benchmarks)
	@rm -f python/ctxtrim/_core*.so
	maturin develop --release

format: ## format Rust and Python
	cargo fmt
	ruff format python tests benches
	ruff check --fix python tests benches

lint-rust: ## rustfmt and clippy (bindings included)
	cargo fmt --check
	cargo clippy --all-targets --features python -- -D warnings
	cargo clippy --all-targets -- -D warnings

lint-python: ## ruff, mypy and stubtest of the extension stub
	ruff check python tests benches
	ruff format --check python tests benches
	$(PYTHON) -m mypy python/ctxtrim
	$(PYTHON) -m mypy.stubtest ctxtrim._core

lint: lint-rust lint-python ## all linters

test-rust: ## Rust unit and property tests (no Python needed)
	cargo test

services: ## start throw-away Redis + PostgreSQL; prints the export lines to eval
	@bash scripts/services.sh start

test: ## the whole Python test suite
	$(PYTHON) -m pytest -q

bench-rust: ## criterion benches of the core
	cargo bench --bench core

bench: ## pytest-benchmark suites
	$(PYTHON) -m pytest benches --benchmark-enable -q

bench-table: ## the side-by-side table against the peers (pip install '.[bench]'), Markdown + chart
	$(PYTHON) -m ctxtrim.bench --markdown bench.md --chart bench.png

all: format lint test-rust test ## format, lint and test everything
