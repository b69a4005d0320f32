# SynthOrg Console. `make run` starts the console; `make test` passes the tests.
SHELL := /bin/bash
.DEFAULT_GOAL := help
export UV_PYTHON_DOWNLOADS := never
export UV_PYTHON_PREFERENCE := only-system
UV ?= $(shell scripts/find-uv.sh)
PYTHON := .venv/bin/python

.PHONY: help run env test lint bench check clean

help:
	@echo "make run    start the console (SQLite, embedded Redis, demo organisation)"
	@echo "make test   install and start what the tests need, then run lint and the whole suite"
	@echo "make bench  run the benchmarks and print one table"
	@echo "make lint   ruff, mypy and the import contracts"

env:
	@scripts/require.sh run
	@$(UV) sync --frozen --no-dev --quiet --compile-bytecode
	@scripts/compile-bytecode.sh

# The demo's config (opt-in browser tools on) unless SYNTHORG_CONFIG names one, or one
# sits beside manage.py.
DEMO_CONFIG := $(if $(wildcard synthorg.yaml),$(CURDIR)/synthorg.yaml,$(CURDIR)/deploy/demo/synthorg.yaml)
RUN_ENV := SYNTHORG_ENV=$${SYNTHORG_ENV:-dev} SYNTHORG_CONFIG=$${SYNTHORG_CONFIG:-$(DEMO_CONFIG)}

run: env
	@$(RUN_ENV) $(PYTHON) manage.py migrate --noinput -v0
	@$(RUN_ENV) $(PYTHON) manage.py synthorg_demo
	@$(RUN_ENV) exec $(PYTHON) -m synthorg_site.launcher

test:
	@scripts/require.sh test
	@$(UV) sync --frozen --quiet --compile-bytecode
	@scripts/test.sh

lint:
	@$(UV) sync --frozen --quiet
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	SYNTHORG_ENV=test .venv/bin/mypy .
	.venv/bin/lint-imports --no-cache

bench:
	@scripts/require.sh test
	@$(UV) sync --frozen --quiet --compile-bytecode
	@scripts/test.sh bench

clean:
	rm -rf .venv var/static .pytest_cache .mypy_cache .ruff_cache
