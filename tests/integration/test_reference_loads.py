"""Reference data as sources deliver it: same-instant exports, full daily exports, lagging clocks.

`reserve_policies` and `merchants` are independent sources. A full current-state export keeps each
unchanged row's own `updated_at`; the two tables may carry equal or interleaved timestamps and arrive
in either order. Every newly observed version is replayed by the next build, exactly its slice,
whatever its `updated_at` relative to the other table. After each build the view equals the
reference fold and only keys whose reference balance changed were rewritten.

The four scenarios are lanes of one warehouse (``tests/histories.py``: each its own merchants and
segments, named with its prefix), landed and built together, three builds in all (nine when each
had a warehouse of its own): the first folds every lane's first deliveries; the second the
same-instant next-day exports, the full export and the policy change that the lagging move comes
after; the third that move alone. Each test checks its own lane at each build it is about; a
``lane`` filter where a check would otherwise read another lane's rows.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from payledger.warehouse import AUDIT, CHECKPOINT, drop_project_schemas
from tests.support import History, Landing, event, in_lane, merchant, policy, rejects_of, rewritten, view_rows

# One worker builds the lanes once (a module fixture, three builds: minutes) and runs the four
# tests on them; as a group they are scheduled with the long tests.
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("reference_loads")]

SNAPSHOTS = {
    "reserve_policies": "payledger_snapshots.snp_payledger__reserve_policies",
    "merchants": "payledger_snapshots.snp_payledger__merchants",
}
# Each snapshot's column that names a lane's segment or merchant.
SNAPSHOT_LANE_COLUMN = {"reserve_policies": "segment", "merchants": "merchant_id"}
#: The lanes' prefixes: same-instant exports landed policies first or merchants first, the full
#: daily export, the merchant move older than a folded policy change.
SAME_INSTANT = {"reserve_policies": "sp-", "merchants": "sm-"}
FULL_EXPORT = "fx-"
MOVE = "mv-"


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


@dataclass
class Build:
    """One build of the lanes: its invocation, what it left, and the history it built."""

    invocation_id: str
    history: History
    view: dict
    rejects: dict[int, str]
    slices: set[tuple[str, str]]
    checkpoint: list[dict]
    snapshot_keys: dict[str, list[str]]

    def assert_lane_matches(self, lane: str) -> None:
        """The lane's view rows equal the reference fold of what was landed up to this build."""
        self.history.assert_matches(self.view, self.rejects, lane)

    def expected(self, lane: str = "") -> dict:
        """The reference balances of the lane's keys (every key: ``""``) after this build."""
        return in_lane(self.history.expected(), lane)

    def lane_slices(self, lane: str) -> set[tuple[str, str]]:
        """The audit's (cause, segment or merchant_id) slices of this build in the lane."""
        return {s for s in self.slices if s[1].startswith(lane)}

    def snapshot_versions(self, kind: str, lane: str) -> int:
        """Rows (versions, open and closed) of one lane in the snapshot of ``kind``."""
        return sum(key.startswith(lane) for key in self.snapshot_keys[kind])


@dataclass
class Lanes:
    """The three builds of the lanes, the full export's rows written per file, the sources'
    freshness before build 2 and the replay plan before build 3."""

    builds: list[Build] = field(default_factory=list)
    landed: dict[str, int] = field(default_factory=dict)
    freshness: dict[str, str] = field(default_factory=dict)
    plan: list[dict] = field(default_factory=list)


def build(dbt, warehouse, history: History) -> Build:
    """A scenario build, and what it left (nothing asserted here: the tests do, lane by lane)."""
    run = dbt.scenario_build()
    audit = warehouse.rows(f"select cause, segment, merchant_id from {AUDIT} where invocation_id = '{run.invocation_id}'")
    return Build(
        invocation_id=run.invocation_id,
        history=copy.deepcopy(history),
        view=view_rows(warehouse),
        rejects=rejects_of(warehouse),
        slices={(r["cause"], r["segment"] or r["merchant_id"]) for r in audit},
        checkpoint=warehouse.rows(f"select merchant_id, balance_date from {CHECKPOINT} where written_by_invocation_id = '{run.invocation_id}'"),
        snapshot_keys={kind: [r["k"] for r in warehouse.rows(f"select {SNAPSHOT_LANE_COLUMN[kind]} as k from {table}")] for kind, table in SNAPSHOTS.items()},
    )


