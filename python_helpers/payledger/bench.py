"""``payledger bench``: incremental maintenance against a full rebuild and a hand-written peer job.

Measures, in one process and one Spark session with the UI on loopback (for SQL metrics), at two
history sizes (the one asked for and a tenth of it, with new batches of the same size in rows):
- C: a full rebuild of the balance models (checkpoint + view, guard lifted);
- P: the best job a Spark engineer would write by hand for the same balances from the landing
  tables (dedup by aggregation, reference tables broadcast, one pass), with Spark's default code
  generation whatever the target set (``spark_code_generation``); it must equal the view;
- A: an incremental build after appending ~0.2% new events (with duplicates and late events);
- B: a build after a policy change for one segment effective 30 days back;
- a build with nothing new and every test on every key, which publishes the view (not measured);
- A and B again, each after a change of its own (a second batch, another segment's policy), as
  ``payledger build`` runs them after a published build: ``dbt build`` with every test (the
  reconciliation of one rotating slice included, the other checks over history since the published
  build), wall seconds of the invocation in this warm process (``incremental_with_tests_s``,
  ``replay_with_tests_s``);
- the full reconciliation (``payledger reconcile --full``: every key), wall seconds;
then prints each target of the performance issue as met or missed (``targets``).
Execution seconds are the sum of ``execution_time`` of model and snapshot nodes in dbt's run results
(P: the job's own wall time); canonical event rows read are the "number of output rows" of Spark's
scans of the canonical events table (and, reported apart, of the landing table and the daily
checkpoint), bytes read the size of the files they opened ("size of files read" on Delta, "total
data file size (bytes)" on Iceberg),
from the Spark UI's SQL REST API; records written are the rows written by the view's commits (Delta
``numTargetRowsInserted + numTargetRowsUpdated``, Iceberg ``added-records``:
``formats.table_commits``). Runs on the session's table format (``make bench FORMAT=delta|iceberg``).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import re
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.table import Table

from payledger import scenario, warehouse
from payledger.contract import AMOUNT_DDL, EVENT_TYPES
from payledger.dbt import FULL_RECONCILIATION, SCHEDULED_BUILD_EXCLUDES, DbtInvocation, run_dbt
from payledger.formats import session_format, table_bytes
from payledger.generate import EVENT_FILE, POLICY_FILE
from payledger.load import load_file
from payledger.reconcile import reconcile
from payledger.spark import PROJECT_ROOT, default_warehouse, get_spark, project_vars, spark_code_generation
from payledger.sparkwork import WorkCounter, by_node
from payledger.warehouse import LANDING_EVENTS, LANDING_MERCHANTS, LANDING_POLICIES, VIEW

# Table names as Spark's scan metrics name them (without the schema).
CANONICAL = warehouse.CANONICAL.split(".")[1]
#: What a batch's dedup lookup reads: the index's units, its directory, and canonical events.
DEDUP_TABLES = tuple(table.split(".")[1] for table in (warehouse.DEDUP_INDEX, warehouse.DEDUP_DIRECTORY, warehouse.CANONICAL))
CHECKPOINT = warehouse.CHECKPOINT.split(".")[1]
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
    #: The last SQL execution id of each step (SqlMetrics windows).
    step_last_ids: dict[str, int] = field(default_factory=dict)
    #: Spark jobs and SQL executions of the phase (sparkwork.WorkCounter), and per dbt node.
    spark_jobs: int = 0
    sql_executions: int = 0
    work_by_node: dict[str, dict[str, int]] = field(default_factory=dict)

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

    def _scan_metrics(self, after_id: int, table: str, names: tuple[str, ...], until_id: int | None) -> list[str]:
        values = []
        for execution in self._executions():
            if execution["id"] <= after_id or (until_id is not None and execution["id"] > until_id):
                continue
            for node in execution.get("nodes", []):
                # The table's own scans, not those of its metadata tables (Iceberg ``<table>.files``).
                if "Scan" in node["nodeName"] and table in node["nodeName"] and f"{table}." not in node["nodeName"]:
                    values += [str(m["value"]) for m in node.get("metrics", []) if m["name"] in names]
        return values

    def rows_read(self, after_id: int, table: str, until_id: int | None = None) -> int:
        """Rows output by scans of ``table`` in executions with ``after_id < id <= until_id``."""
        return sum(int(value.replace(",", "").split()[0]) for value in self._scan_metrics(after_id, table, ("number of output rows",), until_id))

    def bytes_read(self, after_id: int, table: str, until_id: int | None = None) -> int:
        """Bytes of the files that scans of ``table`` opened (Parquet/Delta "size of files read",
        Iceberg "total data file size (bytes)"; whole files, whatever columns were read) in
        executions with ``after_id < id <= until_id``."""
        values = self._scan_metrics(after_id, table, ("size of files read", "total data file size (bytes)"), until_id)
        return sum(_bytes(value) for value in values)


_UNITS = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}


def _bytes(value: str) -> int:
    """A size metric as the UI shows it (``12.3 MiB``, or ``total (min, med, max ...)`` then the
    total on the next line, or a plain count of bytes) in bytes."""
    lines = value.strip().splitlines()
    text = lines[1] if len(lines) > 1 and lines[0].startswith("total") else lines[0]
    match = re.match(r"\s*([\d.,]+)\s*(B|KiB|MiB|GiB|TiB)?", text)
    if not match:
        raise ValueError(f"unreadable size metric {value!r}")
    return int(float(match.group(1).replace(",", "")) * _UNITS[match.group(2) or "B"])


def _model_seconds(build: DbtInvocation) -> float:
    return sum(build.timings(("model", "snapshot")).values())


#: A build in two invocations, so that canonical rows read are attributed: the classification
#: (its dedup lookup reads earlier event_ids) and then everything else (the balance maintenance).
BUILD_STEPS = (
    ("classification", ("build", "--select", "+int_payment_events_classified", "--exclude", "resource_type:test")),
    ("balances", ("build", "--exclude", "+int_payment_events_classified", "resource_type:test")),
)


def _measure(spark, metrics: SqlMetrics, name: str, steps: tuple[tuple[str, tuple[str, ...]], ...]) -> Phase:
    seconds = 0.0
    written = 0
    seconds_by_node: dict[str, float] = {}
    canonical: dict[str, int] = {}
    landing = 0
    checkpoint = 0
    last_ids: dict[str, int] = {}
    counter = WorkCounter(spark)
    jobs = executions = 0
    work: dict[str, dict[str, int]] = {}
    for label, dbt_args in steps:
        first = metrics.last_id()
        mark = counter.mark()
        done = scenario.build(spark, *dbt_args)
        build = done.invocation
        step_work = counter.since(mark)
        jobs += step_work.spark_jobs
        executions += step_work.sql_executions
        work |= by_node(step_work, build.windows())
        written += done.records_written
        if not build.success:
            raise scenario.BuildFailed(f"{name}: dbt {' '.join(dbt_args)} failed: {build.failures() or build.exception}")
        seconds += _model_seconds(build)
        seconds_by_node |= {node: round(t, 2) for node, t in build.timings(("model", "snapshot")).items()}
        canonical[label] = metrics.rows_read(first, CANONICAL)
        landing += metrics.rows_read(first, LANDING_EVENTS)
        checkpoint += metrics.rows_read(first, CHECKPOINT)
        last_ids[label] = metrics.last_id()
    return Phase(name, seconds, canonical, landing, written, seconds_by_node, checkpoint, last_ids, jobs, executions, work)


def _measure_as_cron(spark, metrics: SqlMetrics, name: str) -> Phase:
    """``dbt build`` with every data test, as ``payledger build`` runs it (without the unit tests:
    ``SCHEDULED_BUILD_EXCLUDES``): ``seconds`` is the invocation's wall time in this process (parse,
    models, snapshots, tests, hooks and publication), rows read are all of the build's scans.
    Raises ``scenario.BuildFailed`` when a node fails."""
    first = metrics.last_id()
    counter = WorkCounter(spark)
    mark = counter.mark()
    done = scenario.build(spark, "build", *SCHEDULED_BUILD_EXCLUDES)
    work = counter.since(mark)
    build = done.invocation
    if not build.success:
        raise scenario.BuildFailed(f"{name}: dbt build failed: {build.failures() or build.exception}")
    return Phase(
        name,
        done.seconds,
        {"build": metrics.rows_read(first, CANONICAL)},
        metrics.rows_read(first, LANDING_EVENTS),
        done.records_written,
        {node: round(t, 2) for node, t in build.timings(("model", "snapshot", "test", "seed")).items()},
        metrics.rows_read(first, CHECKPOINT),
        {"build": metrics.last_id()},
        work.spark_jobs,
        work.sql_executions,
        by_node(work, build.windows()),
    )


PEER_SQL = (
    """
