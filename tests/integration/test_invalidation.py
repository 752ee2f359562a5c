"""Targeted invalidation: what each kind of change rewrites, the audit, manual replay, plan, guards."""

from __future__ import annotations

import json
import re
from decimal import Decimal

import pytest

import payledger.dbt
from payledger.formats import session_table_format, table_commits
from payledger.maintain import project_tables
from payledger.spark import SPARK_CODE_GENERATION, warehouse_folder
from payledger.warehouse import AUDIT, CHECKPOINT, RECONCILIATION_RUNS, VIEW
from tests.support import BuiltState, Landing, code_generation, event, merchant, policy, recorded_statements, rewritten, view_rows

# One worker runs this module, so its built state (a module fixture) is built once. Together its
# tests take minutes (about a dozen builds): marked slow, the group is scheduled with the long tests,
# not last, where one worker ran it alone while the other had nothing left.
pytestmark = [pytest.mark.integration, pytest.mark.both_formats, pytest.mark.slow, pytest.mark.xdist_group("invalidation")]


def audit(warehouse, invocation_id: str) -> list[dict]:
    return warehouse.rows(f"select * from {AUDIT} where invocation_id = '{invocation_id}' order by cause, predicate")


def checkpoint_rows_written(warehouse, invocation_id: str) -> list[dict]:
    """The checkpoint's (merchant_id, balance_date) rows that the invocation wrote."""
    return warehouse.rows(f"select merchant_id, balance_date from {CHECKPOINT} where written_by_invocation_id = '{invocation_id}'")


def assert_caught_up(dbt) -> None:
    """Freshness has nothing behind and the replay plan nothing to replay."""
    clean = dbt("run-operation", "balance_freshness").logged_json("FRESHNESS_JSON")
    assert clean["landed_rows_behind"] == clean["reference_rows_not_captured"] == 0
    assert clean["oldest_invalidation_not_replayed"] == "none"
    assert dbt("run-operation", "balance_replay_plan").logged_json("PLAN_JSON") == []


def land_and_build(dbt, warehouse):
    """Three retail merchants and one travel merchant with releases in March and April, built."""
    warehouse.load(
        "merchants",
        [
            merchant("r1", "retail", "2026-01-01"),
            merchant("r2", "retail", "2026-01-01"),
            merchant("r3", "retail", "2026-01-01"),
            merchant("t1", "travel", "2026-01-01"),
        ],
    )
    warehouse.load("reserve_policies", [policy("retail", "0.1000", "2026-01-01"), policy("travel", "0.0500", "2026-01-01")])
    rows = []
    for m in ("r1", "r2", "r3", "t1"):
        rows += [
            event(f"{m}-c1", m, "capture_settled", "100.00", "2026-03-01 10:00:00"),
            event(f"{m}-f1", m, "funds_released", "100.00", "2026-03-02 10:00:00"),
            event(f"{m}-c2", m, "capture_settled", "40.00", "2026-03-01 10:00:00", currency="EUR"),
        ]
    rows += [event("r1-f2", "r1", "funds_released", "60.00", "2026-04-10 10:00:00"), event("t1-f2", "t1", "funds_released", "60.00", "2026-04-10 10:00:00")]
    rows += [event("r2-p1", "r2", "payout_paid", "5.00", "2026-04-12 10:00:00")]  # r2: events after April 1, but no release
    warehouse.load("payment_events", rows)
    return dbt.scenario_build()


@pytest.fixture(scope="module")
def built_state(spark, dbt, tmp_path_factory) -> BuiltState:
    """The built warehouse, built once per module and worker (see ``warehouse``)."""
    return BuiltState(spark, tmp_path_factory.mktemp("invalidation"), lambda landing: land_and_build(dbt, landing))


@pytest.fixture
def warehouse(built_state) -> Landing:
    """This module's warehouse: the built state, restored for every test (``BuiltState``) instead of
    a build from nothing."""
    return built_state.restored()


@pytest.fixture
def built(warehouse, built_state):
    """The first build's invocation (of the state ``warehouse`` restored)."""
    return built_state.result


