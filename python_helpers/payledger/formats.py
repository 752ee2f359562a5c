"""What differs between the table formats (Delta Lake, Apache Iceberg), for the Python side.

Each difference is one method of ``TableFormat``, with one subclass per format (``DeltaFormat``,
``IcebergFormat``); the rest of the package asks ``format_named(name)`` or
``session_table_format(spark)`` for the format and calls the method, without branching on its name.
The SQL side has its twin in ``macros/formats/`` (a ``<format>__<name>`` macro per difference,
chosen by ``format_variant``). The list of formats and the catalog class of each is
``dbt_project.yml``'s var ``table_format_catalogs``, read by both sides (``catalog_classes``). The
format of a Spark session is read from the session itself (the class that owns ``spark_catalog``),
so nothing here repeats the rule that picks a target's format (``dbt_project.yml``, var
``table_format``). A third format is a third subclass, its entry in ``table_format_catalogs``, its
macros, and its embedded target in ``profiles/profiles.yml``, named after it.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

DELTA = "delta"
ICEBERG = "iceberg"


class FormatError(RuntimeError):
    """The session's ``spark_catalog`` is not the catalog of a format the project writes."""


@functools.cache
def catalog_classes() -> dict[str, str]:
    """Each format the project writes -> the class of Spark's ``spark_catalog`` that holds its
    tables, from ``dbt_project.yml``'s var ``table_format_catalogs`` (the one list; the macros
    ``table_formats`` and ``validate_table_format`` read it too)."""
    from payledger.spark import project_vars

    return dict(project_vars()["table_format_catalogs"])


def _format_of_catalog(catalog: str) -> str | None:
    return next((name for name, class_name in catalog_classes().items() if class_name == catalog), None)


def session_format(spark) -> str:
    """The name (``"delta"``, ``"iceberg"``) of the format of the tables this session's
    ``spark_catalog`` holds.

    Raises ``FormatError`` for any other catalog (the project's profiles configure one of them).
    """
    catalog = spark.conf.get("spark.sql.catalog.spark_catalog", "")
    found = _format_of_catalog(catalog)
    if found is None:
        raise FormatError(f"spark_catalog is {catalog or 'unset'!r}; expected one of {', '.join(catalog_classes().values())}")
    return found


def target_format(target: str | None = None) -> str:
    """The name of the format of an embedded dbt target's tables (default: the profile's default
    target), read from the ``spark_catalog`` its profile configures, without starting Spark.
    Raises ``FormatError`` for a target without one of the formats' catalogs (``thrift``)."""
    from payledger.spark import default_target, spark_setting

    target = target or default_target()
    found = _format_of_catalog(spark_setting("spark.sql.catalog.spark_catalog", target) or "")
    if found is None:
        raise FormatError(f"target {target} configures no {' or '.join(name.capitalize() for name in catalog_classes())} spark_catalog")
    return found


@dataclass(frozen=True)
class Commit:
    """One commit of a table, in terms both formats share.

    ``version``: Delta's table version or Iceberg's snapshot id; ``parent``: the version it was made
    on (Delta ``readVersion``, Iceberg ``parent_id``; None for the first); ``operation``: the
    format's own name (``MERGE``, ``WRITE``, ``overwrite``, ``append``, ...); ``kind``: ``create``
    (the table's first commit), ``replace`` (a later create-or-replace: the table's content was
    replaced, not changed), ``merge``, ``append``, ``maintenance`` (rows rewritten or files
    removed, content unchanged: Delta ``OPTIMIZE``, ``REORG``, ``VACUUM START``/``END``, the
    ``WRITE`` of ``sort_partitions``, Iceberg ``replace``), ``properties`` (table properties set,
    rows unchanged: Delta ``SET TBLPROPERTIES``, as a snapshot records its inputs) or ``other``;
    ``rows_written``:
    rows physically written (Delta ``numTargetRowsInserted + numTargetRowsUpdated`` for a MERGE,
    ``numOutputRows`` otherwise; Iceberg ``added-records``); ``deletes_in_place``: row deletes
    recorded without rewriting data files (Delta deletion vectors added, Iceberg position deletes
    added): a merge-on-read commit has some; ``metrics``: the raw metrics map; ``committed_at``:
    when it was committed (UTC, timezone-aware; Delta's commit timestamp, Iceberg's
    ``committed_at``); ``parameters``: Delta's ``operationParameters`` (empty on Iceberg).
    """

    version: int
    parent: int | None
    operation: str
    kind: str
    rows_written: int
    deletes_in_place: int
    metrics: dict[str, str]
    committed_at: dt.datetime
    parameters: dict[str, str]


