"""Every documented command works on an empty warehouse, right after `make setup`.

`dbt compile`, `dbt ls --selector <each selector>`, `dbt docs generate`, `make docs` (generate and
serve) and the two operations succeed before anything was built; the operations say plainly that
nothing has been built yet. A parse that dbt kept for one table format is not reused for the other.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

from payledger.dbt import run_dbt
from payledger.ports import free_port
from payledger.warehouse import project_relations
from tests.processes import ROOT, Process, executable

pytestmark = pytest.mark.integration

SELECTORS = [s["name"] for s in yaml.safe_load((ROOT / "selectors.yml").read_text())["selectors"]]


def test_commands_work_on_an_empty_warehouse(dbt, warehouse):
    assert project_relations(warehouse.spark) == {}
    compiled = dbt("compile")
    assert compiled.nodes, "dbt compile compiled nothing"
    for selector in SELECTORS:
        listed = dbt("ls", "--selector", selector, "--resource-type", "model")
        assert listed.success
    dbt("docs", "generate")
    catalog = json.loads((dbt.artefacts / "target" / "catalog.json").read_text())
    assert catalog["errors"] is None, catalog["errors"]

    plan = dbt("run-operation", "balance_replay_plan")
    assert plan.logged_json("PLAN_JSON") == []
    assert any(m.startswith("Nothing has been built yet") for m in plan.messages), plan.messages
    freshness = dbt("run-operation", "balance_freshness")
    assert freshness.logged_json("FRESHNESS_JSON") == {"view_built": False}
    assert any(m.startswith("Nothing has been built yet") for m in freshness.messages), freshness.messages
    # None of it wrote a table.
    assert all(not objects["tables"] for objects in project_relations(warehouse.spark).values())


def _get(url: str) -> bytes | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.read()
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return None


def _serve_docs(tmp_path: Path) -> tuple[Process, int, bytes | None]:
    """``make docs`` on a free port; again on another one when something else took the port between
    ``free_port`` and the server's bind (it happened in CI: "Address already in use")."""
    for _ in range(3):
        port = free_port()
        env = {**os.environ, "PAYLEDGER_WAREHOUSE": str(tmp_path / "warehouse"), "DOCS_PORT": str(port), "DOCS_TARGET": str(tmp_path / "target")}
        process = Process(["make", "docs"], env)
        deadline, page = time.monotonic() + 600, None
        while page is None and time.monotonic() < deadline and process.popen.poll() is None:
            time.sleep(2)
            page = _get(f"http://127.0.0.1:{port}/index.html")
        if page is not None or process.popen.poll() is None:
            return process, port, page
        process.finish(timeout=60)  # every line it printed is read
        if not any("Address already in use" in line for line in process.lines):
            return process, port, page
    return process, port, page


@pytest.mark.slow
def test_make_docs_generates_and_serves_the_site_on_a_fresh_warehouse(tmp_path):
    process, port, page = _serve_docs(tmp_path)
    try:
        assert page is not None, f"make docs served nothing on port {port}: {process.lines[-30:]}"
        assert b"dbt" in page
        manifest = json.loads(_get(f"http://127.0.0.1:{port}/manifest.json") or b"{}")
        assert "model.payledger.merchant_balance_current" in manifest.get("nodes", {})
        assert Path(tmp_path / "target" / "catalog.json").is_file()
    finally:
        process.kill()


def test_a_parse_kept_from_one_format_is_not_reused_for_the_other(tmp_path, monkeypatch):
    """dbt keeps its parse in the target path (partial parsing); `make bench FORMAT=iceberg` after a
    Delta run, in the same checkout, must not write Delta tables from the Delta parse. Five parses
    in one target path switch the format each time, each way by each switch: PAYLEDGER_FORMAT, and
    PAYLEDGER_TARGET naming a target (`local`, the Delta target's old name, or `iceberg`). The first
    switch is that command's: a new `dbt parse` process reads the parse kept by the one before. The
    others run dbt in this process (``run_dbt``, which starts no Spark session for a parse): dbt
    reads the kept parse from the target path and the variables from the environment on each
    invocation all the same, and a parse here takes a third of a new process's 9-10 s."""
    steps = [
        ("PAYLEDGER_FORMAT", "delta"),
        ("PAYLEDGER_FORMAT", "iceberg"),
        ("PAYLEDGER_TARGET", "local"),
        ("PAYLEDGER_TARGET", "iceberg"),
        ("PAYLEDGER_FORMAT", "delta"),
    ]
    target = tmp_path / "target"
    formats = []
    for number, (switch, value) in enumerate(steps):
        monkeypatch.delenv("PAYLEDGER_TARGET", raising=False)
        monkeypatch.setenv("PAYLEDGER_FORMAT", "delta" if switch == "PAYLEDGER_TARGET" else value)
        monkeypatch.setenv(switch, value)
        if number == 1:
            parsed = subprocess.run(
                [executable("dbt"), "parse", "--project-dir", ".", "--profiles-dir", "profiles", "--target-path", str(target)],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert parsed.returncode == 0, parsed.stdout[-3000:]
        else:
            parsed = run_dbt("parse", target_path=target, log_path=tmp_path / "logs")
            assert parsed.success, parsed.exception
        nodes = json.loads((target / "manifest.json").read_text())["nodes"].values()
        tables = [n for n in nodes if n["resource_type"] in ("model", "seed", "snapshot") and n["config"].get("materialized") != "view"]
        formats.append({n["config"]["file_format"] for n in tables})
    assert formats == [{"delta"}, {"iceberg"}, {"delta"}, {"iceberg"}, {"delta"}], list(zip(steps, formats, strict=True))
