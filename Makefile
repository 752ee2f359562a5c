# PayLedger balance view: `make help` lists the tasks.
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.payledger-installed
# uv installs requirements.txt into .venv: on a machine without a package cache, 42 s against pip's
# 94 s, the same versions of every package (`pip freeze` of both venvs, 2026-11-29). Then setup
# compiles the bytecode of every installed package and of the project (python_helpers, tests; 16 s
# from none): uv does not, and where PYTHONDONTWRITEBYTECODE is set (these machines) Python never
# writes it, so every process compiled each module it imported again (a `dbt parse` 14.0 s -> 9.0
# s). compileall, not uv's --compile-bytecode, which compiles only the packages it installs.
# python_helpers is installed editable with its folder on sys.path (setuptools' compat mode):
# dbt finds the project's plugin (dbt_payledger) among the top-level modules on sys.path, which
# the default editable install's import hook hides.
UV := uv==0.13.8
# The table formats' jars, from Maven Central (pom.xml), checked against jars.sha256.
JARS := $(addprefix jars/,$(shell awk '{print $$2}' jars.sha256))
export PAYLEDGER_HOME := $(CURDIR)

.PHONY: help setup demo test soak lint docs thrift serve bench bench-aging bench-serve maintain clean

PYTEST_ARGS ?=
# The table format of soak and bench runs (make test runs both formats).
FORMAT ?= delta
DOCS_PORT ?= 8080
SERVE_PORT ?= 8000
DOCS_TARGET ?= target
EVENTS ?= 30000000
MERCHANTS ?= 50000
AGING_EVENTS ?= 3000000
AGING_MERCHANTS ?= 5000
AGING_BUILDS ?= 100

help: ## List the tasks
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

# The JVM's ahead-of-time cache for Spark drivers (python_helpers/payledger/class_archive.py).
CLASS_ARCHIVE := jars/spark-classes.aot

setup: $(STAMP) $(JARS) $(CLASS_ARCHIVE) ## Install Java, Maven, Chromium (apt), .venv (uv, with Spark's Java 25), the Delta, Iceberg and Hadoop jars (Maven) and the JVM's AOT cache; idempotent

$(STAMP): requirements.txt python_helpers/pyproject.toml python_helpers/payledger/java_runtime.py scripts/install_system_packages.sh
	bash scripts/install_system_packages.sh
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet $(UV)
	$(VENV)/bin/uv pip install --quiet --python $(PY) -r requirements.txt
	$(VENV)/bin/uv pip install --quiet --python $(PY) --no-deps --config-settings editable_mode=compat -e python_helpers
	$(PY) -m payledger.java_runtime
	$(PY) -m compileall -q -j 0 $(VENV)/lib python_helpers/payledger python_helpers/dbt_payledger tests
	touch $(STAMP)

$(JARS) &: pom.xml jars.sha256 $(STAMP)
	rm -rf jars
	mvn -B -q -C dependency:copy-dependencies -DoutputDirectory=jars
	cd jars && sha256sum --check --strict ../jars.sha256
	test "$$(ls jars | wc -l)" -eq "$$(wc -l < jars.sha256)" || { echo "jars/ holds jars that jars.sha256 does not list" >&2; exit 1; }
	touch $(JARS)

# Made again when the jars, the profile or the workload change; a JVM that cannot write one is
# reported, and Spark then starts without it.
$(CLASS_ARCHIVE): $(JARS) $(STAMP) profiles/profiles.yml python_helpers/payledger/class_archive.py
	$(PY) -m payledger.class_archive $@ > $@.log 2>&1 || { tail -20 $@.log >&2; echo "warning: no ahead-of-time cache made ($@.log)" >&2; }

demo: setup ## Run the main job on the embedded default (generate, build, new batch, policy change)
	$(VENV)/bin/payledger demo

test: setup ## Run the whole suite on Delta and the both_formats tests on Iceberg, in one session (shuffled; PYTEST_ARGS="-p randomly --randomly-seed=N" replays)
	env -u PAYLEDGER_FORMAT -u PAYLEDGER_TEST_FORMATS $(VENV)/bin/pytest --numprocesses 2 --dist loadgroup --no-loadscope-reorder --durations 30 $(PYTEST_ARGS)

soak: setup ## Long reliability run: 300 random histories, 50 SIGKILLs, a first day's event re-sent after 100 builds (PAYLEDGER_SOAK=1; FORMAT=delta|iceberg)
	PAYLEDGER_FORMAT=$(FORMAT) PAYLEDGER_SOAK=1 $(VENV)/bin/pytest -s tests/integration/test_differential.py tests/integration/test_crash_and_overlap.py tests/integration/test_maintenance.py

lint: setup ## ruff and sqlfluff over the code (what pre-commit runs), dbt-score over the dbt metadata (pyproject.toml)
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check . && $(VENV)/bin/sqlfluff lint
	VENV_BIN=$(VENV)/bin bash scripts/lint_metadata.sh

docs: setup ## Generate the dbt docs site and serve it on http://127.0.0.1:8080 (DOCS_PORT)
	$(VENV)/bin/dbt docs generate --project-dir . --profiles-dir profiles --target-path $(DOCS_TARGET)
	$(VENV)/bin/dbt docs serve --project-dir . --profiles-dir profiles --target-path $(DOCS_TARGET) --host 127.0.0.1 --port $(DOCS_PORT) --no-browser

thrift: setup ## Start a Spark Thrift Server on 127.0.0.1:10000 for `dbt build --target thrift`
	bash scripts/thrift_server.sh start

serve: setup ## Serve the published balances of the default warehouse on http://127.0.0.1:8000 (SERVE_PORT; FORMAT=delta|iceberg)
	PAYLEDGER_FORMAT=$(FORMAT) $(VENV)/bin/payledger serve --port $(SERVE_PORT)

bench: setup ## Benchmark incremental maintenance (EVENTS=30000000 MERCHANTS=50000 FORMAT=delta|iceberg); writes target/bench.json
	PAYLEDGER_FORMAT=$(FORMAT) $(VENV)/bin/payledger bench --events $(EVENTS) --merchants $(MERCHANTS)

bench-aging: setup ## Many small scheduled builds with maintenance (AGING_BUILDS=100 on AGING_EVENTS=3000000); writes target/bench_aging.json and .png
	PAYLEDGER_FORMAT=$(FORMAT) $(VENV)/bin/payledger bench-aging --events $(AGING_EVENTS) --merchants $(AGING_MERCHANTS) --builds $(AGING_BUILDS)

bench-serve: setup ## Load-test payledger serve and time payledger balance on both formats (EVENTS=30000000 MERCHANTS=50000); writes target/bench_serve_<format>.json
	for format in delta iceberg; do PAYLEDGER_FORMAT=$$format $(VENV)/bin/payledger bench-serve --events $(EVENTS) --merchants $(MERCHANTS) || exit 1; done

maintain: setup ## Table maintenance of the default warehouse now: compaction, delete purge, retention (what the cron build does when due)
	$(VENV)/bin/payledger maintain

clean: ## Remove the warehouse, generated data and dbt artefacts (keeps .venv and jars)
	rm -rf warehouse data target logs
