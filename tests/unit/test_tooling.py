"""The developer tooling the README promises: lint-clean code, valid YAML, a self-describing Makefile."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from payledger import warehouse
from payledger.contract import RAW_SCHEMA

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize(
    "argv",
    [
        ("ruff", "check", "."),
        ("ruff", "format", "--check", "."),
        ("sqlfluff", "lint"),  # no arguments: .sqlfluff and .sqlfluffignore decide what is linted
    ],
    ids=["ruff-check", "ruff-format", "sqlfluff"],
)
def test_code_is_lint_clean(argv):
    result = run(str(BIN / argv[0]), *argv[1:])
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


@pytest.fixture(scope="module")
def metadata_lint(tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path]:
    """`scripts/lint_metadata.sh` run once (as `make lint` runs it): its result and the manifest
    its `dbt parse` wrote."""
    target = tmp_path_factory.mktemp("metadata") / "target"
    env = {**os.environ, "VENV_BIN": str(BIN), "DBT_TARGET_PATH": str(target)}
    result = subprocess.run(["bash", "scripts/lint_metadata.sh"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    return result, target / "manifest.json"


@pytest.mark.xdist_group("metadata")
def test_dbt_metadata_scores_at_least_9_8_and_every_mart_10(metadata_lint):
    """dbt-score with the committed configuration (pyproject.toml), as `make lint` runs it."""
    result, _ = metadata_lint
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    plain = re.sub(r"\x1b\[[0-9;]*m", "", result.stdout)
    scores = [float(score) for score in re.findall(r"Project score: ([\d.]+)", plain)]
    assert len(scores) == 2 and scores[0] >= 9.8 and scores[1] == 10.0, plain[-4000:]


@pytest.mark.xdist_group("metadata")
def test_every_relation_named_in_python_is_one_that_dbt_builds(metadata_lint):
    """``payledger.warehouse`` names the relations Python reads; each is a model, seed, snapshot,
    source or stored test failure in dbt's manifest, under the schema dbt gives it."""
    result, manifest_path = metadata_lint
    assert manifest_path.is_file(), result.stdout[-3000:] + result.stderr[-2000:]
    manifest = json.loads(manifest_path.read_text())
    built = {
        f"{node['schema']}.{node.get('alias') or node.get('identifier') or node['name']}"
        for node in [*manifest["nodes"].values(), *manifest["sources"].values()]
        if node["resource_type"] in {"model", "seed", "snapshot", "source", "test"}
    }
    relations = {name: value for name, value in vars(warehouse).items() if name.isupper() and isinstance(value, str) and "." in value}
    # Not dbt nodes: the publication's relation, and the reconciliation runs (an on-run-end hook's).
    named = {name: value for name, value in relations.items() if name not in {"PUBLISHED_RELATION", "RECONCILIATION_RUNS"}}
    assert len(named) >= 8, named
    assert {name: value for name, value in named.items() if value not in built} == {}, sorted(built)
    assert {source["schema"] for source in manifest["sources"].values()} == {RAW_SCHEMA}
    # The published relation is the project's own (payledger.publish), beside the view, not dbt's.
    assert warehouse.PUBLISHED_RELATION not in built
    assert warehouse.PUBLISHED_RELATION.split(".")[0] == warehouse.VIEW.split(".")[0]
    # The runs table sits beside the reconciliation's stored failures, under the name its macro gives.
    schema, table = warehouse.RECONCILIATION_RUNS.split(".")
    assert schema == warehouse.RECONCILIATION_FAILURES.split(".")[0]
    assert f"identifier='{table}'" in (ROOT / "macros" / "reconciliation" / "reconciliation_runs.sql").read_text()


def test_every_yaml_file_parses():
    tracked = run("git", "ls-files", "*.yml", "*.yaml").stdout.split()
    assert len(tracked) > 10
    result = run(str(BIN / "check-yaml"), *tracked)
    assert result.returncode == 0, result.stdout + result.stderr


def test_make_help_lists_the_tasks():
    result = run("make", "help")
    assert result.returncode == 0, result.stderr
    listed = {line.split()[1] for line in result.stdout.splitlines() if line.strip().startswith("make ")}
    assert {"setup", "demo", "test", "soak", "lint", "docs", "thrift", "serve", "bench", "clean"} <= listed, result.stdout
