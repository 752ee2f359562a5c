"""The publication document (``payledger.publish``): replaced whole, the last ``KEEP`` publications
kept, failures recorded beside the current publication, and published Delta versions read without
Spark. The integration tests read real builds' versions, deletion vectors and Iceberg included
(``test_balance_history.py``, ``test_balance_view.py``)."""

from __future__ import annotations

import datetime as dt
import json
import os
import threading
import time
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pytest

from payledger import publish
from payledger.publish import KEEP, Publication, PublicationError, read_document, record_failed_build, record_publication
from tests.view_tables import view_row, view_table


def publication(version: int, build: str = "b", location: str = "/nowhere", when: str = "2026-11-26T10:00:00.000000+00:00") -> Publication:
    return Publication("delta", location, version, None, f"{build}{version}", 7, when)


def test_nothing_published_reads_as_an_empty_document(tmp_path):
    document = read_document(tmp_path, "delta")
    assert document.current is None and document.previous == [] and not document.failed_since_published()


def test_each_publication_becomes_current_and_the_last_ones_are_kept_newest_first(tmp_path):
    for version in range(KEEP + 3):
        record_publication(tmp_path, publication(version))
    document = read_document(tmp_path, "delta")
    assert document.current.version == KEEP + 2
    assert [p.version for p in document.previous] == list(range(KEEP + 1, 2, -1))
    assert len(document.previous) == KEEP - 1
    # Each format has its own document.
    assert read_document(tmp_path, "iceberg").current is None


def test_a_failed_build_keeps_the_publication_and_is_reported_until_the_next_one(tmp_path):
    record_publication(tmp_path, publication(1, when="2026-11-26T10:00:00.000000+00:00"))
    failed = record_failed_build(tmp_path, "delta", "bad-build", ["test.payledger.assert_merchant_balance_current_reconciles: fail"])
    assert failed.current.version == 1 and failed.failed_since_published()
    assert read_document(tmp_path, "delta").last_failed_build["invocation_id"] == "bad-build"
    later = publication(2, when="2999-01-01T00:00:00.000000+00:00")
    assert not record_publication(tmp_path, later).failed_since_published()


def test_the_document_is_replaced_whole_while_readers_read_it(tmp_path):
    """Readers polling the document while it is rewritten never see a partial file."""
    record_publication(tmp_path, publication(0))
    stop, seen, errors = threading.Event(), set(), []

    def read() -> None:
        while not stop.is_set():
            try:
                seen.add(read_document(tmp_path, "delta").current.version)
            except PublicationError as error:
                errors.append(error)

    reader = threading.Thread(target=read)
    reader.start()
    for version in range(1, 300):
        record_publication(tmp_path, publication(version))
    stop.set()
    reader.join()
    assert errors == []
    assert len(seen) > 1, "the reader never saw a new version"
    assert not list(publish.publication_path(tmp_path, "delta").parent.glob(".*.tmp")), "temporary files left behind"


def test_an_unreadable_document_is_an_error_naming_the_file(tmp_path):
    path = publish.publication_path(tmp_path, "delta")
    path.parent.mkdir(parents=True)
    path.write_text('{"current": {"version": ')
    with pytest.raises(PublicationError, match=str(path)):
        read_document(tmp_path, "delta")
    path.write_text(json.dumps({"current": {"no_such_field": 1}}))
    with pytest.raises(PublicationError, match="not a publication document"):
        read_document(tmp_path, "delta")


def view_rows(pending: str) -> pa.Table:
    written = {"written_by_invocation_id": "w", "written_at": dt.datetime(2026, 11, 26, 9, tzinfo=dt.UTC)}
    return view_table([view_row("m1", "USD", "1.00", pending, "0.10", 3, **written), view_row("m2", "EUR", "2.50", "0.00", "0.00", 5, **written)])