def table_commits(spark, table: str) -> list[Commit]:
    """The commits of ``table`` (``schema.name``), oldest first; empty when it does not exist
    (``TableFormat.commits``: Delta ``DeltaTable.history()``, Iceberg the ``snapshots`` table)."""
    if not spark.catalog.tableExists(table):
        return []
    return session_table_format(spark).commits(spark, table)


#: The ``userMetadata`` of Delta's rearranging write (``DeltaFormat.sort_partitions``): its history
#: entry is a ``WRITE`` like an append's, and this marks it as maintenance.
SORT_COMMIT_METADATA = "payledger maintenance: partitions sorted again, rows unchanged"


@dataclass(frozen=True)
class FileRange:
    """One data file of a partitioned table: its partition value as a string (Spark's rendering;
    None for the null partition) and the lowest and highest value of a sort column its statistics
    record (None when it records none: no non-null value, or no statistics)."""

    partition: str | None
    low: int | None
    high: int | None


_DELTA_KINDS = {
    "MERGE": "merge",
    "WRITE": "append",
    "CREATE TABLE AS SELECT": "create",
    "CREATE TABLE": "create",
    "OPTIMIZE": "maintenance",
    "REORG": "maintenance",
    "VACUUM START": "maintenance",
    "VACUUM END": "maintenance",
    "SET TBLPROPERTIES": "properties",
}


def _delta_commit(row: dict[str, Any]) -> Commit:
    metrics = dict(row["operationMetrics"] or {})

    def metric(name: str) -> int:
        return int(metrics.get(name, "0"))

    operation = row["operation"]
    kind = _DELTA_KINDS.get(operation, "other")
    if operation == "WRITE" and row.get("userMetadata") == SORT_COMMIT_METADATA:
        kind = "maintenance"  # sort_partitions' rearranging write: the same rows, sorted
    if "REPLACE" in operation:
        kind = "create" if row["version"] == 0 else "replace"
    written = metric("numTargetRowsInserted") + metric("numTargetRowsUpdated") if operation == "MERGE" else metric("numOutputRows")
    return Commit(
        row["version"],
        row["readVersion"],
        operation,
        kind,
        written,
        metric("numTargetDeletionVectorsAdded"),
        metrics,
        utc_from_micros(row["committed_us"]),
        dict(row["operationParameters"] or {}),
    )


def utc_from_micros(micros: int) -> dt.datetime:
    """A timezone-aware UTC datetime from microseconds since the epoch (Spark's ``unix_micros``)."""
    return dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=micros)


def _iceberg_commit(row: dict[str, Any], first: bool) -> Commit:
    summary = dict(row["summary"] or {})
    if first:
        kind = "create"
    elif row["parent_id"] is None:
        kind = "replace"  # a create-or-replace starts a new line of snapshots
    else:
        kind = {"append": "append", "overwrite": "merge", "replace": "maintenance"}.get(row["operation"], "other")
    return Commit(
        row["snapshot_id"],
        row["parent_id"],
        row["operation"],
        kind,
        int(summary.get("added-records", "0")),
        int(summary.get("added-position-deletes", "0")),
        summary,
        utc_from_micros(row["committed_us"]),
        {},
    )


def rows_written(commits: list[Commit]) -> int:
    """Rows physically written by these commits (sum of ``rows_written``)."""
    return sum(commit.rows_written for commit in commits)


def table_bytes(spark, table: str) -> int:
    """Bytes of the data files of ``table``'s current version (``TableFormat.data_bytes``)."""
    return session_table_format(spark).data_bytes(spark, table)


def readable_commits(spark, table: str) -> list[Commit]:
    """The commits of ``table`` that time travel (``VERSION AS OF``) can still read, oldest first
    (``TableFormat.readable``)."""
    return session_table_format(spark).readable(table_commits(spark, table))


@dataclass(frozen=True)
class TableVersion:
    """A table's current version as its files hold it: the table ``location`` (a folder), the
    ``version`` (Delta table version, Iceberg snapshot id), ``metadata_file`` (Iceberg's current
    metadata file; None on Delta) and ``committed_at`` (UTC, ISO 8601)."""

    location: str
    version: int
    metadata_file: str | None
    committed_at: str


def iso_from_ms(millis: int) -> str:
    """Milliseconds since the epoch as UTC ISO 8601 with milliseconds (``...T10:00:00.000+00:00``)."""
    return dt.datetime.fromtimestamp(millis / 1000, dt.UTC).isoformat(timespec="milliseconds")


