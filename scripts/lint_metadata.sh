#!/usr/bin/env bash
# dbt-score over the project's manifest, with pyproject.toml's [tool.dbt-score] settings: the
# project scores at least 9.8 out of 10 and every model, snapshot and seed at least 9; every mart
# scores 10. Run from the repo root by `make lint` and tests/unit/test_tooling.py.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${VENV_BIN:-.venv/bin}"
export DBT_PROFILES_DIR="${DBT_PROFILES_DIR:-profiles}"
target="${DBT_TARGET_PATH:-target}"
"$bin/dbt" parse --quiet --project-dir . --target-path "$target"
"$bin/dbt-score" lint --manifest "$target/manifest.json"
"$bin/dbt-score" lint --manifest "$target/manifest.json" --select "path:models/marts" --fail-any-item-under 10
