"""Table maintenance (``payledger maintain`` and the scheduled build's maintenance step): compaction
and delete purge keep every committed row, retention decides how far back time travel reaches, and
maintenance never runs while a build holds the warehouse's lock."""

from __future__ import annotations

import collections
import json

import pytest
from click.testing import CliRunner

from payledger.cli import main
from payledger.formats import table_commits
from payledger.locks import EXIT_LOCKED, BuildLocked, build_lock
from payledger.maintain import file_counts, maintain, maintain_tables, project_tables
from payledger.schedule import scheduled_build
from payledger.warehouse import VIEW
from tests.support import SCENARIO_SELECTION, History, event, merchant, policy

pytestmark = [pytest.mark.integration, pytest.mark.both_formats, pytest.mark.slow]


def contents(spark, table: str, version: object | None = None) -> collections.Counter:
    """Every row of ``table`` (at ``version``, a Delta version or Iceberg snapshot id) as a multiset."""
    suffix = f" version as of {version}" if version is not None else ""
    return collections.Counter(tuple(row) for row in spark.sql(f"select * from {table}{suffix}").collect())


def land_in_batches(dbt, warehouse, history: History, batches: int) -> None:
    """A few merchants in two segments and ``batches`` builds of new events: the first build writes
    the view and the checkpoint, each later one merges into them (more files, deletes kept beside
    them)."""
    history.land_merchants(warehouse, [merchant(f"m{i}", "retail" if i % 2 else "travel", "2026-01-01") for i in range(12)])
    history.land_policies(warehouse, [policy("retail", "0.1000", "2026-01-01"), policy("travel", "0.0500", "2026-01-01")])
    for batch in range(batches):
        # The first batch touches every merchant, later ones a few: a MERGE that changes some rows
        # of a file keeps the file and deletes those rows beside it.
        touched = range(12) if batch == 0 else range(batch, 12, 5)
        history.land_events(
            warehouse,
            [event(f"b{batch}e{i}", f"m{i}", "capture_settled", "10.00", f"2026-03-0{1 + batch} 10:00:00") for i in touched]
            + [event(f"b{batch}r{i}", f"m{i}", "funds_released", "4.00", f"2026-03-0{1 + batch} 12:00:00") for i in touched if i % 3 == 0],
        )
        dbt.scenario_build()


def test_maintenance_keeps_every_row_and_the_retained_history_and_compacts_files_and_deletes(dbt, warehouse):
    history = History()
    land_in_batches(dbt, warehouse, history, batches=2)
    spark = warehouse.spark
    tables = project_tables(spark)
    assert VIEW in tables and "payledger_raw.payment_events" in tables
    before = {table: contents(spark, table) for table in tables}
    last_versions = {table: table_commits(spark, table)[-1].version for table in tables}
    view_before = file_counts(spark, VIEW)
    assert view_before.delete_files > 0 and view_before.data_files > 1, view_before

    done = {m.table: m for m in maintain_tables(spark, warehouse.warehouse, every_commits=1)}

    assert VIEW in done and done[VIEW].before == view_before
    view_after = file_counts(spark, VIEW)
    assert view_after.delete_files == 0, view_after
    assert view_after.data_files < view_before.data_files, (view_before, view_after)
    for table in tables:
        assert contents(spark, table) == before[table], f"maintenance changed the rows of {table}"
        # Within the retention period, the version before maintenance stays readable as it was.
        assert contents(spark, table, last_versions[table]) == before[table], table
    history.assert_view_matches(warehouse)

    # Not due again until a table gets new commits; the next build still maintains the view
    # incrementally, and the cron path runs maintenance when a table is due.
    assert maintain_tables(spark, warehouse.warehouse, every_commits=2) == []
    history.land_events(warehouse, [event("late1", "m1", "funds_released", "2.00", "2026-03-01 18:00:00")])
    history.land_policies(warehouse, [policy("retail", "0.2000", "2026-03-02")])
    records: list[dict] = []
    code = scheduled_build(build_args=SCENARIO_SELECTION, emit=records.append, maintain_every=1)
    assert code == 0, records
    maintained = [r for r in records if r["event"] == "maintenance"]
    assert maintained and VIEW in [t["table"] for t in maintained[0]["tables"]], records
    assert [r["event"] for r in records] == ["lock_acquired", "freshness", "build", "maintenance", "done"]
    assert file_counts(spark, VIEW).delete_files == 0
    history.assert_view_matches(warehouse)

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
