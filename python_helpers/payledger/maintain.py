"""``payledger maintain``: table maintenance, so that reads do not slow down as commits pile up.

Every build appends small files and, on merge-on-read tables, row deletes kept beside the data
(Delta deletion vectors, Iceberg position deletes); a view built every 15 minutes makes 35,000
commits a year. Per project table (every table of the ``payledger*`` schemas, landing tables and
snapshots included), maintenance
- compacts small files and rewrites the files that carry deletes: Delta ``OPTIMIZE`` and
  ``REORG TABLE ... APPLY (PURGE)``; Iceberg ``rewrite_data_files`` (with deletes),
  ``rewrite_position_delete_files`` and ``rewrite_manifests``;
- sorts again, in the tables written in a sort order (``SORTED_TABLES``: canonical events, by
  reconciliation bucket within each day), every partition whose files' ranges of the sort column
  overlap (a later build's append, a late event): one file per partition in that order again (on
  Iceberg, one per target file size), so that a reconciliation slice's scan skips the other
  slices' row groups (Delta's rearranging write with ``dataChange`` false, Iceberg
  ``rewrite_data_files`` with the ``sort`` strategy);
- applies history retention: Delta ``VACUUM`` (files no version younger than the retention period
  needs), Iceberg ``expire_snapshots`` (snapshots older than the retention period; the current one
  is always kept).
Each of these is one commit of its table: rows are only rewritten, never changed or dropped, and a
reader sees the table before or after it. Time travel (``VERSION AS OF`` / ``TIMESTAMP AS OF``)
reaches back at least ``retention_hours`` (Iceberg keeps the snapshot that was current at the
cutoff). Maintenance holds the warehouse's build lock and its load lock (waiting for a running
load), so it never runs during a build the lock guards (``payledger build``) or a load. A plain
``dbt build`` does not take the lock: keep a retention of hours, which is what protects files a
writer has not committed yet from VACUUM. After the view's maintenance the current publication
reads the maintenance commit (the same rows, in files retention keeps; ``publish.follow_maintenance``).
"""

from __future__ import annotations

import itertools
import json
import os
import re
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from payledger.files import write_atomically
from payledger.formats import FileRange, session_format, session_table_format
from payledger.locks import build_lock, load_lock
from payledger.publish import follow_maintenance
from payledger.warehouse import CANONICAL, DEDUP_DIRECTORY, DEDUP_INDEX, VIEW, project_relations

#: Default history retention: 7 days, Delta's own default (``delta.deletedFileRetentionDuration``).
DEFAULT_RETENTION_HOURS = 168.0
#: Default schedule: a table is due for maintenance after this many commits since its last one
#: (24 builds: every 6 hours at a 15-minute cadence).
DEFAULT_EVERY_COMMITS = 24
#: The dedup index is sorted again (``sort_dedup_index``) once the ids appended since its last
#: sort, which every lookup reads whole, outnumber this many of its units.
SORT_DEDUP_INDEX_AFTER_UNITS = 20
#: The tables each build writes in a sort order within each partition: (the partition column, a
#: date; the sort column). The classification's own
#: ``distribute by event_date sort by event_date, reconciliation_bucket``
#: (``models/intermediate/ledger/int_payment_events_classified.sql``).
SORTED_TABLES = {CANONICAL: ("event_date", "reconciliation_bucket")}
#: Per format and table, the version (Delta) or snapshot id (Iceberg) its last maintenance left.
STATE_FILE = ".payledger-maintenance.json"


def retention_hours_setting() -> float:
    """``$PAYLEDGER_RETENTION_HOURS`` (hours of history kept for time travel), default 168."""
    return float(os.environ.get("PAYLEDGER_RETENTION_HOURS", DEFAULT_RETENTION_HOURS))


def every_commits_setting() -> int:
    """``$PAYLEDGER_MAINTAIN_EVERY`` (commits since a table's last maintenance; 0: never), default 24."""
    return int(os.environ.get("PAYLEDGER_MAINTAIN_EVERY", DEFAULT_EVERY_COMMITS))


@dataclass(frozen=True)
class FileCounts:
    """A table's current version in files: ``data_files``, and ``delete_files``: Delta deletion
    vectors or Iceberg delete files (both are row deletes a reader applies to the data files)."""

    data_files: int
    delete_files: int


@dataclass
class TableMaintenance:
    """What maintenance did to one table (``schema.name``): the commits it found since the last
    maintenance, file counts before and after, the seconds it took and the partitions it sorted
    again (``SORTED_TABLES``)."""

    table: str
    commits_since_maintenance: int
    before: FileCounts
    after: FileCounts
    seconds: float
    partitions_sorted: int = 0

    def as_dict(self) -> dict:
        return asdict(self)


