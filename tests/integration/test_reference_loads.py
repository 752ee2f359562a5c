"""Reference data as sources deliver it: same-instant exports, full daily exports, lagging clocks.

`reserve_policies` and `merchants` are independent sources. A full current-state export keeps each
unchanged row's own `updated_at`; the two tables may carry equal or interleaved timestamps and arrive
in either order. Every newly observed version is replayed by the next build, exactly its slice,
whatever its `updated_at` relative to the other table. After each build the view equals the
reference fold and only keys whose reference balance changed were rewritten.

The four scenarios are lanes of one warehouse (``tests/histories.py``: each its own merchants and
segments, named with its prefix), landed and built together with a fifth, the fold test's: four
builds in all (thirteen when each had a warehouse of its own). The first folds every lane's first
deliveries; the second the same-instant next-day exports, the full export and the policy change
that the lagging move comes after; the third that move; the fourth only the fold lane's last
change. Each test checks its own lane at each build it is about; a ``lane`` filter (or its
opposite, ``outside``) where a check would otherwise read another lane's rows.

The fold lane (``FOLD``): events of every kind, a late event, exact and conflicting duplicates,
every kind of bad row, currencies of zero and three decimals; then a retroactive policy change
(in the third build, beside the move) and a segment move (the fourth, which leaves every other
lane as it was). Every build runs every data test (``DATA_TESTS_SELECTION``), for every lane; the
unit tests, which read their given rows and not the warehouse, run in the differential test.
"""

from __future__ import annotations

import copy
import json
import os
import re
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

import pytest

from payledger.formats import session_format
from payledger.history import published_explain
from payledger.schedule import source_statuses
from payledger.warehouse import AUDIT, CHECKPOINT, drop_project_schemas
from tests.support import DATA_TESTS_SELECTION, History, Landing, event, in_lane, merchant, policy, rejects_of, rewritten, view_rows

# One worker builds the lanes once (a module fixture, four builds: minutes) and runs the module's
# five tests on them; as a group they are scheduled with the long tests.
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
#: The fold test's lane.
FOLD = "fo-"


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


def outside(rows: dict[tuple[str, str], object], lane: str) -> dict[tuple[str, str], object]:
    """The entries (by (merchant_id, currency) key) of every lane but ``lane``."""
    return {key: row for key, row in rows.items() if not key[0].startswith(lane)}


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
        """The audit's (cause, segment or merchant_id) slices of this build in the lane (a slice of
        new events may name neither: no lane's)."""
        return {s for s in self.slices if (s[1] or "").startswith(lane)}

    def slices_outside(self, lane: str) -> set[tuple[str, str]]:
        """The audit's slices of this build that are not the lane's (``lane_slices``' complement)."""
        return self.slices - self.lane_slices(lane)

    def snapshot_versions(self, kind: str, lane: str) -> int:
        """Rows (versions, open and closed) of one lane in the snapshot of ``kind``."""
        return sum(key.startswith(lane) for key in self.snapshot_keys[kind])


@dataclass
class Lanes:
    """The four builds of the lanes, the full export's rows written per file, the sources'
    freshness before build 2, the replay plan before build 3, and the warehouse they were built in
    (the fold test reads it after the last build)."""

    warehouse: Landing
    builds: list[Build] = field(default_factory=list)
    landed: dict[str, int] = field(default_factory=dict)
    freshness: dict[str, str] = field(default_factory=dict)
    plan: list[dict] = field(default_factory=list)


def build(dbt, warehouse, history: History, *selection: str) -> Build:
    """``dbt build`` (with every test the ``selection`` leaves in), and what it left (nothing
    asserted here: the tests do, lane by lane)."""
    run = dbt("build", *selection)
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


def fold_reference_data() -> dict[str, list[dict]]:
    """The fold lane's merchants (m1 and m3 in retail, m2 in travel) and policies (retail 10%,
    travel 5%), from 2026-01-01."""
    return {
        "merchants": [
            merchant(f"{FOLD}m1", f"{FOLD}retail", "2026-01-01"),
            merchant(f"{FOLD}m2", f"{FOLD}travel", "2026-01-01"),
            merchant(f"{FOLD}m3", f"{FOLD}retail", "2026-01-01"),
        ],
        "reserve_policies": [policy(f"{FOLD}retail", "0.1000", "2026-01-01"), policy(f"{FOLD}travel", "0.0500", "2026-01-01")],
    }


