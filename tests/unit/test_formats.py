"""The table formats' one list and one dispatch (issue 30): a format difference lives in
``macros/formats/`` (``<format>__<name>`` macros chosen by ``format_variant``) or in one class per
format in ``payledger/formats.py``, and nowhere else branches on a format's name."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from payledger import formats, spark

ROOT = Path(__file__).resolve().parents[2]
#: The issue's check, and the same comparisons in Python's spelling (``== DELTA``).
BRANCH = r"""== *'iceberg'|== *"iceberg"|== *'delta'|== *"delta"|is_delta|is_iceberg|[!=]= *(DELTA|ICEBERG)\b"""


def test_python_knows_each_format_that_dbt_project_lists_and_each_names_its_embedded_target(monkeypatch):
    listed = formats.catalog_classes()
    assert set(formats.FORMATS) == set(listed), (formats.FORMATS, listed)
    monkeypatch.delenv("PAYLEDGER_TARGET", raising=False)
    for name in listed:
        # PAYLEDGER_FORMAT names the profile's default target: profiles.yml keeps no map of its own.
        monkeypatch.setenv("PAYLEDGER_FORMAT", name)
        assert spark.default_target() == name
        assert formats.target_format() == name
        assert formats.format_named(name).target == name


def test_every_format_defines_every_variant_that_format_variant_dispatches():
    macros = "\n".join(path.read_text() for path in (ROOT / "macros").rglob("*.sql"))
    defined = set(re.findall(r"{%-?\s*macro\s+(\w+)\s*\(", macros))
    dispatched = set(re.findall(r"format_variant\('(\w+)'", macros))
    assert {"current_table_version", "incremental_write_sql", "relation_is_format", "snapshot_write_sql"} <= dispatched, dispatched
    missing = sorted(f"{fmt}__{name}" for name in dispatched for fmt in formats.catalog_classes() if f"{fmt}__{name}" not in defined)
    assert not missing, f"macros missing for a format: {missing}"


def test_nothing_outside_the_format_homes_branches_on_a_format_name():
    found = subprocess.run(
        ["git", "grep", "-nE", BRANCH, "--", ".", ":!macros/formats/", ":!python_helpers/payledger/formats.py", ":!tests"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert found.returncode == 1 and not found.stdout, f"format branches outside macros/formats/ and formats.py:\n{found.stdout}{found.stderr}"