with valid_copies as (
    select event_id, ingest_seq, merchant_id, currency, event_type, amount, event_time
    from {landing_events}
    where event_id is not null and trim(event_id) != ''
        and merchant_id is not null and trim(merchant_id) != ''
        and event_type in ({event_types})
        and amount > 0 and currency rlike '^{currency_pattern}$' and event_time is not null
),
accepted as (
    select first.*
    from (
        select min_by(struct(merchant_id, currency, event_type, amount, event_time), ingest_seq) as first
        from valid_copies
        group by event_id
    )
),
posted as (
    select /*+ broadcast(m), broadcast(p) */
        a.merchant_id, a.currency, a.event_type, a.amount, a.event_time,
        case when a.event_type = 'funds_released'
                and m.segment_effective_from <= to_date(a.event_time)
                and p.effective_from <= to_date(a.event_time)
            then round(a.amount * p.reserve_pct, 2) else 0 end as h  -- the generator's currencies all have two decimals
    from accepted a
    left join {landing_merchants} m on m.merchant_id = a.merchant_id
    left join {landing_policies} p on p.segment = m.segment
)
select merchant_id, currency,
    cast(sum(case event_type when 'funds_released' then amount - h when 'reserve_released' then amount
        when 'refund_posted' then -amount when 'chargeback_opened' then -amount
        when 'chargeback_won' then amount when 'payout_paid' then -amount else 0 end) as {amount_type}) as available_balance,
    cast(sum(case event_type when 'capture_settled' then amount when 'funds_released' then -amount else 0 end) as {amount_type}) as pending_balance,
    cast(sum(case event_type when 'funds_released' then h when 'reserve_released' then -amount
        when 'chargeback_opened' then amount when 'chargeback_won' then -amount
        when 'chargeback_lost' then -amount else 0 end) as {amount_type}) as reserve_hold,
    max(event_time) as last_event_time