def test_new_batch_rewrites_only_the_keys_it_touches_and_is_audited(dbt, warehouse, built):
    before = view_rows(warehouse)
    warehouse.load(
        "payment_events",
        [event("late-1", "r3", "refund_posted", "1.00", "2026-02-01 00:00:00"), event("dup", "r1", "funds_released", "100.00", "2026-03-02 10:00:00")],
    )
    warehouse.load("payment_events", [event("r1-f1", "r1", "funds_released", "100.00", "2026-03-02 10:00:00")])  # exact duplicate
    run = dbt.scenario_build()
    after = view_rows(warehouse)
    assert rewritten(before, after) == {("r3", "USD"), ("r1", "USD")}
    assert {k: v for k, v in after.items() if k not in {("r3", "USD"), ("r1", "USD")}} == {
        k: v for k, v in before.items() if k not in {("r3", "USD"), ("r1", "USD")}
    }
    rows = audit(warehouse, run.invocation_id)
    assert [(r["cause"], r["keys_affected"], r["rows_rewritten"]) for r in rows] == [("new_events", 2, 2)]
    assert rows[0]["predicate"].startswith("ingest_seq > ")


def test_policy_change_rewrites_only_keys_that_change_within_its_slice(dbt, warehouse, built, monkeypatch):
    before = view_rows(warehouse)
    commits = len(table_commits(warehouse.spark, VIEW))
    warehouse.load("reserve_policies", [policy("retail", "0.2000", "2026-04-01")])
    # As if PAYLEDGER_CODEGEN were unset (run_dbt then chooses; the tests' profile interprets).
    # Where the format folds the checkpoint's change data feed, the view reads the changed rows
    # only, interpreted; elsewhere its re-sum of the replayed merchants is the one statement that
    # runs compiled.
    monkeypatch.setattr(payledger.dbt, "CODEGEN_ENV", "PAYLEDGER_CODEGEN_UNSET_IN_THIS_TEST")
    statements = recorded_statements(monkeypatch)
    interpreted = code_generation(warehouse.spark)
    run = dbt.scenario_build()
    merges = {match[1].split(".")[-1]: settings for sql, settings in statements if (match := re.search(r"merge\s+into\s+(\S+)", sql, re.IGNORECASE))}
    view_temporary = re.compile(r"create or replace temporary view\s+\S*merchant_balance_current__dbt_tmp", re.IGNORECASE)
    view_at = next(i for i, (sql, _) in enumerate(statements) if view_temporary.search(sql))
    view_source = statements[view_at][0]
    folds = session_table_format(warehouse.spark).folds_change_feed
    assert ("table_changes(" in view_source) == folds, view_source
    assert merges[VIEW.split(".")[-1]] == (interpreted if folds else tuple(SPARK_CODE_GENERATION.values())), merges
    assert merges[CHECKPOINT.split(".")[-1]] == interpreted != tuple(SPARK_CODE_GENERATION.values()), merges
    # The view's post-hook gave the session its settings back (when it changed them): the nodes
    # after it ran interpreted.
    resets = [i for i, (sql, _) in enumerate(statements) if sql.rstrip().lower().endswith("reset payledger.codegen.saved")]
    assert bool(resets) != folds, resets
    later = statements[max(resets, default=view_at) + 1 :]
    assert any("balance_invalidations" in sql for sql, _ in later) and {settings for _, settings in later} == {interpreted}
    assert code_generation(warehouse.spark) == interpreted
    after = view_rows(warehouse)
    # Only r1 has a retail release on or after April 1; r2 (a payout only) and r3 are in the slice
    # but keep their balances; travel and EUR keys are outside it.
    assert rewritten(before, after) == {("r1", "USD")}
    assert after[("r1", "USD")]["reserve_hold"] == Decimal("10.00") + Decimal("12.00")
    new_commits = table_commits(warehouse.spark, VIEW)[commits:]
    assert len(new_commits) == 1 and new_commits[0].rows_written == 1, new_commits
    rows = audit(warehouse, run.invocation_id)
    assert [(r["cause"], r["segment"], str(r["from_date"]), r["keys_affected"], r["rows_rewritten"]) for r in rows] == [
        ("policy_change", "retail", "2026-04-01", 2, 1)  # r1 USD and r2 USD have days in the slice
    ]
    assert "merchants in segment 'retail'" in rows[0]["predicate"]
    # The replay read canonical events from the slice's first day on only.
    checkpoint_rows = checkpoint_rows_written(warehouse, run.invocation_id)
    assert checkpoint_rows and all(str(r["balance_date"]) >= "2026-04-01" and r["merchant_id"].startswith("r") for r in checkpoint_rows)


