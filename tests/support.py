"""Test helpers: run dbt in-process, land rows through the real loader, read the warehouse."""

from __future__ import annotations

import datetime as dt
import itertools
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from payledger.contract import LANDING_TABLES
from payledger.load import load_file

VIEW = "payledger.merchant_balance_current"


@dataclass
class DbtResult:
    """What one dbt invocation did: success, per-node status and the run_results entries."""

    success: bool
    invocation_id: str
    nodes: dict[str, Any]
    exception: BaseException | None

    def status(self, name: str) -> str:
        matches = [str(r.status) for uid, r in self.nodes.items() if uid.split(".")[-1] == name or uid.endswith("." + name)]
        assert matches, f"node {name} did not run; ran: {sorted(self.nodes)}"
        return matches[0]

    def failures(self) -> list[str]:
        return [f"{uid}: {r.status} {r.message}" for uid, r in self.nodes.items() if str(r.status) in {"error", "fail"}]


class DbtProject:
    """Runs dbt commands on the project through ``dbtRunner`` (never by scraping CLI output)."""

    def __init__(self, root: Path, artefacts: Path) -> None:
        self.root = root
        self.artefacts = artefacts

    def __call__(self, *args: str, check: bool = True) -> DbtResult:
        from dbt.cli.main import dbtRunner

        argv = [
            *args,
            "--project-dir", str(self.root),
            "--profiles-dir", str(self.root / "profiles"),
            "--target-path", str(self.artefacts / "target"),
            "--log-path", str(self.artefacts / "logs"),
            "--quiet",
        ]
        outcome = dbtRunner().invoke(argv)
        nodes = {}
        invocation_id = ""
        if outcome.result is not None and hasattr(outcome.result, "results"):
            nodes = {r.node.unique_id: r for r in outcome.result.results}
            invocation_id = outcome.result.args.get("invocation_id", "") if hasattr(outcome.result, "args") else ""
        result = DbtResult(bool(outcome.success), invocation_id, nodes, outcome.exception)
        if check:
            assert result.success, f"dbt {' '.join(args)} failed: {result.failures() or result.exception}"
        return result


def reset_warehouse(spark) -> None:
    """Drop every PayLedger schema (landing, staging, snapshots, marts, audit) with its tables."""
    # Iceberg's HiveCatalog does not drop a namespace with CASCADE: drop its views and tables first.
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


@dataclass
class Landing:
    """Lands rows into ``payledger_raw`` through the real loader, as files would arrive."""

    spark: Any
    files: Path
    warehouse: Path
    _counter: itertools.count = field(default_factory=itertools.count)

    def write(self, kind: str, rows: list[dict]) -> Path:
        _, schema, key = LANDING_TABLES[kind]
        names = [f.name for f in schema if not (key and f.name == "updated_at" and all("updated_at" not in r for r in rows))]
        table = pa.table({name: pa.array([r.get(name) for r in rows], schema.field(name).type) for name in names})
        self.files.mkdir(parents=True, exist_ok=True)
        path = self.files / f"{kind}-{next(self._counter)}.parquet"
        pq.write_table(table, path)
        return path

    def load(self, kind: str, rows: list[dict]) -> int:
        return load_file(self.spark, kind, self.write(kind, rows), self.warehouse)

    def rows(self, query: str) -> list[dict]:
        return [r.asDict() for r in self.spark.sql(query).collect()]


def event(event_id: str | None, merchant_id: str | None, event_type: str | None, amount: str | None, when: str | None, currency: str | None = "USD") -> dict:
    """An event row for ``payment_events`` (amount as a decimal string, time as ISO UTC)."""
    return {
        "event_id": event_id,
        "merchant_id": merchant_id,
        "currency": currency,
        "event_type": event_type,
        "amount": None if amount is None else Decimal(amount),
        "event_time": None if when is None else dt.datetime.fromisoformat(when).replace(tzinfo=dt.UTC),
    }


def policy(segment: str, pct: str, effective_from: str) -> dict:
    return {"segment": segment, "reserve_pct": Decimal(pct), "effective_from": dt.date.fromisoformat(effective_from)}


def merchant(merchant_id: str, segment: str, effective_from: str) -> dict:
    return {"merchant_id": merchant_id, "segment": segment, "segment_effective_from": dt.date.fromisoformat(effective_from)}
