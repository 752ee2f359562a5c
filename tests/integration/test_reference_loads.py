"""Reference data as sources deliver it: same-instant exports, full daily exports, lagging clocks.

`reserve_policies` and `merchants` are independent sources. A full current-state export keeps each
unchanged row's own `updated_at`; the two tables may carry equal or interleaved timestamps and arrive
in either order. Every newly observed version is replayed by the next build, exactly its slice,
whatever its `updated_at` relative to the other table. After each build the view equals the
reference fold and only keys whose reference balance changed were rewritten.
"""

from __future__ import annotations

import pytest

from payledger.warehouse import AUDIT, CHECKPOINT
from tests.support import History, event, merchant, policy, rewritten, view_rows

pytestmark = pytest.mark.integration

SNAPSHOTS = {
    "reserve_policies": "payledger_snapshots.snp_payledger__reserve_policies",
    "merchants": "payledger_snapshots.snp_payledger__merchants",
}


def land(history: History, warehouse, kind: str, rows: list[dict]) -> int:
    """Land one reference file through the loader, recording it in the history; rows written."""
    return history.land_merchants(warehouse, rows) if kind == "merchants" else history.land_policies(warehouse, rows)


def releases(merchants: list[str]) -> list[dict]:
    """A capture and two releases (March and April) per merchant, in USD."""
    rows = []
    for m in merchants:
        rows += [
            event(f"{m}-c", m, "capture_settled", "300.00", "2026-02-20 10:00:00"),
            event(f"{m}-f1", m, "funds_released", "100.00", "2026-03-10 10:00:00"),
            event(f"{m}-f2", m, "funds_released", "100.00", "2026-04-10 10:00:00"),
        ]
    return rows


def changed_keys(before: dict, after: dict) -> set[tuple[str, str]]:
    """Keys whose reference balance (any field) differs between two folds."""
    return {key for key in after if before.get(key) != after[key]}


def audit_slices(warehouse, invocation_id: str) -> set[tuple]:
    """The audit's (cause, segment or merchant_id) slices recorded by one dbt invocation."""
    rows = warehouse.rows(f"select cause, segment, merchant_id from {AUDIT} where invocation_id = '{invocation_id}'")
    return {(r["cause"], r["segment"] or r["merchant_id"]) for r in rows}


def snapshot_versions(warehouse, kind: str) -> int:
    """Rows (versions, open and closed) in the snapshot of ``kind``."""
    return warehouse.rows(f"select count(*) as n from {SNAPSHOTS[kind]}")[0]["n"]


@pytest.mark.parametrize("first", ["reserve_policies", "merchants"])
def test_same_instant_exports_of_both_tables_load_in_either_order(dbt, warehouse, first):
    second = "merchants" if first == "reserve_policies" else "reserve_policies"
    history = History()
    instant = "2026-10-01 00:00:00"
    exports = {
        "reserve_policies": [policy("retail", "0.1000", "2026-01-01", instant), policy("travel", "0.0500", "2026-01-01", instant)],
        "merchants": [merchant(m, "retail" if m.startswith("r") else "travel", "2026-01-01", instant) for m in ("r1", "r2", "t1", "t2")],
    }
    for kind in (first, second):
        land(history, warehouse, kind, exports[kind])
    history.land_events(warehouse, releases(["r1", "r2", "t1", "t2"]))
    dbt.scenario_build()
    history.assert_view_matches(warehouse)

    # The next day's exports, again from one instant: retail's rate rises from April, t1 joins retail
    # from March 15. Unchanged rows keep their own updated_at.
    before, expected_before = view_rows(warehouse), history.expected()
    instant = "2026-10-02 00:00:00"
    exports = {
        "reserve_policies": [policy("retail", "0.2000", "2026-04-01", instant), exports["reserve_policies"][1]],
        "merchants": [*exports["merchants"][:2], merchant("t1", "retail", "2026-03-15", instant), exports["merchants"][3]],
    }
    for kind in (first, second):
        land(history, warehouse, kind, exports[kind])
    run = dbt.scenario_build()
    history.assert_view_matches(warehouse)
    assert rewritten(before, view_rows(warehouse)) == changed_keys(expected_before, history.expected())
    assert audit_slices(warehouse, run.invocation_id) == {("policy_change", "retail"), ("segment_change", "t1")}


