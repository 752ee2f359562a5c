"""The stored maxima run_watermarks takes from Delta logs (``payledger.stored_maxima``): the largest
value of each whole-number column as the files' statistics give it, and nothing where they cannot
say it (files without the column's statistics, tables with deletion vectors). And the tables' states
the snapshot materialization reads: each table's data version and its commit time, and the snapshot
inputs recorded on it only while no commit that changes data came after the record, and for a table with
a change data feed the commits after which that feed reads every change (logs written by
``deltalake``, whose commits name the same operations and actions as Spark's)."""

from __future__ import annotations

import json
import shutil
import time

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from payledger import stored_maxima
from payledger.stored_maxima import CHANGE_FEED_PROPERTY, SNAPSHOT_INPUTS_PROPERTY, TABLE_STATES_ENV, delta_long_maxima, delta_table_states


def write(folder, columns: dict[str, list], mode: str = "append", configuration: dict[str, str] | None = None) -> None:
    table = pa.table({name: pa.array(values, type=pa.int64() if name != "label" else pa.string()) for name, values in columns.items()})
    write_deltalake(str(folder), table, mode=mode, configuration=configuration)


def test_the_largest_stored_value_of_each_whole_number_column_over_every_file(tmp_path):
    events = tmp_path / "payledger_raw.db" / "payment_events"
    write(events, {"ingest_seq": [1, 7, 3], "unit": [None, None, None], "label": ["a", "b", "c"]})
    write(events, {"ingest_seq": [5, 11], "unit": [None, 4], "label": ["d", "e"]})
    write(tmp_path / "payledger.db" / "empty_table", {"ingest_seq": [], "label": []})
    maxima = delta_long_maxima(tmp_path)
    assert maxima == {"payledger_raw.payment_events.ingest_seq": 11, "payledger_raw.payment_events.unit": 4, "payledger.empty_table.ingest_seq": None}


def test_a_column_some_file_has_no_statistics_for_is_left_to_spark(tmp_path):
    # Statistics on the first column only: the second is not listed, the first is.
    folder = tmp_path / "payledger.db" / "two_columns"
    write(folder, {"ingest_seq": [1, 2], "source_watermark": [10, 20]}, configuration={"delta.dataSkippingNumIndexedCols": "1"})
    assert delta_long_maxima(tmp_path) == {"payledger.two_columns.ingest_seq": 2}


def test_a_table_whose_readers_need_table_features_is_left_to_spark(tmp_path):
    write(tmp_path / "payledger.db" / "merged", {"source_watermark": [3, 9]}, configuration={"delta.enableDeletionVectors": "true"})
    write(tmp_path / "payledger.db" / "plain", {"source_watermark": [3, 9]})
    (tmp_path / "payledger.db" / "not_a_table" / "_delta_log").mkdir(parents=True)
    assert delta_long_maxima(tmp_path) == {"payledger.plain.source_watermark": 9}


def record(folder, inputs: str) -> None:
    """What the snapshot materialization runs: ``alter table ... set tblproperties``."""
    DeltaTable(str(folder)).alter.set_table_properties({SNAPSHOT_INPUTS_PROPERTY: inputs}, raise_if_not_exists=False)


def vacuum(folder) -> None:
    """A VACUUM: two commits (start, end) that change no data."""
    DeltaTable(str(folder)).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)


def states_of(tables_root) -> dict[str, dict]:
    """``delta_table_states`` without the commit times, each checked to be a whole number (a data
    version was found among the commits read)."""
    states = delta_table_states(tables_root)
    for state in states.values():
        assert isinstance(state.pop("data_committed_ms"), int)
    return states


def test_recorded_inputs_hold_until_a_commit_changes_data(tmp_path):
    snapshot = tmp_path / "payledger_snapshots.db" / "snp"
    merchants = tmp_path / "payledger_raw.db" / "merchants"
    write(snapshot, {"source_watermark": [1, 2]})
    write(merchants, {"source_watermark": [1]})
    assert states_of(tmp_path) == {
        "payledger_snapshots.snp": {"data_version": 0, "recorded_inputs": None},
        "payledger_raw.merchants": {"data_version": 0, "recorded_inputs": None},
    }
    record(snapshot, '{"code": "a"}')
    assert states_of(tmp_path)["payledger_snapshots.snp"] == {"data_version": 1, "recorded_inputs": '{"code": "a"}'}
    write(snapshot, {"source_watermark": [3]}, mode="overwrite")
    assert states_of(tmp_path)["payledger_snapshots.snp"] == {"data_version": 2, "recorded_inputs": None}, "an overwrite after the record"
    record(snapshot, '{"code": "b"}')
    write(snapshot, {"source_watermark": [4]})
    DeltaTable(str(snapshot)).optimize.compact()
    assert states_of(tmp_path)["payledger_snapshots.snp"] == {"data_version": 4, "recorded_inputs": None}, "an append after the record"
    # Maintenance after the record (files compacted, a VACUUM) leaves the rows, and the record, as they were.
    write(snapshot, {"source_watermark": [5]})
    record(snapshot, '{"code": "c"}')
    DeltaTable(str(snapshot)).optimize.compact()
    vacuum(snapshot)
    # And leaves a source's data version as it was.
    write(merchants, {"source_watermark": [2]})
    DeltaTable(str(merchants)).optimize.compact()
    assert (snapshot / "_delta_log" / f"{10:020d}.json").exists() and (merchants / "_delta_log" / f"{2:020d}.json").exists()
    assert states_of(tmp_path) == {
        "payledger_snapshots.snp": {"data_version": 7, "recorded_inputs": '{"code": "c"}'},
        "payledger_raw.merchants": {"data_version": 1, "recorded_inputs": None},
    }


