"""The balance view end to end: incremental MERGE commits, snapshots, reconciliation, full refresh.

Every test builds the real project with dbt against the embedded Spark warehouse, in the format the
test run was given (PAYLEDGER_FORMAT), from one built state (``base``: ``build_balance_view_base``,
built once per worker and format). The view against the reference fold after late events,
duplicates, every kind of bad row and retroactive changes: the fold lane of
``test_reference_loads.py``.
"""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from payledger.dbt import FULL_RECONCILIATION
from payledger.formats import Commit, session_format, table_commits
from payledger.maintain import current_version
from payledger.publish import read_document
from payledger.reconcile import reconcile
from payledger.spark import project_vars
from payledger.warehouse import CANONICAL, CHECKPOINT, RECONCILIATION_FAILURES, RECONCILIATION_RUNS, VIEW
from tests.support import (
    BALANCE_VIEW_BASE,
    DATA_TESTS_SELECTION,
    BuiltState,
    Landing,
    assert_canonical_files_in_bucket_order,
    event,
    merchant,
    policy,
    view_rows,
)

pytestmark = pytest.mark.integration


def view_snapshots(warehouse) -> list[Commit]:
    return table_commits(warehouse.spark, VIEW)


@pytest.fixture
def base(balance_view_base) -> Landing:
    """A warehouse holding ``build_balance_view_base``'s state (``tests/conftest.py``), built once
    per worker and restored for each test that asks for it."""
    return balance_view_base.restored()


BASE = BALANCE_VIEW_BASE


@pytest.mark.both_formats
@pytest.mark.slow
@BASE
def test_second_run_is_a_merge_commit_on_the_same_table(dbt, base):
    """On the base state (built by one run; each data file of the view holds several rows), a run
    that changes one key of x0, which has rows in two currencies."""
    warehouse = base
    before = view_rows(warehouse)
    first_snapshots = view_snapshots(warehouse)
    # On Iceberg not always the newest commit listed: the base's restore made an older one current.
    head = current_version(warehouse.spark, VIEW)

    warehouse.load("payment_events", [event("e4", "x0", "funds_released", "100.00", "2026-03-03 10:00:00")])
    second = dbt.scenario_build()
    after = view_rows(warehouse)
    snapshots = view_snapshots(warehouse)

    # Same table, linear history: the run added one MERGE commit made on the table's current one.
    assert snapshots[: len(first_snapshots)] == first_snapshots, "earlier commits were lost: table replaced"
    new = snapshots[len(first_snapshots) :]
    assert len(new) == 1, f"one commit per incremental run expected, got {len(new)}"
    assert new[0].parent == head
    assert new[0].kind == "merge", new[0]
    # Merge-on-read MERGE: one changed row written, its old version deleted in place (Delta deletion
    # vector, Iceberg position delete); the untouched rows stay put, x0's EUR row among them.
    assert new[0].rows_written == 1, new[0]
    assert new[0].deletes_in_place >= 1, new[0]
    changed = ("x0", "USD")
    assert ("x0", "EUR") in before and len(before) > 12
    assert after[changed]["written_by_invocation_id"] != before[changed]["written_by_invocation_id"]
    for key in [key for key in before if key != changed]:
        assert after[key] == before[key], f"{key} was rewritten although none of its input changed"
    # x0 is in travel (5%): the release of 100.00 makes 95.00 available and holds 5.00.
    moved = {column: after[changed][column] - before[changed][column] for column in ("available_balance", "pending_balance", "reserve_hold")}
    assert moved == {"available_balance": Decimal("95.00"), "pending_balance": Decimal("-100.00"), "reserve_hold": Decimal("5.00")}
    assert second.success

    # A build with nothing new writes no row, with deletes beside the view's files.
    dbt.scenario_build()
    assert view_rows(warehouse) == after
    assert view_snapshots(warehouse) == snapshots, "an idle build committed to the view"


INCREMENTAL_TABLES = (
    "payledger_intermediate.int_payment_events_classified",
    "payledger.payment_event_rejects",
    "payledger_intermediate.int_merchant_daily_balances",
    "payledger.merchant_balance_current",
    "payledger.balance_invalidations",
    "payledger_snapshots.snp_payledger__reserve_policies",
    "payledger_snapshots.snp_payledger__merchants",
)


def build_later_run(dbt, warehouse) -> dict[str, tuple[list[Commit], int]]:
    """On ``build_balance_view_base``'s state, something for every model and snapshot to write:
    events (one bad), retail's reserve raised to 20% from February 1st (a policy change), m2 moved
    to retail from February 15th; built. Returns each incremental table's commits and current
    version before that build."""
    before = {table: (table_commits(warehouse.spark, table), current_version(warehouse.spark, table)) for table in INCREMENTAL_TABLES}
    warehouse.load("payment_events", [event("e2", "m2", "funds_released", "50.00", "2026-03-02 10:00:00"), event("e3", "m2", "payout_paid", "-1.00", None)])
    warehouse.load("reserve_policies", [policy("retail", "0.2000", "2026-02-01")])
    warehouse.load("merchants", [merchant("m2", "retail", "2026-02-15")])
    dbt.scenario_build()
    return before