def test_a_full_daily_export_rewrites_only_what_changed(dbt, warehouse):
    history = History()
    merchants = [f"m{i:02d}" for i in range(12)]
    segment_of = {m: f"s{i % 3}" for i, m in enumerate(merchants)}
    # Each row carries its own last-modified time, months apart, policies later than merchants.
    merchant_rows = [merchant(m, segment_of[m], "2026-01-01", f"2026-08-{i + 1:02d} 08:00:00") for i, m in enumerate(merchants)]
    policy_rows = [
        policy(s, pct, "2026-01-01", f"2026-09-0{i + 1} 12:00:00") for i, (s, pct) in enumerate([("s0", "0.1000"), ("s1", "0.0500"), ("s2", "0.2000")])
    ]
    land(history, warehouse, "merchants", merchant_rows)
    land(history, warehouse, "reserve_policies", policy_rows)
    history.land_events(warehouse, releases(merchants))
    dbt.scenario_build()
    history.assert_view_matches(warehouse)
    before, expected_before = view_rows(warehouse), history.expected()
    versions = {kind: snapshot_versions(warehouse, kind) for kind in SNAPSHOTS}

    # The full export of the next day: one merchant moved, one policy changed; every other row as
    # it was, with its old updated_at.
    merchant_rows[4] = merchant("m04", "s0", "2026-04-01", "2026-11-02 06:00:00")
    policy_rows[2] = policy("s2", "0.3000", "2026-04-01", "2026-11-02 06:00:00")
    assert land(history, warehouse, "merchants", merchant_rows) == 1
    assert land(history, warehouse, "reserve_policies", policy_rows) == 1
    # Months-old updated_at values, yet the sources are fresh: a file was delivered today.
    freshness = dbt("source", "freshness")
    statuses = {uid.split(".")[-1]: str(result.status) for uid, result in freshness.nodes.items()}
    assert statuses["reserve_policies"] == statuses["merchants"] == "pass", statuses
    run = dbt.scenario_build()
    history.assert_view_matches(warehouse)
    after = view_rows(warehouse)
    assert rewritten(before, after) == changed_keys(expected_before, history.expected())
    assert rewritten(before, after), "the changes should move some balance"
    # Exactly one new snapshot version per changed row, none for the unchanged ones.
    assert {kind: snapshot_versions(warehouse, kind) - versions[kind] for kind in SNAPSHOTS} == {"reserve_policies": 1, "merchants": 1}
    assert audit_slices(warehouse, run.invocation_id) == {("policy_change", "s2"), ("segment_change", "m04")}
    # The checkpoint rewrote only the slices: m04 from its old effective date, s2's merchants from April.
    written = warehouse.rows(f"select merchant_id, balance_date from {CHECKPOINT} where written_by_invocation_id = '{run.invocation_id}'")
    assert written
    for row in written:
        in_policy_slice = segment_of[row["merchant_id"]] == "s2" and str(row["balance_date"]) >= "2026-04-01"
        assert row["merchant_id"] == "m04" or in_policy_slice, row


@pytest.mark.slow
def test_a_merchant_move_older_than_a_folded_policy_change_is_replayed(dbt, warehouse):
    history = History()
    land(
        history,
        warehouse,
        "merchants",
        [merchant("r1", "retail", "2026-01-01", "2026-09-01 00:00:00"), merchant("t1", "travel", "2026-01-01", "2026-09-01 00:00:00")],
    )
    land(
        history,
        warehouse,
        "reserve_policies",
        [policy("retail", "0.1000", "2026-01-01", "2026-09-01 00:00:00"), policy("travel", "0.0500", "2026-01-01", "2026-09-01 00:00:00")],
    )
    history.land_events(warehouse, releases(["r1", "t1"]))
    dbt.scenario_build()
    land(history, warehouse, "reserve_policies", [policy("retail", "0.2000", "2026-04-01", "2026-11-10 00:00:00")])
    dbt.scenario_build()
    history.assert_view_matches(warehouse)

    # The merchant service's clock lags risk ops': its move is stamped before the folded policy change.
    before, expected_before = view_rows(warehouse), history.expected()
    land(history, warehouse, "merchants", [merchant("t1", "retail", "2026-03-01", "2026-11-05 00:00:00")])
    plan = dbt("run-operation", "balance_replay_plan").logged_json("PLAN_JSON")
    assert [(p["cause"], p["merchants"]) for p in plan] == [("segment_change", 1)], plan
    run = dbt.scenario_build()
    history.assert_view_matches(warehouse)
    assert rewritten(before, view_rows(warehouse)) == changed_keys(expected_before, history.expected()) == {("t1", "USD")}
    assert audit_slices(warehouse, run.invocation_id) == {("segment_change", "t1")}
