"""Listing and resetting the project's warehouse (either table format)."""

from __future__ import annotations

from pathlib import Path

from payledger.contract import RAW_SCHEMA

# The relations Python reads by name, in one place (schemas as dbt_project.yml names them;
# tests/unit/test_tooling.py checks each against dbt's manifest).
#: The balance view (the mart ``merchant_balance_current``).
VIEW = "payledger.merchant_balance_current"
#: The audit of what each build invalidated and replayed.
AUDIT = "payledger.balance_invalidations"
#: Every ingested row that was not accepted, with its reason.
REJECTS = "payledger.payment_event_rejects"
#: The view over the published version of VIEW (made by ``payledger.publish``, not by dbt).
PUBLISHED_RELATION = "payledger.merchant_balance_published"
#: Canonical events: every ingested row accepted or rejected, exactly once.
CANONICAL = "payledger_intermediate.int_payment_events_classified"
#: The dedup index of accepted event ids and its directory of sorted units (issue 28's lookup).
DEDUP_INDEX = "payledger_intermediate.int_payment_event_ids"
DEDUP_DIRECTORY = "payledger_intermediate.int_payment_event_id_units"
#: The daily checkpoint the view is summed from.
CHECKPOINT = "payledger_intermediate.int_merchant_daily_balances"
#: The snapshots of merchant segments and reserve policies (dbt snapshots: every version kept).
SEGMENT_SNAPSHOT = "payledger_snapshots.snp_payledger__merchants"
POLICY_SNAPSHOT = "payledger_snapshots.snp_payledger__reserve_policies"
#: The fold's posting rules per event type (the seed ``payment_event_types``).
EVENT_TYPES = "payledger_reference.payment_event_types"
#: The landing table of payment events (``payledger load events``): the source positions, ingest_seq.
LANDING_EVENTS = f"{RAW_SCHEMA}.payment_events"
#: The landing tables of merchants and reserve policies (current state, upserted).
LANDING_MERCHANTS = f"{RAW_SCHEMA}.merchants"
LANDING_POLICIES = f"{RAW_SCHEMA}.reserve_policies"
#: The rows the reconciliation test found wrong (dbt's stored failures).
RECONCILIATION_FAILURES = "payledger_audit.merchant_balance_reconciliation_failures"
#: One row per reconciliation: the slices it compared and its result (``record_reconciliation``).
RECONCILIATION_RUNS = "payledger_audit.merchant_balance_reconciliation_runs"


def folder_beside(location: str, relation: str) -> str:
    """The folder of the managed table ``relation`` (``schema.name``) of the catalog that keeps
    another managed table at ``location``: ``<warehouse folder>/<schema>.db/<name>``, the layout of
    Spark's session catalog (Delta) and of Iceberg's Hive catalog alike. Lets a reader without the
    metastore (Derby admits one process) find the tables beside the published view."""
    schema, name = relation.split(".")
    return str(Path(location).parent.parent / f"{schema}.db" / name)


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
