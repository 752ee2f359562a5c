"""Test helpers: run dbt in-process, land rows through the real loader, read the warehouse."""

from __future__ import annotations

import datetime as dt
import hashlib
import itertools
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from payledger.contract import LANDING_TABLES
from payledger.dbt import DbtInvocation, run_dbt
from payledger.formats import DELTA, IcebergFormat, format_named, session_format
from payledger.load import load_file
from payledger.maintain import project_tables
from payledger.publish import publication_path
from payledger.spark import SPARK_CODE_GENERATION, default_warehouse
from payledger.warehouse import CANONICAL, VIEW, drop_project_schemas
from tests import reference

#: dbt selection arguments that leave out the generic data tests and the unit tests (see ``scenario_build``).
SCENARIO_SELECTION = ("--exclude", "test_type:generic", "test_type:unit")
#: dbt selection arguments that leave out the unit tests only. They read their given rows, not the
#: warehouse: a test that runs ``dbt build`` after each batch runs them in its first build only.
DATA_TESTS_SELECTION = ("--exclude", "test_type:unit")


class DbtProject:
    """Runs dbt commands on the project in-process, keeping artefacts out of the repo's target/."""

    def __init__(self, artefacts: Path) -> None:
        self.artefacts = artefacts

    def target_path(self, args: tuple[str, ...]) -> Path:
        """The target folder of a dbt call with ``args``: ``target`` without ``--vars``, else one
        folder per ``--vars`` value. dbt's partial parse keeps a folder's parse only while the vars
        stay the same (a change re-parses the whole project, about 2.7 s, and so did the next call
        without them)."""
        if "--vars" not in args:
            return self.artefacts / "target"
        variables = args[args.index("--vars") + 1]
        return self.artefacts / f"target-vars-{hashlib.sha256(variables.encode()).hexdigest()[:12]}"

    def __call__(self, *args: str, check: bool = True) -> DbtInvocation:
        result = run_dbt(*args, target_path=self.target_path(args), log_path=self.artefacts / "logs")
        if check:
            assert result.success, f"dbt {' '.join(args)} failed: {result.failures() or result.exception}"
        return result

    def scenario_build(self, *args: str, check: bool = True) -> DbtInvocation:
        """``dbt build`` without the generic data tests (``valid_rows``, one per model: 16-37 s of a
        45-77 s tiny Delta build before they were merged into fewer scans, measured from
        run_results.json)
        and the unit tests (their input does not depend on the scenario). Seeds, snapshots and
        models build as in ``dbt build``; the singular tests (reconciliation, conservation, every
        event accepted or rejected) still run. Scenario tests use it; the differential and
        reference-load tests build with every data test (``DATA_TESTS_SELECTION``), so every
        generic test runs on every history they draw, and one differential example runs the unit
        tests too, once per format.
        ``view_rows`` checks the view's key is unique."""
        return self("build", *SCENARIO_SELECTION, *args, check=check)


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


def _updated_at(when: str | None) -> dict:
    return {} if when is None else {"updated_at": dt.datetime.fromisoformat(when).replace(tzinfo=dt.UTC)}


def policy(segment: str, pct: str, effective_from: str, updated_at: str | None = None) -> dict:
    """A ``reserve_policies`` row; without ``updated_at`` (ISO UTC) the loader stamps the load time."""
    return {"segment": segment, "reserve_pct": Decimal(pct), "effective_from": dt.date.fromisoformat(effective_from), **_updated_at(updated_at)}


def merchant(merchant_id: str, segment: str, effective_from: str, updated_at: str | None = None) -> dict:
    """A ``merchants`` row; without ``updated_at`` (ISO UTC) the loader stamps the load time."""
    return {"merchant_id": merchant_id, "segment": segment, "segment_effective_from": dt.date.fromisoformat(effective_from), **_updated_at(updated_at)}