def fold_events(batch: int) -> list[dict]:
    """The fold lane's events: batch 1, captures and releases in USD, EUR, JPY, KWD and BHD and a
    payout; batch 2, new events, a late event, exact and conflicting duplicates of batch 1's and
    every kind of bad row."""
    m1, m2, m3 = (f"{FOLD}m{i}" for i in (1, 2, 3))
    if batch == 1:
        return [
            event(f"{FOLD}e1", m1, "capture_settled", "200.00", "2026-03-01 10:00:00"),
            event(f"{FOLD}e2", m1, "funds_released", "200.00", "2026-03-03 10:00:00"),
            event(f"{FOLD}e3", m2, "capture_settled", "80.00", "2026-03-02 09:00:00", currency="EUR"),
            event(f"{FOLD}e4", m2, "funds_released", "80.00", "2026-03-04 09:00:00", currency="EUR"),
            event(f"{FOLD}e5", m3, "capture_settled", "33.33", "2026-03-05 09:00:00"),
            event(f"{FOLD}e6", m3, "funds_released", "33.33", "2026-04-05 09:00:00"),
            event(f"{FOLD}e7", m1, "payout_paid", "100.00", "2026-03-10 00:00:00"),
            # JPY has no minor unit: m3's 10% hold on 105 is 10.5, rounded half up to 11 (half
            # even would give 10). KWD and BHD have three: m2's 5% hold on KWD 12.345 is 0.61725,
            # 0.617; on BHD 4.930 it is 0.2465, 0.247 half up (half even: 0.246).
            event(f"{FOLD}j1", m3, "capture_settled", "105", "2026-03-05 09:00:00", currency="JPY"),
            event(f"{FOLD}j2", m3, "funds_released", "105", "2026-04-05 09:00:00", currency="JPY"),
            event(f"{FOLD}k1", m2, "capture_settled", "12.345", "2026-03-02 09:00:00", currency="KWD"),
            event(f"{FOLD}k2", m2, "funds_released", "12.345", "2026-03-04 09:00:00", currency="KWD"),
            event(f"{FOLD}h1", m2, "capture_settled", "4.930", "2026-03-02 09:00:00", currency="BHD"),
            event(f"{FOLD}h2", m2, "funds_released", "4.930", "2026-03-04 09:00:00", currency="BHD"),
        ]
    return [
        event(f"{FOLD}e8", m1, "chargeback_opened", "50.00", "2026-04-01 00:00:00"),
        event(f"{FOLD}e9", m1, "chargeback_lost", "50.00", "2026-04-20 00:00:00"),
        event(f"{FOLD}e10", m2, "refund_posted", "5.55", "2026-02-20 00:00:00", currency="EUR"),  # late
        event(f"{FOLD}e2", m1, "funds_released", "200.00", "2026-03-03 10:00:00"),  # exact duplicate
        event(f"{FOLD}e3", m2, "capture_settled", "81.00", "2026-03-02 09:00:00", currency="EUR"),  # conflicting
        event(None, m1, "capture_settled", "1.00", "2026-04-01 00:00:00"),
        event(f"{FOLD}b1", " ", "capture_settled", "1.00", "2026-04-01 00:00:00"),
        event(f"{FOLD}b2", m1, "capture_pending", "1.00", "2026-04-01 00:00:00"),
        event(f"{FOLD}b3", m1, "capture_settled", "0.00", "2026-04-01 00:00:00"),
        event(f"{FOLD}b4", m1, "capture_settled", "-1.00", "2026-04-01 00:00:00"),
        event(f"{FOLD}b5", m1, "capture_settled", None, "2026-04-01 00:00:00"),
        event(f"{FOLD}b6", m1, "capture_settled", "1.00", "2026-04-01 00:00:00", currency="US$"),
        event(f"{FOLD}b7", m1, "capture_settled", "1.00", None),
        event(f"{FOLD}b8", m3, "capture_settled", "100.50", "2026-04-01 00:00:00", currency="JPY"),
        event(f"{FOLD}b9", m1, "capture_settled", "1.00", "2026-04-01 00:00:00", currency="XYZ"),
        # Land as sent (decimal(38,18)); no currency has five decimals, nor money_type 15 digits.
        event(f"{FOLD}b10", m1, "capture_settled", "1.23456", "2026-04-01 00:00:00"),
        event(f"{FOLD}b11", m1, "capture_settled", "123456789012345", "2026-04-01 00:00:00"),
        event(f"{FOLD}e11", m3, "reserve_released", "1.00", "2026-04-10 00:00:00"),
        event(f"{FOLD}e12", m3, "chargeback_opened", "2.00", "2026-04-11 00:00:00"),
        event(f"{FOLD}e13", m3, "chargeback_won", "2.00", "2026-04-12 00:00:00"),
        event(f"{FOLD}b6", m1, "capture_settled", "1.00", "2026-04-01 00:00:00"),  # valid copy after an invalid one
        # A code in lower case, as Stripe writes it, is that currency; its copy in capitals is exact.
        event(f"{FOLD}e14", m1, "capture_settled", "2.00", "2026-04-02 00:00:00", currency="usd"),
        event(f"{FOLD}e14", m1, "capture_settled", "2.00", "2026-04-02 00:00:00", currency="USD"),
    ]


