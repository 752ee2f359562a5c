"""``payledger bench``: incremental maintenance against a full rebuild and a hand-written peer job.

Measures, in one process and one Spark session with the UI on loopback (for SQL metrics):
- C: a full rebuild of the balance models (checkpoint + view, guard lifted);
- A: an incremental build after appending ~0.2% new events (with duplicates and late events);
- B: a build after a policy change for one segment effective 30 days back;
- P: one PySpark job computing the same balances from the landing tables.
Execution seconds are the sum of ``execution_time`` of model and snapshot nodes in dbt's run results
(P: the job's own wall time); canonical event rows read are the "number of output rows" of Spark's
scans of the canonical events table (and, reported apart, of the landing table), from the Spark UI's
SQL REST API; records written are the rows written by the view's commits (Delta ``numTargetRowsInserted
+ numTargetRowsUpdated``, Iceberg ``added-records``: ``formats.table_commits``). Runs on the session's
table format (``make bench FORMAT=delta|iceberg``).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import time
import urllib.request
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from rich.console import Console
from rich.table import Table

from payledger.contract import POLICY_FILE_SCHEMA
from payledger.dbt import DbtInvocation, run_dbt
from payledger.formats import rows_written, session_format, table_commits
from payledger.generate import EVENT_FILE, MERCHANT_FILE, POLICY_FILE, GenerateOptions, generate, generate_batch
from payledger.load import load_file
from payledger.spark import PROJECT_ROOT, default_warehouse, get_spark
from payledger.warehouse import VIEW, drop_project_schemas

CANONICAL = "int_payment_events_classified"
CHECKPOINT = "int_merchant_daily_balances"
LANDING = "payledger_raw.payment_events"
REBUILD_MODELS = (
    "int_balance_slices_invalidated",
    "int_balance_merchants_invalidated",
    "int_merchant_daily_balances",
    "merchant_balance_current",
)


@dataclass
class Phase:
    """One measured phase: seconds, rows read from canonical events (per dbt node), landing and the
    daily checkpoint, view records written."""

    name: str
    seconds: float
    canonical_reads: dict[str, int]
    landing_rows_read: int
    records_written: int
    seconds_by_node: dict[str, float]
    checkpoint_rows_read: int = 0

    @property
    def canonical_rows_read(self) -> int:
        return sum(self.canonical_reads.values())

    @property
    def dedup_rows_read(self) -> int:
        """Rows the classification read from earlier canonical events to find duplicates."""
        return self.canonical_reads.get("classification", 0)


class SqlMetrics:
    """Sums scan output rows per table over the SQL executions of a window, from the Spark UI."""

    def __init__(self, spark) -> None:
        self.base = spark.sparkContext.uiWebUrl
        if not self.base:
            raise RuntimeError("the Spark UI is off: run the bench with PAYLEDGER_SPARK_UI=true")
        self.app = spark.sparkContext.applicationId

    def _executions(self) -> list[dict]:
        url = f"{self.base}/api/v1/applications/{self.app}/sql?details=true&planDescription=false&length=100000"
        with urllib.request.urlopen(url, timeout=60) as response:
            return json.load(response)

    def last_id(self) -> int:
        return max((e["id"] for e in self._executions()), default=-1)

    def rows_read(self, after_id: int, table: str) -> int:
        """Rows output by scans of ``table`` in executions with id > ``after_id``."""
        total = 0
        for execution in self._executions():
            if execution["id"] <= after_id:
                continue
            for node in execution.get("nodes", []):
                if "Scan" in node["nodeName"] and table in node["nodeName"]:
                    for metric in node.get("metrics", []):
                        if metric["name"] == "number of output rows":
                            total += int(str(metric["value"]).replace(",", "").split()[0])
        return total


def _model_seconds(build: DbtInvocation) -> float:
    return sum(build.timings(("model", "snapshot")).values())


#: A build in two invocations, so that canonical rows read are attributed: the classification
#: (its dedup lookup reads earlier event_ids) and then everything else (the balance maintenance).
BUILD_STEPS = (
    ("classification", ("build", "--select", "+int_payment_events_classified", "--exclude", "resource_type:test")),
    ("balances", ("build", "--exclude", "+int_payment_events_classified", "resource_type:test")),
)


def _measure(spark, metrics: SqlMetrics, name: str, steps: tuple[tuple[str, tuple[str, ...]], ...]) -> Phase:
    commits = len(table_commits(spark, VIEW))
    seconds = 0.0
    by_node: dict[str, float] = {}
    canonical: dict[str, int] = {}
    landing = 0
    checkpoint = 0
    for label, dbt_args in steps:
        first = metrics.last_id()
        build = run_dbt(*dbt_args)
        if not build.success:
            raise RuntimeError(f"{name}: dbt {' '.join(dbt_args)} failed: {build.failures() or build.exception}")
        seconds += _model_seconds(build)
        by_node |= {node: round(t, 2) for node, t in build.timings(("model", "snapshot")).items()}
        canonical[label] = metrics.rows_read(first, CANONICAL)
        landing += metrics.rows_read(first, LANDING)
        checkpoint += metrics.rows_read(first, CHECKPOINT)
    after = table_commits(spark, VIEW)
    # A full refresh replaces the table: count what its last commit wrote.
    written = rows_written(after[commits:]) if len(after) > commits else rows_written(after[-1:])
    return Phase(name, seconds, canonical, landing, written, by_node, checkpoint)


PEER_SQL = """
with landed as (
    select * from payledger_raw.payment_events
),
valid as (
    select *, row_number() over (partition by event_id order by ingest_seq) as copy_number
    from landed
    where event_id is not null and trim(event_id) != ''
        and merchant_id is not null and trim(merchant_id) != ''
        and event_type in ('capture_settled', 'funds_released', 'reserve_released', 'refund_posted',
                           'chargeback_opened', 'chargeback_won', 'chargeback_lost', 'payout_paid')
        and amount > 0 and currency rlike '^[A-Z]{3}$' and event_time is not null
),
accepted as (select *, to_date(event_time) as event_date from valid where copy_number = 1),
rates as (
    select a.event_id, p.reserve_pct
    from accepted a
    join payledger_raw.merchants m on m.merchant_id = a.merchant_id and m.segment_effective_from <= a.event_date
    join payledger_raw.reserve_policies p on p.segment = m.segment and p.effective_from <= a.event_date
    where a.event_type = 'funds_released'
),
posted as (
    select a.merchant_id, a.currency, a.event_type, a.amount, a.event_time, a.ingest_seq,
        round(a.amount * coalesce(r.reserve_pct, 0), 2) as h
    from accepted a left join rates r on a.event_id = r.event_id
)
select merchant_id, currency,
    cast(sum(case event_type when 'funds_released' then amount - h when 'reserve_released' then amount
        when 'refund_posted' then -amount when 'chargeback_opened' then -amount
        when 'chargeback_won' then amount when 'payout_paid' then -amount else 0 end) as decimal(18,2)) as available_balance,
    cast(sum(case event_type when 'capture_settled' then amount when 'funds_released' then -amount else 0 end) as decimal(18,2)) as pending_balance,
    cast(sum(case event_type when 'funds_released' then h when 'reserve_released' then -amount
        when 'chargeback_opened' then amount when 'chargeback_won' then -amount
        when 'chargeback_lost' then -amount else 0 end) as decimal(18,2)) as reserve_hold,
    max(event_time) as last_event_time