def test_a_published_delta_version_is_read_as_committed_without_spark(tmp_path):
    from deltalake import write_deltalake

    table = tmp_path / "view"
    write_deltalake(str(table), view_rows("4.00"))
    write_deltalake(str(table), view_rows("9.00"), mode="overwrite")
    first = Publication("delta", str(table), 0, None, "b0", 5, "2026-11-26T10:00:00.000000+00:00")
    rows = {r["merchant_id"]: r for r in publish.read_published_view(first).to_pylist()}
    assert rows["m1"]["pending_balance"] == Decimal("4.00") and rows["m2"]["available_balance"] == Decimal("2.50")
    later = replace(first, version=1)
    assert [r["pending_balance"] for r in publish.read_published_view(later, "m1").to_pylist()] == [Decimal("9.00")]
    with pytest.raises(ValueError, match="merchant id"):
        publish.read_published_view(later, "m1' or '1'='1")
    with pytest.raises(PublicationError, match="version 7"):
        publish.read_published_view(replace(first, version=7))


def test_only_an_invocation_that_ran_the_view_and_its_reconciliation_publishes(tmp_path, monkeypatch):
    """``publish_after``'s decision, before it asks Spark for the version: invocations that ran
    neither node change nothing; a failure of either is recorded; a success without the
    reconciliation publishes nothing."""
    monkeypatch.setattr("payledger.formats.session_format", lambda _spark: "delta")
    spark = SimpleNamespace()  # never asked: each case returns before reading the view

    def invocation(success: bool, *nodes: str):
        return SimpleNamespace(args=("build",), success=success, nodes=dict.fromkeys(nodes), invocation_id="i", failures=lambda: ["x: fail"], exception=None)

    assert publish.publish_after(invocation(False, "model.payledger.stg_payledger__merchants"), spark, tmp_path) is None
    assert read_document(tmp_path, "delta").last_failed_build is None
    assert publish.publish_after(invocation(True, publish.VIEW_NODE), spark, tmp_path) is None
    compiled = invocation(True, publish.VIEW_NODE, publish.RECONCILIATION_NODE)
    compiled.args = ("compile",)
    assert publish.publish_after(compiled, spark, tmp_path) is None  # compile lists nodes it never ran
    assert publish.publish_after(invocation(False, publish.VIEW_NODE, publish.RECONCILIATION_NODE), spark, tmp_path) is None
    assert read_document(tmp_path, "delta").last_failed_build["failures"] == ["x: fail"]
    assert read_document(tmp_path, "delta").current is None


def test_an_audited_version_the_readers_cannot_open_is_not_published(tmp_path, monkeypatch):
    """The build passed, but its version does not open without Spark: nothing is published and the
    publication failure is on record."""
    monkeypatch.setattr("payledger.formats.session_format", lambda _spark: "delta")
    missing = publish.TableVersion(str(tmp_path / "missing"), 3, None, "2026-11-26T10:00:00.000+00:00")
    monkeypatch.setattr(publish, "committed_version", lambda _spark, _format, _table=publish.VIEW: missing)
    monkeypatch.setattr(publish, "_audit_marks", lambda _spark, _format, _build, _version=None: (None, None))
    audited = SimpleNamespace(args=("build",), success=True, nodes=dict.fromkeys([publish.VIEW_NODE, publish.RECONCILIATION_NODE]), invocation_id="i")
    assert publish.publish_after(audited, SimpleNamespace(), tmp_path) is None
    document = read_document(tmp_path, "delta")
    assert document.current is None and document.last_failed_build["failures"][0].startswith("publication: cannot read version 3")