def test_segment_move_rewrites_that_merchants_keys_only(dbt, warehouse, built):
    before = view_rows(warehouse)
    warehouse.load("merchants", [merchant("t1", "retail", "2026-04-01")])
    run = dbt.scenario_build()
    after = view_rows(warehouse)
    assert rewritten(before, after) == {("t1", "USD")}
    assert after[("t1", "USD")]["reserve_hold"] == Decimal("5.00") + Decimal("6.00")
    rows = audit(warehouse, run.invocation_id)
    # From the move's own date: t1's March release keeps the travel rate its earlier version gave it.
    assert [(r["cause"], r["merchant_id"], str(r["from_date"])) for r in rows] == [("segment_change", "t1", "2026-04-01")]
    checkpoint_rows = checkpoint_rows_written(warehouse, run.invocation_id)
    assert checkpoint_rows and all(str(r["balance_date"]) >= "2026-04-01" and r["merchant_id"] == "t1" for r in checkpoint_rows)


def test_a_build_stopped_after_the_checkpoint_is_caught_up_and_audited_by_the_next(dbt, warehouse, built):
    before = view_rows(warehouse)
    warehouse.load("reserve_policies", [policy("retail", "0.2000", "2026-04-01")])
    warehouse.load("payment_events", [event("t1-f3", "t1", "funds_released", "10.00", "2026-04-20 10:00:00")])
    # As if the build were killed right after the checkpoint's commit: the view and the audit never ran.
    dbt("run", "--select", "+int_merchant_daily_balances")
    assert view_rows(warehouse) == before
    run = dbt.scenario_build()
    after = view_rows(warehouse)
    assert rewritten(before, after) == {("r1", "USD"), ("t1", "USD")}
    assert after[("r1", "USD")]["reserve_hold"] == Decimal("10.00") + Decimal("12.00")
    assert after[("t1", "USD")]["reserve_hold"] == Decimal("5.00") + Decimal("3.00") + Decimal("0.50")
    # The second build replays the policy change again and audits the events the first one folded.
    rows = audit(warehouse, run.invocation_id)
    assert [(r["cause"], r["segment"], r["keys_affected"], r["rows_rewritten"]) for r in rows] == [
        ("new_events", None, 1, 1),
        ("policy_change", "retail", 2, 1),
    ]
    # Caught up: a policy change and an event landed before the build, nothing is behind after it.
    assert_caught_up(dbt)


def all_commits(warehouse) -> dict[str, list[dict]]:
    """The commits of every project table, by table name."""
    return {table: table_commits(warehouse.spark, table) for table in project_tables(warehouse.spark)}