def by_key(rows: list[dict]) -> dict[tuple[str, str], dict]:
    """Balance view rows by (merchant_id, currency); fails if a key appears twice."""
    keyed = {(r["merchant_id"], r["currency"]): r for r in rows}
    assert len(keyed) == len(rows), f"the view holds a key twice: {len(rows)} rows, {len(keyed)} keys"
    return keyed


def view_rows(warehouse) -> dict[tuple[str, str], dict]:
    """The balance view's rows by (merchant_id, currency); fails if a key appears twice."""
    return by_key(warehouse.rows(f"select * from {VIEW}"))


def in_lane(rows: dict[tuple[str, str], Any], lane: str) -> dict[tuple[str, str], Any]:
    """The entries (by (merchant_id, currency) key) of one lane: merchant ids starting with ``lane``
    (``tests/histories.py``); every entry for ``""``."""
    return {key: row for key, row in rows.items() if key[0].startswith(lane)}


def rejects_of(warehouse) -> dict[int, str]:
    """The rejects table as ``{ingest_seq: rejection_reason}``."""
    return {r["ingest_seq"]: r["rejection_reason"] for r in warehouse.rows("select * from payledger.payment_event_rejects")}


def rewritten(before: dict, after: dict) -> set[tuple[str, str]]:
    """Keys whose row differs between two ``view_rows`` readings (new keys included)."""
    return {key for key in after if before.get(key) != after[key]}


class History:
    """What the test landed, in the reference's terms (ingest order and observation order)."""

    def __init__(self) -> None:
        self.events: list[dict] = []
        self.segments: list[reference.SegmentVersion] = []
        self.policies: list[reference.PolicyVersion] = []
        self._observed = 0

    def land_events(self, warehouse, rows: list[dict]) -> None:
        warehouse.load("payment_events", rows)
        for row in rows:
            self.events.append({**row, "ingest_seq": len(self.events) + 1})

    def land_merchants(self, warehouse, rows: list[dict]) -> int:
        """Load a merchants file; every row is an observation (an unchanged one repeats the current
        version, which leaves the reference's answer as it was). Returns the rows the loader wrote."""
        written = warehouse.load("merchants", rows)
        self._observed += 1
        for r in rows:
            self.segments.append(reference.SegmentVersion(r["merchant_id"], r["segment"], r["segment_effective_from"], self._observed))
        return written

    def land_policies(self, warehouse, rows: list[dict]) -> int:
        """Load a reserve_policies file (see ``land_merchants``); returns the rows the loader wrote."""
        written = warehouse.load("reserve_policies", rows)
        self._observed += 1
        for r in rows:
            self.policies.append(reference.PolicyVersion(r["segment"], r["reserve_pct"], r["effective_from"], self._observed))
        return written

    def expected(self) -> dict[tuple[str, str], reference.Balance]:
        """The reference's balances for what was landed so far."""
        return reference.fold(self.events, self.segments, self.policies)[0]

    def assert_view_matches(self, warehouse) -> None:
        self.assert_matches(view_rows(warehouse), rejects_of(warehouse))

    def assert_matches(self, actual: dict[tuple[str, str], dict], rejects: dict[int, str], lane: str = "") -> None:
        """The view's rows (by key) and the rejects (``{ingest_seq: reason}``) equal the reference's;
        with ``lane``, only the keys whose merchant_id starts with it (one lane's: ``histories``)."""
        expected, expected_rejects = reference.fold(self.events, self.segments, self.policies)
        actual, expected = in_lane(actual, lane), in_lane(expected, lane)
        assert set(actual) == set(expected), f"keys differ: view {sorted(actual)} vs reference {sorted(expected)}"
        for key, want in expected.items():
            got = actual[key]
            assert (got["available_balance"], got["pending_balance"], got["reserve_hold"]) == (
                want.available,
                want.pending,
                want.reserve,
            ), f"{key}: view {got} vs reference {want}"
            assert got["source_watermark"] == want.source_watermark, key
            assert got["last_event_time"] == want.last_event_time.replace(tzinfo=None), key
        assert rejects == expected_rejects, f"rejects differ: view {sorted(rejects.items())} vs reference {sorted(expected_rejects.items())}"