def same_instant_exports(lane: str, day: int) -> dict[str, list[dict]]:
    """A lane's exports of both tables, each day's from one instant: day 1 (2026-10-01), retail 10%
    and travel 5%, r1 and r2 in retail, t1 and t2 in travel; day 2 (2026-10-02), retail's rate rises
    from April and t1 joins retail from March 15 (unchanged rows keep their own updated_at, day 1's
    instant)."""
    first, instant = "2026-10-01 00:00:00", "2026-10-02 00:00:00"
    policies = [policy(f"{lane}retail", "0.1000", "2026-01-01", first), policy(f"{lane}travel", "0.0500", "2026-01-01", first)]
    merchants = [merchant(f"{lane}{m}", f"{lane}retail" if m.startswith("r") else f"{lane}travel", "2026-01-01", first) for m in ("r1", "r2", "t1", "t2")]
    if day == 2:
        policies[0] = policy(f"{lane}retail", "0.2000", "2026-04-01", instant)
        merchants[2] = merchant(f"{lane}t1", f"{lane}retail", "2026-03-15", instant)
    return {"reserve_policies": policies, "merchants": merchants}


def full_export(day: int) -> dict[str, list[dict]]:
    """The full-export lane's files: 12 merchants over segments s0-s2, each row with its own
    last-modified time, months apart, policies later than merchants; on day 2 the full export of the
    next day, with m04 moved to s0 and s2's rate raised from April, every other row as it was, with
    its old updated_at."""
    merchants = [f"{FULL_EXPORT}m{i:02d}" for i in range(12)]
    merchant_rows = [merchant(m, f"{FULL_EXPORT}s{i % 3}", "2026-01-01", f"2026-08-{i + 1:02d} 08:00:00") for i, m in enumerate(merchants)]
    rates = [("s0", "0.1000"), ("s1", "0.0500"), ("s2", "0.2000")]
    policy_rows = [policy(f"{FULL_EXPORT}{s}", pct, "2026-01-01", f"2026-09-0{i + 1} 12:00:00") for i, (s, pct) in enumerate(rates)]
    if day == 2:
        merchant_rows[4] = merchant(f"{FULL_EXPORT}m04", f"{FULL_EXPORT}s0", "2026-04-01", "2026-11-02 06:00:00")
        policy_rows[2] = policy(f"{FULL_EXPORT}s2", "0.3000", "2026-04-01", "2026-11-02 06:00:00")
    return {"merchants": merchant_rows, "reserve_policies": policy_rows}


@pytest.fixture(scope="module")
def lanes(spark, dbt, tmp_path_factory) -> Lanes:
    """The four lanes landed and built three times in an empty warehouse, once per worker."""
    drop_project_schemas(spark)
    warehouse = Landing(spark, tmp_path_factory.mktemp("reference-loads"), Path(os.environ["PAYLEDGER_WAREHOUSE"]))
    history, lanes = History(), Lanes()

    # Build 1: every lane's first deliveries.
    for first, lane in SAME_INSTANT.items():
        exports = same_instant_exports(lane, day=1)
        for kind in (first, "merchants" if first == "reserve_policies" else "reserve_policies"):
            land(history, warehouse, kind, exports[kind])
        history.land_events(warehouse, releases([f"{lane}{m}" for m in ("r1", "r2", "t1", "t2")]))
    exports = full_export(day=1)
    land(history, warehouse, "merchants", exports["merchants"])
    land(history, warehouse, "reserve_policies", exports["reserve_policies"])
    history.land_events(warehouse, releases([row["merchant_id"] for row in exports["merchants"]]))
    moving = [f"{MOVE}r1", f"{MOVE}t1"]
    land(
        history,
        warehouse,
        "merchants",
        [merchant(moving[0], f"{MOVE}retail", "2026-01-01", "2026-09-01 00:00:00"), merchant(moving[1], f"{MOVE}travel", "2026-01-01", "2026-09-01 00:00:00")],
    )
    land(
        history,
        warehouse,
        "reserve_policies",
        [policy(f"{MOVE}retail", "0.1000", "2026-01-01", "2026-09-01 00:00:00"), policy(f"{MOVE}travel", "0.0500", "2026-01-01", "2026-09-01 00:00:00")],
    )
    history.land_events(warehouse, releases(moving))
    lanes.builds.append(build(dbt, warehouse, history))

    # Build 2: the next day's same-instant exports, the full export, and the move lane's policy
    # change (folded here, a build before the move that is stamped earlier).
    for first, lane in SAME_INSTANT.items():
        exports = same_instant_exports(lane, day=2)
        for kind in (first, "merchants" if first == "reserve_policies" else "reserve_policies"):
            land(history, warehouse, kind, exports[kind])
    exports = full_export(day=2)
    for kind in ("merchants", "reserve_policies"):
        lanes.landed[kind] = land(history, warehouse, kind, exports[kind])
    # Months-old updated_at values, yet the sources are fresh: a file was delivered today.
    freshness = dbt("source", "freshness")
    lanes.freshness = {uid.split(".")[-1]: str(result.status) for uid, result in freshness.nodes.items()}
    land(history, warehouse, "reserve_policies", [policy(f"{MOVE}retail", "0.2000", "2026-04-01", "2026-11-10 00:00:00")])
    lanes.builds.append(build(dbt, warehouse, history))

    # Build 3: the merchant service's clock lags risk ops': its move is stamped before the policy
    # change folded by build 2.
    land(history, warehouse, "merchants", [merchant(f"{MOVE}t1", f"{MOVE}retail", "2026-03-01", "2026-11-05 00:00:00")])
    lanes.plan = dbt("run-operation", "balance_replay_plan").logged_json("PLAN_JSON")
    lanes.builds.append(build(dbt, warehouse, history))
    return lanes


