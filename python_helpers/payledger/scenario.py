"""One way to generate a history and drive builds over it on the project's warehouse, shared by
``payledger demo``, ``payledger bench`` and ``payledger bench-aging``.

- ``generate_history`` / ``generate_new_batch``: a seeded history over 365 days with 10 segments
  ending on ``END_DATE``, and follow-on batches (new events, re-sent duplicates, late events, bad
  rows), as Parquet folders (``payledger.generate``);
- ``write_retroactive_policy``: one segment's reserve policy raised, effective in the past;
- ``write_segment_move``: one merchant moved to another segment, effective in the past;
- ``load_history``: a fresh warehouse (the project's schemas dropped) with a history's merchants,
  policies and events landed;
- ``build``: one dbt invocation and the view records it wrote.
"""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from payledger.contract import POLICY_FILE_SCHEMA
from payledger.dbt import DbtInvocation, run_dbt
from payledger.formats import rows_written, table_commits
from payledger.generate import EVENT_FILE, MERCHANT_FILE, POLICY_FILE, GenerateOptions, generate, generate_batch
from payledger.load import load_file
from payledger.warehouse import VIEW, drop_project_schemas


class BuildFailed(RuntimeError):
    """A build of a generated history failed, or its view did not reconcile; the message says which."""


#: The last day of every generated history.
END_DATE = dt.date(2026, 11, 1)
SEGMENTS = 10
HISTORY_DAYS = 365


def generate_history(folder: Path, events: int, merchants: int) -> dict:
    """Write a history of about ``events`` clean events for ``merchants`` merchants (with the
    generator's duplicates and bad rows) into ``folder``; returns the generator's counts."""
    options = GenerateOptions(events=events, merchants=merchants, segments=SEGMENTS, days=HISTORY_DAYS, end_date=END_DATE)
    return generate(options, folder)


def generate_new_batch(history: Path, folder: Path, *, events: int, merchants: int, days: int, end_date: dt.date, seed: int, id_prefix: str) -> dict:
    """Write a batch that follows ``history``: about ``events`` new events over the ``days`` days up
    to ``end_date`` (event ids starting ``id_prefix``), re-sent copies of the history's events and
    bad rows, into ``folder``; returns the generator's counts."""
    options = GenerateOptions(events=events, merchants=merchants, segments=SEGMENTS, days=days, end_date=end_date, seed=seed)
    return generate_batch(options, history / EVENT_FILE, folder, id_prefix=id_prefix)


def write_retroactive_policy(history: Path, out: Path, end_date: dt.date = END_DATE, which: int = 0) -> tuple[str, Decimal, dt.date]:
    """Write into ``out`` a policy file that raises the reserve_pct of the history's segment number
    ``which`` (0: the first) by 5 points (capped at 1), effective 30 days before ``end_date``;
    returns (segment, reserve_pct, effective date)."""
    policies = pq.read_table(history / POLICY_FILE).to_pylist()
    segment = policies[which]["segment"]
    pct = min(Decimal("1"), policies[which]["reserve_pct"] + Decimal("0.05"))
    effective = end_date - dt.timedelta(days=30)
    out.mkdir(parents=True, exist_ok=True)
    pq.write_table(
        pa.table(
            {
                "segment": [segment],
                "reserve_pct": pa.array([pct], POLICY_FILE_SCHEMA.field("reserve_pct").type),
                "effective_from": pa.array([effective], pa.date32()),
            }
        ),
        out / POLICY_FILE,
    )
    return segment, pct, effective


def write_segment_move(history: Path, out: Path, end_date: dt.date = END_DATE) -> tuple[str, str, dt.date]:
    """Write into ``out`` a merchants file that moves the history's first merchant to another of the
    history's segments, effective 30 days before ``end_date``; returns (merchant_id, new segment,
    effective date)."""
    merchants = pq.read_table(history / MERCHANT_FILE).to_pylist()
    first = merchants[0]
    segment = next(m["segment"] for m in merchants if m["segment"] != first["segment"])
    effective = end_date - dt.timedelta(days=30)
    out.mkdir(parents=True, exist_ok=True)
    pq.write_table(
        pa.table(
            {
                "merchant_id": [first["merchant_id"]],
                "segment": [segment],
                "segment_effective_from": pa.array([effective], pa.date32()),
            }
        ),
        out / MERCHANT_FILE,
    )
    return first["merchant_id"], segment, effective


def load_history(spark, history: Path, warehouse: Path) -> tuple[list[str], int]:
    """Drop the project's schemas from the session's warehouse, then load the history's merchants,
    policies and events into the landing tables; returns the schemas dropped and the event rows
    loaded. Raises ``load.LoadError`` when a file does not load."""
    dropped = drop_project_schemas(spark)
    load_file(spark, "merchants", history / MERCHANT_FILE, warehouse)
    load_file(spark, "reserve_policies", history / POLICY_FILE, warehouse)
    return dropped, load_file(spark, "payment_events", history / EVENT_FILE, warehouse)


@dataclass
class Build:
    """One dbt invocation (``invocation``), the wall seconds it took and the rows the view's new
    commits wrote (``records_written``; a full refresh counts the rows of the replacing commit)."""

    invocation: DbtInvocation
    seconds: float
    records_written: int


def build(spark, *dbt_args: str) -> Build:
    """Run ``dbt <dbt_args>`` in this process (default: ``build``) and count what it wrote to the view."""
    before = {commit.version for commit in table_commits(spark, VIEW)}
    started = time.monotonic()
    invocation = run_dbt(*(dbt_args or ("build",)))
    seconds = time.monotonic() - started
    new = [commit for commit in table_commits(spark, VIEW) if commit.version not in before]
    return Build(invocation, seconds, rows_written(new))