def file_counts(spark, table: str) -> FileCounts:
    """The data files and delete files of ``table``'s current version (``TableFormat.file_counts``).

    Delta: the file and deletion-vector counts of the table's latest snapshot, as Delta's own log
    replay computes them (through the JVM: neither delta-spark's Python API nor ``DESCRIBE
    DETAIL`` counts deletion vectors in Delta 3.3; 0 on a table without deletion vectors);
    Iceberg: the ``data_files`` and ``delete_files`` metadata tables. Raises ``RuntimeError`` when
    Delta has no deletion-vector count for a table that has them enabled.
    """
    return FileCounts(*session_table_format(spark).file_counts(spark, table))


def project_tables(spark) -> list[str]:
    """Every table (not view) of the project's schemas, as ``schema.name``, sorted."""
    return sorted(f"{schema}.{name}" for schema, objects in project_relations(spark).items() for name in objects["tables"])


def _state_key(spark, table: str) -> str:
    return f"{session_format(spark)}:{table}"


def _read_state(warehouse: Path) -> dict[str, int]:
    """The state file's content; empty when there is none or it cannot be read (every table is then
    due once, which is safe)."""
    try:
        return dict(json.loads((warehouse / STATE_FILE).read_text()))
    except (OSError, ValueError, TypeError):
        return {}


def _write_state(warehouse: Path, state: dict[str, int]) -> None:
    """Replace the state file atomically (a killed write leaves the previous one)."""
    write_atomically(warehouse / STATE_FILE, json.dumps(state, indent=1, sort_keys=True) + "\n", mode=0o600)


def current_version(spark, table: str) -> int:
    """The table's current version: Delta's version number (it keeps counting across a create or
    replace) or Iceberg's current snapshot id (-1 for a table without one)."""
    return session_table_format(spark).current_version(spark, table)


def commits_since_maintenance(spark, table: str, warehouse: Path) -> int:
    """Commits of ``table`` after the version its last maintenance left; all of its commits when it
    was never maintained, or when that version is gone (the table was dropped and created again).

    Reads only the latest Delta snapshot or Iceberg's snapshot list, not the table's whole history.
    """
    return session_table_format(spark).commits_since(spark, table, _read_state(warehouse).get(_state_key(spark, table)))


def dedup_index_appended(spark) -> tuple[int, float]:
    """The dedup index's ids appended since its last sort (``id_unit`` -1, which every lookup reads
    whole) and the mean ids per unit of that sort, from its directory (0.0 when it lists none or
    does not exist yet: a build stopped between the index's first write and the directory's)."""
    appended = int(spark.sql(f"select count(*) from {DEDUP_INDEX} where id_unit = -1").first()[0])
    if not spark.catalog.tableExists(DEDUP_DIRECTORY):
        return appended, 0.0
    per_unit = spark.sql(f"select sum(event_ids) / count(*) from {DEDUP_DIRECTORY} where unit_base = (select max(unit_base) from {DEDUP_DIRECTORY})").first()[0]
    return appended, float(per_unit or 0.0)


def partitions_out_of_order(files: Iterable[FileRange]) -> list[str | None]:
    """The partitions whose files' sort-column ranges overlap: two files or more with a range,
    and one's lowest value at or below the highest of the file before it in range order (a later
    append beside a sorted file, two appends). A partition sorted into several files (Iceberg,
    a day past the target file size) has consecutive ranges and is not listed; files with no
    range (rows from before the sort column, or no statistics) are left out of the comparison.
    Returns partition values as ``FileRange.partition`` gives them, in their sorted order (the
    null partition first)."""
    ranges: dict[str | None, list[tuple[int, int]]] = {}
    for file in files:
        if file.low is not None and file.high is not None:
            ranges.setdefault(file.partition, []).append((file.low, file.high))
    out_of_order = [
        partition for partition, spans in ranges.items() if any(low <= previous_high for (_, previous_high), (low, _) in itertools.pairwise(sorted(spans)))
    ]
    return sorted(out_of_order, key=lambda value: (value is not None, value or ""))


#: A date as Spark renders it (``cast(date as string)``, Delta's partition values): a year of four
#: digits or more, signed past 9999 and before year 1.
_SPARK_DATE = re.compile(r"[+-]?[0-9]{4,}-[0-9]{2}-[0-9]{2}")