@pytest.fixture(scope="module")
def lanes(spark, dbt, tmp_path_factory) -> Lanes:
    """The five lanes landed and built four times in an empty warehouse, once per worker."""
    drop_project_schemas(spark)
    warehouse = Landing(spark, tmp_path_factory.mktemp("reference-loads"), Path(os.environ["PAYLEDGER_WAREHOUSE"]))
    history, lanes = History(), Lanes(warehouse)

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
    fold = fold_reference_data()
    history.land_merchants(warehouse, fold["merchants"])
    history.land_policies(warehouse, fold["reserve_policies"])
    history.land_events(warehouse, fold_events(batch=1))
    lanes.builds.append(build(dbt, warehouse, history, *DATA_TESTS_SELECTION))

    # Build 2: the next day's same-instant exports, the full export, the move lane's policy change
    # (folded here, a build before the move that is stamped earlier), and the fold lane's second
    # batch.
    for first, lane in SAME_INSTANT.items():
        exports = same_instant_exports(lane, day=2)
        for kind in (first, "merchants" if first == "reserve_policies" else "reserve_policies"):
            land(history, warehouse, kind, exports[kind])
    exports = full_export(day=2)
    for kind in ("merchants", "reserve_policies"):
        lanes.landed[kind] = land(history, warehouse, kind, exports[kind])
    # Months-old updated_at values, yet the sources are fresh: a file was delivered today.
    freshness = dbt("source", "freshness")
    lanes.freshness = source_statuses(freshness.nodes)
    land(history, warehouse, "reserve_policies", [policy(f"{MOVE}retail", "0.2000", "2026-04-01", "2026-11-10 00:00:00")])
    history.land_events(warehouse, fold_events(batch=2))
    lanes.builds.append(build(dbt, warehouse, history, *DATA_TESTS_SELECTION))

    # Build 3: the merchant service's clock lags risk ops': its move is stamped before the policy
    # change folded by build 2. Beside it, the fold lane's retroactive policy change: retail's
    # reserve 25% from 2026-03-15.
    land(history, warehouse, "merchants", [merchant(f"{MOVE}t1", f"{MOVE}retail", "2026-03-01", "2026-11-05 00:00:00")])
    history.land_policies(warehouse, [policy(f"{FOLD}retail", "0.2500", "2026-03-15")])
    lanes.plan = dbt("run-operation", "balance_replay_plan").logged_json("PLAN_JSON")
    lanes.builds.append(build(dbt, warehouse, history, *DATA_TESTS_SELECTION))

    # Build 4: the fold lane's segment move, m1 to travel from 2026-03-02 (before its release on
    # 03-03).
    history.land_merchants(warehouse, [merchant(f"{FOLD}m1", f"{FOLD}travel", "2026-03-02")])
    lanes.builds.append(build(dbt, warehouse, history, *DATA_TESTS_SELECTION))
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
    # The three landing tables, each from its deliveries in load_log (which has no freshness of its own).
    assert lanes.freshness == {f"payledger.{table}": "pass" for table in ("payment_events", "reserve_policies", "merchants")}, lanes.freshness
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
    two, three = lanes.builds[1:3]
    two.assert_lane_matches(MOVE)
    # The plan before build 3 holds the move alone (the other lanes' changes were folded by build
    # 2; the fold lane's policy change, in the plan too, is the fold test's).
    plan = [(p["cause"], p["merchants"]) for p in lanes.plan if FOLD not in p["predicate"]]
    assert plan == [("segment_change", 1)], lanes.plan
    three.assert_lane_matches("")  # every lane: the move's build leaves the others as they were
    moved = rewritten(outside(two.view, FOLD), outside(three.view, FOLD))
    assert moved == changed_keys(outside(two.expected(), FOLD), outside(three.expected(), FOLD)) == {(f"{MOVE}t1", "USD")}
    assert three.slices_outside(FOLD) == {("segment_change", f"{MOVE}t1")}