class TableFormat:
    """One table format's side of each difference the Python code has. ``name`` is the format's
    name in ``dbt_project.yml`` (var ``table_format_catalogs``) and in the publication document;
    ``target`` the embedded dbt target (``profiles/profiles.yml``) that writes it. ``spark`` is a
    session whose ``spark_catalog`` is this format's; ``table`` is ``schema.name``; ``location`` a
    table's folder. Readers without Spark (``source_position``, ``read_version``) open a table's
    files directly (``deltalake``; DuckDB and ``pyiceberg``) and raise those libraries' errors."""

    name: str
    #: Whether builds through ``run_dbt`` fold the checkpoint's change data feed into the view after
    #: a replay (``macros/formats/change_feed.sql``) instead of re-summing the replayed merchants.
    folds_change_feed: bool = False

    @property
    def target(self) -> str:
        """The first embedded target of the profile whose ``spark_catalog`` is this format's
        (``target_format``); ``FormatError`` when there is none."""
        from payledger.spark import profile_targets

        for target in profile_targets():
            try:
                if target_format(target) == self.name:
                    return target
            except FormatError:
                continue
        raise FormatError(f"no target of profiles/profiles.yml configures the spark_catalog of {self.name}")

    def commits(self, spark, table: str) -> list[Commit]:
        """Every commit of an existing table, oldest first."""
        raise NotImplementedError

    def readable(self, commits: list[Commit]) -> list[Commit]:
        """Those of ``commits`` (a table's, oldest first) that time travel can still read."""
        raise NotImplementedError

    def data_bytes(self, spark, table: str) -> int:
        """Bytes of the data files of the current version."""
        raise NotImplementedError

    def location(self, spark, table: str) -> str:
        """The table's folder as its catalog records it (no Spark job)."""
        raise NotImplementedError

    def current_version(self, spark, table: str) -> int:
        """The current version (Delta version, Iceberg snapshot id; -1 for a table without one)."""
        raise NotImplementedError

    def commits_since(self, spark, table: str, version: int | None) -> int:
        """Commits after ``version``; every commit when it is None or no longer in the table."""
        raise NotImplementedError

    def file_counts(self, spark, table: str) -> tuple[int, int]:
        """(data files, delete files) of the current version."""
        raise NotImplementedError

    def maintain(self, spark, table: str, retention_hours: float) -> None:
        """Compact files, rewrite the files that carry deletes and apply ``retention_hours`` of
        history retention."""
        raise NotImplementedError

    def file_ranges(self, spark, table: str, column: str, sort_by: str) -> list[FileRange]:
        """One FileRange per data file of the current version: its value of partition ``column``
        and the min and max of ``sort_by`` its statistics record, from the table's metadata (no
        data file read). Raises ValueError (Delta) or AnalysisException (Iceberg) when ``column`` is
        not a partition column."""
        raise NotImplementedError

    def sort_partitions(self, spark, table: str, column: str, where: str, sort_by: str) -> None:
        """Rewrite the partitions of ``column`` that ``where`` (a SQL predicate on ``column`` only,
        ``maintain.partition_predicate``) selects, sorted by ``sort_by`` (nulls first), in one
        commit that changes no row (a maintenance commit); the table's own writer properties (row
        group size) apply. Raises the format's commit conflict error when a concurrent write
        removed or rewrote those partitions' files (maintenance runs under the build lock)."""
        raise NotImplementedError

    def source_position(self, location: str) -> int | None:
        """Max ``ingest_seq`` of the current version, from file statistics (None: empty or none)."""
        raise NotImplementedError

    def committed_version(self, spark, table: str) -> TableVersion:
        """The current version, with its location, metadata file and commit time (no Spark job)."""
        raise NotImplementedError

    def read_version(self, location: str, version: int, metadata_file: str | None, columns: tuple[str, ...], where: tuple[str, str] | None):
        """(pyarrow schema, iterator of record batches) of ``columns`` of one committed version;
        ``where``: (column, already checked string value), an equality filter."""
        raise NotImplementedError

    def read_current(self, location: str, columns: tuple[str, ...], where: tuple[str, str] | None = None):
        """``read_version`` of the table's latest committed version, found from its folder alone
        (no catalog): what a reader beside a build sees."""
        raise NotImplementedError

    def time_travels_to(self, location: str, version: int) -> bool:
        """Whether Spark's ``VERSION AS OF version`` can still name ``version`` in the table at
        ``location`` as it is now, from its folder alone (no Spark)."""
        raise NotImplementedError

    def stored_maxima(self, tables_root: Path) -> dict[str, int | None]:
        """The whole-number columns' maxima that this format's tables in the warehouse folder
        ``tables_root`` state in their own metadata, read without Spark, for ``run_watermarks``:
        ``{"<schema>.<table>.<column>": value or None}`` (``payledger.stored_maxima``); ``{}`` when
        Spark should read them all."""
        raise NotImplementedError

    def table_states(self, tables_root: Path) -> dict[str, dict]:
        """Each table's data version and the snapshot inputs recorded on it, read without Spark
        from the warehouse folder ``tables_root``: ``{"<schema>.<table>": {"data_version": int,
        "data_committed_ms": int or None, "recorded_inputs": str or None}}``
        (``payledger.stored_maxima.delta_table_states``); ``{}`` when this format's snapshots are
        always probed."""
        raise NotImplementedError


