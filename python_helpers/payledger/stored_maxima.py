"""The largest value stored in each whole-number column of a Delta warehouse, read from the tables'
logs without Spark: what ``run_watermarks`` (``macros/state/run_watermarks.sql``) otherwise asks
Spark for at the start of every build.

Delta answers a bare ``max()`` from its log's file statistics too, but on Spark each such answer
still costs a plan and about four jobs (0.3 s a table in a warm process: ``CHANGELOG.md``,
2026-12-03). The statistics are the same ones: per data file, its row count, the column's null
count and its largest value. ``run_dbt`` reads them here, with ``deltalake``, before a ``build`` or
``run`` on the embedded Delta target, and passes them in the environment variable
``STORED_MAXIMA_ENV`` for that invocation only; a column missing there is read with Spark as before.

In the same way it passes each Delta table's data version and the inputs recorded on a snapshot
table (``TABLE_STATES_ENV``, ``delta_table_states``): a snapshot whose recorded inputs equal this
run's is left alone without its probe (``macros/materializations/materialization_snapshot_spark.sql``).
For a table with a change data feed it also lists the versions from which that feed reads whole
(``change_feed``): the view folds the checkpoint's changes since its own last write instead of
re-summing replayed merchants over the whole checkpoint (``macros/formats/change_feed.sql``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: The environment variable run_dbt sets for one invocation (read by ``run_watermarks``).
STORED_MAXIMA_ENV = "PAYLEDGER_STORED_MAXIMA"
#: The environment variable run_dbt sets for one invocation (read by the snapshot materialization).
TABLE_STATES_ENV = "PAYLEDGER_TABLE_STATES"
#: The table property in which the snapshot materialization records the inputs a snapshot table
#: holds the result of (``{"code": md5, "inputs": {"<schema>.<table>": "<data version>@<its commit
#: time, ms>"}}``, JSON).
SNAPSHOT_INPUTS_PROPERTY = "payledger.snapshot_inputs"
#: How many of a table's newest commits ``delta_table_states`` reads, at most, to find the record.
RECORD_LOOKBACK = 50
#: The table property that makes Delta record a table's change data feed.
CHANGE_FEED_PROPERTY = "delta.enableChangeDataFeed"


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
    for table_name, log in _delta_logs(tables_root):
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
        rows = actions.column("num_records").to_pylist()
        for name, field in columns.items():
            if not name.startswith("max.") or not pa.types.is_int64(field.type):
                continue
            column = name.removeprefix("max.")
            if f"null_count.{column}" not in columns:
                continue
            value = _column_max(rows, actions.column(f"null_count.{column}").to_pylist(), actions.column(name).to_pylist())
            if value is not _UNKNOWN:
                maxima[f"{table_name}.{column.lower()}"] = value
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


def delta_table_states(tables_root: Path) -> dict[str, dict]:
    """``{"<schema>.<table>": {"data_version": int, "data_committed_ms": int or None,
    "recorded_inputs": str or None}}`` for the Delta tables in ``tables_root`` (one
    ``<schema>.db/<table>`` folder each, lower case), read from the newest ``RECORD_LOOKBACK``
    commit files of their logs without Spark.

    ``data_version`` is the newest commit that changed the table's rows, schema or properties: the
    commits of maintenance after it (files rewritten with ``dataChange`` false, ``VACUUM``'s
    records) leave what a reader gets as it was; ``data_committed_ms`` is when that commit was made
    (its ``commitInfo`` timestamp, milliseconds since the epoch), so that a table dropped and made
    again, whose versions start over, is not taken for the one before. ``recorded_inputs`` is the
    value of the table property ``SNAPSHOT_INPUTS_PROPERTY`` when that commit is the one that set it
    (``SET TBLPROPERTIES`` naming it): the table's rows are still the ones the record describes. A
    write, a schema change or another property set after the record, a commit file that does not
    read, or no such commit among those read, gives None (the snapshot is then probed as usual);
    with no commit but maintenance among those read, ``data_version`` is the oldest of them and
    ``data_committed_ms`` None (not known). A table whose properties turn on its change data feed
    also gets ``change_feed``: ``delta_change_feed`` of those commits.
    """
    states: dict[str, dict] = {}
    for name, log in _delta_logs(tables_root):
        versions = sorted(int(path.name[:20]) for path in log.glob("*.json") if len(path.name) == 25 and path.name[:20].isdigit())
        if versions:
            states[name] = _data_state(log, versions[-RECORD_LOOKBACK:])
            if _may_have_change_feed(log):
                feed = delta_change_feed(log.parent, versions[-RECORD_LOOKBACK:])
                if feed is not None:
                    states[name]["change_feed"] = feed
    return states


def _may_have_change_feed(log: Path) -> bool:
    """Whether the table of ``log`` may have a change data feed, without reading its state: its
    feed has recorded changes (a ``_change_data`` folder), or its first commit (as dbt makes a
    table: the ``metaData`` before the first ``add``) names ``CHANGE_FEED_PROPERTY``."""
    if (log.parent / "_change_data").is_dir():
        return True
    try:
        with (log / f"{0:020d}.json").open() as first:
            for line in first:
                if '"add"' in line[:10]:
                    return False
                if CHANGE_FEED_PROPERTY in line:
                    return True
    except OSError:
        pass
    return False


def delta_change_feed(folder: Path, versions: list[int]) -> list[list[int]] | None:
    """``[[version, committed_ms], ...]``, newest first: the commits among ``versions`` (the newest
    of the Delta table in ``folder``, oldest first) after which Delta's change data feed reads
    every commit whole, up to the current one and the ones still to come. ``committed_ms`` is the
    commit's ``commitInfo`` timestamp (milliseconds since the epoch); a commit without one ends the
    list (it could not be ordered against a reader's commit).

    None unless the table's current properties set ``CHANGE_FEED_PROPERTY``. Reading backwards
    from the newest commit, the list stops before the first commit whose change data cannot be
    read (Delta's ``CDCReader.changesToDF``, delta-io/delta v3.3.3): a file the feed would open
    (the commit's ``cdc`` files when it has any, else the files it adds or removes with
    ``dataChange``) that VACUUM has deleted, rows removed or re-added through deletion vectors
    without ``cdc`` files, or a commit file that does not read. A commit that changes the table's
    metadata (schema or properties, such as the one that turned the feed on) is the last one
    listed after it: the setting before it is not known here.
    """
    from urllib.parse import unquote

    from deltalake import DeltaTable

    try:
        enabled = DeltaTable(str(folder)).metadata().configuration.get(CHANGE_FEED_PROPERTY, "false").lower() == "true"
    except Exception:  # a log that does not read: no feed; Spark re-sums and reports what is wrong
        return None
    if not enabled:
        return None
    readable: list[list[int]] = []
    log = folder / "_delta_log"
    for version in reversed(versions):
        try:
            actions = [json.loads(line) for line in (log / f"{version:020d}.json").read_text().splitlines() if line.strip()]
        except (OSError, ValueError):
            break
        committed_ms = next((action["commitInfo"].get("timestamp") for action in actions if "commitInfo" in action), None)
        if not isinstance(committed_ms, int):
            break  # no time to order it by against the reader's commit
        readable.append([version, committed_ms])
        if any("metaData" in action for action in actions):
            break
        changes = [action["cdc"] for action in actions if "cdc" in action]
        if not changes:
            changes = [action.get("add") or action.get("remove") for action in actions if {"add", "remove"} & action.keys()]
            changes = [change for change in changes if change.get("dataChange", True)]
            if any(change.get("deletionVector") for change in changes):
                break
        if not all((folder / unquote(change["path"])).is_file() for change in changes):
            break
    return readable


def _delta_logs(tables_root: Path) -> list[tuple[str, Path]]:
    """``[("<schema>.<table>", log folder)]``, lower case and sorted, of the Delta tables in Spark's
    warehouse folder ``tables_root`` (one ``<schema>.db/<table>/_delta_log`` each)."""
    return [(f"{log.parent.parent.name.removesuffix('.db')}.{log.parent.name}".lower(), log) for log in sorted(tables_root.glob("*.db/*/_delta_log"))]


def _data_state(log: Path, versions: list[int]) -> dict:
    """``delta_table_states``' entry of one table, from its commits ``versions`` (oldest first)."""
    for version in reversed(versions):
        try:
            actions = [json.loads(line) for line in (log / f"{version:020d}.json").read_text().splitlines() if line.strip()]
        except (OSError, ValueError):
            return {"data_version": version, "data_committed_ms": None, "recorded_inputs": None}
        info = next((action["commitInfo"] for action in actions if "commitInfo" in action), {})
        others = [action for action in actions if "commitInfo" not in action]
        if all({"add", "remove"} & action.keys() and not (action.get("add") or action.get("remove")).get("dataChange", True) for action in others):
            continue  # maintenance: the same rows in other files, or a record of VACUUM
        metadata = next((action["metaData"] for action in others if "metaData" in action), None)
        try:
            set_here = json.loads(info.get("operationParameters", {}).get("properties", "{}"))
        except (TypeError, ValueError):
            set_here = {}
        recorded = (
            metadata.get("configuration", {}).get(SNAPSHOT_INPUTS_PROPERTY)
            if metadata is not None and len(others) == 1 and info.get("operation") == "SET TBLPROPERTIES" and SNAPSHOT_INPUTS_PROPERTY in set_here
            else None
        )
        return {"data_version": version, "data_committed_ms": info.get("timestamp"), "recorded_inputs": recorded}
    return {"data_version": versions[0], "data_committed_ms": None, "recorded_inputs": None}


#: The environment variables ``set_stored_state`` sets.
STORED_STATE_ENVIRONMENT = (STORED_MAXIMA_ENV, TABLE_STATES_ENV)
#: The dbt commands that read the stored maxima (``run_watermarks``) or the tables' states (the
#: snapshot materialization): ``set_stored_state``.
STORED_STATE_COMMANDS = ("build", "run", "snapshot")


def set_stored_state(spark, command: str) -> None:
    """Set ``STORED_MAXIMA_ENV`` to the session's table format's stored maxima
    (``TableFormat.stored_maxima`` of the session's warehouse folder, JSON; Delta's:
    ``delta_long_maxima``) when the dbt ``command`` is a ``build`` or ``run`` on an embedded
    session (``spark``; None: the Thrift target) and there are any, and ``TABLE_STATES_ENV`` to its
    tables' states (``TableFormat.table_states``; Delta's: ``delta_table_states``) for a
    ``build``, ``run`` or ``snapshot`` there; unset each otherwise. Read while the session holds
    the warehouse's metastore, which admits one process: no other process writes the tables
    between this read and the invocation's statements."""
    from payledger.formats import session_table_format
    from payledger.spark import warehouse_folder

    for name in STORED_STATE_ENVIRONMENT:
        os.environ.pop(name, None)
    if spark is not None and command in STORED_STATE_COMMANDS:
        folder = warehouse_folder(spark)
        table_format = session_table_format(spark)
        maxima = table_format.stored_maxima(folder) if command != "snapshot" else {}
        if maxima:
            os.environ[STORED_MAXIMA_ENV] = json.dumps(maxima)
        states = table_format.table_states(folder)
        if states:
            os.environ[TABLE_STATES_ENV] = json.dumps(states)


@contextmanager
def stored_maxima_for_invocation(spark, args: tuple[str, ...]) -> Iterator[None]:
    """While the body runs, the environment ``set_stored_state`` sets for the dbt command line
    ``args`` on ``spark``; both variables unset afterwards."""
    set_stored_state(spark, args[0] if args else "")
    try:
        yield
    finally:
        for name in STORED_STATE_ENVIRONMENT:
            os.environ.pop(name, None)
