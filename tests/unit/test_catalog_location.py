"""A warehouse whose catalog names folders elsewhere (copied or moved) is refused when its Spark
session starts (``payledger.spark.check_catalog_location``, from ``get_spark``), here against a
stand-in for Spark's catalog: the schemas and folders Spark's ``catalog.listDatabases()`` gives."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from payledger.spark import WarehouseMoved, check_catalog_location


def session(warehouse_dir: str, schemas: dict[str, str | None]):
    """A stand-in for a SparkSession whose warehouse folder is ``warehouse_dir`` and whose catalog
    holds ``schemas`` ({name: folder URI or None})."""
    databases = [SimpleNamespace(name=name, locationUri=uri) for name, uri in schemas.items()]
    return SimpleNamespace(
        conf=SimpleNamespace(get=lambda key: {"spark.sql.warehouse.dir": warehouse_dir}[key]),
        catalog=SimpleNamespace(listDatabases=lambda: databases),
    )


def test_a_catalog_of_this_folder_passes(tmp_path: Path):
    # Spark keeps spark.sql.warehouse.dir as "file:" and the path as written, and gives each
    # schema's folder as a percent-encoded URI (seen on Spark 3.5: "file:/.../my wh/delta" against
    # "file:/.../my%20wh/delta/payledger.db").
    for name in ("warehouse", "my warehouse", "p%41c warehouse", "jane's warehouse"):
        root = tmp_path / name / "delta"
        uri = root.as_uri()
        check_catalog_location(session(f"file:{root}", {"default": uri, "payledger": f"{uri}/payledger.db", "other": None}))


def test_a_copied_warehouse_is_refused_naming_the_schema_and_both_folders(tmp_path: Path):
    copy, original = tmp_path / "copy" / "delta", tmp_path / "original" / "delta"
    with pytest.raises(WarehouseMoved) as raised:
        check_catalog_location(session(f"file:{copy}", {"default": f"file:{copy}", "payledger_raw": f"file:{original}/payledger_raw.db"}))
    message = str(raised.value)
    assert "schema payledger_raw" in message and str(original / "payledger_raw.db") in message and str(copy) in message


def test_a_sibling_folder_sharing_the_name_as_a_prefix_is_outside(tmp_path: Path):
    root = tmp_path / "delta"
    with pytest.raises(WarehouseMoved):
        check_catalog_location(session(f"file:{root}", {"payledger": f"file:{tmp_path}/delta2/payledger.db"}))