@pytest.fixture(scope="module")
def later_run_state(spark, dbt, balance_view_base, tmp_path_factory) -> BuiltState:
    """``build_later_run`` on the base state: built once per worker, for the two tests that start
    from it (one build instead of one each)."""
    return BuiltState(spark, tmp_path_factory.mktemp("balance-view-later"), lambda landing: build_later_run(dbt, landing), parent=balance_view_base)


@pytest.mark.both_formats
@pytest.mark.slow
@BASE
def test_later_runs_of_every_incremental_model_and_snapshot_commit_in_place(later_run_state):
    """From each table's own commit history: a later run merges or appends, never replaces (a
    snapshot then records its inputs in its properties: ``properties``); and the canonical events
    it appended are stored in bucket order, as the first build's are."""
    warehouse = later_run_state.restored()
    before = later_run_state.result
    assert all(earlier for earlier, _ in before.values()), before
    for table, (earlier, head) in before.items():
        commits = table_commits(warehouse.spark, table)
        assert commits[: len(earlier)] == earlier, f"{table}: earlier commits lost or rewritten"
        new = commits[len(earlier) :]
        assert new, f"{table}: the second run wrote nothing"
        written = {commit.kind for commit in new} - {"properties"}
        assert written and written <= {"merge", "append"}, f"{table}: {[(c.operation, c.kind) for c in new]}"
        assert new[0].parent == head, f"{table}: the new commit is not made on the current one"
    assert_canonical_files_in_bucket_order(warehouse)


@pytest.mark.both_formats
@pytest.mark.slow
@BASE
def test_snapshots_keep_history_across_changes_and_a_full_refresh(dbt, later_run_state):
    # From the base state and a build that raised retail's reserve to 20% (and moved m2).
    warehouse = later_run_state.restored()
    # An idle re-run adds and closes no version: test_invalidation.py's idle-build test (no commit
    # on either snapshot). The next changes are captured by the full refresh's build: dbt runs
    # snapshots in it as in any build (they have no full refresh), with every data test.
    warehouse.load("reserve_policies", [policy("retail", "0.3000", "2026-02-01")])
    warehouse.load("merchants", [merchant("m1", "travel", "2026-02-15")])
    dbt("build", *DATA_TESTS_SELECTION, "--full-refresh", "--vars", '{"allow_full_refresh": true}')
    warehouse.load("reserve_policies", [policy("retail", "0.4000", "2026-02-01")])
    dbt.scenario_build()  # after the full refresh, snapshots still close and add versions

    versions = warehouse.rows(
        "select reserve_pct, dbt_valid_from, dbt_valid_to from payledger_snapshots.snp_payledger__reserve_policies "
        "where segment = 'retail' order by dbt_valid_from"
    )
    assert [v["reserve_pct"] for v in versions] == [Decimal(p) for p in ("0.1000", "0.2000", "0.3000", "0.4000")]
    assert [v["dbt_valid_to"] for v in versions[:-1]] == [v["dbt_valid_from"] for v in versions[1:]]
    assert versions[-1]["dbt_valid_to"] is None
    segments = warehouse.rows("select segment from payledger_snapshots.snp_payledger__merchants where merchant_id = 'm1' order by dbt_valid_from")
    assert [s["segment"] for s in segments] == ["retail", "travel"]
    # m1 is in travel (5%) from 2026-02-15, so the March release holds 5.00.
    assert view_rows(warehouse)[("m1", "USD")]["reserve_hold"] == Decimal("5.00")


def reconciliation_runs(warehouse) -> list[dict]:
    return warehouse.rows(f"select * from {RECONCILIATION_RUNS} order by build_seq")


def stored_failures(warehouse) -> list[tuple]:
    columns = ("merchant_id", "currency", "view_pending_balance", "replayed_pending_balance", "reconciliation_slice", "build_seq", "invocation_id")
    return [tuple(f[c] for c in columns) for f in warehouse.rows(f"select * from {RECONCILIATION_FAILURES}")]


