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
from payledger.dbt import DbtInvocation, run_dbt
from payledger.load import load_file

class DbtProject:
    """Runs dbt commands on the project in-process, keeping artefacts out of the repo's target/."""

    def __init__(self, artefacts: Path) -> None:
        self.artefacts = artefacts

    def __call__(self, *args: str, check: bool = True) -> DbtInvocation:
        result = run_dbt(*args, target_path=self.artefacts / "target", log_path=self.artefacts / "logs")
        if check:
            assert result.success, f"dbt {' '.join(args)} failed: {result.failures() or result.exception}"
        return result


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