SNAPSHOTS = ("payledger_snapshots.snp_payledger__reserve_policies", "payledger_snapshots.snp_payledger__merchants")


def assert_canonical_files_in_bucket_order(warehouse) -> None:
    """Each file of canonical events holds each row's reconciliation bucket (the key's hash) and
    its rows in bucket order: the write's own order, which a reconciliation slice's scan prunes by
    (rows in the order a scan reads them). At least one file holds two buckets or more."""
    stored = warehouse.rows(f"select input_file_name() as file, reconciliation_bucket as stored, pmod(xxhash64(merchant_id), 4096) as bucket from {CANONICAL}")
    assert stored and all(r["stored"] == r["bucket"] for r in stored), stored
    by_file: dict[str, list[int]] = {}
    for r in stored:
        by_file.setdefault(r["file"], []).append(r["stored"])
    assert any(len(set(buckets)) > 1 for buckets in by_file.values()), by_file
    assert all(buckets == sorted(buckets) for buckets in by_file.values()), by_file


def snapshot_history(warehouse) -> dict[tuple[str, str], dict]:
    """Every row of both snapshot tables, by (table, dbt_scd_id)."""
    history = {}
    for table in SNAPSHOTS:
        if warehouse.spark.catalog.tableExists(table):
            for row in warehouse.rows(f"select * from {table}"):
                history[(table, row["dbt_scd_id"])] = row
    return history


def assert_history_kept(before: dict, after: dict) -> None:
    """Snapshot history only grows: every earlier version is still there, unchanged, except that a
    current version (``dbt_valid_to`` null) may have been closed."""
    lost = sorted(set(before) - set(after))
    assert not lost, f"snapshot versions lost: {lost}"
    for key, old in before.items():
        new = after[key]
        if old["dbt_valid_to"] is None:
            new = {**new, "dbt_valid_to": None, "dbt_updated_at": old["dbt_updated_at"]}
        assert new == old, f"snapshot version {key} was rewritten: {old} -> {after[key]}"


class PendingLanding(Landing):
    """Writes landing files without loading them: ``take()`` returns ``kind=path`` specs for
    ``tests.crash_harness``, which loads them in its own process."""

    def __init__(self, files: Path) -> None:
        super().__init__(None, files, Path())
        self.pending: list[str] = []

    def load(self, kind: str, rows: list[dict]) -> int:
        self.pending.append(f"{kind}={self.write(kind, rows)}")
        return len(rows)

    def take(self) -> list[str]:
        taken, self.pending = self.pending, []
        return taken


def land_specs(spark, specs: list[str], warehouse: Path) -> None:
    """Load ``kind=path`` specs (``PendingLanding.take()``), in order, through the real loader."""
    for spec in specs:
        kind, path = spec.split("=", 1)
        load_file(spark, kind, Path(path), warehouse)


@dataclass(frozen=True)
class SavedWarehouse:
    """A built state that later tests start from instead of building it again
    (``restore_warehouse``). Delta: a copy of every project table's folder (``copies``: table ->
    (its folder, the copy)); Iceberg: every table's identity and current snapshot (``heads``: table
    -> (the table's UUID, the snapshot id)); the view's publication document as it was
    (``publication``, its text; None when nothing was published)."""

    copies: dict[str, tuple[Path, Path]]
    heads: dict[str, tuple[str, int]]
    publication: str | None = None

    @property
    def tables(self) -> set[str]:
        """The saved tables, as ``schema.name``."""
        return set(self.copies) | set(self.heads)