class DeltaFormat(TableFormat):
    """Delta Lake 3.3: ``delta-spark``'s Python API and Delta's JVM classes in a session, ``deltalake``
    (delta-rs) without one."""

    name = DELTA
    folds_change_feed = True

    def commits(self, spark, table: str) -> list[Commit]:
        from delta.tables import DeltaTable

        history = DeltaTable.forName(spark, table).history().selectExpr("*", "unix_micros(timestamp) as committed_us")
        return [_delta_commit(row.asDict()) for row in history.orderBy("version").collect()]

    def readable(self, commits: list[Commit]) -> list[Commit]:
        """The history minus the versions whose data files a ``VACUUM`` may have deleted. A VACUUM
        at time T with retention R (``VACUUM START``'s ``specifiedRetentionMillis``, else
        ``defaultRetentionMillis``) deletes only files removed before T - R, so the version current
        at T - R and every later one are whole. Delta records VACUUM in the history on local, HDFS
        and cloud file systems (``spark.databricks.delta.vacuum.logging.enabled``); the latest
        cutoff of all of them counts."""
        cutoff = None
        for commit in commits:
            if commit.operation == "VACUUM START":
                retention_ms = commit.parameters.get("specifiedRetentionMillis") or commit.parameters.get("defaultRetentionMillis") or "0"
                vacuumed_before = commit.committed_at - dt.timedelta(milliseconds=int(retention_ms))
                cutoff = vacuumed_before if cutoff is None else max(cutoff, vacuumed_before)
        if cutoff is None:
            return commits
        older = [index for index, commit in enumerate(commits) if commit.committed_at <= cutoff]
        return commits[older[-1] :] if older else commits

    def data_bytes(self, spark, table: str) -> int:
        return int(spark.sql(f"describe detail {table}").first()["sizeInBytes"])

    def location(self, spark, table: str) -> str:
        return urlparse(spark.sql(f"describe formatted {table}").where("col_name = 'Location'").first()["data_type"]).path

    @staticmethod
    def _snapshot(spark, table: str):
        """The latest snapshot (a JVM ``org.apache.spark.sql.delta.Snapshot``), from the log's
        checkpoint and the commits after it (``DeltaLog.update``; Delta 3.3's signature)."""
        jvm = spark._jvm
        schema, name = table.split(".")
        identifier = jvm.org.apache.spark.sql.catalyst.TableIdentifier(name, jvm.scala.Option.apply(schema))
        delta_log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, identifier)
        return delta_log.update(False, jvm.scala.Option.empty(), jvm.scala.Option.empty())

    def current_version(self, spark, table: str) -> int:
        return int(self._snapshot(spark, table).version())

    def commits_since(self, spark, table: str, version: int | None) -> int:
        current = self.current_version(spark, table)
        return current - version if version is not None and version <= current else current + 1

    def file_counts(self, spark, table: str) -> tuple[int, int]:
        """From Delta's own log replay (``numOfFiles``, ``numDeletionVectorsOpt``, through the JVM:
        neither delta-spark's Python API nor ``DESCRIBE DETAIL`` counts deletion vectors in Delta
        3.3; 0 on a table without deletion vectors). Raises ``RuntimeError`` when Delta has no
        deletion-vector count for a table that has them enabled."""
        snapshot = self._snapshot(spark, table)
        vectors = snapshot.numDeletionVectorsOpt()
        if vectors.isDefined():
            return int(snapshot.numOfFiles()), int(vectors.get())
        if spark.sql(f"describe detail {table}").first()["properties"].get("delta.enableDeletionVectors") != "true":
            return int(snapshot.numOfFiles()), 0  # no deletion vectors on this table
        raise RuntimeError(f"Delta computed no deletion-vector count for {table} version {snapshot.version()}")

    def maintain(self, spark, table: str, retention_hours: float) -> None:
        """``OPTIMIZE``, ``REORG TABLE ... APPLY (PURGE)`` when deletion vectors remain, ``VACUUM``."""
        from delta.tables import DeltaTable

        from payledger.spark import session_settings

        delta_table = DeltaTable.forName(spark, table)
        delta_table.optimize().executeCompaction()
        if self.file_counts(spark, table)[1]:
            # delta-spark has no Python call for REORG.
            spark.sql(f"reorg table {table} apply (purge)")
        # Delta refuses VACUUM below its 168 h default unless its check is off: off for a shorter
        # retention the caller asked for, then back as it was.
        check_off = {"spark.databricks.delta.retentionDurationCheck.enabled": "false"}
        with session_settings(spark, check_off if retention_hours < DELTA_RETENTION_CHECK_HOURS else {}):
            delta_table.vacuum(retention_hours)

    def file_ranges(self, spark, table: str, column: str, sort_by: str) -> list[FileRange]:
        """From the latest snapshot's file list (``Snapshot.allFiles``: Delta's log state, through
        the JVM; delta-spark's Python API lists no files): each file's ``partitionValues`` and its
        ``stats`` (``minValues``/``maxValues``; absent for a column with no non-null value)."""
        from delta.tables import DeltaTable
        from pyspark.sql import DataFrame
        from pyspark.sql import functions as F

        if column not in DeltaTable.forName(spark, table).detail().first()["partitionColumns"]:
            raise ValueError(f"{table}: {column} is not a partition column")
        files = DataFrame(self._snapshot(spark, table).allFiles().toDF(), spark)
        rows = files.select(
            files.partitionValues[column].alias("value"),
            F.get_json_object("stats", f"$.minValues.{sort_by}").cast("long").alias("low"),
            F.get_json_object("stats", f"$.maxValues.{sort_by}").cast("long").alias("high"),
        ).collect()
        return [FileRange(row["value"], row["low"], row["high"]) for row in rows]

    def sort_partitions(self, spark, table: str, column: str, where: str, sort_by: str) -> None:
        """Delta's rearranging write (its documentation's "Compact files"): the partitions read,
        hashed by partition value (each value in one task, so one file each), sorted within it,
        written back with ``mode("overwrite")``, ``replaceWhere`` on those partitions and
        ``dataChange`` false, so that readers of the table's changes see none; Delta 3.3's
        ``OPTIMIZE`` (``ZORDER BY`` too) does not sort rows within a file. The read and the write
        are one transaction (Delta's ``WriteIntoDelta``). Marked by ``SORT_COMMIT_METADATA`` in the
        history."""
        from delta.tables import DeltaTable

        location = DeltaTable.forName(spark, table).detail().first()["location"]
        rows = spark.table(table).where(where).repartition(column).sortWithinPartitions(column, sort_by)
        (
            rows.write.format("delta")
            .mode("overwrite")
            .option("replaceWhere", where)
            .option("dataChange", "false")
            .option("userMetadata", SORT_COMMIT_METADATA)
            .save(location)
        )

    def source_position(self, location: str) -> int | None:
        """Delta's per-file ``maxValues`` (``deltalake``)."""
        import pyarrow as pa
        from deltalake import DeltaTable

        actions = pa.table(DeltaTable(location).get_add_actions(flatten=True))
        if "max.ingest_seq" not in actions.column_names:
            return None
        bounds = [value for value in actions.column("max.ingest_seq").to_pylist() if value is not None]
        return max(bounds) if bounds else None

    def committed_version(self, spark, table: str) -> TableVersion:
        """The catalog's location and the log (``deltalake``: the version; the commit file's
        modification time)."""
        from deltalake import DeltaTable

        folder = self.location(spark, table)
        version = DeltaTable(folder).version()
        # Delta's commit time is its log file's modification time (what DESCRIBE HISTORY shows and
        # TIMESTAMP AS OF uses), not commitInfo's timestamp, which the writer set a little earlier.
        written = Path(folder, "_delta_log", f"{version:020d}.json").stat().st_mtime_ns // 1_000_000
        return TableVersion(folder, version, None, iso_from_ms(written))

    def read_version(self, location: str, version: int, metadata_file: str | None, columns: tuple[str, ...], where: tuple[str, str] | None):
        """Through ``deltalake``'s SQL engine, which applies deletion vectors."""
        from deltalake import DeltaTable

        return self._query(DeltaTable(location, version=version), columns, where)

    def read_current(self, location: str, columns: tuple[str, ...], where: tuple[str, str] | None = None):
        """The log's latest version (``deltalake``), its log read once."""
        from deltalake import DeltaTable

        return self._query(DeltaTable(location), columns, where)

    def time_travels_to(self, location: str, version: int) -> bool:
        """Delta keeps its versions through a replace (``create or replace``: a full refresh) and
        until retention: true for any version up to the current one; false without a table there."""
        from deltalake import DeltaTable
        from deltalake.exceptions import TableNotFoundError

        try:
            return 0 <= version <= DeltaTable(location).version()
        except TableNotFoundError:
            return False

    def stored_maxima(self, tables_root: Path) -> dict[str, int | None]:
        """From each table's log (``stored_maxima.delta_long_maxima``)."""
        from payledger.stored_maxima import delta_long_maxima

        return delta_long_maxima(tables_root)

    def table_states(self, tables_root: Path) -> dict[str, dict]:
        """From each table's commit files (``stored_maxima.delta_table_states``)."""
        from payledger.stored_maxima import delta_table_states

        return delta_table_states(tables_root)

    @staticmethod
    def _query(table, columns: tuple[str, ...], where: tuple[str, str] | None):
        import pyarrow as pa
        from deltalake import QueryBuilder

        clause = "" if where is None else f" where {where[0]} = '{where[1]}'"
        # arro3 batches, read by pyarrow through the Arrow C interface.
        reader = QueryBuilder().register("v", table).execute(f"select {', '.join(columns)} from v{clause}")
        return pa.schema(reader.schema), (pa.record_batch(batch) for batch in reader)