from posted group by 1, 2
""".replace("{event_types}", ", ".join(f"'{name}'" for name in EVENT_TYPES))
    .replace("{amount_type}", AMOUNT_DDL)
    .replace("{currency_pattern}", project_vars()["identifier_patterns"]["currency"])
    .replace("{landing_events}", LANDING_EVENTS)
    .replace("{landing_merchants}", LANDING_MERCHANTS)
    .replace("{landing_policies}", LANDING_POLICIES)
)


def _peer(spark, metrics: SqlMetrics) -> tuple[Phase, int]:
    """The hand-written job: dedup by aggregation (the lowest ingest_seq of each event_id's valid
    copies), reference tables broadcast, one pass over the landing table, with Spark's default code
    generation (spark_code_generation; the Delta target interprets). The landing tables hold one
    version per policy and merchant (current state): run before any change."""
    first = metrics.last_id()
    counter = WorkCounter(spark)
    mark = counter.mark()
    started = time.monotonic()
    spark.sql("drop table if exists payledger.peer_balances")
    with spark_code_generation(spark):
        spark.sql(f"create table payledger.peer_balances using {session_format(spark)} as {PEER_SQL}")
    seconds = time.monotonic() - started
    work = counter.since(mark)
    differing = spark.sql(
        f"select count(*) as n from payledger.peer_balances p full outer join {VIEW} v "
        "on p.merchant_id = v.merchant_id and p.currency = v.currency "
        "where not (p.available_balance <=> v.available_balance and p.pending_balance <=> v.pending_balance "
        "and p.reserve_hold <=> v.reserve_hold)"
    ).first()["n"]
    rows = metrics.rows_read(first, LANDING_EVENTS)
    return Phase("P peer job", seconds, {}, rows, 0, {}, spark_jobs=work.spark_jobs, sql_executions=work.sql_executions), int(differing)


@dataclass(frozen=True)
class BenchSize:
    """One history size of the bench: ``suffix`` of its keys in bench.json (``""`` or ``"_small"``),
    clean events and merchants of the history, and clean events of the new batch (the same count at
    every size, so that A compares batches of one size over histories of different sizes)."""

    suffix: str
    events: int
    merchants: int
    batch_events: int


@dataclass
class SizeResult:
    """The phases and counts of one size's run."""

    size: BenchSize
    initial: Phase
    full: Phase
    peer: Phase
    incremental: Phase
    replay: Phase
    incremental_tests: Phase
    replay_tests: Phase
    full_reconciliation_s: float
    peer_differences: int
    reconciled: bool
    failures: list[str]
    batch_rows_loaded: int
    view_rows: int
    canonical_rows: int
    canonical_bytes: int
    checkpoint_rows: int
    slice_canonical_rows: int
    slice_checkpoint_rows: int
    dedup_bytes_read: int

    def figures(self) -> dict:
        """The size's figures, under bench.json's keys (without the size's suffix)."""
        full, incremental, replay, peer = self.full, self.incremental, self.replay, self.peer
        phases = {
            "initial": self.initial,
            "full": full,
            "incremental": incremental,
            "replay": replay,
            "incremental_with_tests": self.incremental_tests,
            "replay_with_tests": self.replay_tests,
            "peer": peer,
        }
        return {
            "events_total": self.canonical_rows,
            "full_s": round(full.seconds, 2),
            "incremental_s": round(incremental.seconds, 2),
            "replay_s": round(replay.seconds, 2),
            "incremental_with_tests_s": round(self.incremental_tests.seconds, 2),
            "replay_with_tests_s": round(self.replay_tests.seconds, 2),
            "full_reconciliation_s": round(self.full_reconciliation_s, 2),
            "peer_s": round(peer.seconds, 2),
            "full_rows_read": full.canonical_rows_read,
            "incremental_rows_read": incremental.canonical_rows_read,
            "replay_rows_read": replay.canonical_rows_read,
            # Every canonical row the builds with tests read: the models' and the checks' scans
            # (the reconciliation slice's replay among them).
            "incremental_with_tests_rows_read": self.incremental_tests.canonical_rows_read,
            "replay_with_tests_rows_read": self.replay_tests.canonical_rows_read,
            "incremental_records_written": incremental.records_written,
            "replay_records_written": replay.records_written,
            "view_rows": self.view_rows,
            "batch_rows_loaded": self.batch_rows_loaded,
            "canonical_rows_read_by_node": {"full": full.canonical_reads, "incremental": incremental.canonical_reads, "replay": replay.canonical_reads},
            "seconds_by_node": {
                "full": full.seconds_by_node,
                "incremental": incremental.seconds_by_node,
                "replay": replay.seconds_by_node,
                "incremental_with_tests": self.incremental_tests.seconds_by_node,
                "replay_with_tests": self.replay_tests.seconds_by_node,
            },
            "spark_jobs": {name: phase.spark_jobs for name, phase in phases.items()},
            "sql_executions": {name: phase.sql_executions for name, phase in phases.items()},
            "work_by_node": {"full": full.work_by_node, "incremental": incremental.work_by_node, "replay": replay.work_by_node},
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
            "checkpoint_rows": self.checkpoint_rows,
            "canonical_bytes": self.canonical_bytes,
            "dedup_bytes_read": self.dedup_bytes_read,
            "replay_slice_canonical_rows": self.slice_canonical_rows,
            "replay_slice_checkpoint_rows": self.slice_checkpoint_rows,
            "peer_keys_differing_from_view": self.peer_differences,
            "reconciled_after_runs": self.reconciled,
            "initial_build_s": round(self.initial.seconds, 2),
            "events_requested": self.size.events,
            "merchants": self.size.merchants,
        }