def save_warehouse(spark, folder: Path) -> SavedWarehouse:
    """The warehouse's tables as they are now (``SavedWarehouse``); Delta's copies go to ``folder``."""
    tables = project_tables(spark)
    published = publication_path(default_warehouse(), session_format(spark))
    publication = published.read_text() if published.exists() else None
    if session_format(spark) == DELTA:
        copies = {}
        for table in tables:
            location, copy = Path(format_named(DELTA).location(spark, table)), folder / table
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(location, copy)
            copies[table] = (location, copy)
        return SavedWarehouse(copies, {}, publication)
    heads = {}
    for table in tables:
        loaded = IcebergFormat.table(spark, table)
        heads[table] = (loaded.uuid().toString(), loaded.currentSnapshot().snapshotId())
    return SavedWarehouse({}, heads, publication)


def _table_files(table_folder: Path) -> set[tuple[str, int, int]]:
    """Every file of a Delta table's folder (its log, data and deletion vector files): (path in the
    folder, bytes, modification time in ns). Equal for a table and its copy until a commit, a
    checkpoint, a vacuum, a file changed by hand or a new table at that path: copies keep each
    file's modification time (``shutil.copy2``)."""
    return {(str(f.relative_to(table_folder)), (st := f.stat()).st_size, st.st_mtime_ns) for f in table_folder.rglob("*") if f.is_file()}


def restore_warehouse(spark, saved: SavedWarehouse) -> bool:
    """Bring the warehouse back to ``saved``: tables created since are dropped, every saved table
    holds its saved state again. Returns False and changes nothing when the saved state is gone (a
    saved table was dropped since, for example by another test's empty warehouse; on Iceberg also a
    table created anew); the caller then builds it again.

    Delta: each table whose folder changed since (``_table_files``) has its folder (its log, data
    and deletion vector files) replaced by the saved copy and Delta's cached state of it dropped, so
    the next read lists its log again; an unchanged table keeps its cached state (dropping them all
    made the first read of every table replay its log: the Delta invalidation module took 412 s
    against 384-397 s, one process). A ``RESTORE`` per table did the same as a commit, at about the
    cost of a build of the tests' tiny histories (42-64 s per invalidation test for its 15 tables,
    measured in a 2-worker run).
    Iceberg: every table whose current snapshot differs gets its saved snapshot back, through the
    table API (``ManageSnapshots.setCurrentSnapshot``, what the ``set_current_snapshot`` procedure
    runs: a metadata commit; history is kept and later commits append to it), with no Spark job:
    about 1-2.5 s. Through Spark SQL (each table's ``snapshots`` table, then the procedure) it took
    7-10 s.
    """
    tables = set(project_tables(spark))
    if not saved.tables <= tables:
        return False
    delta = session_format(spark) == DELTA
    loaded = {} if delta else {table: IcebergFormat.table(spark, table) for table in saved.heads}
    copies_intact = all((location / "_delta_log").is_dir() for location, _ in saved.copies.values())
    heads_intact = all(
        loaded[table].uuid().toString() == uuid and loaded[table].snapshot(snapshot_id) is not None for table, (uuid, snapshot_id) in saved.heads.items()
    )
    if not (copies_intact and heads_intact):
        return False
    stale = []  # Delta: the folders whose cached table state no longer holds
    for table in tables - saved.tables:
        if delta:
            stale.append(format_named(DELTA).location(spark, table))
        spark.sql(f"drop table if exists {table} purge")
    for location, copy in saved.copies.values():
        if _table_files(location) != _table_files(copy):
            shutil.rmtree(location)
            shutil.copytree(copy, location)
            stale.append(location)
    for table, (_, snapshot_id) in saved.heads.items():
        current = loaded[table].currentSnapshot()
        if current is None or current.snapshotId() != snapshot_id:
            loaded[table].manageSnapshots().setCurrentSnapshot(snapshot_id).commit()
    delta_log = spark._jvm.org.apache.spark.sql.delta.DeltaLog
    for location in stale:
        delta_log.invalidateCache(spark._jsparkSession, spark._jvm.org.apache.hadoop.fs.Path(str(location)))
    spark.catalog.clearCache()
    published = publication_path(default_warehouse(), session_format(spark))
    if saved.publication is None:
        published.unlink(missing_ok=True)
    else:
        published.parent.mkdir(parents=True, exist_ok=True)
        published.write_text(saved.publication)
    return True