#: Delta's own default retention (``delta.deletedFileRetentionDuration``, 7 days): VACUUM refuses
#: less unless its check is off.
DELTA_RETENTION_CHECK_HOURS = 168.0


class IcebergFormat(TableFormat):
    """Apache Iceberg 1.10: Iceberg's Java API and metadata tables in a session; without one,
    DuckDB's ``iceberg`` extension reads a version's rows and ``pyiceberg`` its file statistics."""

    name = ICEBERG

    def commits(self, spark, table: str) -> list[Commit]:
        rows = spark.sql(
            f"select snapshot_id, parent_id, operation, summary, unix_micros(committed_at) as committed_us from {table}.snapshots order by committed_at"
        ).collect()
        return [_iceberg_commit(row.asDict(), first=index == 0) for index, row in enumerate(rows)]

    def readable(self, commits: list[Commit]) -> list[Commit]:
        """Every snapshot ``expire_snapshots`` left."""
        return commits

    def data_bytes(self, spark, table: str) -> int:
        return int(spark.sql(f"select coalesce(sum(file_size_in_bytes), 0) as n from {table}.data_files").first()["n"])

    @staticmethod
    def table(spark, table: str):
        """The Iceberg ``Table`` (Java API) of ``table`` (``schema.name``), refreshed from its
        metadata file (Spark's catalog caches loaded tables): reading its location, snapshots or
        metadata this way runs no Spark job. Raises Spark's ``NoSuchTableException`` (through
        py4j) when the catalog has no such table."""
        loaded = spark._jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, table)
        loaded.refresh()
        return loaded

    def location(self, spark, table: str) -> str:
        return urlparse(self.table(spark, table).location()).path

    @staticmethod
    def _snapshot_ids(spark, table: str) -> list[int]:
        return [row[0] for row in spark.sql(f"select snapshot_id from {table}.snapshots order by committed_at").collect()]

    def current_version(self, spark, table: str) -> int:
        """The table's current snapshot (Java API, no Spark job): after a rollback
        (``set_current_snapshot``, ``rollback_to_snapshot``) an earlier one than the newest."""
        current = self.table(spark, table).currentSnapshot()
        return -1 if current is None else int(current.snapshotId())

    def commits_since(self, spark, table: str, version: int | None) -> int:
        ids = self._snapshot_ids(spark, table)
        return len(ids) - 1 - ids.index(version) if version in ids else len(ids)

    def file_counts(self, spark, table: str) -> tuple[int, int]:
        """The ``data_files`` and ``delete_files`` metadata tables."""
        data = spark.sql(f"select count(*) as n from {table}.data_files").first()["n"]
        deletes = spark.sql(f"select count(*) as n from {table}.delete_files").first()["n"]
        return int(data), int(deletes)

    def maintain(self, spark, table: str, retention_hours: float) -> None:
        """``rewrite_data_files`` (with deletes), ``rewrite_position_delete_files``,
        ``rewrite_manifests``, ``expire_snapshots``."""
        cutoff = (dt.datetime.now(dt.UTC) - dt.timedelta(hours=retention_hours)).strftime("%Y-%m-%d %H:%M:%S.%f")
        # Rewrites small files and every data file with a delete against it (the deletes are applied).
        # Then drops the delete files that no longer apply to any data file.
        spark.sql(
            f"call spark_catalog.system.rewrite_data_files(table => '{table}', "
            "options => map('min-input-files', '2', 'delete-file-threshold', '1', 'remove-dangling-deletes', 'true'))"
        )
        spark.sql(f"call spark_catalog.system.rewrite_position_delete_files(table => '{table}', options => map('rewrite-all', 'true'))")
        spark.sql(f"call spark_catalog.system.rewrite_manifests(table => '{table}')")
        # A time in the retention period reads the snapshot current then, which may be older than the
        # cutoff: expire only the snapshots older than the last one committed at or before it.
        kept = spark.sql(
            f"select date_format(max(committed_at), 'yyyy-MM-dd HH:mm:ss.SSSSSS') from {table}.snapshots where committed_at <= timestamp '{cutoff}'"
        ).first()[0]
        if kept is not None:
            spark.sql(f"call spark_catalog.system.expire_snapshots(table => '{table}', older_than => timestamp '{kept}', retain_last => 1)")

    def file_ranges(self, spark, table: str, column: str, sort_by: str) -> list[FileRange]:
        """From the ``data_files`` metadata table (the manifests): ``partition`` and
        ``readable_metrics`` (lower and upper bounds; null for a column with no non-null value)."""
        rows = spark.sql(
            f"select cast(partition.{column} as string) as value, readable_metrics.{sort_by}.lower_bound as low, "
            f"readable_metrics.{sort_by}.upper_bound as high from {table}.data_files"
        ).collect()
        return [FileRange(row["value"], row["low"], row["high"]) for row in rows]

    def sort_partitions(self, spark, table: str, column: str, where: str, sort_by: str) -> None:
        """``rewrite_data_files`` with the ``sort`` strategy on those partitions (``where``, which
        names ``column`` already), every file rewritten (``rewrite-all``: without it a partition of
        fewer than 5 small files is skipped); a ``replace`` snapshot. A partition larger than the
        target file size comes out as several files, in consecutive ranges of ``sort_by``. It
        ignores ``write.distribution-mode`` and keeps the table's row group size. ``where`` is
        passed as a double-quoted string (Spark's default, ``doubleQuotedIdentifiers`` off)."""
        spark.sql(
            f"call spark_catalog.system.rewrite_data_files(table => '{table}', strategy => 'sort', "
            f"sort_order => '{sort_by} ASC NULLS FIRST', where => \"{where}\", options => map('rewrite-all', 'true'))"
        )

    def source_position(self, location: str) -> int | None:
        """Per-file upper bounds (``pyiceberg``, from the newest ``metadata/*.metadata.json`` by
        write time)."""
        from pyiceberg.table import StaticTable

        files = StaticTable.from_metadata(_newest_metadata(location)).inspect.files()
        if files.num_rows == 0:
            return None
        bounds = [m["ingest_seq"]["upper_bound"] for m in files.column("readable_metrics").to_pylist() if m and m.get("ingest_seq")]
        bounds = [value for value in bounds if value is not None]
        return max(bounds) if bounds else None

    def committed_version(self, spark, table: str) -> TableVersion:
        """The table as its catalog loads it now (``currentSnapshot``, ``operations().current()``)."""
        loaded = self.table(spark, table)
        metadata, snapshot = loaded.operations().current(), loaded.currentSnapshot()
        return TableVersion(
            urlparse(loaded.location()).path,
            int(snapshot.snapshotId()),
            urlparse(metadata.metadataFileLocation()).path,
            iso_from_ms(snapshot.timestampMillis()),
        )

    def read_version(self, location: str, version: int, metadata_file: str | None, columns: tuple[str, ...], where: tuple[str, str] | None):
        """Through DuckDB's ``iceberg`` extension from ``metadata_file`` (``iceberg_scan`` of
        snapshot ``version``), position deletes applied."""
        return _iceberg_scan(metadata_file, version, columns, where)

    def read_current(self, location: str, columns: tuple[str, ...], where: tuple[str, str] | None = None):
        """The current snapshot of the newest ``metadata/*.metadata.json`` by write time (a scan
        without a snapshot id reads the current one)."""
        return self.read_version(location, None, _newest_metadata(location), columns, where)

    def time_travels_to(self, location: str, version: int) -> bool:
        """Whether the table's current metadata still lists snapshot ``version``: a replace (dbt's
        full refresh) starts a table without the old snapshots, and expiry removes old ones. False
        without a table there."""
        if not any(Path(location, "metadata").glob("*.metadata.json")):
            return False
        metadata = json.loads(Path(_newest_metadata(location)).read_text())
        return any(snapshot["snapshot-id"] == version for snapshot in metadata.get("snapshots", []))

    def stored_maxima(self, tables_root: Path) -> dict[str, int | None]:
        """None read here: on Iceberg Spark reads every watermark (its cost there not measured)."""
        return {}

    def table_states(self, tables_root: Path) -> dict[str, dict]:
        """None read here: on Iceberg every snapshot is probed (no record kept there)."""
        return {}