@pytest.mark.parametrize("first", ["reserve_policies", "merchants"])
def test_same_instant_exports_of_both_tables_load_in_either_order(lanes, first):
    lane = SAME_INSTANT[first]
    one, two = lanes.builds[:2]
    one.assert_lane_matches(lane)
    two.assert_lane_matches(lane)
    assert rewritten(in_lane(one.view, lane), in_lane(two.view, lane)) == changed_keys(one.expected(lane), two.expected(lane))
    assert two.lane_slices(lane) == {("policy_change", f"{lane}retail"), ("segment_change", f"{lane}t1")}


def test_a_full_daily_export_rewrites_only_what_changed(lanes):
    one, two = lanes.builds[:2]
    one.assert_lane_matches(FULL_EXPORT)
    # Of each full export, only the changed row is written.
    assert lanes.landed == {"merchants": 1, "reserve_policies": 1}
    assert lanes.freshness["reserve_policies"] == lanes.freshness["merchants"] == "pass", lanes.freshness
    two.assert_lane_matches(FULL_EXPORT)
    changed = rewritten(in_lane(one.view, FULL_EXPORT), in_lane(two.view, FULL_EXPORT))
    assert changed == changed_keys(one.expected(FULL_EXPORT), two.expected(FULL_EXPORT))
    assert changed, "the changes should move some balance"
    # Exactly one new snapshot version per changed row, none for the unchanged ones.
    new_versions = {kind: two.snapshot_versions(kind, FULL_EXPORT) - one.snapshot_versions(kind, FULL_EXPORT) for kind in SNAPSHOTS}
    assert new_versions == {"reserve_policies": 1, "merchants": 1}
    assert two.lane_slices(FULL_EXPORT) == {("policy_change", f"{FULL_EXPORT}s2"), ("segment_change", f"{FULL_EXPORT}m04")}
    # The checkpoint rewrote only the slices: m04 from its old effective date, s2's merchants from April.
    written = [row for row in two.checkpoint if row["merchant_id"].startswith(FULL_EXPORT)]
    assert written
    segment_of = {row["merchant_id"]: row["segment"] for row in full_export(day=1)["merchants"]}
    for row in written:
        in_policy_slice = segment_of[row["merchant_id"]] == f"{FULL_EXPORT}s2" and str(row["balance_date"]) >= "2026-04-01"
        assert row["merchant_id"] == f"{FULL_EXPORT}m04" or in_policy_slice, row


def test_a_merchant_move_older_than_a_folded_policy_change_is_replayed(lanes):
    two, three = lanes.builds[1:]
    two.assert_lane_matches(MOVE)
    # The plan before build 3 holds the move alone (the other lanes' changes were folded by build 2).
    assert [(p["cause"], p["merchants"]) for p in lanes.plan] == [("segment_change", 1)], lanes.plan
    three.assert_lane_matches("")  # every lane: the move's build leaves the others as they were
    assert rewritten(two.view, three.view) == changed_keys(two.expected(), three.expected()) == {(f"{MOVE}t1", "USD")}
    assert three.slices == {("segment_change", f"{MOVE}t1")}
