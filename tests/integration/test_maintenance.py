"""Table maintenance (``payledger maintain`` and the scheduled build's maintenance step): compaction
and delete purge keep every committed row, retention decides how far back time travel reaches, and
maintenance never runs while a build holds the warehouse's lock."""

from __future__ import annotations

import collections
import datetime as dt
import json

import pytest
from click.testing import CliRunner

from payledger import maintain as maintain_module
from payledger.cli import main
from payledger.formats import table_commits
from payledger.locks import EXIT_LOCKED, BuildLocked, build_lock
from payledger.maintain import FileCounts, dedup_index_appended, file_counts, maintain, maintain_tables, project_tables
from payledger.schedule import scheduled_build
from payledger.warehouse import CANONICAL, DEDUP_DIRECTORY, DEDUP_INDEX, VIEW
from tests import histories
from tests.support import SCENARIO_SELECTION, History, assert_canonical_files_in_bucket_order, event, merchant, policy, rejects_of

pytestmark = [pytest.mark.integration, pytest.mark.both_formats, pytest.mark.slow]


def contents(spark, table: str, version: object | None = None) -> collections.Counter:
    """Every row of ``table`` (at ``version``, a Delta version or Iceberg snapshot id) as a multiset."""
    suffix = f" version as of {version}" if version is not None else ""
    rows = spark.sql(f"select * from {table}{suffix}").collect()
    return collections.Counter(tuple(tuple(value) if isinstance(value, list) else value for value in row) for row in rows)


def last_version_before_maintenance(commits: list) -> object:
    """The version of the last of a table's ``commits`` that was not maintenance (rows as the build
    left them)."""
    return [commit for commit in commits if commit.kind != "maintenance"][-1].version


