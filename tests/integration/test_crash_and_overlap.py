"""Crash safety and overlapping runs, with dbt in separate processes (``tests.crash_harness``).

Kills: a harness process lands a batch, starts ``dbt build`` and is SIGKILLed (with its Spark JVM,
the whole process group) while a node of the build runs; then it is killed again during the
recovery build. The nodes that write a table are split into as many parts as there are kills, and
each run of that many kills takes every part once, so that the kills cover the whole build, from
the seed to the view's MERGE and the audit. Every second round a normal re-run follows: after it
the view and the rejects equal the reference fold (no event lost or counted twice), dbt's tests
(reconciliation, conservation) pass, snapshot history is intact and every table is readable.
Rounds alternate new-event batches and retroactive policy changes. Each process starts its own
Spark driver (the embedded Derby metastore admits one at a time), so this file takes minutes.

Overlap and the warm loop: while a warm loop (``payledger build --every``) builds, a scheduled build
(``payledger build``, what cron runs) exits 75 without touching the warehouse; the loop builds again
in its one process, a SIGTERM ends it after its current step, and the view equals the fold.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import signal
import sys
import time
from pathlib import Path

import pytest
from deltalake import DeltaTable

from payledger.locks import build_lock
from payledger.publish import read_document, read_published_view
from tests import histories
from tests.processes import SEGMENTS, Harness, Process, new_events, small_history, typed_view
from tests.support import SCENARIO_SELECTION, History, by_key, policy

pytestmark = pytest.mark.integration


def published_balances(harness: Harness) -> dict[tuple[str, str], tuple]:
    """The balances of the harness warehouse's published version, read without Spark."""
    document = read_document(Path(harness.env["PAYLEDGER_WAREHOUSE"]), os.environ["PAYLEDGER_FORMAT"])
    assert document.current is not None, "nothing published"
    rows = read_published_view(document.current).to_pylist()
    return {(r["merchant_id"], r["currency"]): (r["available_balance"], r["pending_balance"], r["reserve_hold"]) for r in rows}


def assert_recovered(history: History, report: dict, kept: dict, harness: Harness, counted: bool = True) -> dict:
    """The re-run built, the view and rejects equal the reference, snapshot history only grew, the
    re-run (its tests passed) published the view it reported and, when ``counted``, every table and
    view it reported is readable (a row count each)."""
    assert report["build_ok"], report["failures"]
    view = typed_view(report)
    assert published_balances(harness) == {key: (r["available_balance"], r["pending_balance"], r["reserve_hold"]) for key, r in view.items()}
    history.assert_matches(view, {int(r["ingest_seq"]): r["rejection_reason"] for r in report["rejects"]})
    versions = {(table, row["dbt_scd_id"]): row for table, rows in report["snapshots"].items() for row in rows}
    for key, old in kept.items():
        assert key in versions, f"snapshot version lost after a crash: {key}"
        if old["dbt_valid_to"] is not None:
            assert versions[key] == old, f"snapshot version rewritten after a crash: {old} -> {versions[key]}"
    if counted:
        assert report["counts"] and all(isinstance(n, int) for n in report["counts"].values()), report["counts"]
    return versions