def test_payledger_balance_reads_published_versions_without_a_jvm(tmp_path):
    """``history.published_balance`` (what ``payledger balance`` runs by default): the current
    publication, a kept build, a moment between two commits; errors name what is available."""
    from deltalake import DeltaTable, write_deltalake

    from payledger.history import HistoryError, published_balance

    warehouse, table = tmp_path / "warehouse", tmp_path / "view"
    with pytest.raises(HistoryError, match="no build has published"):
        published_balance(warehouse, "delta", "m1")
    builds = ["0a0a0a0a-0000-4000-8000-00000000000a", "0b0b0b0b-0000-4000-8000-00000000000b"]
    committed = ["2026-11-26T10:00:00.000+00:00", "2026-11-26T11:00:00.000+00:00"]
    for version, (pending, build, when) in enumerate(zip(("4.00", "9.00"), builds, committed, strict=True)):
        write_deltalake(str(table), view_rows(pending), mode="overwrite")
        record_publication(warehouse, Publication("delta", str(table), version, None, build, 5, when, when, 40 + version, None))
    write_deltalake(str(table), view_rows("77.00"), mode="overwrite")  # committed, never published

    now = published_balance(warehouse, "delta", "m1")
    assert (now.build.invocation_id, now.build.view_version, now.build.events_watermark) == (builds[1], 1, 41)
    assert [(r["currency"], r["pending_balance"], r["written_at"]) for r in now.rows] == [("USD", Decimal("9.00"), dt.datetime(2026, 11, 26, 9))]
    assert published_balance(warehouse, "delta", "m1", build=builds[0]).rows[0]["pending_balance"] == Decimal("4.00")
    between = dt.datetime(2026, 11, 26, 10, 30, tzinfo=dt.UTC)
    assert published_balance(warehouse, "delta", "m1", as_of=between).build.invocation_id == builds[0]
    for kwargs, words in (
        ({"build": "0c0c0c0c-0000-4000-8000-00000000000c"}, f"published no version.*available: from build {builds[0]}"),
        ({"as_of": between.replace(hour=9)}, "before the first build"),
        ({"as_of": dt.datetime(2999, 1, 1, tzinfo=dt.UTC)}, "in the future"),
        ({"currency": "GBP"}, "it holds USD"),
    ):
        with pytest.raises(HistoryError, match=words):
            published_balance(warehouse, "delta", "m1", **kwargs)
    with pytest.raises(ValueError, match="merchant id"):
        published_balance(warehouse, "delta", "m1' or 'x")

    # Retention removed build 0's files: it is beyond the retained history; build 1 still reads.
    for uri in DeltaTable(str(table), version=0).file_uris():
        (table / Path(uri).name).unlink()
    with pytest.raises(HistoryError, match=f"beyond the retained history.*available: from build {builds[1]}"):
        published_balance(warehouse, "delta", "m1", build=builds[0])
    assert published_balance(warehouse, "delta", "m1", build=builds[1]).rows[0]["pending_balance"] == Decimal("9.00")


def test_the_publication_follows_maintenance_only_when_nothing_but_maintenance_came_after_it(tmp_path, monkeypatch):
    """``follow_maintenance``'s decision (Spark's parts replaced): after compaction and vacuum the
    current publication, and a kept one of the same version, read the maintenance commit; a build's
    commit in between leaves them as they are."""
    from payledger.formats import Commit

    def commit(version: int, kind: str) -> Commit:
        return Commit(version, version - 1, kind.upper(), kind, 0, 0, {}, dt.datetime(2026, 11, 26, tzinfo=dt.UTC), {})

    log = [commit(3, "merge"), commit(4, "maintenance"), commit(5, "maintenance")]
    relation = []
    monkeypatch.setattr("payledger.formats.session_format", lambda _spark: "delta")
    monkeypatch.setattr("payledger.formats.table_commits", lambda _spark, _table: log)
    monkeypatch.setattr(publish, "committed_version", lambda _spark, _format, _table=publish.VIEW: publish.TableVersion("/v", log[-1].version, None, "t"))
    monkeypatch.setattr(publish, "point_relation", lambda _spark, p: relation.append(p.readable_version))
    for version, build in ((2, "b"), (3, "c"), (1, "d"), (3, "c")):  # a rollback to 1, then 3 again
        record_publication(tmp_path, replace(publication(version, location="/v"), invocation_id=build))

    followed = publish.follow_maintenance(SimpleNamespace(), tmp_path)
    document = read_document(tmp_path, "delta")
    assert (followed.version, followed.read_version, document.current.readable_version) == (3, 5, 5)
    assert [(p.version, p.readable_version) for p in document.previous] == [(1, 1), (3, 5), (2, 2)]
    assert relation == [5]

    log.append(commit(6, "merge"))  # a build moved the view on: it publishes on its own
    log.append(commit(7, "maintenance"))
    assert publish.follow_maintenance(SimpleNamespace(), tmp_path).readable_version == 5
    assert relation == [5]


def test_payledger_balance_without_a_jvm_says_which_target_it_cannot_read(monkeypatch):
    """The Thrift target's tables are the server's: the JVM-free reader has no format for it."""
    from click.testing import CliRunner

    from payledger.cli import main

    monkeypatch.setenv("PAYLEDGER_TARGET", "thrift")
    result = CliRunner().invoke(main, ["balance", "m1"])
    assert result.exit_code == 1 and "Error: target thrift configures no Delta or Iceberg" in result.output, result.output