@BASE
def test_rotating_reconciliation_names_a_wrong_untouched_key_within_n_builds_and_the_full_one_at_once(dbt, base):
    warehouse = base
    slices = 3
    with_slices = ("--vars", json.dumps({"reconcile_slices": slices}))
    wrong_slice = key_slice(warehouse, "m2", slices)
    # m2's events as rows classified before the bucket column existed (null there): still in m2's slice.
    warehouse.spark.sql(f"update {CANONICAL} set reconciliation_bucket = null where merchant_id = 'm2'")
    warehouse.spark.sql(f"update {VIEW} set pending_balance = pending_balance + 1 where merchant_id = 'm2'")
    # Later batches touch m1 only: m2's wrong row stays as it is, and only the rotating slice finds it.
    warehouse.load("payment_events", [event("e9", "m1", "capture_settled", "5.00", "2026-03-02 10:00:00")])
    builds = []
    while not builds or (builds[-1].success and len(builds) < slices):
        published = read_document(warehouse.warehouse, session_format(warehouse.spark))
        # The first build folds the batch; then the view's model and its tests, as a scheduled build
        # with nothing new runs them.
        select = ("--select", "merchant_balance_current") if builds else ()
        builds.append(dbt.scenario_build(*select, *with_slices, check=False))
    failed = builds[-1]
    assert not failed.success, f"{slices} builds of {slices} slices passed with m2's row wrong: {[b.failures() for b in builds]}"
    assert failed.status("assert_merchant_balance_current_reconciles") == "fail"
    runs = reconciliation_runs(warehouse)[-len(builds) :]
    assert [r["invocation_id"] for r in runs] == [b.invocation_id for b in builds]
    # One slice per build, the next one each time: build_seq mod N.
    assert [r["checked_slices"] for r in runs] == [[r["build_seq"] % slices] for r in runs]
    assert [r["build_seq"] for r in runs] == list(range(runs[0]["build_seq"], runs[0]["build_seq"] + len(runs)))
    assert [r["status"] for r in runs] == ["pass"] * (len(runs) - 1) + ["fail"] and runs[-1]["checked_slices"] == [wrong_slice]
    assert stored_failures(warehouse) == [("m2", "USD", Decimal("8.00"), Decimal("7.00"), wrong_slice, runs[-1]["build_seq"], failed.invocation_id)]
    # Write-audit-publish: readers keep the version that passed; the failure is on record.
    assert failed.publication is None
    after = read_document(warehouse.warehouse, session_format(warehouse.spark))
    assert after.current == published.current
    assert after.failed_since_published() and after.last_failed_build["invocation_id"] == failed.invocation_id
    assert any("assert_merchant_balance_current_reconciles" in line for line in after.last_failed_build["failures"])

    # A slice found wrong is compared again on every build, with the next one, until it passes.
    again = dbt("build", "--select", "merchant_balance_current", *with_slices, check=False)
    assert not again.success
    last = reconciliation_runs(warehouse)[-1]
    assert last["checked_slices"] == sorted({wrong_slice, last["build_seq"] % slices}), last
    freshness = dbt("run-operation", "balance_freshness", *with_slices).logged_json("FRESHNESS_JSON")
    passed = {r["checked_slices"][0] for r in runs if r["status"] == "pass"}
    assert freshness["slices_never_reconciled"] == slices - len(passed) and freshness["oldest_last_reconciled_at"] is None, freshness

    # The full reconciliation compares every key at once, whatever the stored failures say.
    warehouse.spark.sql(f"delete from {RECONCILIATION_FAILURES}")
    full = reconcile(full=True)
    assert not full.success and full.tests["assert_merchant_balance_current_reconciles"] == "fail"
    every = project_vars()["reconcile_slices"]
    assert full.run["is_full"] and full.run["checked_slices"] == list(range(every)) and full.run["status"] == "fail"
    assert [(f["merchant_id"], f["currency"], f["reconciliation_slice"]) for f in full.failures] == [("m2", "USD", str(key_slice(warehouse, "m2", every)))]
    # The report's amounts show the currency's minor unit (stored with four decimals).
    assert (full.failures[0]["view_pending_balance"], full.failures[0]["replayed_pending_balance"]) == ("8.00", "7.00")
    # A slice count that is not a whole number from 1 to 4096 is refused before anything runs.
    refused = dbt("test", "--select", "assert_merchant_balance_current_reconciles", "--vars", '{"reconcile_slices": 0}', check=False)
    assert not refused.success and "reconcile_slices" in str(refused.failures() or refused.exception)