def _prepare(size: BenchSize, data_dir: Path, console: Console) -> tuple[Path, Path, Path, str, dt.date]:
    """Generate the size's history, its two batches (``batch``, ``batch_2``) and two policy changes
    (``policy_change``, of the first segment, and ``policy_change_2``, of the second); returns the
    first ones' folders, the first change's segment and its effective date."""
    history, batch, change = data_dir / "history", data_dir / "batch", data_dir / "policy_change"
    started = time.monotonic()
    scenario.generate_history(history, size.events, size.merchants)
    console.print(f"generated {size.events:,} events for {size.merchants:,} merchants in {time.monotonic() - started:.0f}s")
    for folder, days_after, seed in ((batch, 2, 44), (data_dir / "batch_2", 3, 45)):
        scenario.generate_new_batch(
            history,
            folder,
            events=size.batch_events,
            merchants=size.merchants,
            days=2,
            end_date=scenario.END_DATE + dt.timedelta(days=days_after),
            seed=seed,
            id_prefix=f"b{seed}_",
        )
    segment, _, effective = scenario.write_retroactive_policy(history, change)
    scenario.write_retroactive_policy(history, data_dir / "policy_change_2", which=1)
    return history, batch, change, segment, effective


def _count(spark, query: str) -> int:
    return int(spark.sql(query).first()[0])


