# Questline — the commands of the README. Everything runs inside .venv, installed by uv
# from uv.lock; uv itself lives in .venv-tools (installed from PyPI with pip, pinned):
# with the system's pip into a plain directory (no virtualenv to create), or, where
# Python has no pip, into a virtualenv of its own.
PYTHON ?= python3
UV_VERSION := 0.13.8
VENV := .venv
BIN := $(VENV)/bin
TOOLS := .venv-tools
UV := $(TOOLS)/bin/uv
HOST ?= 127.0.0.1
PORT ?= 8000
# Test workers (pytest-xdist): "auto" = one per core.
TEST_WORKERS ?= auto

# uv uses this machine's Python (never downloads one) and copies from its cache (which
# may sit on another file system than the checkout).
export UV_PYTHON := $(PYTHON)
export UV_PYTHON_DOWNLOADS := never
export UV_LINK_MODE := copy
export UV_PROJECT_ENVIRONMENT := $(VENV)

.PHONY: run setup setup-runtime test lint typecheck check format bench bench-quick bench-scale bench-platform lock frontend clean

$(UV):
	$(PYTHON) -m pip install --quiet --disable-pip-version-check --target $(TOOLS) \
		uv==$(UV_VERSION) \
	|| { $(PYTHON) -m venv $(TOOLS) && $(TOOLS)/bin/python -m pip install --quiet \
		--disable-pip-version-check uv==$(UV_VERSION); }
	$(UV) --version

## The runtime set only (what `make run` needs): no test or lint tool.
setup-runtime: $(UV)
	$(UV) sync --frozen --quiet --no-dev --inexact

## Everything: the runtime set and the dev group (test and lint tools).
setup: $(UV)
	$(UV) sync --frozen --quiet

## Set up, migrate, load the demo when empty, print the token and URL, serve on 127.0.0.1:8000
## (its own address as the public URL, e-mail written to the console: every page works).
run: setup-runtime
	export QUESTLINE_PUBLIC_URL=$${QUESTLINE_PUBLIC_URL:-http://$(HOST):$(PORT)} \
		QUESTLINE_SMTP_URL=$${QUESTLINE_SMTP_URL:-console:} \
		QUESTLINE_MAIL_FROM="$${QUESTLINE_MAIL_FROM:-Questline demo <questline@localhost>}"; \
	$(BIN)/questline demo && $(BIN)/questline serve --host $(HOST) --port $(PORT)

## Set up, install what only the OS ships (Chromium, as root; otherwise say what to
## install), and run the whole test suite (SQLite and a harness-started PostgreSQL).
test: setup
	$(BIN)/python -m tests.support.system_packages --install
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

lint: setup
	$(UV) lock --check --quiet  # uv.lock agrees with pyproject.toml (else: make lock)
	$(BIN)/ruff check src tests
	$(BIN)/ruff format --check src tests

typecheck: setup
	$(BIN)/mypy

check: lint typecheck test

format: setup
	$(BIN)/ruff format src tests
	$(BIN)/ruff check --fix src tests

## Re-resolve uv.lock after a change of pyproject.toml's dependencies.
lock: $(UV)
	$(UV) lock

## Benchmarks (BENCHMARKS.md): SQLite and PostgreSQL at 1,000, 10,000 and 100,000 teams, and
## the command line's start, ~20 min. `bench` is a package: run from the repository's root.
bench: setup
	$(BIN)/python -m bench.run $(BENCH_ARGS)

## The same at 1,000 teams, a few seconds an endpoint (~3 min), for development.
bench-quick: setup
	$(BIN)/python -m bench.run --quick $(BENCH_ARGS)

## The scale-out row (docs/deploy.md): reads/s with 1, 2, 3 processes and a replica, ~5 min.
bench-scale: setup
	$(BIN)/python -m bench.scaleout $(BENCH_ARGS)

## Many organizations (issue 30): Zipf-sized organizations, skewed mixed traffic at 16 and
## 256 connections, cold reads, thousands of open streams; BENCHMARKS.md's platform section.
## Quick (500 organizations, 50,000 teams, 1,000 streams a worker): `BENCH_ARGS=--quick`.
bench-platform: setup
	$(BIN)/python -m bench.platform $(BENCH_ARGS)

## The dashboard's generated files, after a change of the API or of frontend/: the OpenAPI
## document (frontend/openapi.json), its TypeScript types (frontend/src/api-types.ts) and
## the committed bundle (src/questline/dashboard/static/), with the dev group's Node.js.
frontend: setup
	$(BIN)/python -m tests.dashboard.frontend_build

clean:
	rm -rf $(VENV) $(TOOLS) .venv-ralph data .pytest_cache .mypy_cache .ruff_cache
