"""The relation names Python uses (``payledger.warehouse``) are the ones dbt builds: each is a
model, seed, snapshot, source or stored test failure in dbt's manifest, under the schema dbt gives it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from payledger import warehouse
from payledger.contract import RAW_SCHEMA

ROOT = Path(__file__).resolve().parents[2]


def test_every_relation_named_in_python_is_one_that_dbt_builds(tmp_path):
    paths = ["--target-path", str(tmp_path / "target"), "--log-path", str(tmp_path / "logs")]
    parsed = subprocess.run(
        [str(Path(sys.executable).parent / "dbt"), "parse", "--profiles-dir", "profiles", "--no-partial-parse", *paths],
        cwd=ROOT,
        env={**os.environ, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert parsed.returncode == 0, parsed.stdout[-3000:] + parsed.stderr[-2000:]
    manifest = json.loads((tmp_path / "target" / "manifest.json").read_text())
    built = {
        f"{node['schema']}.{node.get('alias') or node.get('identifier') or node['name']}"
        for node in [*manifest["nodes"].values(), *manifest["sources"].values()]
        if node["resource_type"] in {"model", "seed", "snapshot", "source", "test"}
    }
    relations = {name: value for name, value in vars(warehouse).items() if name.isupper() and isinstance(value, str) and "." in value}
    named = {name: value for name, value in relations.items() if name != "PUBLISHED_RELATION"}
    assert len(named) >= 8, named
    assert {name: value for name, value in named.items() if value not in built} == {}, sorted(built)
    assert {source["schema"] for source in manifest["sources"].values()} == {RAW_SCHEMA}
    # The published relation is the project's own (payledger.publish), beside the view, not dbt's.
    assert warehouse.PUBLISHED_RELATION not in built
    assert warehouse.PUBLISHED_RELATION.split(".")[0] == warehouse.VIEW.split(".")[0]
