"""The largest value stored in each whole-number column of a Delta warehouse, read from the tables'
logs without Spark: what ``run_watermarks`` (``macros/state/run_watermarks.sql``) otherwise asks
Spark for at the start of every build.

Delta answers a bare ``max()`` from its log's file statistics too, but on Spark each such answer
still costs a plan and about four jobs (0.3 s a table in a warm process: ``CHANGELOG.md``,
2026-12-03). The statistics are the same ones: per data file, its row count, the column's null
count and its largest value. ``run_dbt`` reads them here, with ``deltalake``, before a ``build`` or
``run`` on the embedded Delta target, and passes them in the environment variable
``STORED_MAXIMA_ENV`` for that invocation only; a column missing there is read with Spark as before.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: The environment variable run_dbt sets for one invocation (read by ``run_watermarks``).
STORED_MAXIMA_ENV = "PAYLEDGER_STORED_MAXIMA"


def delta_long_maxima(tables_root: Path) -> dict[str, int | None]:
    """``{"<schema>.<table>.<column>": largest value or None}`` for the 64-bit integer (``bigint``)
    columns of the Delta tables in ``tables_root`` (Spark's warehouse folder: one
    ``<schema>.db/<table>`` folder per managed table), lower case.

    A column is listed only when every data file of the table's current version carries its
    statistics (a file with rows has the column's null count, and its largest value unless every
    row is null there); None when no row holds a value (an empty table, or nulls only), as
    ``max()`` answers. Tables whose protocol needs reader features (deletion vectors, column
    mapping: rows that a file's statistics still count may be deleted) are left out, as are folders
    whose log does not read: Spark then reads those columns itself, and reports what is wrong.
    """
    import pyarrow as pa
    from deltalake import DeltaTable

    maxima: dict[str, int | None] = {}
    for log in sorted(tables_root.glob("*.db/*/_delta_log")):
        folder = log.parent
        try:
            table = DeltaTable(str(folder))
            if table.protocol().min_reader_version != 1:
                continue
            actions = pa.table(table.get_add_actions(flatten=True))
        except Exception:  # any unreadable log: Spark reads the table instead, and says why
            continue
        columns = {field.name: field for field in actions.schema}
        if "num_records" not in columns:  # no statistics at all
            continue
        schema = folder.parent.name.removesuffix(".db")
        rows = actions.column("num_records").to_pylist()
        for name, field in columns.items():
            if not name.startswith("max.") or not pa.types.is_int64(field.type):
                continue
            column = name.removeprefix("max.")
            if f"null_count.{column}" not in columns:
                continue
            value = _column_max(rows, actions.column(f"null_count.{column}").to_pylist(), actions.column(name).to_pylist())
            if value is not _UNKNOWN:
                maxima[f"{schema}.{folder.name}.{column}".lower()] = value
    return maxima


_UNKNOWN = object()


def _column_max(rows: list, nulls: list, largest: list) -> int | object | None:
    """The largest of one column's per-file largest values, None when no file holds a value, or
    ``_UNKNOWN`` when a file with rows lacks the statistics."""
    found = None
    for count, null_count, value in zip(rows, nulls, largest, strict=True):
        if count == 0:
            continue
        if count is None or null_count is None:
            return _UNKNOWN
        if null_count == count:
            continue
        if value is None:
            return _UNKNOWN
        found = value if found is None else max(found, value)
    return found


@contextmanager
def stored_maxima_for_invocation(spark, args: tuple[str, ...]) -> Iterator[None]:
    """While the body runs, ``STORED_MAXIMA_ENV`` holds the session's table format's stored maxima
    (``TableFormat.stored_maxima`` of the session's warehouse folder, JSON; Delta's:
    ``delta_long_maxima``) when ``args`` is a ``build`` or ``run`` on an embedded session
    (``spark``; None: the Thrift target) and there are any; unset otherwise, and again afterwards."""
    from payledger.formats import session_table_format

    os.environ.pop(STORED_MAXIMA_ENV, None)
    if spark is not None and args[:1] in (("build",), ("run",)):
        folder = spark.conf.get("spark.sql.warehouse.dir").removeprefix("file:")
        maxima = session_table_format(spark).stored_maxima(Path(folder))
        if maxima:
            os.environ[STORED_MAXIMA_ENV] = json.dumps(maxima)
    try:
        yield
    finally:
        os.environ.pop(STORED_MAXIMA_ENV, None)