def mart_examples(manifest: dict) -> dict[str, list[str]]:
    """The ```sql blocks of each mart's description in a dbt manifest, by model name."""
    return {
        node["name"]: re.findall(r"```sql\n(.*?)```", node["description"], flags=re.DOTALL)
        for node in manifest["nodes"].values()
        if node["resource_type"] == "model" and node["fqn"][1] == "marts"
    }


def test_view_equals_the_fold_after_late_events_duplicates_bad_rows_and_retroactive_changes(lanes, dbt):
    one, two, three, four = lanes.builds
    warehouse = lanes.warehouse
    one.assert_lane_matches(FOLD)
    holds = {key: row["reserve_hold"] for key, row in one.view.items() if key[0] in (f"{FOLD}m2", f"{FOLD}m3")}
    assert (holds[(f"{FOLD}m3", "JPY")], holds[(f"{FOLD}m2", "KWD")], holds[(f"{FOLD}m2", "BHD")]) == (Decimal("11"), Decimal("0.617"), Decimal("0.247")), holds

    # The new batch: new events, a late event, exact and conflicting duplicates, every kind of bad
    # row (the other lanes' events are all accepted).
    two.assert_lane_matches(FOLD)
    landed = {
        r["event_id"]: r["amount"]
        for r in warehouse.rows(f"select event_id, amount from payledger_raw.payment_events where event_id in ('{FOLD}b10', '{FOLD}b11')")
    }
    assert landed == {f"{FOLD}b10": Decimal("1.23456"), f"{FOLD}b11": Decimal("123456789012345")}
    assert set(two.rejects.values()) == {
        "missing_event_id",
        "missing_merchant_id",
        "unknown_event_type",
        "invalid_amount",
        "invalid_currency",
        "unknown_currency",
        "amount_precision",
        "missing_event_time",
        "exact_duplicate",
        "conflicting_duplicate",
    }

    # The retroactive policy change for retail from 2026-03-15: only m3's April releases change (USD, JPY).
    three.assert_lane_matches(FOLD)
    assert rewritten(in_lane(two.view, FOLD), in_lane(three.view, FOLD)) == {(f"{FOLD}m3", "USD"), (f"{FOLD}m3", "JPY")}

    # The segment move, in a build of its own: no other lane's row is written.
    four.assert_lane_matches("")
    assert rewritten(outside(three.view, FOLD), outside(four.view, FOLD)) == set()
    assert rewritten(in_lane(three.view, FOLD), in_lane(four.view, FOLD)), "the move should change m1's holds"

    # payledger explain without a JVM posts every key's events in Python (payledger.postings): after
    # the retroactive change and the move, its totals equal the view (the reference fold's) on every
    # key, and its holds round as the models do (JPY 0, KWD and BHD 3 decimals, half up).
    published = {key: published_explain(warehouse.warehouse, session_format(warehouse.spark), *key) for key in in_lane(four.view, FOLD)}
    assert {key: e.differences() for key, e in published.items() if e.differences()} == {}
    held = {(key, p["event_id"]): p["hold_amount"] for key, e in published.items() for p in e.postings if p["event_type"] == "funds_released"}
    rounded = (held[(f"{FOLD}m2", "KWD"), f"{FOLD}k2"], held[(f"{FOLD}m2", "BHD"), f"{FOLD}h2"], held[(f"{FOLD}m3", "JPY"), f"{FOLD}j2"])
    assert rounded == (Decimal("0.617"), Decimal("0.247"), Decimal("26")), held

    # The example queries in the marts' descriptions (what dbt docs and dbt-score show) run as written.
    examples = mart_examples(json.loads((dbt.artefacts / "target" / "manifest.json").read_text()))
    assert set(examples) == {"merchant_balance_current", "payment_event_rejects", "balance_invalidations"}
    for queries in examples.values():
        assert queries
        for query in queries:
            warehouse.spark.sql(query).collect()  # raises on an unknown table, column or function