@pytest.mark.slow
@pytest.mark.both_formats
def test_sigkill_during_builds_and_replays_then_rerun_recovers(tmp_path):
    rng = random.Random(20261122)
    harness = Harness(tmp_path)
    history = small_history(harness.landing, rng, count=200)
    # No kill came before the first build: every relation's count is left to the re-runs.
    first = harness.verify(*harness.landing.take(), counts=False)
    kept = assert_recovered(history, first, {}, harness, counted=False)
    published = published_balances(harness)

    # Where kills land: the nodes that write a table (the seed, snapshots, incremental and table
    # models; views hold no state), in the order the first build started them, split into as many
    # parts as there are kills (4 in make test). Each run of that many kills takes every part
    # once, in a random order (so either cause meets any part); a kill waits for a node drawn from
    # its part to start, then up to 2 s more. A build of this history in a new process takes about
    # a minute on Delta: kills at random moments of its first 20 s never reached the checkpoint,
    # the view or the audit.
    nodes = [node for node in first["nodes"] if node.split()[1] not in ("view", "test")]
    parts = min(histories.KILLS, len(nodes))
    order, kills, completed, round_no = [], [], 0, 0
    while len(kills) < histories.KILLS:
        round_no += 1
        cause = "policy_change" if round_no % 2 == 0 else "new_events"
        if cause == "policy_change":
            segment = rng.choice(SEGMENTS)
            effective = dt.date(2026, 1, 1) + dt.timedelta(days=rng.randrange(30, 80))
            history.land_policies(harness.landing, [policy(segment, f"0.{rng.randrange(0, 5000):04d}", str(effective))])
        history.land_events(harness.landing, new_events(rng, round_no, history, count=20))
        for attempt in range(2):  # the batch's build, then the recovery build, each killed
            while len(order) <= len(kills):
                order += rng.sample(range(parts), parts)
            part = order[len(kills)]
            # Part boundaries rounded up (-(-a // b)): with 4 parts, the last is the view and the audit.
            target = rng.choice(nodes[-(-len(nodes) * part // parts) : -(-len(nodes) * (part + 1) // parts)])
            process = harness.start("land-and-build", "--no-tests", *(harness.landing.take() if attempt == 0 else []))
            assert process.wait_for("BUILDING"), process.lines[-30:]
            if process.wait_for(f"NODE {target}"):
                time.sleep(rng.uniform(0, 2))
            if process.kill() and "BUILT" not in process.lines and "BUILD-FAILED" not in process.lines:
                running = [line.split()[1] for line in process.lines if line.startswith("NODE ")][-1]
                kills.append({"round": round_no, "cause": cause, "attempt": attempt, "node": running})
                # Builds without tests publish nothing, killed or not: readers keep the last
                # audited version.
                assert published_balances(harness) == published
            else:  # the chosen node ran, and the build ended before the kill
                assert "BUILT" in process.lines and f"NODE {target}" in process.lines, process.lines[-30:]
                completed += 1
        if round_no % 2 == 0 or len(kills) >= histories.KILLS:  # a normal re-run every second round
            kept = assert_recovered(history, harness.verify(), kept, harness)
            published = published_balances(harness)
    print(f"crash: {len(kills)} kills mid-build over {round_no} rounds ({completed} builds completed before their kill)")
    print(f"crash: nodes that write {[n.split()[0] for n in nodes]}; killed in {[k['node'] for k in kills]}")
    assert {k["cause"] for k in kills} == {"new_events", "policy_change"}


def records_of(process: Process) -> list[dict]:
    """The JSON-line records a ``payledger build`` process printed (its own, with a ``ts``)."""
    return [record for line in process.lines if line.startswith("{") and (record := json.loads(line)).get("ts")]


@pytest.mark.slow
def test_overlapping_scheduled_builds_run_one_at_a_time_and_the_warm_loop_stops_cleanly(tmp_path):
    """A warm loop (``payledger build --every``) takes the lock; a scheduled build started while it
    builds exits 75 and runs nothing. The loop builds again in the same process; a SIGTERM during
    its second build, then a SIGINT, end it after that step (the build completes, maintenance is
    skipped), exit 0, lock released, and the view equals the fold. The loop passes dbt's selection
    through: the scenario tests' (the singular tests, which publication needs; ``tests.support``)."""
    harness = Harness(tmp_path)
    history = small_history(harness.landing, random.Random(7))
    landed = harness.start("land", *harness.landing.take())
    assert landed.finish() == 0, landed.lines[-30:]

    payledger = str(Path(sys.executable).parent / "payledger")
    loop = Process([payledger, "build", "--every", "1s", *SCENARIO_SELECTION], {**harness.env, "DBT_TARGET_PATH": str(tmp_path / "target-loop")})

    def loop_events(iteration: int) -> list[str]:
        return [r["event"] for r in records_of(loop) if r.get("iteration") == iteration]

    def wait_for_loop(iteration: int, event: str) -> None:
        deadline = time.monotonic() + 900
        while event not in loop_events(iteration):
            assert loop.popen.poll() is None and time.monotonic() < deadline, loop.lines[-30:]
            time.sleep(0.2)

    wait_for_loop(1, "lock_acquired")
    single = Process([payledger, "build"], {**harness.env, "DBT_TARGET_PATH": str(tmp_path / "target-single")})
    assert single.finish() == 75, single.lines[-10:]
    refused = records_of(single)
    assert [r["event"] for r in refused] == ["locked", "done"], "the refused build must run nothing"
    assert "another build holds" in refused[0]["message"], refused

    wait_for_loop(2, "freshness")
    time.sleep(1)  # into the second iteration's dbt build
    loop.popen.send_signal(signal.SIGTERM)
    # Ctrl-C too, which PySpark's own SIGINT handler would turn into a cancelled build.
    time.sleep(0.5)
    loop.popen.send_signal(signal.SIGINT)
    assert loop.finish() == 0, loop.lines[-30:]
    records = records_of(loop)
    assert loop_events(1) == ["lock_acquired", "freshness", "build", "maintenance", "done"], records
    builds = [r for r in records if r["event"] == "build"]
    assert all(b["success"] and b["spark_jobs"] > 0 and b["sql_executions"] > 0 for b in builds), builds
    # Each build passed its tests: each published the view's version (the idle second kept it).
    assert len(builds) == 2 and all(b["published_version"] is not None for b in builds), builds
    # The signal came during the second build: it finished, then the loop stopped before maintenance.
    assert loop_events(2) == ["lock_acquired", "freshness", "build", "stopped", "done"], records
    assert [r["before"] for r in records if r["event"] == "stopped"] == ["maintenance"], records
    # dbt ran the loop's selection: the singular tests, no generic ones.
    ran = [r["unique_id"] for r in json.loads((tmp_path / "target-loop" / "run_results.json").read_text())["results"]]
    assert "test.payledger.assert_merchant_balance_current_reconciles" in ran and not [n for n in ran if ".valid_rows_" in n], ran
    assert records[-1]["event"] == "loop_stopped" and records[-1]["reason"] == "SIGTERM" and records[-1]["exit_code"] == 0, records[-1]
    assert [r["event"] for r in records].count("loop_started") == 1, "one process, one JVM for every iteration"

    # The lock is free, and the view and the rejects equal the fold: the version the second build
    # published and the rejects table's latest commit, read from their Delta folders without Spark
    # (this test runs on Delta only).
    warehouse = Path(harness.env["PAYLEDGER_WAREHOUSE"])
    with build_lock(warehouse):
        pass
    published = read_document(warehouse, os.environ["PAYLEDGER_FORMAT"]).current
    view = by_key(read_published_view(published).to_pylist())
    view = {key: {**row, "last_event_time": row["last_event_time"].replace(tzinfo=None)} for key, row in view.items()}
    rejects = DeltaTable(str(Path(published.location).parent / "payment_event_rejects")).to_pyarrow_table(columns=["ingest_seq", "rejection_reason"])
    history.assert_matches(view, {row["ingest_seq"]: row["rejection_reason"] for row in rejects.to_pylist()})