@BASE
def test_history_checks_of_a_build_read_what_changed_since_the_published_build(dbt, base):
    """Builds and tests run through payledger check history since the published build, once a
    build ran every such check (checked_since): a row that build checked and that changed later is
    the full check's to find; new landed rows and a key whose total moved without events since the
    publication are found at once; so is a checkpoint row written since it that repeats a key."""
    warehouse = base
    accounted, conserved = "assert_every_ingested_event_is_accepted_or_rejected", "assert_merchant_balance_current_conserves_money"
    checks = ("--select", accounted, conserved, "int_merchant_daily_balances,test_name:valid_rows")
    columns = warehouse.spark.table(CHECKPOINT).columns

    def repeat_checkpoint_row(merchant_id: str, written_at: str, balance_date: str = "balance_date") -> None:
        """Append a copy of one of the merchant's checkpoint rows (same key unless ``balance_date``
        says otherwise), stamped ``written_at``."""
        copied = ", ".join({"written_at": written_at, "balance_date": balance_date}.get(c, c) for c in columns)
        warehouse.spark.sql(f"insert into {CHECKPOINT} select {copied} from {CHECKPOINT} where merchant_id = '{merchant_id}' limit 1")

    def checkpoint_failures(invocation) -> list[int]:
        """The failed checks of the checkpoint's valid_rows (a row each), in a list of one."""
        return [r.failures for uid, r in invocation.nodes.items() if ".valid_rows_int_merchant_daily_balances" in uid]

    # The base was built without the generic tests, so its publication is not checked: a build
    # with every data test and nothing new checks it all and marks the same version checked.
    dbt("build", *DATA_TESTS_SELECTION)
    published = read_document(warehouse.warehouse, session_format(warehouse.spark)).current
    assert published.checked and published.events_watermark is not None
    # c2 was folded into the published build, which checked it; so was m2's checkpoint row that
    # reappears with the time it was written.
    warehouse.spark.sql(f"update {CANONICAL} set amount = amount + 1 where event_id = 'c2'")
    repeat_checkpoint_row("m2", "written_at")
    scoped = dbt("test", *checks, check=False)
    assert scoped.success and checkpoint_failures(scoped) == [0], scoped.failures()
    full = dbt("test", *checks, *FULL_RECONCILIATION, check=False)
    assert (full.status(accounted), full.status(conserved)) == ("fail", "fail"), full.failures()
    assert checkpoint_failures(full) == [1], full.failures()
    # A landed row not classified yet, and m1's total moved by 1.00 with no event since the publication.
    warehouse.load("payment_events", [event("e10", "m1", "capture_settled", "5.00", "2026-03-02 10:00:00")])
    warehouse.spark.sql(f"update {VIEW} set reserve_hold = reserve_hold + 1 where merchant_id = 'm1'")
    repeat_checkpoint_row("m1", "current_timestamp()")
    repeat_checkpoint_row("m1", "current_timestamp()", balance_date="cast(null as date)")
    moved = dbt("test", *checks, check=False)
    assert (moved.status(accounted), moved.status(conserved)) == ("fail", "fail"), moved.failures()
    assert [r.failures for uid, r in moved.nodes.items() if uid.endswith(conserved)] == [1]
    # m1's key, repeated by a row written since the publication, is found at once; so is a row
    # written since without a day (outside every partition): a duplicate key and a null in a key.
    assert checkpoint_failures(moved) == [2], moved.failures()
    # An accepted row that repeats e1's id, past the dedup index's watermark (what a dedup that
    # missed the earlier copy would write): the index test finds it at once through the directory;
    # the classification's key check reads the new rows only and leaves it to that test and the
    # full check.
    indexed, keyed = "assert_dedup_index_holds_every_accepted_event", "int_payment_events_classified,test_name:valid_rows"
    canonical_columns = warehouse.spark.table(CANONICAL).columns
    copied = ", ".join(f"{c} + 1000" if c == "ingest_seq" else c for c in canonical_columns)
    warehouse.spark.sql(f"insert into {CANONICAL} select {copied} from {CANONICAL} where event_id = 'e1'")
    repeated = dbt("test", "--select", indexed, check=False)
    assert repeated.status(indexed) == "fail", repeated.failures()
    assert [r.failures for uid, r in repeated.nodes.items() if uid.split(".")[-1] == indexed] == [1]
    full_keys = dbt("test", "--select", keyed, *FULL_RECONCILIATION, check=False)
    assert [r.failures for uid, r in full_keys.nodes.items() if ".valid_rows_" in uid] == [1], full_keys.failures()


def key_slice(warehouse, merchant_id: str, slices: int) -> int:
    """The key's slice of ``slices``: its bucket of 4,096 (Spark's xxhash64 of the merchant id) scaled."""
    return warehouse.rows(f"select pmod(xxhash64('{merchant_id}'), 4096) * {slices} div 4096 as s")[0]["s"]


@BASE
def test_full_refresh_of_the_view_is_refused_without_the_switch(dbt, base):
    warehouse = base
    before = view_rows(warehouse)
    refused = dbt("run", "--select", "merchant_balance_current", "--full-refresh", check=False)
    assert not refused.success
    assert "allow_full_refresh" in str(refused.failures() or refused.exception)
    assert view_rows(warehouse) == before