def test_build_with_no_new_input_rewrites_nothing_and_commits_nothing(dbt, warehouse, built, monkeypatch):
    before = view_rows(warehouse)
    commits = all_commits(warehouse)
    assert f"{VIEW}" in commits and "payledger_snapshots.snp_payledger__reserve_policies" in commits
    states = session_table_format(warehouse.spark).table_states(warehouse_folder(warehouse.spark))
    statements = recorded_statements(monkeypatch)
    run = dbt.scenario_build()
    # Where run_dbt passes the tables' states (payledger.stored_maxima), each snapshot recorded its
    # inputs when it last ran, so neither is even probed (dbt's staging query); elsewhere both are.
    probes = [sql for sql, _ in statements if "dbt_change_type in ('insert', 'update', 'delete')" in sql]
    assert len(probes) == (0 if states else 2), probes
    # Nothing landed and the last build was audited: neither the checkpoint's watermark past the
    # audit's (checkpoint_watermark_query) nor the checkpoint's new event days are queried.
    # (test_a_build_stopped_after_the_checkpoint_... runs the first where it is needed.)
    needless = [
        sql for sql, _ in statements if ("select cast((" in sql and "int_merchant_daily_balances" in sql) or "select distinct cast(event_date as string)" in sql
    ]
    assert needless == [], needless
    # The slices' bounds are read once for the checkpoint, the view and the audit (slice_bounds),
    # and with no replay slice the merchants they invalidate (a view) are not counted.
    bounds = [sql for sql, _ in statements if "when cause != 'new_events' then from_date" in sql]
    assert len(bounds) == 1, bounds
    counted = [sql for sql, _ in statements if "count(*) from" in sql and "int_balance_merchants_invalidated" in sql]
    assert counted == [], counted
    assert view_rows(warehouse) == before
    assert audit(warehouse, run.invocation_id) == []
    # Not even an empty commit on the incremental models, the snapshots, the audit and the seed
    # (loaded from the same file already). dbt rebuilds two tables on every build by design
    # (derived state, no history to keep): the `table`-materialized slices and the
    # reconciliation test's failure table. The reconciliation's record gets its one row: even an
    # idle build reconciles the next slice.
    rebuilt = {
        "payledger_intermediate.int_balance_slices_invalidated",
        "payledger_audit.merchant_balance_reconciliation_failures",
    }
    after = all_commits(warehouse)
    assert set(after) == set(commits)
    changed = sorted(t for t in after if t not in rebuilt | {RECONCILIATION_RUNS} and after[t] != commits[t])
    assert changed == [], f"an idle build committed to {changed}"
    recorded = warehouse.rows(f"select invocation_id from {RECONCILIATION_RUNS} where invocation_id = '{run.invocation_id}'")
    assert len(after[RECONCILIATION_RUNS]) == len(commits[RECONCILIATION_RUNS]) + 1 and len(recorded) == 1
    # Rebuilt in place (create or replace) or appended to, on both formats: earlier commits stay.
    dropped = sorted(t for t in rebuilt | {RECONCILIATION_RUNS} if after[t][: len(commits[t])] != commits[t])
    assert dropped == [], f"dropped and created again: {dropped}"


SEED = "payledger_reference.payment_event_types"


def test_a_seed_is_loaded_again_only_when_it_lacks_its_fingerprint(dbt, warehouse, built):
    spark = warehouse.spark
    rows = sorted(tuple(r) for r in spark.sql(f"select * from {SEED}").collect())
    assert len(rows) == 8
    # As if a build had been killed after the seed's rows were deleted and before its fingerprint
    # was set (or the seed file had changed): the next build loads it again, whole.
    spark.sql(f"delete from {SEED}")
    spark.sql(f"alter table {SEED} unset tblproperties ('payledger.seed_fingerprint')")
    before = table_commits(spark, SEED)[-1]
    # `dbt seed` runs the seed's node as `dbt build` does (macros/materializations/); the models
    # downstream of it are left out.
    dbt("seed")
    assert sorted(tuple(r) for r in spark.sql(f"select * from {SEED}").collect()) == rows
    loaded = table_commits(spark, SEED)[-1]
    assert loaded != before
    # Loaded from this file: the next build leaves it alone; --full-refresh loads it anyway.
    dbt("seed")
    assert table_commits(spark, SEED)[-1] == loaded
    dbt("seed", "--full-refresh")
    assert table_commits(spark, SEED)[-1] != loaded
    assert sorted(tuple(r) for r in spark.sql(f"select * from {SEED}").collect()) == rows