def test_a_record_is_only_what_the_materialization_set_last(tmp_path, monkeypatch):
    snapshot = tmp_path / "payledger_snapshots.db" / "snp"
    write(snapshot, {"source_watermark": [1]})
    record(snapshot, '{"code": "a"}')
    # Another property set afterwards carries the record along, but the commit is not the record's.
    DeltaTable(str(snapshot)).alter.set_table_properties({"delta.logRetentionDuration": "interval 30 days"}, raise_if_not_exists=False)
    assert states_of(tmp_path)["payledger_snapshots.snp"] == {"data_version": 2, "recorded_inputs": None}
    # A record older than every commit read back: not found, so not trusted.
    write(snapshot, {"source_watermark": [2]})
    record(snapshot, '{"code": "b"}')
    DeltaTable(str(snapshot)).optimize.compact()
    vacuum(snapshot)
    assert (snapshot / "_delta_log" / f"{7:020d}.json").exists()
    assert states_of(tmp_path)["payledger_snapshots.snp"] == {"data_version": 4, "recorded_inputs": '{"code": "b"}'}
    monkeypatch.setattr(stored_maxima, "RECORD_LOOKBACK", 2)
    assert delta_table_states(tmp_path)["payledger_snapshots.snp"] == {"data_version": 6, "data_committed_ms": None, "recorded_inputs": None}
    monkeypatch.undo()
    # A commit file that does not read: no record, and the table is still listed.
    record(snapshot, '{"code": "c"}')
    max((snapshot / "_delta_log").glob("*.json")).write_text("not json\n")
    assert delta_table_states(tmp_path)["payledger_snapshots.snp"] == {"data_version": 8, "data_committed_ms": None, "recorded_inputs": None}


def test_a_table_made_again_is_not_taken_for_the_one_before(tmp_path):
    merchants = tmp_path / "payledger_raw.db" / "merchants"
    write(merchants, {"source_watermark": [1]})
    before = delta_table_states(tmp_path)["payledger_raw.merchants"]
    shutil.rmtree(merchants)  # dropped (a managed table's folder goes with it), then made again
    time.sleep(0.01)
    write(merchants, {"source_watermark": [2]})
    after = delta_table_states(tmp_path)["payledger_raw.merchants"]
    assert before["data_version"] == after["data_version"] == 0
    assert before["data_committed_ms"] < after["data_committed_ms"]


def feed_versions(tables_root, table: str) -> list[int]:
    """The versions of ``table``'s ``change_feed``, checked to be newest first with whole-number
    commit times that do not go back."""
    feed = delta_table_states(tables_root)[table]["change_feed"]
    assert [version for version, _ in feed] == sorted((version for version, _ in feed), reverse=True)
    assert all(isinstance(ms, int) for _, ms in feed) and [ms for _, ms in feed] == sorted((ms for _, ms in feed), reverse=True)
    return [version for version, _ in feed]


def commit_files(folder, version: int, kind: str) -> list:
    """The files of ``kind`` (``add`` or ``cdc``) that commit ``version`` names."""
    actions = [json.loads(line) for line in (folder / "_delta_log" / f"{version:020d}.json").read_text().splitlines()]
    return [folder / action[kind]["path"] for action in actions if kind in action]