def _run_size(spark, metrics: SqlMetrics, size: BenchSize, data_dir: Path, console: Console) -> SizeResult:
    """Build the size's history, then measure C, P, A and B on it, in that order."""
    history, batch, change, segment, effective = _prepare(size, data_dir, console)
    warehouse_dir = default_warehouse()
    _, loaded = scenario.load_history(spark, history, warehouse_dir)
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

    loaded_batch = load_file(spark, "payment_events", batch / EVENT_FILE, warehouse_dir)
    first = metrics.last_id()
    incremental = _measure(spark, metrics, "A new events", BUILD_STEPS)
    # The classification is the first step of A: its scans of the dedup index, its directory and
    # canonical events (the accepted rows past the index's watermark) are the dedup lookup.
    dedup_bytes = sum(metrics.bytes_read(first, table, until_id=incremental.step_last_ids["classification"]) for table in DEDUP_TABLES)
    console.print(f"A: {incremental.seconds:.1f}s")
    load_file(spark, "reserve_policies", change / POLICY_FILE, warehouse_dir)
    replay = _measure(spark, metrics, "B policy change", BUILD_STEPS)
    console.print(f"B: {replay.seconds:.1f}s")
    # A scheduled build follows a published one, whose build passed every test: publish what A and
    # B left, with nothing new and every test on every key (as the nightly line runs them), so that
    # the builds below check history since it, as cron's do.
    audited = scenario.build(spark, "build", *FULL_RECONCILIATION)
    published = audited.invocation.publication
    if not audited.invocation.success or published is None or not published.checked or published.events_watermark is None:
        why = audited.invocation.failures() or audited.invocation.exception or published
        raise scenario.BuildFailed(f"the build before A with tests published no checked version: {why}")
    console.print(f"published build (every test, every key): {audited.seconds:.1f}s")
    load_file(spark, "payment_events", data_dir / "batch_2" / EVENT_FILE, warehouse_dir)
    incremental_tests = _measure_as_cron(spark, metrics, "A with tests")
    console.print(f"A with tests: {incremental_tests.seconds:.1f}s")
    load_file(spark, "reserve_policies", data_dir / "policy_change_2" / POLICY_FILE, warehouse_dir)
    replay_tests = _measure_as_cron(spark, metrics, "B with tests")
    console.print(f"B with tests: {replay_tests.seconds:.1f}s")
    started = time.monotonic()
    full_reconciliation = reconcile(full=True)
    full_reconciliation_s = time.monotonic() - started
    console.print(f"full reconciliation: {full_reconciliation_s:.1f}s, {'passed' if full_reconciliation.success else 'FAILED'}")
    check = run_dbt("test", "--select", "merchant_balance_current", *FULL_RECONCILIATION)
    slice_merchants = f"(select merchant_id from {LANDING_MERCHANTS} where segment = '{segment}')"
    return SizeResult(
        size=size,
        initial=initial,
        full=full,
        peer=peer,
        incremental=incremental,
        replay=replay,
        incremental_tests=incremental_tests,
        replay_tests=replay_tests,
        full_reconciliation_s=full_reconciliation_s,
        peer_differences=peer_differences,
        reconciled=bool(check.success and full_reconciliation.success),
        failures=check.failures() + full_reconciliation.errors,
        batch_rows_loaded=loaded_batch,
        view_rows=_count(spark, f"select count(*) from {VIEW}"),
        canonical_rows=_count(spark, f"select count(*) from {warehouse.CANONICAL}"),
        canonical_bytes=table_bytes(spark, warehouse.CANONICAL),
        checkpoint_rows=_count(spark, f"select count(*) from {warehouse.CHECKPOINT}"),
        slice_canonical_rows=_count(
            spark,
            f"select count(*) from {warehouse.CANONICAL} where is_accepted and event_date >= date '{effective}' and merchant_id in {slice_merchants}",
        ),
        slice_checkpoint_rows=_count(spark, f"select count(*) from {warehouse.CHECKPOINT} where merchant_id in {slice_merchants}"),
        dedup_bytes_read=dedup_bytes,
    )


