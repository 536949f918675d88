# Questline — the commands of the README. Everything runs inside .venv.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run setup test lint typecheck check format bench bench-quick bench-scale clean

$(BIN)/questline: pyproject.toml requirements.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements.lock
	$(BIN)/pip install --quiet --no-deps -e .
	touch $(BIN)/questline

setup: $(BIN)/questline

## Set up, migrate, load the demo when empty, print the token and URL, serve on 127.0.0.1:8000.
run: setup
	QUESTLINE_PUBLIC_URL=$${QUESTLINE_PUBLIC_URL:-http://$(HOST):$(PORT)} $(BIN)/questline demo
	$(BIN)/questline serve --host $(HOST) --port $(PORT)

## Set up and run the whole test suite (SQLite and a harness-started PostgreSQL).
test: setup
	$(BIN)/python -m pytest

lint: setup
	$(BIN)/ruff check src tests
	$(BIN)/ruff format --check src tests

typecheck: setup
	$(BIN)/mypy

check: lint typecheck test

format: setup
	$(BIN)/ruff format src tests
	$(BIN)/ruff check --fix src tests

## Benchmarks (BENCHMARKS.md): SQLite and PostgreSQL at 1,000, 10,000 and 100,000 teams, ~20 min.
bench: setup
	$(BIN)/python bench/run.py $(BENCH_ARGS)

## The same at 1,000 teams, a few seconds an endpoint (~3 min), for development.
bench-quick: setup
	$(BIN)/python bench/run.py --quick $(BENCH_ARGS)

## The scale-out row (docs/deploy.md): reads/s with 1, 2, 3 processes and a replica, ~5 min.
bench-scale: setup
	$(BIN)/python bench/scaleout.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) data .pytest_cache .mypy_cache .ruff_cache