def test_the_change_feed_lists_the_commits_after_which_every_change_reads(tmp_path):
    checkpoint = tmp_path / "payledger_intermediate.db" / "checkpoint"
    write(checkpoint, {"source_watermark": [1, 2, 3]}, configuration={CHANGE_FEED_PROPERTY: "true"})
    DeltaTable(str(checkpoint)).update(updates={"source_watermark": "source_watermark + 10"}, predicate="source_watermark = 2")
    write(checkpoint, {"source_watermark": [4]})
    DeltaTable(str(checkpoint)).delete("source_watermark = 1")
    DeltaTable(str(checkpoint)).optimize.compact()
    write(tmp_path / "payledger.db" / "plain", {"source_watermark": [1]})
    states = delta_table_states(tmp_path)
    assert "change_feed" not in states["payledger.plain"], "no feed where the properties do not turn it on"
    # Every commit reads: the update's and the delete's change files, the append's added file, and
    # compaction, which changes no rows. The table's first commit set its properties.
    assert feed_versions(tmp_path, "payledger_intermediate.checkpoint") == [4, 3, 2, 1, 0]
    # VACUUM deletes change files and removed files after their retention: a commit whose files are
    # gone cannot be read, so the feed reads from that commit on, not from before it.
    assert commit_files(checkpoint, 1, "cdc")
    for path in commit_files(checkpoint, 1, "cdc"):
        path.unlink()
    assert feed_versions(tmp_path, "payledger_intermediate.checkpoint") == [4, 3, 2, 1]
    for path in commit_files(checkpoint, 2, "add"):
        path.unlink()
    assert feed_versions(tmp_path, "payledger_intermediate.checkpoint") == [4, 3, 2]
    # A commit without its time is not listed, nor is any before it.
    commit = checkpoint / "_delta_log" / f"{3:020d}.json"
    lines = [json.loads(line) for line in commit.read_text().splitlines()]
    for action in lines:
        action.get("commitInfo", {}).pop("timestamp", None)
    commit.write_text("\n".join(json.dumps(action) for action in lines) + "\n")
    assert feed_versions(tmp_path, "payledger_intermediate.checkpoint") == [4]
    # The feed turned off: none.
    DeltaTable(str(checkpoint)).alter.set_table_properties({CHANGE_FEED_PROPERTY: "false"}, raise_if_not_exists=False)
    assert "change_feed" not in delta_table_states(tmp_path)["payledger_intermediate.checkpoint"]


def test_a_new_table_with_the_feed_lists_its_first_commit(tmp_path):
    # Made with the feed on (as dbt makes the checkpoint), before any change was recorded.
    write(tmp_path / "payledger_intermediate.db" / "checkpoint", {"source_watermark": [1]}, configuration={CHANGE_FEED_PROPERTY: "true"})
    assert not (tmp_path / "payledger_intermediate.db" / "checkpoint" / "_change_data").exists()
    assert feed_versions(tmp_path, "payledger_intermediate.checkpoint") == [0]


def test_a_dbt_command_line_gets_the_stored_state_only_for_this_projects_builds_on_a_session(monkeypatch):
    """``prepare_command_line_invocation`` (the project's dbt plugin) reads the stored state for
    this project's ``build``, ``run`` and ``snapshot`` on a target of dbt-spark's ``session``
    method, and for nothing else, and hands it to dbt's ``env_var`` (the invocation's copy of the
    environment); an invocation run_dbt started is left to run_dbt. Each case outside those unsets
    what an earlier invocation set. Spark is not started here: the session the positive case
    would start is replaced by a stand-in, and the read by one that records its arguments."""
    import types

    import click
    from dbt_common.context import get_invocation_context, set_invocation_context
    from pyspark.sql import SparkSession

    import payledger.dbt

    calls: list[tuple] = []

    def set_stored_state(spark, command: str) -> None:
        calls.append((spark, command))
        monkeypatch.delenv(TABLE_STATES_ENV, raising=False)
        if spark is not None:
            monkeypatch.setenv(TABLE_STATES_ENV, f"states before the {command}")

    monkeypatch.setattr(stored_maxima, "set_stored_state", set_stored_state)
    monkeypatch.setattr("payledger.spark.check_catalog_location", lambda spark: calls.append(("checked", spark)))
    session = object()
    monkeypatch.setattr(SparkSession.Builder, "getOrCreate", lambda builder: session)

    def prepare(project: str, command: str, method: str) -> tuple[list[tuple], str | None]:
        calls.clear()
        set_invocation_context({TABLE_STATES_ENV: "an earlier invocation's"})
        monkeypatch.setattr("dbt.flags.GLOBAL_FLAGS", types.SimpleNamespace(WHICH=command))
        credentials = types.SimpleNamespace(method=method, server_side_parameters={"spark.sql.shuffle.partitions": "2"})
        with click.Context(click.Command(command), obj={"profile": types.SimpleNamespace(credentials=credentials)}):
            payledger.dbt.prepare_command_line_invocation(project)
        return list(calls), get_invocation_context().env.get(TABLE_STATES_ENV)

    for command in ("build", "run", "snapshot"):
        assert prepare("payledger", command, "session") == ([("checked", session), (session, command)], f"states before the {command}")
    assert prepare("payledger", "test", "session") == ([(None, "test")], None)
    assert prepare("payledger", "build", "thrift") == ([(None, "build")], None)
    assert prepare("another_project", "build", "session") == ([(None, "build")], None)
    monkeypatch.setattr(payledger.dbt, "_run_dbt_invocations", [("build",)])
    assert prepare("payledger", "build", "session") == ([], "an earlier invocation's")