@dataclass(frozen=True)
class Target:
    """One target of the performance issue: ``value`` compared with ``limit`` (met when <=)."""

    name: str
    value: float
    limit: float
    detail: str

    @property
    def met(self) -> bool:
        return self.value <= self.limit

    def as_dict(self) -> dict:
        """JSON-ready; ``value`` is None when the ratio's denominator was 0."""
        value = round(self.value, 4) if math.isfinite(self.value) else None
        return {"name": self.name, "value": value, "limit": self.limit, "met": self.met, "detail": self.detail}


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else float("inf")


def targets(large: SizeResult, small: SizeResult) -> list[Target]:
    """The targets, each measured in this run (ratios, not absolute times)."""
    peer = large.peer.seconds
    found = [
        Target(f"{label} <= {limit} x P", _ratio(phase.seconds, peer), float(limit), f"{label} {phase.seconds:.1f} s, P {peer:.1f} s")
        for label, phase, limit in (
            ("C", large.full, "1.0"),
            ("A", large.incremental, "0.10"),
            ("B", large.replay, "0.25"),
            ("A with tests", large.incremental_tests, "0.10"),
            ("B with tests", large.replay_tests, "0.25"),
        )
    ]
    found.append(
        Target(
            "full reconciliation <= 1.0 x P",
            _ratio(large.full_reconciliation_s, peer),
            1.0,
            f"payledger reconcile --full {large.full_reconciliation_s:.1f} s, P {peer:.1f} s",
        )
    )
    found += [
        Target(
            "A(large) <= 1.25 x A(small)",
            _ratio(large.incremental.seconds, small.incremental.seconds),
            1.25,
            f"A {large.incremental.seconds:.1f} s on {large.canonical_rows:,} events, {small.incremental.seconds:.1f} s on {small.canonical_rows:,}",
        ),
        Target(
            "A with tests (large) <= 1.25 x (small)",
            _ratio(large.incremental_tests.seconds, small.incremental_tests.seconds),
            1.25,
            f"A with tests {large.incremental_tests.seconds:.1f} s on {large.canonical_rows:,} events, "
            f"{small.incremental_tests.seconds:.1f} s on {small.canonical_rows:,}",
        ),
    ]
    for result in (large, small):
        label = "large" if not result.size.suffix else "small"
        found.append(
            Target(
                f"B canonical rows read <= 1.2 x its slice's ({label})",
                _ratio(result.replay.canonical_rows_read, result.slice_canonical_rows),
                1.2,
                f"{result.replay.canonical_rows_read:,} read, slice {result.slice_canonical_rows:,}",
            )
        )
        found.append(
            Target(
                f"B checkpoint rows read <= 1.2 x its slice keys' ({label})",
                _ratio(result.replay.checkpoint_rows_read, result.slice_checkpoint_rows),
                1.2,
                f"{result.replay.checkpoint_rows_read:,} read, slice keys' rows {result.slice_checkpoint_rows:,}",
            )
        )
    found.append(
        Target(
            "dedup bytes read in A <= 10% of canonical bytes",
            _ratio(large.dedup_bytes_read, large.canonical_bytes),
            0.10,
            f"{large.dedup_bytes_read:,} of {large.canonical_bytes:,} bytes",
        )
    )
    return found


