#!/usr/bin/env bash
# dbt-score over the project's manifest, with pyproject.toml's [tool.dbt-score] settings: the
# project scores at least 9.8 out of 10 and every model, source, snapshot and seed at least 9;
# every mart scores 10. Run by `make lint` and tests/unit/test_tooling.py, from any directory
# (VENV_BIN, DBT_PROFILES_DIR and DBT_TARGET_PATH, when given, are paths from the caller's).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$(realpath -m "${VENV_BIN:-$root/.venv/bin}")"
DBT_PROFILES_DIR="$(realpath -m "${DBT_PROFILES_DIR:-$root/profiles}")"
DBT_TARGET_PATH="$(realpath -m "${DBT_TARGET_PATH:-$root/target}")"
export DBT_PROFILES_DIR DBT_TARGET_PATH
cd "$root"  # dbt-score reads pyproject.toml from the working directory
"$bin/dbt" parse --quiet --project-dir .
"$bin/dbt-score" lint --manifest "$DBT_TARGET_PATH/manifest.json"
"$bin/dbt-score" lint --manifest "$DBT_TARGET_PATH/manifest.json" --select "path:models/marts" --fail-any-item-under 10