def test_the_scheduled_build_maintains_every_due_table_keeping_every_row_and_the_retained_history(dbt, warehouse, monkeypatch):
    history = History()
    spark = warehouse.spark
    history.land_merchants(warehouse, [merchant(f"m{i}", "retail" if i % 2 else "travel", "2026-01-01") for i in range(12)])
    history.land_policies(warehouse, [policy("retail", "0.1000", "2026-01-01"), policy("travel", "0.0500", "2026-01-01")])
    # The first build writes the view and the checkpoint; the second (the cron path) merges a few
    # merchants' new events and a policy change into them: a MERGE that changes some rows of a file
    # keeps the file and deletes those rows beside it. Then it maintains every table with a commit
    # since its last maintenance: all of them, never maintained.
    history.land_events(
        warehouse,
        [event(f"a{i}", f"m{i}", "capture_settled", "10.00", "2026-03-01 10:00:00") for i in range(12)]
        + [event(f"r{i}", f"m{i}", "funds_released", "4.00", "2026-03-01 12:00:00") for i in range(0, 12, 3)]
        + [event("c3", "m3", "capture_settled", "5.00", "2026-02-27 09:00:00"), event("c4", "m4", "capture_settled", "5.00", "2026-02-27 10:00:00")]
        + [event("t1", "m2", "capture_settled", "1.00", None)],  # no event time: rejected, the null day
    )
    dbt.scenario_build()
    history.land_events(
        warehouse,
        [event(f"b{i}", f"m{i}", "capture_settled", "10.00", "2026-03-02 10:00:00") for i in range(1, 12, 5)]
        + [event("late1", "m1", "funds_released", "2.00", "2026-03-01 18:00:00")]
        + [event("late0", "m4", "funds_released", "1.00", "2026-02-27 18:00:00"), event("t2", "m2", "capture_settled", "1.00", None)],
    )
    history.land_policies(warehouse, [policy("retail", "0.2000", "2026-03-02")])
    records: list[dict] = []
    builds = []
    # Only the generic tests left out here: the scheduled build itself leaves out the unit tests.
    code = scheduled_build(
        build_args=("--exclude", "test_type:generic"), emit=records.append, maintain_every=1, on_build=lambda build, _work: builds.append(build)
    )

    assert code == 0, records
    ran = {uid.split(".")[0] for uid in builds[0].nodes}
    assert "test" in ran and "unit_test" not in ran, sorted(builds[0].nodes)
    assert [r["event"] for r in records] == ["lock_acquired", "freshness", "build", "maintenance", "done"]
    tables = project_tables(spark)
    assert VIEW in tables and "payledger_raw.payment_events" in tables
    done = {t["table"]: t for t in records[3]["tables"]}
    commits = {table: table_commits(spark, table) for table in tables}
    # Every table with a commit was due (never maintained), the view and the landing tables too.
    assert sorted(done) == [table for table in tables if commits[table]], records[3]
    view = done[VIEW]
    assert view["before"]["delete_files"] > 0 and view["before"]["data_files"] > 1, view
    assert view["after"]["delete_files"] == 0 and view["after"]["data_files"] < view["before"]["data_files"], view
    assert file_counts(spark, VIEW) == FileCounts(**view["after"])
    for table in done:
        # Within the retention period, the version the build left stays readable as it was, and
        # maintenance changed no row.
        assert contents(spark, table) == contents(spark, table, last_version_before_maintenance(commits[table])), table
    history.assert_view_matches(warehouse)
    # Canonical events of 2026-03-01 and 2026-02-27 were in two files each (the first build's and
    # a late event the second appended, its bucket inside the first file's range), and so were the
    # rejected rows without an event time (the null day, one merchant's bucket twice): maintenance
    # sorted those three days again, in a commit of its own that rewrote their rows (a maintenance
    # commit, not an append); 2026-03-02, one file, it left alone. Every day is one file in bucket
    # order.
    assert done[CANONICAL]["partitions_sorted"] == 3, done[CANONICAL]
    day_rows = warehouse.rows(f"select count(*) as n from {CANONICAL} where event_date in (date '2026-03-01', date '2026-02-27') or event_date is null")[0]["n"]
    rewrites = [commit for commit in commits[CANONICAL] if commit.kind == "maintenance" and commit.rows_written]
    assert [commit.rows_written for commit in rewrites] == [day_rows], [(c.operation, c.kind, c.rows_written) for c in commits[CANONICAL]]
    files = warehouse.rows(
        f"select event_date, count(distinct file) as files from (select event_date, input_file_name() as file from {CANONICAL}) group by event_date"
    )
    assert all(row["files"] == 1 for row in files), files
    assert_canonical_files_in_bucket_order(warehouse)
    # Not due again until a table gets new commits.
    assert maintain_tables(spark, warehouse.warehouse, every_commits=2) == []

    # Retention decides how far back time travel reaches: 168 h kept the versions of today's
    # builds; with 0 h only the current version stays readable, and it is unchanged.
    first_version = table_commits(spark, VIEW)[0].version
    current = contents(spark, VIEW)
    assert contents(spark, VIEW, first_version) != current
    maintain_tables(spark, warehouse.warehouse, every_commits=0, tables=[VIEW], retention_hours=0)
    assert contents(spark, VIEW) == current
    with pytest.raises(Exception, match=r"(?i)does not exist|not found|cannot find snapshot"):
        contents(spark, VIEW, first_version)
    history.assert_view_matches(warehouse)

    # Maintenance sorts the dedup index again once enough ids were appended to it since its last
    # sort (here: any); then the directory lists only the new sort's units.
    sort_after_units = maintain_module.SORT_DEDUP_INDEX_AFTER_UNITS
    monkeypatch.setattr(maintain_module, "SORT_DEDUP_INDEX_AFTER_UNITS", 0)
    appended, _ = dedup_index_appended(spark)
    assert appended == 5, appended  # the second build's accepted events (t2 was rejected)
    indexed = f"select event_id, ingest_seq, payload_hash from {DEDUP_INDEX} order by event_id"
    before = warehouse.rows(indexed)
    maintain_tables(spark, warehouse.warehouse, every_commits=0, tables=[DEDUP_INDEX])
    assert dedup_index_appended(spark)[0] == 0
    assert warehouse.rows(indexed) == before
    bases = warehouse.rows(f"select distinct unit_base from {DEDUP_INDEX}")
    directory_base = f"select max(unit_base) as b from {DEDUP_DIRECTORY}"
    assert len(bases) == 1 and bases[0]["unit_base"] == warehouse.rows(directory_base)[0]["b"], bases

    # make soak: scheduled builds of four new events each, as cron runs them (maintenance when due:
    # every 24 commits; the index sorted again once its appended part outnumbers the real
    # threshold), so that histories.LATER_BUILDS builds come between the first day's build and the
    # re-send (make test: 1, the scheduled build above).
    monkeypatch.setattr(maintain_module, "SORT_DEDUP_INDEX_AFTER_UNITS", sort_after_units)
    sorted_after: list[int] = []  # the later builds whose maintenance sorted the index again
    for build in range(2, histories.LATER_BUILDS + 1):
        day = dt.date(2026, 3, 1) + dt.timedelta(days=build)
        history.land_events(
            warehouse, [event(f"n{build}-{i}", f"m{(build + i) % 12}", "capture_settled", f"{i + 1}.25", f"{day} 0{i}:00:00") for i in range(4)]
        )
        base = warehouse.rows(directory_base)[0]["b"]
        records: list[dict] = []
        code = scheduled_build(build_args=SCENARIO_SELECTION, emit=records.append, maintain_every=maintain_module.DEFAULT_EVERY_COMMITS)
        assert code == 0, records
        if warehouse.rows(directory_base)[0]["b"] != base:
            sorted_after.append(build)
    # The sort above made units of 8, 8 and 4 ids (tests/conftest.py: 8 a unit), so 20 units are
    # about 134 ids, 34 of these builds. The index gets one commit a build, and its maintenance, due
    # every 24 commits, sorts it when the 49th later build (the 48th of these) has appended 192.
    if histories.LATER_BUILDS >= 60:
        assert sorted_after, "no scheduled maintenance sorted the dedup index again"

    # The next build folds new events into the maintained tables as into any others, and finds
    # earlier copies in the sorted index: a re-sent event of the history's first day (exact), after
    # histories.LATER_BUILDS builds since that day's, and a reused id (conflicting).
    history.land_events(
        warehouse,
        [
            event("late2", "m6", "funds_released", "1.00", "2026-03-02 18:00:00"),
            event("a3", "m3", "capture_settled", "10.00", "2026-03-01 10:00:00"),
            event("b6", "m6", "capture_settled", "11.00", "2026-03-02 10:00:00"),
        ],
    )
    dbt.scenario_build()
    history.assert_view_matches(warehouse)
    assert sorted(rejects_of(warehouse).values()) == ["conflicting_duplicate", "exact_duplicate", "missing_event_time", "missing_event_time"]
    print(f"maintenance: the first day's event re-sent after {histories.LATER_BUILDS} later builds; the index sorted after {sorted_after}")


def test_maintenance_never_runs_while_a_build_holds_the_lock_and_exits_75(warehouse):
    with build_lock(warehouse.warehouse):
        with pytest.raises(BuildLocked, match="another build holds"):
            maintain(warehouse.warehouse, wait_s=0)
        result = CliRunner().invoke(main, ["maintain"])
    assert result.exit_code == EXIT_LOCKED, result.output
    assert "another build holds" in result.output
    # Free again: an empty warehouse has nothing to maintain, and says so with no output.
    result = CliRunner().invoke(main, ["maintain"])
    assert result.exit_code == 0, result.output
    assert [json.loads(line) for line in result.output.splitlines()] == []
