"""Reading and resetting the project's Iceberg warehouse."""

from __future__ import annotations

from typing import Any

VIEW = "payledger.merchant_balance_current"
RECONCILIATION_FAILURES = "payledger_audit.merchant_balance_reconciliation_failures"


def drop_project_schemas(spark) -> list[str]:
    """Drop every schema whose name starts with ``payledger`` with its views and tables (purged).

    Iceberg's HiveCatalog refuses ``DROP ... CASCADE``, so objects are dropped one by one. Returns the
    schemas dropped. Destructive: snapshots' history goes too. Used by the demo and the tests only.
    """
    dropped = []
    for row in spark.sql("show databases").collect():
        name = row[0]
        if not name.startswith("payledger"):
            continue
        views = {v["viewName"] for v in spark.sql(f"show views in {name}").collect() if not v["isTemporary"]}
        for view in views:
            spark.sql(f"drop view if exists {name}.{view}")
        for table in spark.sql(f"show tables in {name}").collect():
            if table["tableName"] not in views and not table["isTemporary"]:
                spark.sql(f"drop table if exists {name}.{table['tableName']} purge")
        spark.sql(f"drop database if exists {name}")
        dropped.append(name)
    return dropped


def table_commits(spark, table: str) -> list[dict[str, Any]]:
    """The Iceberg snapshots of ``table``, oldest first: snapshot_id, parent_id, operation, summary.

    ``summary`` is Iceberg's string map (``added-records``, ``added-position-deletes``, ...).
    Empty when the table does not exist yet.
    """
    if not spark.catalog.tableExists(table):
        return []
    return [
        r.asDict()
        for r in spark.sql(
            f"select snapshot_id, parent_id, operation, summary from {table}.snapshots order by committed_at"
        ).collect()
    ]


def records_added(commits: list[dict[str, Any]]) -> int:
    """Records physically written by these commits (sum of ``added-records``)."""
    return sum(int(c["summary"].get("added-records", "0")) for c in commits)
