"""Crash safety and overlapping runs, with dbt in separate processes (``tests.crash_harness``).

Kills: a harness process lands a batch, starts ``dbt build`` and is SIGKILLed (with its Spark JVM,
the whole process group) at a random moment of the build; then it is killed again during the
recovery build. Every second round a normal re-run follows: after it the view and the rejects equal
the reference fold (no event lost or counted twice), dbt's tests (reconciliation, conservation)
pass, snapshot history is intact and every table is readable. Rounds alternate new-event batches
and retroactive policy changes. Each process starts its own Spark driver (the embedded Derby
metastore admits one at a time), so this file takes minutes.

Overlap: two scheduled builds (``payledger build``, what cron runs) started together: one builds,
the other exits 75 without touching the warehouse, and the view reconciles.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import sys
import time
from pathlib import Path

import pytest

from tests import histories
from tests.processes import SEGMENTS, Harness, Process, new_events, small_history, typed_view
from tests.support import History, policy

pytestmark = pytest.mark.integration


def assert_recovered(history: History, report: dict, kept: dict) -> dict:
    """The re-run built, the view and rejects equal the reference, snapshot history only grew."""
    assert report["build_ok"], report["failures"]
    history.assert_matches(typed_view(report), {int(r["ingest_seq"]): r["rejection_reason"] for r in report["rejects"]})
    versions = {(table, row["dbt_scd_id"]): row for table, rows in report["snapshots"].items() for row in rows}
    for key, old in kept.items():
        assert key in versions, f"snapshot version lost after a crash: {key}"
        if old["dbt_valid_to"] is not None:
            assert versions[key] == old, f"snapshot version rewritten after a crash: {old} -> {versions[key]}"
    assert all(isinstance(n, int) for n in report["counts"].values()), report["counts"]
    return versions


@pytest.mark.slow
@pytest.mark.both_formats
def test_sigkill_during_builds_and_replays_then_rerun_recovers(tmp_path):
    rng = random.Random(20261122)
    harness = Harness(tmp_path)
    history = small_history(harness.landing, rng, count=200)
    kept = assert_recovered(history, harness.verify(*harness.landing.take()), {})

    # Kill moments are uniform over [0, window) after the build starts; the window grows to the
    # longest build seen to complete, so kills cover the whole build, start to commit.
    window, kills, completed, round_no = 20.0, [], 0, 0
    while len(kills) < histories.KILLS:
        round_no += 1
        cause = "policy_change" if round_no % 2 == 0 else "new_events"
        if cause == "policy_change":
            segment = rng.choice(SEGMENTS)
            effective = dt.date(2026, 1, 1) + dt.timedelta(days=rng.randrange(30, 80))
            history.land_policies(harness.landing, [policy(segment, f"0.{rng.randrange(0, 5000):04d}", str(effective))])
        history.land_events(harness.landing, new_events(rng, round_no, history, count=20))
        for attempt in range(2):  # the batch's build, then the recovery build, each killed at random
            process = harness.start("land-and-build", "--no-tests", *(harness.landing.take() if attempt == 0 else []))
            assert process.wait_for("BUILDING"), process.lines[-30:]
            started = time.monotonic()
            time.sleep(rng.uniform(0, window))
            if process.kill() and "BUILT" not in process.lines and "BUILD-FAILED" not in process.lines:
                kills.append({"round": round_no, "cause": cause, "attempt": attempt})
            else:
                assert "BUILT" in process.lines, process.lines[-30:]
                completed += 1
                window = max(window, time.monotonic() - started)
        if round_no % 2 == 0 or len(kills) >= histories.KILLS:  # a normal re-run every second round
            kept = assert_recovered(history, harness.verify(), kept)
    print(f"crash: {len(kills)} kills mid-build over {round_no} rounds ({completed} builds completed before their kill)")
    assert {k["cause"] for k in kills} == {"new_events", "policy_change"}


@pytest.mark.slow
def test_overlapping_scheduled_builds_run_one_at_a_time(tmp_path):
    harness = Harness(tmp_path)
    history = small_history(harness.landing, random.Random(7))
    landed = harness.start("land", *harness.landing.take())
    assert landed.finish() == 0, landed.lines[-30:]

    payledger = str(Path(sys.executable).parent / "payledger")
    builds = [Process([payledger, "build"], {**harness.env, "DBT_TARGET_PATH": str(tmp_path / f"target{i}")}) for i in range(2)]
    codes = sorted(b.finish() for b in builds)
    records = [[json.loads(line) for line in b.lines if line.startswith("{")] for b in builds]
    assert codes == [0, 75], [b.lines[-10:] for b in builds]
    loser = next(r for b, r in zip(builds, records, strict=True) if b.popen.returncode == 75)
    winner = next(r for b, r in zip(builds, records, strict=True) if b.popen.returncode == 0)
    locked = [r for r in loser if r.get("event") == "locked"]
    assert locked and "another build holds" in locked[0]["message"], loser
    assert [r["event"] for r in loser if "event" in r and r.get("ts")] == ["locked", "done"], "the loser must run nothing"
    assert [r["event"] for r in winner if r.get("ts")] == ["lock_acquired", "freshness", "build", "maintenance", "done"], winner
    # The winner's build alone (no later build to repair it): the view and rejects equal the fold.
    history.assert_matches(typed_view(report := harness.report()), {int(r["ingest_seq"]): r["rejection_reason"] for r in report["rejects"]})
