"""The developer tooling the README promises: lint-clean code, valid YAML, a self-describing Makefile."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

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


def test_dbt_metadata_scores_at_least_9_8_and_every_mart_10(tmp_path):
    """dbt-score with the committed configuration (pyproject.toml), as `make lint` runs it."""
    env = {**os.environ, "VENV_BIN": str(BIN), "DBT_TARGET_PATH": str(tmp_path / "target")}
    result = subprocess.run(["bash", "scripts/lint_metadata.sh"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    plain = re.sub(r"\x1b\[[0-9;]*m", "", result.stdout)
    scores = [float(score) for score in re.findall(r"Project score: ([\d.]+)", plain)]
    assert len(scores) == 2 and scores[0] >= 9.8 and scores[1] == 10.0, plain[-4000:]


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