from posted group by 1, 2
"""


def _peer(spark, metrics: SqlMetrics) -> tuple[Phase, int]:
    """The hand-written job (one version per policy and merchant: run before any change)."""
    first = metrics.last_id()
    started = time.monotonic()
    spark.sql("drop table if exists payledger.peer_balances")
    spark.sql(f"create table payledger.peer_balances using {session_format(spark)} as {PEER_SQL}")
    seconds = time.monotonic() - started
    differing = spark.sql(
        f"select count(*) as n from payledger.peer_balances p full outer join {VIEW} v "
        "on p.merchant_id = v.merchant_id and p.currency = v.currency "
        "where not (p.available_balance <=> v.available_balance and p.pending_balance <=> v.pending_balance "
        "and p.reserve_hold <=> v.reserve_hold)"
    ).first()["n"]
    rows = metrics.rows_read(first, LANDING)
    return Phase("P peer job", seconds, {}, rows, 0, {}), int(differing)


def run_bench(events: int, merchants: int, console: Console, data_dir: Path, out: Path) -> dict:
    """Run the benchmark and write ``out`` (JSON); returns the figures."""
    end_date = dt.date(2026, 11, 1)
    history, batch, change = data_dir / "history", data_dir / "batch", data_dir / "policy_change"
    started = time.monotonic()
    generate(GenerateOptions(events=events, merchants=merchants, segments=10, days=365, end_date=end_date), history)
    console.print(f"generated {events:,} events in {time.monotonic() - started:.0f}s")
    generate_batch(
        GenerateOptions(events=max(1000, int(events * 0.002)), merchants=merchants, segments=10, days=2, end_date=end_date + dt.timedelta(days=2), seed=44),
        history / EVENT_FILE,
        batch,
        id_prefix="b44_",
    )
    policies = pq.read_table(history / POLICY_FILE).to_pylist()
    segment = policies[0]["segment"]
    change.mkdir(parents=True, exist_ok=True)
    pq.write_table(
        pa.table(
            {
                "segment": [segment],
                "reserve_pct": pa.array([min(Decimal("1"), policies[0]["reserve_pct"] + Decimal("0.05"))], POLICY_FILE_SCHEMA.field("reserve_pct").type),
                "effective_from": pa.array([end_date - dt.timedelta(days=30)], pa.date32()),
            }
        ),
        change / POLICY_FILE,
    )

    spark = get_spark()
    metrics = SqlMetrics(spark)
    drop_project_schemas(spark)
    warehouse = default_warehouse()
    load_file(spark, "merchants", history / MERCHANT_FILE, warehouse)
    load_file(spark, "reserve_policies", history / POLICY_FILE, warehouse)
    loaded = load_file(spark, "payment_events", history / EVENT_FILE, warehouse)
    console.print(f"loaded {loaded:,} event rows")
    initial = _measure(spark, metrics, "initial build", BUILD_STEPS)
    console.print(f"initial build: {initial.seconds:.1f}s")
    full = _measure(
        spark,
        metrics,
        "C full rebuild",
        (("balances", ("run", "--select", *REBUILD_MODELS, "--full-refresh", "--vars", '{"allow_full_refresh": true}')),),
    )
    console.print(f"C: {full.seconds:.1f}s")
    peer, peer_differences = _peer(spark, metrics)
    console.print(f"P: {peer.seconds:.1f}s ({peer_differences} keys differ from the view)")

    loaded_batch = load_file(spark, "payment_events", batch / EVENT_FILE, warehouse)
    incremental = _measure(spark, metrics, "A new events", BUILD_STEPS)
    console.print(f"A: {incremental.seconds:.1f}s")
    load_file(spark, "reserve_policies", change / POLICY_FILE, warehouse)
    replay = _measure(spark, metrics, "B policy change", BUILD_STEPS)
    console.print(f"B: {replay.seconds:.1f}s")
    check = run_dbt("test", "--select", "merchant_balance_current")
    view_rows = spark.sql(f"select count(*) as n from {VIEW}").first()["n"]
    canonical_rows = spark.sql(f"select count(*) as n from payledger_intermediate.{CANONICAL}").first()["n"]
    checkpoint_rows = spark.sql(f"select count(*) as n from payledger_intermediate.{CHECKPOINT}").first()["n"]

    figures = {
        "events_total": int(canonical_rows),
        "full_s": round(full.seconds, 2),
        "incremental_s": round(incremental.seconds, 2),
        "replay_s": round(replay.seconds, 2),
        "peer_s": round(peer.seconds, 2),
        "full_rows_read": full.canonical_rows_read,
        "incremental_rows_read": incremental.canonical_rows_read,
        "replay_rows_read": replay.canonical_rows_read,
        "incremental_records_written": incremental.records_written,
        "replay_records_written": replay.records_written,
        "view_rows": int(view_rows),
        "batch_rows_loaded": loaded_batch,
        "canonical_rows_read_by_node": {"full": full.canonical_reads, "incremental": incremental.canonical_reads, "replay": replay.canonical_reads},
        "seconds_by_node": {"full": full.seconds_by_node, "incremental": incremental.seconds_by_node, "replay": replay.seconds_by_node},
        "incremental_rows_read_excluding_dedup": incremental.canonical_rows_read - incremental.dedup_rows_read,
        "replay_rows_read_excluding_dedup": replay.canonical_rows_read - replay.dedup_rows_read,
        "landing_rows_read": {
            "full": full.landing_rows_read,
            "incremental": incremental.landing_rows_read,
            "replay": replay.landing_rows_read,
            "peer": peer.landing_rows_read,
        },
        "checkpoint_rows_read": {
            "full": full.checkpoint_rows_read,
            "incremental": incremental.checkpoint_rows_read,
            "replay": replay.checkpoint_rows_read,
        },
        "checkpoint_rows": int(checkpoint_rows),
        "peer_keys_differing_from_view": peer_differences,
        "reconciled_after_runs": bool(check.success),
        "initial_build_s": round(initial.seconds, 2),
        "events_requested": events,
        "merchants": merchants,
    }
    table = Table(title=f"PayLedger bench: {canonical_rows:,} ingested events, {merchants:,} merchants, {view_rows:,} view rows")
    for column in ("run", "execution s", "x C", "canonical rows read", "% of events", "view records written"):
        table.add_column(column, justify="right" if column != "run" else "left")
    for phase in (full, incremental, replay, peer):
        table.add_row(
            phase.name,
            f"{phase.seconds:.1f}",
            f"{phase.seconds / full.seconds:.2f}" if full.seconds else "-",
            f"{phase.canonical_rows_read:,}" if phase is not peer else f"(landing {phase.landing_rows_read:,})",
            f"{100 * phase.canonical_rows_read / canonical_rows:.1f}%" if phase is not peer else "-",
            f"{phase.records_written:,}" if phase is not peer else "-",
        )
    console.print(table)
    for phase in (full, incremental, replay):
        parts = ", ".join(f"{node} {rows:,}" for node, rows in sorted(phase.canonical_reads.items()))
        console.print(f"{phase.name}: canonical rows read by node: {parts}; checkpoint rows read {phase.checkpoint_rows_read:,}")
    console.print(f"reconciliation after the runs: {'reconciled' if check.success else 'FAILED: ' + str(check.failures())}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(figures, indent=2) + "\n")
    console.print(f"wrote {out}")
    return figures


def bench_environment() -> None:
    """The bench needs the Spark UI (SQL metrics) on loopback and a warehouse of its own."""
    os.environ.setdefault("PAYLEDGER_SPARK_UI", "true")
    os.environ.setdefault("PAYLEDGER_WAREHOUSE", str(PROJECT_ROOT / "warehouse" / "bench"))