class BuiltState:
    """A warehouse state that several tests start from: built once per worker (and module or
    session: its fixture's scope) by ``build(landing)`` (on an empty warehouse, or on ``parent``'s
    state restored), saved, and restored before each test (``restored()``); built anew only when
    the saved state is gone (another module's test emptied the warehouse since). ``result`` is what
    the latest ``build`` returned."""

    def __init__(self, spark, folder: Path, build: Callable[[Landing], Any], parent: BuiltState | None = None) -> None:
        self.spark = spark
        self.folder = folder
        self.landing = Landing(spark, folder / "files", Path(os.environ["PAYLEDGER_WAREHOUSE"]))
        self._build = build
        self._parent = parent
        self._saved: SavedWarehouse | None = None
        self.result: Any = None

    def restored(self) -> Landing:
        """The landing helper of a warehouse holding the built state."""
        if self._saved is None or not restore_warehouse(self.spark, self._saved):
            if self._parent is None:
                drop_project_schemas(self.spark)
            else:
                self._parent.restored()
            self.result = self._build(self.landing)
            self._saved = save_warehouse(self.spark, self.folder / "saved")
        return self.landing


#: The xdist group of the tests that start from ``build_balance_view_base``'s state (the
#: ``balance_view_base`` fixture): one worker per format runs them, so that it is built once.
BALANCE_VIEW_BASE = pytest.mark.xdist_group("balance_view_base")


def build_balance_view_base(dbt: DbtProject, warehouse: Landing) -> None:
    """The state several balance-view tests and the docs site start from: m1 (retail 10%)
    released 100.00 in March, m2 (travel 5%) captured 7.00; x0 (travel) captured 1.00 USD and
    10.00 EUR, x1-x11 (no segment) 1.00 USD each, so that each data file of the view holds several
    rows and a merchant has a second currency (tests change m1 and m2 alone); built
    (``scenario_build``)."""
    warehouse.load("merchants", [merchant("m1", "retail", "2026-01-01"), merchant("m2", "travel", "2026-01-01"), merchant("x0", "travel", "2026-01-01")])
    warehouse.load("reserve_policies", [policy("retail", "0.1000", "2026-01-01"), policy("travel", "0.0500", "2026-01-01")])
    others = [event(f"o{i}", f"x{i}", "capture_settled", "1.00", "2026-03-01 09:00:00") for i in range(12)]
    warehouse.load(
        "payment_events",
        [
            event("e1", "m1", "funds_released", "100.00", "2026-03-01 10:00:00"),
            event("c2", "m2", "capture_settled", "7.00", "2026-03-01 10:00:00"),
            event("o12", "x0", "capture_settled", "10.00", "2026-03-01 12:00:00", currency="EUR"),
            *others,
        ],
    )
    dbt.scenario_build()


def code_generation(spark) -> tuple[str, ...]:
    """The session's code generation settings in effect (Spark's default where unset), in
    ``SPARK_CODE_GENERATION``'s order."""
    return tuple(spark.conf.get(name) for name in SPARK_CODE_GENERATION)


def recorded_statements(monkeypatch) -> list[tuple[str, tuple[str, ...]]]:
    """From now on, every statement run on a Spark session, with the code generation settings it
    ran with: ``[(sql, settings)]``, filled as statements run."""
    from pyspark.sql import SparkSession

    statements: list[tuple[str, tuple[str, ...]]] = []
    sql = SparkSession.sql

    def recording(self, *args, **kwargs):
        statements.append((args[0], code_generation(self)))
        return sql(self, *args, **kwargs)

    monkeypatch.setattr(SparkSession, "sql", recording)
    return statements