def test_builds_and_tests_check_history_since_a_checked_publication(tmp_path, monkeypatch):
    from payledger.dbt import checked_since_published

    monkeypatch.setenv("PAYLEDGER_WAREHOUSE", str(tmp_path))
    monkeypatch.setenv("PAYLEDGER_FORMAT", "delta")
    for name in ("DBT_FULL_REFRESH", "PAYLEDGER_TARGET", "DBT_TARGET", "DBT_ENGINE_TARGET"):
        monkeypatch.delenv(name, raising=False)
    still_there = {"answer": True}
    monkeypatch.setattr("payledger.formats.DeltaFormat.time_travels_to", lambda _self, location, version: still_there["answer"])
    build = ("build", "--select", "merchant_balance_current")
    # Nothing published yet, then a publication whose build did not run every check: every row.
    assert checked_since_published(build) is None
    record_publication(tmp_path, replace(publication(5), events_watermark=41, read_version=6))
    assert checked_since_published(build) is None
    record_publication(tmp_path, replace(publication(5), events_watermark=41, read_version=6, checked=True))
    # Maintenance rewrote version 5's files as version 6: the version readers open.
    # Rows written after the publication (its published_at, as UTC) are the later builds'.
    since = {"events_watermark": 41, "view_version": 6, "written_after": "2026-11-26 10:00:00.000000"}
    assert checked_since_published(build) == since
    assert checked_since_published(("test", "--vars", '{"reconcile_full": true}')) == since
    record_publication(tmp_path, replace(publication(5, when="2026-11-26T12:30:00.250000+02:00"), events_watermark=41, read_version=6, checked=True))
    assert checked_since_published(build)["written_after"] == "2026-11-26 10:30:00.250000"
    record_publication(tmp_path, replace(publication(5, when="2026-11-26T12:30:00.250000"), events_watermark=41, read_version=6, checked=True))
    assert checked_since_published(build)["written_after"] == "2026-11-26 12:30:00.250000"
    # A clock behind the publication's time: a build's rows could be stamped before it.
    ahead = (dt.datetime.now(dt.UTC) + dt.timedelta(minutes=5)).isoformat()
    record_publication(tmp_path, replace(publication(5, when=ahead), events_watermark=41, read_version=6, checked=True))
    assert checked_since_published(build) is None
    record_publication(tmp_path, replace(publication(5), events_watermark=41, read_version=6, checked=True))
    assert checked_since_published(build) == since
    # Other commands, full refreshes and the Thrift target (whose builds publish nothing): every row.
    for args in (("run",), ("build", "--full-refresh"), ("build", "-f"), ("build", "--target", "thrift")):
        assert checked_since_published(args) is None, args
    monkeypatch.setenv("DBT_FULL_REFRESH", "true")
    assert checked_since_published(build) is None
    monkeypatch.delenv("DBT_FULL_REFRESH")
    # A table that no longer holds the published version; a build that failed since it.
    still_there["answer"] = False
    assert checked_since_published(build) is None
    still_there["answer"] = True
    record_failed_build(tmp_path, "delta", "b9", ["test.payledger.x: fail"])
    assert checked_since_published(build) is None


def test_a_publication_is_checked_when_its_build_ran_and_passed_every_history_check():
    from payledger.publish import history_checks_ran

    manifest = {
        "nodes": {
            "test.payledger.accounted": {"resource_type": "test", "depends_on": {"macros": ["macro.payledger.checked_since"]}},
            "test.payledger.valid_rows_a": {"resource_type": "test", "depends_on": {"macros": []}, "test_metadata": {"kwargs": {"scoped_by": "ingest_seq"}}},
            "test.payledger.valid_rows_b": {"resource_type": "test", "depends_on": {"macros": []}, "test_metadata": {"kwargs": {}}},
            "model.payledger.view": {"resource_type": "model", "depends_on": {"macros": ["macro.payledger.checked_since"]}},
        }
    }

    def ran(**statuses) -> SimpleNamespace:
        return SimpleNamespace(nodes={f"test.payledger.{name}": SimpleNamespace(status=status) for name, status in statuses.items()}, manifest=manifest)

    assert history_checks_ran(ran(accounted="pass", valid_rows_a="pass"))
    assert not history_checks_ran(ran(accounted="pass"))  # a selection that left one out
    assert not history_checks_ran(ran(accounted="pass", valid_rows_a="fail"))
    assert not history_checks_ran(SimpleNamespace(nodes={}, manifest=None))


