"""Reading and resetting the project's Iceberg warehouse."""

from __future__ import annotations

from typing import Any

VIEW = "payledger.merchant_balance_current"
RECONCILIATION_FAILURES = "payledger_audit.merchant_balance_reconciliation_failures"


def project_relations(spark) -> dict[str, dict[str, list[str]]]:
    """The views and tables of every schema whose name starts with ``payledger``.

    Shape: ``{schema: {"views": [name, ...], "tables": [name, ...]}}`` (temporary views excluded).
    """
    relations = {}
    for row in spark.sql("show databases").collect():
        name = row[0]
        if not name.startswith("payledger"):
            continue
        views = sorted(v["viewName"] for v in spark.sql(f"show views in {name}").collect() if not v["isTemporary"])
        tables = sorted(t["tableName"] for t in spark.sql(f"show tables in {name}").collect() if t["tableName"] not in views and not t["isTemporary"])
        relations[name] = {"views": views, "tables": tables}
    return relations


def drop_project_schemas(spark) -> list[str]:
    """Drop every schema whose name starts with ``payledger`` with its views and tables (purged).

    Iceberg's HiveCatalog refuses ``DROP ... CASCADE``, so objects are dropped one by one. Returns the
    schemas dropped. Destructive: snapshots' history goes too. Used by the demo and the tests only.
    """
    relations = project_relations(spark)
    for name, objects in relations.items():
        for view in objects["views"]:
            spark.sql(f"drop view if exists {name}.{view}")
        for table in objects["tables"]:
            spark.sql(f"drop table if exists {name}.{table} purge")
        spark.sql(f"drop database if exists {name}")
    return list(relations)


def table_commits(spark, table: str) -> list[dict[str, Any]]:
    """The Iceberg snapshots of ``table``, oldest first: snapshot_id, parent_id, operation, summary.

    ``summary`` is Iceberg's string map (``added-records``, ``added-position-deletes``, ...).
    Empty when the table does not exist yet.
    """
    if not spark.catalog.tableExists(table):
        return []
    return [r.asDict() for r in spark.sql(f"select snapshot_id, parent_id, operation, summary from {table}.snapshots order by committed_at").collect()]


def records_added(commits: list[dict[str, Any]]) -> int:
    """Records physically written by these commits (sum of ``added-records``)."""
    return sum(int(c["summary"].get("added-records", "0")) for c in commits)