_DUCKDB_LOCK = threading.Lock()
_DUCKDB: list = []


def _duckdb():
    """This process's DuckDB database (in memory, created once), with the ``iceberg`` extension
    loaded from the ``duckdb-ext-iceberg`` wheel (``duckdb_ext``: no download). One thread: a
    published view is small, and a server reading a new version keeps the other core for its
    requests. No external file cache (on by default): it kept answering from files that
    ``expire_snapshots`` had deleted, so a version past retention still read.

    Why DuckDB and not ``pyiceberg``'s scan: in a new process, importing ``pyiceberg.table`` took
    0.41-0.45 s, against 0.27 s for DuckDB and its extensions; and reading the 30M-event bench view
    (78,366 rows, three position-delete files) took DuckDB 0.03 s, holding Python's lock at most
    3.5 ms at a time, against 0.19-0.31 s and stretches of 19-30 ms for ``pyiceberg``, which a
    server answering requests meanwhile waits out."""
    with _DUCKDB_LOCK:
        if not _DUCKDB:
            import duckdb
            import duckdb_ext

            database = duckdb_ext.init(duckdb.connect())
            database.execute("set threads = 1")
            database.execute("set enable_external_file_cache = false")
            database.execute("load iceberg")
            _DUCKDB.append(database)
        return _DUCKDB[0]


