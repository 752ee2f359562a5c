"""Listing and resetting the project's warehouse (either table format)."""

from __future__ import annotations

VIEW = "payledger.merchant_balance_current"
#: The landing table of payment events (``payledger load events``): the source positions, ingest_seq.
LANDING_EVENTS = "payledger_raw.payment_events"
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

    Objects are dropped one by one (Iceberg's HiveCatalog refuses ``DROP ... CASCADE``). Returns the
    schemas dropped. Destructive: snapshots' history goes too, and so does the view's publication
    (``payledger.publish``). Used by the demo, the benches and the tests only.
    """
    from payledger.formats import session_format
    from payledger.publish import forget
    from payledger.spark import default_warehouse

    forget(default_warehouse(), session_format(spark))
    relations = project_relations(spark)
    for name, objects in relations.items():
        for view in objects["views"]:
            spark.sql(f"drop view if exists {name}.{view}")
        for table in objects["tables"]:
            spark.sql(f"drop table if exists {name}.{table} purge")
        spark.sql(f"drop database if exists {name}")
    return list(relations)
