.DEFAULT_GOAL := help
PYTHON ?= python3
# `make wheel`: the CPython versions to build a wheel for (each must be installed: pyenv or
# pythonX.Y on PATH), and the manylinux policy (zig links against glibc 2.17's symbols).
WHEEL_VERSIONS ?= 3.10 3.11 3.12 3.13
MANYLINUX ?= manylinux2014
PYENV_ROOT ?= $(HOME)/.pyenv
.PHONY: help install wheel build-dev build-prod format lint lint-rust lint-python lint-workflows docs test-rust test peer-tests services bench-rust bench bench-table all

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  %-12s %s\n", $$1, $$2}'

install: ## install the package and its dev extra (editable, debug build)
	$(PYTHON) -m pip install -e '.[dev]'

wheel: ## release wheels (one per CPython in WHEEL_VERSIONS, manylinux2014, extension stripped) + sdist in dist/; needs maturin, ziglang, auditwheel
	@for m in maturin ziglang auditwheel; do $(PYTHON) -c "import $$m" 2>/dev/null \
	    || { echo "make wheel: $(PYTHON) has no $$m: pip install maturin ziglang auditwheel (the build extra)" >&2; exit 1; }; done
	@set -e; pys=""; for v in $(WHEEL_VERSIONS); do \
	    py=$$(ls -d $(PYENV_ROOT)/versions/$$v.*/bin/python 2>/dev/null | sort -V | tail -1); \
	    [ -n "$$py" ] || py=$$(command -v python$$v || true); \
	    [ -n "$$py" ] || { echo "make wheel: no CPython $$v (pyenv install $$v, or set WHEEL_VERSIONS)" >&2; exit 1; }; \
	    pys="$$pys $$py"; done; \
	rm -f python/ctxtrim/_core*.so dist/ctxtrim-*; \
	$(PYTHON) -m maturin build --release --zig --compatibility $(MANYLINUX) --out dist -i $$pys; \
	$(PYTHON) -m maturin sdist --out dist
	@for w in dist/ctxtrim-*.whl; do \
	    $(PYTHON) -m auditwheel show "$$w" | tr '\n' ' ' | grep -q 'consistent with the following platform tag: "manylinux_2_17_x86_64"' \
	        || { $(PYTHON) -m auditwheel show "$$w"; echo "make wheel: $$w is not manylinux_2_17" >&2; exit 1; }; \
	    echo "$$w: manylinux_2_17_x86_64 (auditwheel show), $$(du -k "$$w" | cut -f1) KB"; done
	$(PYTHON) scripts/check_wheel.py dist/ctxtrim-*.whl

build-dev: ## rebuild the extension in place (debug build)
	@rm -f python/ctxtrim/_core*.so
	maturin develop $$(command -v uv >/dev/null && echo --uv)

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

lint-python: ## ruff, mypy (package and tests) and stubtest of the extension stub
	ruff check python tests benches
	ruff format --check python tests benches
	$(PYTHON) -m mypy python/ctxtrim
	$(PYTHON) -m mypy tests
	$(PYTHON) -m mypy.stubtest ctxtrim._core

lint-workflows: ## the release workflow against GitHub's schema, and zizmor's security audit
	$(PYTHON) -m check_jsonschema --builtin-schema vendor.github-workflows .github/workflows/*.yml
	$(PYTHON) -m check_jsonschema --builtin-schema vendor.dependabot .github/dependabot.yml
	zizmor --offline .github

lint: lint-rust lint-python lint-workflows ## all linters

docs: ## the reference documentation in site/ (pdoc, from the docstrings and stubs), its links checked
	$(PYTHON) scripts/build_docs.py site
	linkchecker --no-status --no-warnings site/index.html

test-rust: ## Rust unit and property tests (no Python needed)
	cargo test --quiet

peer-tests: ## the frameworks' own tests, on ctxtrim's drop-ins (pip install '.[test,peer-tests]')
	$(PYTHON) scripts/peer_tests.py

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