def partition_predicate(column: str, values: list[str | None]) -> str:
    """A SQL predicate that selects the partitions of the date column ``column`` with ``values``
    (Spark's rendering of each date; None for the null partition): ``column in (date '...')``,
    ``or column is null``; a predicate both formats push down as a partition filter. Raises
    ValueError for an empty list or a value that is not a rendered date."""
    if not values:
        raise ValueError("no partition to select")
    for value in values:
        if value is not None and not _SPARK_DATE.fullmatch(value):
            raise ValueError(f"{column} partition value {value!r} is not a date as Spark renders it")
    days = ", ".join(f"date '{value}'" for value in values if value is not None)
    return " or ".join(([f"{column} in ({days})"] if days else []) + ([f"{column} is null"] if None in values else []))


def sort_partitions_again(spark, table: str) -> int:
    """Sort again each partition of ``table`` (one of ``SORTED_TABLES``) whose files' ranges of
    the sort column overlap (``partitions_out_of_order``): rewritten in the table's sort order,
    one commit that changes no row (``TableFormat.sort_partitions``). Returns how many partitions;
    0 when none, or when the table lacks the sort column (written before it: its next build
    appends it)."""
    column, sort_by = SORTED_TABLES[table]
    if sort_by not in spark.table(table).columns:
        return 0
    table_format = session_table_format(spark)
    values = partitions_out_of_order(table_format.file_ranges(spark, table, column, sort_by))
    if values:
        table_format.sort_partitions(spark, table, column, partition_predicate(column, values), sort_by)
    return len(values)


def sort_dedup_index() -> None:
    """Sort the dedup index again: a full build of ``int_payment_event_ids`` (every accepted id in
    sorted units of a new base, one commit), then its directory's rows for that base. A lookup that
    runs between the two reads the new base whole (correct, slower). Raises ``RuntimeError`` when
    dbt fails."""
    from payledger.dbt import run_dbt

    for args in (("--select", "int_payment_event_ids", "--full-refresh"), ("--select", "int_payment_event_id_units")):
        done = run_dbt("run", *args)
        if not done.success:
            raise RuntimeError(f"sorting the dedup index failed: {done.failures() or done.exception}")


def maintain_tables(
    spark, warehouse: Path, *, every_commits: int = 1, retention_hours: float = DEFAULT_RETENTION_HOURS, tables: list[str] | None = None
) -> list[TableMaintenance]:
    """Maintain each project table (or each of ``tables``) with at least ``every_commits`` commits
    since its last maintenance (``every_commits`` 0: every table, due or not); returns one
    ``TableMaintenance`` per table maintained.

    The caller holds the build and load locks of ``warehouse`` (``maintain`` takes them), where the
    version each maintenance leaves is recorded (``STATE_FILE``). ``retention_hours``: how much
    history (versions, snapshots) stays readable; raises ``ValueError`` below 0.
    """
    if retention_hours < 0:
        raise ValueError(f"retention_hours must be >= 0, not {retention_hours}")
    done = []
    for table in tables if tables is not None else project_tables(spark):
        since = commits_since_maintenance(spark, table, warehouse)
        if every_commits > 0 and since < every_commits:
            continue
        started = time.monotonic()
        before = file_counts(spark, table)
        if table == DEDUP_INDEX:
            appended, per_unit = dedup_index_appended(spark)
            if appended > SORT_DEDUP_INDEX_AFTER_UNITS * per_unit:
                sort_dedup_index()
        # Before compaction, which would concatenate overlapping files into row groups that span
        # many buckets; a sorted partition is one file (Delta) or files of consecutive ranges.
        partitions_sorted = sort_partitions_again(spark, table) if table in SORTED_TABLES else 0
        session_table_format(spark).maintain(spark, table, retention_hours)
        done.append(TableMaintenance(table, since, before, file_counts(spark, table), round(time.monotonic() - started, 2), partitions_sorted))
        _write_state(warehouse, _read_state(warehouse) | {_state_key(spark, table): current_version(spark, table)})
        if table == VIEW:
            follow_maintenance(spark, warehouse)  # readers keep reading the published rows after VACUUM
    return done


def maintain(warehouse: Path, *, every_commits: int = 1, retention_hours: float = DEFAULT_RETENTION_HOURS, wait_s: float = 0.0) -> list[TableMaintenance]:
    """``maintain_tables`` on the project's Spark session, under the warehouse's build lock (waiting
    up to ``wait_s`` seconds; ``locks.BuildLocked`` when a build holds it) and its load lock."""
    from payledger.spark import get_spark

    with build_lock(warehouse, wait_s), load_lock(warehouse):
        return maintain_tables(get_spark(), warehouse, every_commits=every_commits, retention_hours=retention_hours)
