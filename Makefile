# PayLedger balance view: `make help` lists the tasks.
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.payledger-installed
JARS := jars/iceberg-spark-runtime-3.5_2.12-1.10.2.jar jars/iceberg-shaded-jackson-2.15.2.jar
export PAYLEDGER_HOME := $(CURDIR)

.PHONY: help setup demo test soak lint docs thrift bench clean

PYTEST_ARGS ?=
DOCS_PORT ?= 8080
DOCS_TARGET ?= target
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

test: setup ## Run the whole test suite in a shuffled order (PYTEST_ARGS="--randomly-seed=N" replays one)
	$(VENV)/bin/pytest --numprocesses 2 --dist loadgroup --durations 25 $(PYTEST_ARGS)

soak: setup ## Long reliability run: 300 random histories and 50 SIGKILLs (PAYLEDGER_SOAK=1)
	PAYLEDGER_SOAK=1 $(VENV)/bin/pytest -s tests/integration/test_differential.py tests/integration/test_crash_and_overlap.py

lint: setup ## ruff and sqlfluff over the project (what pre-commit runs)
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check . && $(VENV)/bin/sqlfluff lint

docs: setup ## Generate the dbt docs site and serve it on http://127.0.0.1:8080 (DOCS_PORT)
	$(VENV)/bin/dbt docs generate --project-dir . --profiles-dir profiles --target-path $(DOCS_TARGET)
	$(VENV)/bin/dbt docs serve --project-dir . --profiles-dir profiles --target-path $(DOCS_TARGET) --host 127.0.0.1 --port $(DOCS_PORT) --no-browser

thrift: setup ## Start a Spark Thrift Server on 127.0.0.1:10000 for `dbt build --target thrift`
	bash scripts/thrift_server.sh start

bench: setup ## Benchmark incremental maintenance (EVENTS=30000000 MERCHANTS=50000); writes target/bench.json
	$(VENV)/bin/payledger bench --events $(EVENTS) --merchants $(MERCHANTS)

clean: ## Remove the warehouse, generated data and dbt artefacts (keeps .venv and jars)
	rm -rf warehouse data target logs
