# PayLedger balance view: `make help` lists the tasks.
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.payledger-installed
JARS := jars/iceberg-spark-runtime-3.5_2.12-1.10.2.jar jars/iceberg-shaded-jackson-2.15.2.jar
export PAYLEDGER_HOME := $(CURDIR)

.PHONY: help setup demo test bench clean

EVENTS ?= 30000000
MERCHANTS ?= 50000

help: ## List the tasks
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  make %-8s %s\n", $$1, $$2}'

setup: $(STAMP) $(JARS) ## Install Java tools (apt), .venv (pip) and the Iceberg jars; idempotent

$(STAMP): requirements.txt python_helpers/pyproject.toml scripts/install_system_packages.sh
	bash scripts/install_system_packages.sh
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps -e python_helpers
	touch $(STAMP)

$(JARS) &: $(STAMP) scripts/build_jars.sh
	bash scripts/build_jars.sh

demo: setup ## Run the main job on the embedded default (generate, build, new batch, policy change)
	$(VENV)/bin/payledger demo

test: setup ## Run the whole test suite
	$(VENV)/bin/pytest

bench: setup ## Benchmark incremental maintenance (EVENTS=30000000 MERCHANTS=50000); writes target/bench.json
	$(VENV)/bin/payledger bench --events $(EVENTS) --merchants $(MERCHANTS)

clean: ## Remove the warehouse, generated data and dbt artefacts (keeps .venv and jars)
	rm -rf warehouse data target logs