def test_manual_replay_touches_only_its_slice(dbt, warehouse, built):
    # Corrupt two merchants' checkpoints; a replay of r1 repairs r1 only.
    warehouse.spark.sql(f"update {CHECKPOINT} set available_change = available_change + 7 where merchant_id in ('r1', 't1') and currency = 'USD'")
    warehouse.spark.sql(f"update {VIEW} set available_balance = available_balance + 7 where merchant_id in ('r1', 't1') and currency = 'USD'")
    before = view_rows(warehouse)
    run = dbt("run", "--selector", "balance_replay", "--vars", json.dumps({"replay_merchant": "r1", "replay_from": "2026-01-01"}))
    after = view_rows(warehouse)
    assert rewritten(before, after) == {("r1", "USD")}
    assert after[("r1", "USD")]["available_balance"] == before[("r1", "USD")]["available_balance"] - 7
    assert after[("t1", "USD")] == before[("t1", "USD")]
    rows = audit(warehouse, run.invocation_id)
    assert [(r["cause"], r["merchant_id"], r["rows_rewritten"]) for r in rows] == [("manual", "r1", 1)]

    segment_run = dbt("run", "--selector", "balance_replay", "--vars", json.dumps({"replay_segment": "travel", "replay_from": "2026-03-01"}))
    assert rewritten(after, view_rows(warehouse)) == {("t1", "USD")}
    assert [r["cause"] for r in audit(warehouse, segment_run.invocation_id)] == ["manual"]


#: Bad replay requests a build is started with: one malformed (every malformed kind, rendered
#: without Spark: tests/unit/test_replay_request.py) and the two that only the snapshots can refuse.
BAD_REPLAY_VARS = [
    ({"replay_segment": "retail'; drop table x; --", "replay_from": "2026-01-01"}, "replay_segment must be a string of letters"),
    ({"replay_segment": "casino", "replay_from": "2026-01-01"}, "Unknown segment casino"),
    ({"replay_merchant": "nobody", "replay_from": "2026-01-01"}, "Unknown merchant nobody"),
]


def test_bad_replay_vars_fail_before_any_model_runs(dbt, warehouse, built):
    before = view_rows(warehouse)
    commits = table_commits(warehouse.spark, VIEW)
    for variables, message in BAD_REPLAY_VARS:
        result = dbt("build", "--selector", "balance_replay", "--vars", json.dumps(variables), check=False)
        assert not result.success, variables
        text = " ".join(result.failures()) + str(result.exception) + " ".join(str(r.message) for r in result.nodes.values())
        assert message in text, (variables, text)
        ran = {uid: str(r.status) for uid, r in result.nodes.items() if not uid.startswith("operation")}
        assert all(status == "skipped" for status in ran.values()), (variables, ran)
    assert table_commits(warehouse.spark, VIEW) == commits
    assert view_rows(warehouse) == before


def test_plan_lists_slices_without_writing(dbt, warehouse, built):
    warehouse.load("reserve_policies", [policy("retail", "0.3000", "2026-04-01")])
    warehouse.load("payment_events", [event("n1", "t1", "payout_paid", "1.00", "2026-04-20 00:00:00")])
    commits = table_commits(warehouse.spark, VIEW)
    planned = dbt("run-operation", "balance_replay_plan")
    plan = planned.logged_json("PLAN_JSON")
    assert sorted((p["cause"], p["keys"]) for p in plan) == [("new_events", 1), ("policy_change", 2)]
    # The human-readable lines say the same, as sentences with numbers.
    for p in plan:
        line = f"  {p['cause']}: {p['predicate']}: {p['merchants']} merchant(s), {p['keys']} key(s), {p['event_rows_to_read']} event row(s) to read"
        assert line in planned.messages, (line, planned.messages)
    policy_slice = next(p for p in plan if p["cause"] == "policy_change")
    assert policy_slice["merchants"] == 3  # r1, r2, r3 were retail on some day since April 1
    assert policy_slice["event_rows_to_read"] == 2  # r1-f2 and r2-p1
    assert table_commits(warehouse.spark, VIEW) == commits

    checked = dbt("run-operation", "balance_freshness")
    freshness = checked.logged_json("FRESHNESS_JSON")
    sentence = next(m for m in checked.messages if m.startswith("Balance view freshness: "))
    assert f"1 landed event row(s) behind (view watermark {freshness['view_source_watermark']})" in sentence, sentence
    assert f"oldest invalidation not yet replayed: {freshness['oldest_invalidation_not_replayed']}" in sentence, sentence
    assert freshness["landed_rows_behind"] == 1
    assert freshness["reference_rows_not_captured"] == 1  # the retail policy, landed, not yet snapshotted
    assert freshness["oldest_invalidation_not_replayed"] != "none"
    # After a build of such a change, both are clean: the caught-up build's test above.