def _print_size(console: Console, result: SizeResult) -> None:
    full, incremental, replay, peer = result.full, result.incremental, result.replay, result.peer
    table = Table(title=f"{result.canonical_rows:,} ingested events, {result.size.merchants:,} merchants, {result.view_rows:,} view rows")
    for column in ("run", "execution s", "x P", "canonical rows read", "% of events", "checkpoint rows read", "view records written"):
        table.add_column(column, justify="right" if column != "run" else "left")
    for phase in (full, incremental, replay, result.incremental_tests, result.replay_tests, peer):
        table.add_row(
            phase.name,
            f"{phase.seconds:.1f}",
            f"{_ratio(phase.seconds, peer.seconds):.2f}",
            f"{phase.canonical_rows_read:,}" if phase is not peer else f"(landing {phase.landing_rows_read:,})",
            f"{100 * phase.canonical_rows_read / result.canonical_rows:.1f}%" if phase is not peer else "-",
            f"{phase.checkpoint_rows_read:,}" if phase is not peer else "-",
            f"{phase.records_written:,}" if phase is not peer else "-",
        )
    console.print(table)
    for phase in (full, incremental, replay):
        parts = ", ".join(f"{node} {rows:,}" for node, rows in sorted(phase.canonical_reads.items()))
        slowest = ", ".join(f"{node} {t:.1f}" for node, t in sorted(phase.seconds_by_node.items(), key=lambda item: -item[1])[:4])
        console.print(f"{phase.name}: canonical rows read by step: {parts}; slowest nodes (s): {slowest}")
    console.print(f"P equals the view on every key: {'yes' if not result.peer_differences else f'NO, {result.peer_differences} keys differ'}")
    console.print(f"reconciliation after the runs: {'reconciled' if result.reconciled else 'FAILED: ' + str(result.failures)}")


def run_bench(events: int, merchants: int, console: Console, data_dir: Path, out: Path) -> dict:
    """Run the benchmark at two history sizes (``events``/``merchants`` and a tenth of both, with
    the same batch size in rows) and write ``out`` (JSON); returns the figures.

    bench.json holds the large size's figures under their keys, the small size's under the same
    keys in ``small`` and, for the time figures, with the suffix ``_small`` at the top level, and
    ``targets`` (name, value, limit, met, detail). Raises ``scenario.BuildFailed`` when a dbt step
    fails or the view does not reconcile after the runs.
    """
    batch_events = max(1000, int(events * 0.002))
    large = BenchSize("", events, merchants, batch_events)
    small = BenchSize("_small", max(10_000, events // 10), max(100, merchants // 10), batch_events)
    spark = get_spark()
    metrics = SqlMetrics(spark)
    results = {}
    for size in (small, large):
        console.rule(f"history of {size.events:,} events, {size.merchants:,} merchants; batch of {size.batch_events:,} events")
        results[size.suffix] = _run_size(spark, metrics, size, data_dir / (size.suffix.strip("_") or "large"), console)
        _print_size(console, results[size.suffix])
    found = targets(results[""], results["_small"])
    figures = results[""].figures()
    small_figures = results["_small"].figures()
    small_keys = ("peer_s", "full_s", "incremental_s", "replay_s", "incremental_with_tests_s", "replay_with_tests_s", "full_reconciliation_s")
    figures |= {f"{key}_small": small_figures[key] for key in (*small_keys, "dedup_bytes_read")}
    figures["small"] = small_figures
    figures["targets"] = [target.as_dict() for target in found]
    console.rule("targets")
    table = Table()
    for column in ("target", "measured", "limit", "", "detail"):
        table.add_column(column)
    for target in found:
        table.add_row(target.name, f"{target.value:.3f}", f"{target.limit:g}", "[green]met[/]" if target.met else "[red]missed[/]", target.detail)
    console.print(table)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(figures, indent=2) + "\n")
    console.print(f"wrote {out}")
    if not all(result.reconciled for result in results.values()):
        raise scenario.BuildFailed("the view did not reconcile after the bench's runs")
    return figures


def bench_environment(name: str = "bench") -> None:
    """A bench needs the Spark UI (SQL metrics) on loopback and a warehouse of its own,
    ``warehouse/<name>`` (unless ``PAYLEDGER_WAREHOUSE`` is set)."""
    os.environ.setdefault("PAYLEDGER_SPARK_UI", "true")
    os.environ.setdefault("PAYLEDGER_WAREHOUSE", str(PROJECT_ROOT / "warehouse" / name))