def test_a_table_time_travels_to_the_versions_it_still_holds(tmp_path):
    from deltalake import write_deltalake

    from payledger.formats import format_named

    delta, iceberg = format_named("delta"), format_named("iceberg")
    for version in range(3):
        write_deltalake(str(tmp_path / "d"), view_table([view_row("m1", "USD", str(version), "0", "0", version)]), mode="append")
    assert [delta.time_travels_to(str(tmp_path / "d"), v) for v in (0, 2, 3)] == [True, True, False]
    assert not delta.time_travels_to(str(tmp_path / "nothing"), 0)
    # Iceberg: the snapshots the newest metadata file lists (a replaced table lists only its own).
    metadata = tmp_path / "i" / "metadata"
    metadata.mkdir(parents=True)
    (metadata / "00000-a.metadata.json").write_text(json.dumps({"format-version": 2, "snapshots": [{"snapshot-id": 11}, {"snapshot-id": 12}]}))
    assert [iceberg.time_travels_to(str(tmp_path / "i"), s) for s in (11, 12)] == [True, True]
    newer = metadata / "00001-b.metadata.json"
    newer.write_text(json.dumps({"format-version": 2, "snapshots": [{"snapshot-id": 13}]}))
    os.utime(newer, ns=(time.time_ns() + 10**9,) * 2)  # written later, whatever the clock's granularity
    assert [iceberg.time_travels_to(str(tmp_path / "i"), s) for s in (12, 13)] == [False, True]
    assert not iceberg.time_travels_to(str(tmp_path / "nothing"), 13)


def test_run_dbt_starts_the_embedded_session_as_payledger_makes_it_before_dbt(tmp_path, monkeypatch):
    """dbt-spark reuses the process's session: run_dbt makes it first (``get_spark`` with the
    command's target) for commands that connect on the embedded targets, never for the Thrift
    target or for commands that open no connection. A command line that names no target has its
    JVM launched before dbt is imported (``launch_spark``, the profile's default target)."""
    from payledger import dbt
    from payledger.spark import default_target

    monkeypatch.setenv("PAYLEDGER_WAREHOUSE", str(tmp_path))
    monkeypatch.delenv("DBT_TARGET", raising=False)
    events: list[tuple] = []
    monkeypatch.setattr("payledger.spark.get_spark", lambda target=None: events.append(("session", target)))
    monkeypatch.setattr("payledger.spark.launch_spark", lambda target=None: events.append(("launch", target)))

    class Runner:
        def __init__(self, callbacks):
            pass

        def invoke(self, argv):
            events.append(("dbt", argv[0]))
            return type("Outcome", (), {"result": None, "success": True, "exception": None})()

    monkeypatch.setattr("dbt.cli.main.dbtRunner", Runner)
    for args, expected in (
        (("source", "freshness", "--target", "iceberg"), [("session", "iceberg"), ("dbt", "source")]),
        (("build", "--target", "delta"), [("session", "delta"), ("dbt", "build")]),
        (("build", "--target", "thrift"), [("dbt", "build")]),
        (("parse",), [("dbt", "parse")]),
        (("build", "--select", "merchant_balance_current"), [("launch", None), ("session", default_target()), ("dbt", "build")]),
        (("test", "-t", "delta"), [("session", "delta"), ("dbt", "test")]),
    ):
        events.clear()
        dbt.run_dbt(*args, target_path=tmp_path / "target")
        assert events == expected, args
    # A target from the environment is dbt's to read: no launch before dbt is imported.
    monkeypatch.setenv("DBT_TARGET", "iceberg")
    events.clear()
    dbt.run_dbt("build", target_path=tmp_path / "target")
    assert events == [("session", "iceberg"), ("dbt", "build")]
