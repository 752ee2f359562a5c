"""The benches' arithmetic: Spark UI size metrics, maintenance cycles, the aging targets and a
build's account per dbt node."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from payledger.aging import AgingBuild, _cycle_peaks, aging_targets, maintenance_seconds, node_account, node_medians, small_build_targets
from payledger.bench import _bytes
from payledger.maintain import FileCounts
from payledger.sparkwork import BETWEEN_NODES, SparkWork, Submitted, by_node


@pytest.mark.parametrize(
    ("shown", "expected"),
    [
        ("12.0 MiB", 12 * 2**20),
        ("total (min, med, max (stageId: taskId))\n1.5 GiB (10.0 MiB, 20.0 MiB, 30.0 MiB (stage 3.0: task 7))", int(1.5 * 2**30)),
        ("958,730,504", 958_730_504),
        ("512.0 B", 512),
    ],
)
def test_size_metrics_read_as_the_ui_shows_them(shown, expected):
    assert _bytes(shown) == expected


def test_an_unreadable_size_metric_is_an_error():
    with pytest.raises(ValueError, match="unreadable size metric"):
        _bytes("n/a")


def builds(view_data_files: list[int], seconds: list[float]) -> list[AgingBuild]:
    pairs = zip(view_data_files, seconds, strict=True)
    return [AgingBuild(n, 300, s, 0, 0, 0.0, [], {"view": FileCounts(files, files // 2)}) for n, (files, s) in enumerate(pairs, start=1)]


def test_cycles_end_where_maintenance_brings_the_count_down():
    assert _cycle_peaks([5, 9, 13, 1, 5, 14, 1, 3]) == [13, 14, 3]
    assert _cycle_peaks([1, 2, 3]) == [3]


def test_a_sawtooth_under_maintenance_is_bounded_and_growth_without_it_is_not():
    flat = [40.0] * 30
    maintained = {t["name"]: t for t in aging_targets(builds([4, 8, 12, 16, 20, 1] * 5, flat), reconciled=True)}
    grown = {t["name"]: t for t in aging_targets(builds(list(range(4, 124, 4)), flat), reconciled=True)}
    bounded = [name for name in maintained if name.startswith("view data files")]
    assert maintained[bounded[0]]["met"] and maintained[bounded[0]]["value"] == 1.0
    assert not grown[bounded[0]]["met"] and grown[bounded[0]]["value"] is None


def test_slower_last_builds_miss_the_median_target():
    slower = aging_targets(builds([1] * 20, [30.0] * 10 + [40.0] * 10), reconciled=False)
    median = next(t for t in slower if t["name"].startswith("median"))
    assert median["value"] == pytest.approx(40 / 30, abs=1e-3) and not median["met"]
    assert not next(t for t in slower if "reconciles" in t["name"])["met"]


@pytest.mark.parametrize(
    ("reason", "duplicate_of", "met"),
    [("exact_duplicate", 1, True), ("conflicting_duplicate", 1, False), ("exact_duplicate", 7, False), (None, None, False)],
)
def test_the_first_day_resend_is_met_only_as_an_exact_duplicate_of_its_original(reason, duplicate_of, met):
    resent = {"event_id": "e1", "original_ingest_seq": 1, "ingest_seq": 99, "rejection_reason": reason, "duplicate_of_ingest_seq": duplicate_of}
    found = aging_targets(builds([1] * 20, [30.0] * 20), reconciled=True, resent=resent)
    target = next(t for t in found if "first day" in t["name"])
    assert target["met"] is met and "after 20 builds" in target["name"], target
    assert all("first day" not in t["name"] for t in aging_targets(builds([1] * 20, [30.0] * 20), reconciled=True))


def test_small_build_targets_are_met_or_missed_by_their_limits():
    fast = [AgingBuild(n, 300, s, jobs, 100, 0.0, []) for n, (s, jobs) in enumerate([(8.0, 50), (9.0, 55), (30.0, 90)], start=1)]
    found = {t["name"]: t for t in small_build_targets(fast, "delta", cold=[35.0, 41.0], newcomer=[59.0])}
    assert found["warm scheduled build: median <= 10 s"]["value"] == 9.0 and found["warm scheduled build: median <= 10 s"]["met"]
    assert found["warm scheduled build: median Spark jobs <= 60"]["value"] == 55 and found["warm scheduled build: median Spark jobs <= 60"]["met"]
    # The printed line is the detail: it shows the median the target is about, then the spread.
    assert found["warm scheduled build: median <= 10 s"]["detail"] == "median 9 s; 8.0-30.0 s over 3 builds"
    assert found["warm scheduled build: median Spark jobs <= 60"]["detail"].startswith("median 55; 50-90 jobs")
    even = [AgingBuild(n, 300, s, jobs, 100, 0.0, []) for n, (s, jobs) in enumerate([(10.8, 172), (10.9, 173)], start=1)]
    details = [t["detail"] for t in small_build_targets(even, "delta", cold=[], newcomer=[])[:2]]
    assert details[0].startswith("median 10.85 s;") and details[1].startswith("median 172.5;"), details
    cold = found["payledger build from a new process <= 40 s"]
    assert (cold["value"], cold["limit"], cold["met"], cold["detail"]) == (41.0, 40.0, False, "35.0 s, 41.0 s")
    maintained = next(t for t in small_build_targets(fast, "delta", cold=[35.0, 52.5], newcomer=[], cold_maintenance=[0.0, 15.0]) if t["name"] == cold["name"])
    assert (maintained["value"], maintained["met"], maintained["detail"]) == (37.5, True, "35.0 s, 52.5 s (37.5 s and maintenance 15.0 s)")
    newcomer = next(t for t in found.values() if t["name"].startswith("newcomer"))
    assert newcomer["met"] and newcomer["limit"] == 60.0
    iceberg = {t["name"] for t in small_build_targets(fast, "iceberg", cold=[], newcomer=[50.0])}
    assert "warm scheduled build: median <= 8 s" in iceberg
    assert not any("Spark jobs" in name or name.startswith("newcomer") for name in iceberg), iceberg
    unmeasured = next(t for t in small_build_targets(fast, "iceberg", cold=[], newcomer=[]) if t["name"].startswith("payledger build"))
    assert unmeasured["value"] is None and not unmeasured["met"]


def test_a_builds_jobs_and_executions_go_to_the_node_running_when_they_were_submitted():
    start = dt.datetime(2026, 12, 3, 12, 0, tzinfo=dt.UTC)

    def at(second: float) -> int:
        return int((start + dt.timedelta(seconds=second)).timestamp() * 1000)

    windows = {"checkpoint": (start, start + dt.timedelta(seconds=5)), "view": (start + dt.timedelta(seconds=6), start + dt.timedelta(seconds=9))}
    jobs = [Submitted(i, at(second), "job") for i, second in enumerate([1, 2, 4.9, 5.5, 7, 30])]
    executions = [Submitted(i, at(second), "sql") for i, second in enumerate([0.5, 6.5])]
    account = node_account({"checkpoint": 4.8, "view": 2.9, "seed": 0.3}, by_node(SparkWork(6, 2, jobs, executions), windows))
    assert account == {
        BETWEEN_NODES: {"seconds": 0.0, "spark_jobs": 2, "sql_executions": 0},
        "checkpoint": {"seconds": 4.8, "spark_jobs": 3, "sql_executions": 1},
        "seed": {"seconds": 0.3, "spark_jobs": 0, "sql_executions": 0},
        "view": {"seconds": 2.9, "spark_jobs": 1, "sql_executions": 1},
    }


def test_node_medians_count_a_node_missing_from_a_build_as_nothing_and_list_the_slowest_first():
    def build(number: int, nodes: dict[str, tuple[float, int]]) -> AgingBuild:
        return AgingBuild(number, 300, 10.0, 0, 0, 0.0, [], {}, {n: {"seconds": s, "spark_jobs": j, "sql_executions": j} for n, (s, j) in nodes.items()})

    done = [
        build(1, {"view": (3.0, 30), "checkpoint": (5.0, 40)}),
        build(2, {"view": (2.0, 20), "checkpoint": (7.0, 50), "snapshot": (1.0, 8)}),
        build(3, {"view": (4.0, 35)}),
    ]
    medians = node_medians(done)
    assert list(medians) == ["checkpoint", "view", "snapshot"]
    assert medians["checkpoint"] == {"seconds": 5.0, "spark_jobs": 40, "sql_executions": 40}
    assert medians["view"] == {"seconds": 3.0, "spark_jobs": 30, "sql_executions": 30}
    assert medians["snapshot"] == {"seconds": 0.0, "spark_jobs": 0, "sql_executions": 0}
    assert node_medians(builds([1, 2], [5.0, 6.0])) == {}


def test_the_serving_targets_are_met_or_missed_by_their_limits():
    from payledger.bench_serve import LoadResult, combined, serve_targets

    fast, slow = LoadResult(30_000, 20.0, 0, 1.0, 4.0, 9.0), LoadResult(4_000, 5.0, 0, 3.0, 12.5, 40.0)
    live = combined([fast, slow])
    assert (live.requests, live.seconds, live.p99_ms) == (34_000, 25.0, 12.5), "the worst slice's p99"
    targets = serve_targets(fast, live, [0.6, 0.9, 1.2], worst_slice_p99_ms=12.5)
    found = {t["name"]: t["met"] for t in targets}
    assert found == {
        "requests/s, idle": True,
        "p99 ms, idle": True,
        "requests/s, under a build": True,
        "p99 ms, under a build": False,
        "payledger balance, s (slowest)": False,
    }
    details = {t["name"]: t["detail"] for t in targets}
    assert "worst 5-s slice p99 12.50 ms" in details["p99 ms, under a build"] and "slice" not in details["p99 ms, idle"], details
    failing = LoadResult(30_000, 20.0, 3, 1.0, 4.0, 9.0)
    assert not any(t["met"] for t in serve_targets(failing, failing, [0.5]) if "idle" in t["name"]), "errors miss the target"


def test_slices_combine_into_the_percentiles_of_all_their_requests():
    """With raw latency counts, a combined run's percentiles are those of every request of every
    slice (a reference ranks the expanded samples), not the worst slice's."""
    import collections
    import random

    from payledger.bench_serve import LoadResult, combined, percentile_us

    rng = random.Random(7)
    samples = [[rng.randrange(500, 3_000) for _ in range(4_000)], [rng.randrange(500, 20_000) for _ in range(300)]]
    slices = []
    for values in samples:
        counts = tuple(sorted(collections.Counter(values).items()))
        p50, p99 = (percentile_us(dict(counts), p) / 1000 for p in (50, 99))
        slices.append(LoadResult(len(values), 5.0, 0, p50, p99, max(values) / 1000, latency_us=counts))
    everything = sorted(samples[0] + samples[1])
    live = combined(slices)
    assert live.p99_ms == everything[len(everything) * 99 // 100] / 1000 < max(s.p99_ms for s in slices)
    assert (live.p50_ms, live.max_ms, live.requests) == (everything[len(everything) // 2] / 1000, everything[-1] / 1000, 4_300)
    with pytest.raises(ValueError):
        percentile_us({}, 99)


def test_wrk_draws_published_merchants_and_counts_failed_answers(tmp_path):
    """The bench's wrk script against a real server: answers for published merchants count as
    requests; a merchant the version lacks (404) counts as an error."""
    import json

    from deltalake import write_deltalake

    from payledger.bench_serve import WRK_SCRIPT, percentile_us, run_wrk
    from payledger.publish import Publication, record_publication
    from payledger.serve import PublishedBalances, create_app
    from tests.asgi import uvicorn_in_thread
    from tests.view_tables import view_row, view_table

    ids = [f"m{i}" for i in range(20)]
    rows = view_table([view_row(m, "USD", "1.00", "1.00", "1.00", n) for n, m in enumerate(ids)])
    write_deltalake(str(tmp_path / "view"), rows)
    record_publication(tmp_path / "warehouse", Publication("delta", str(tmp_path / "view"), 0, None, "b", 19, "2026-11-26T10:00:00+00:00"))
    balances = PublishedBalances(tmp_path / "warehouse", "delta")
    balances.refresh()
    published, unknown = tmp_path / "published.lua", tmp_path / "unknown.lua"
    published.write_text(WRK_SCRIPT % (",".join(json.dumps(i) for i in ids), 1))
    unknown.write_text(WRK_SCRIPT % (json.dumps("nobody"), 1))
    with uvicorn_in_thread(create_app(balances, watch_interval_s=3600), log_level="warning") as port:
        good, bad = run_wrk(port, published, 1, 2), run_wrk(port, unknown, 1, 2)
    assert good.requests > 10 and good.errors == 0 and 0 < good.p50_ms <= good.p99_ms <= good.max_ms, good
    assert bad.requests > 10 and bad.errors == bad.requests, bad
    # The raw latency counts (with wrk's added samples for coordinated omission, so at least one
    # per request) give back wrk's own percentiles, so slices combine exactly.
    counts = dict(good.latency_us)
    assert sum(counts.values()) >= good.requests, good
    assert (percentile_us(counts, 50) / 1000, percentile_us(counts, 99) / 1000, max(counts) / 1000) == (good.p50_ms, good.p99_ms, good.max_ms)


def test_the_stall_probe_reports_a_stall_of_its_process_in_the_slice_it_overlaps():
    """The probe stopped for 0.3 s (SIGSTOP, as a stalled machine would stop it) reports that
    lateness in the wrk slice around it, and nothing in a slice before it."""
    import datetime as dt
    import signal
    import time

    from payledger.bench_serve import LoadResult, StallProbe, probe_late_ms

    def slice_at(start: float, seconds: float) -> LoadResult:
        return LoadResult(1, seconds, 0, 1.0, 1.0, 1.0, dt.datetime.fromtimestamp(start, dt.UTC).isoformat(timespec="milliseconds"))

    with StallProbe() as probe:
        time.sleep(0.5)
        quiet = slice_at(time.time() - 0.4, 0.3)
        stopped_at = time.time()
        probe.process.send_signal(signal.SIGSTOP)
        time.sleep(0.3)
        probe.process.send_signal(signal.SIGCONT)
        deadline = time.monotonic() + 10
        while not any(late >= 250 for _, late in probe.late) and time.monotonic() < deadline:
            time.sleep(0.05)
    around = slice_at(stopped_at - 0.1, 0.5)
    assert 250 <= probe_late_ms(probe, around) < 2000, probe.late
    assert probe_late_ms(probe, quiet) < 250, probe.late


def test_a_cold_builds_maintenance_seconds_come_from_its_maintenance_line_when_tables_were_due():
    due = {"event": "maintenance", "success": True, "seconds": 14.2, "tables": [{"table": "payledger.merchant_balance_current"}]}
    checked = {"event": "maintenance", "success": True, "seconds": 0.4, "tables": []}
    build = {"event": "build", "success": True, "seconds": 22.0}
    lines = [json.dumps(build), "{not json", "dbt says hello", json.dumps(due)]
    assert maintenance_seconds("\n".join(lines)) == 14.2
    assert maintenance_seconds("\n".join([json.dumps(build), json.dumps(checked)])) == 0.0
