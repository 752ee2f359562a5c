"""What differs between the two table formats (Delta Lake, Apache Iceberg), for the Python side.

The SQL side has its twin in ``macros/formats/``. The format of a Spark session is read from the
session itself (the class that owns ``spark_catalog``), so nothing here repeats the rule that picks
a target's format (``dbt_project.yml``, var ``table_format``).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

DELTA = "delta"
ICEBERG = "iceberg"
FORMATS = (DELTA, ICEBERG)

_CATALOG_CLASSES = {
    "org.apache.spark.sql.delta.catalog.DeltaCatalog": DELTA,
    "org.apache.iceberg.spark.SparkCatalog": ICEBERG,
}


class FormatError(RuntimeError):
    """The session's ``spark_catalog`` is neither Delta's nor Iceberg's."""


def session_format(spark) -> str:
    """``"delta"`` or ``"iceberg"``: the format of the tables this session's ``spark_catalog`` holds.

    Raises ``FormatError`` for any other catalog (the project's profiles configure one of the two).
    """
    catalog = spark.conf.get("spark.sql.catalog.spark_catalog", "")
    try:
        return _CATALOG_CLASSES[catalog]
    except KeyError:
        raise FormatError(f"spark_catalog is {catalog or 'unset'!r}; expected Delta's DeltaCatalog or Iceberg's SparkCatalog") from None


def target_format(target: str | None = None) -> str:
    """``"delta"`` or ``"iceberg"``: the format of an embedded dbt target's tables (default: the
    profile's default target), read from the ``spark_catalog`` its profile configures, without
    starting Spark. Raises ``FormatError`` for a target without either catalog (``thrift``)."""
    from payledger.spark import default_target, spark_setting

    target = target or default_target()
    catalog = spark_setting("spark.sql.catalog.spark_catalog", target) or ""
    try:
        return _CATALOG_CLASSES[catalog]
    except KeyError:
        raise FormatError(f"target {target} configures no Delta or Iceberg spark_catalog") from None


@dataclass(frozen=True)
class Commit:
    """One commit of a table, in terms both formats share.

    ``version``: Delta's table version or Iceberg's snapshot id; ``parent``: the version it was made
    on (Delta ``readVersion``, Iceberg ``parent_id``; None for the first); ``operation``: the
    format's own name (``MERGE``, ``WRITE``, ``overwrite``, ``append``, ...); ``kind``: ``create``
    (the table's first commit), ``replace`` (a later create-or-replace: the table's content was
    replaced, not changed), ``merge``, ``append``, ``maintenance`` (rows rewritten or files
    removed, content unchanged: Delta ``OPTIMIZE``, ``REORG``, ``VACUUM START``/``END``, Iceberg
    ``replace``) or ``other``; ``rows_written``:
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
    """The commits of ``table`` (``schema.name``), oldest first; empty when it does not exist.

    Delta: ``DeltaTable.history()`` (``DESCRIBE HISTORY``); Iceberg: the ``snapshots`` metadata table.
    """
    if not spark.catalog.tableExists(table):
        return []
    if session_format(spark) == DELTA:
        from delta.tables import DeltaTable

        history = DeltaTable.forName(spark, table).history().selectExpr("*", "unix_micros(timestamp) as committed_us")
        return [_delta_commit(row.asDict()) for row in history.orderBy("version").collect()]
    rows = spark.sql(
        f"select snapshot_id, parent_id, operation, summary, unix_micros(committed_at) as committed_us from {table}.snapshots order by committed_at"
    ).collect()
    return [_iceberg_commit(row.asDict(), first=index == 0) for index, row in enumerate(rows)]


_DELTA_KINDS = {
    "MERGE": "merge",
    "WRITE": "append",
    "CREATE TABLE AS SELECT": "create",
    "CREATE TABLE": "create",
    "OPTIMIZE": "maintenance",
    "REORG": "maintenance",
    "VACUUM START": "maintenance",
    "VACUUM END": "maintenance",
}


def _delta_commit(row: dict[str, Any]) -> Commit:
    metrics = dict(row["operationMetrics"] or {})

    def metric(name: str) -> int:
        return int(metrics.get(name, "0"))

    operation = row["operation"]
    kind = _DELTA_KINDS.get(operation, "other")
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
    """Bytes of the data files of ``table``'s current version.

    Delta: ``DESCRIBE DETAIL`` ``sizeInBytes``; Iceberg: the sum of ``file_size_in_bytes`` of its
    ``data_files`` metadata table.
    """
    if session_format(spark) == DELTA:
        return int(spark.sql(f"describe detail {table}").first()["sizeInBytes"])
    return int(spark.sql(f"select coalesce(sum(file_size_in_bytes), 0) as n from {table}.data_files").first()["n"])


def readable_commits(spark, table: str) -> list[Commit]:
    """The commits of ``table`` that time travel (``VERSION AS OF``) can still read, oldest first.

    Iceberg: every snapshot ``expire_snapshots`` left (the ``snapshots`` metadata table). Delta:
    the history minus the versions whose data files a ``VACUUM`` may have deleted. A VACUUM at time
    T with retention R (``VACUUM START``'s ``specifiedRetentionMillis``, else
    ``defaultRetentionMillis``) deletes only files removed before T - R, so the version current at
    T - R and every later one are whole. Delta records VACUUM in the history on local, HDFS and
    cloud file systems (``spark.databricks.delta.vacuum.logging.enabled``); the latest cutoff of
    all of them counts.
    """
    commits = table_commits(spark, table)
    if session_format(spark) != DELTA:
        return commits
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