def _iceberg_scan(metadata_file: str, snapshot_id: int | None, columns: tuple[str, ...], where: tuple[str, str] | None):
    """(pyarrow schema, iterator of record batches) of ``columns`` of ``snapshot_id`` (None: the
    metadata file's current snapshot) of the Iceberg table whose ``metadata_file`` is given, through
    ``iceberg_scan``; ``where``: (column, value), an equality filter (the value is bound as a
    parameter). Timestamps come back as UTC instants labelled ``UTC`` (DuckDB labels them with its
    session time zone). Raises ``duckdb.Error`` when the metadata file, the snapshot or one of its
    files is gone."""
    import pyarrow as pa

    cursor = _duckdb().cursor()
    snapshot = "" if snapshot_id is None else ", snapshot_from_id => ?"
    clause = "" if where is None else f" where {where[0]} = ?"
    parameters = [metadata_file, *([] if snapshot_id is None else [snapshot_id]), *([] if where is None else [where[1]])]
    reader = cursor.execute(f"select {', '.join(columns)} from iceberg_scan(?{snapshot}){clause}", parameters).fetch_record_batch()
    utc = [field.with_type(pa.timestamp(field.type.unit, "UTC")) if pa.types.is_timestamp(field.type) and field.type.tz else field for field in reader.schema]
    schema = pa.schema(utc)

    def batches() -> Iterator:
        try:
            for batch in reader:
                yield batch.cast(schema)
        finally:
            cursor.close()

    return schema, batches()


def _newest_metadata(location: str) -> str:
    """An Iceberg table folder's most recently written metadata file: the table's current state
    (metadata files of a table dropped at the same location can stay behind, older)."""
    return str(max(Path(location, "metadata").glob("*.metadata.json"), key=lambda path: path.stat().st_mtime_ns))


#: Every format the package knows, by name (a unit test checks it against ``catalog_classes``).
_FORMATS: dict[str, TableFormat] = {fmt.name: fmt for fmt in (DeltaFormat(), IcebergFormat())}
FORMATS = tuple(_FORMATS)


def format_named(name: str) -> TableFormat:
    """The ``TableFormat`` called ``name``; ``FormatError`` for a name the package does not know."""
    try:
        return _FORMATS[name]
    except KeyError:
        raise FormatError(f"unknown table format {name!r}; expected one of {', '.join(_FORMATS)}") from None


def session_table_format(spark) -> TableFormat:
    """The ``TableFormat`` of this session's tables (``session_format``)."""
    return format_named(session_format(spark))
