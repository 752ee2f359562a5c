"""``payledger bench-aging``: many small scheduled builds in a row, to show builds do not slow down
as commits pile up when the tables are maintained on the documented schedule.

One history (3M events, 5,000 merchants by default) is built once; then ``builds`` batches of about
0.01% new events each (with the generator's duplicates, late events and bad rows) are loaded and
built one after the other, each through the cron wrapper's own path (``schedule.scheduled_build``:
source freshness, ``dbt build``, then maintenance of the tables due, ``maintain_every`` commits).
The builds leave out dbt's tests (they recompute from all of history, a cost that grows with it by
design); one ``dbt test`` at the end checks that the view reconciles, on every key. Records, per build, the build's
wall seconds, the Spark jobs and SQL executions it ran, the same per dbt node (``nodes``; their
medians over the builds: ``node_medians``), the maintenance step's seconds and the data and delete
files of the view, the daily checkpoint and the canonical events; writes
``target/bench_aging.json`` (after every build, with ``complete`` false until the end) and a plot,
``target/bench_aging.png``.

Then, with this process's JVM ended, what a new process pays: ``COLD_BUILDS`` scheduled builds, each
``payledger build`` of its own (what a cron line runs), and a newcomer's ``dbt build`` with every
test after one reference change (twice) on a warehouse of its own (``NEWCOMER_EVENTS`` events,
``warehouse/bench_newcomer``). The small-build targets (``small_build_targets``) are printed with
the aging targets as met or missed.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rich.console import Console

from payledger import scenario
from payledger.dbt import FULL_RECONCILIATION, run_dbt
from payledger.formats import session_format
from payledger.generate import EVENT_FILE, MERCHANT_FILE, POLICY_FILE
from payledger.load import load_file
from payledger.maintain import DEFAULT_RETENTION_HOURS, FileCounts, file_counts
from payledger.schedule import scheduled_build
from payledger.spark import PROJECT_ROOT, default_warehouse, get_spark, stop_spark
from payledger.sparkwork import by_node
from payledger.warehouse import CANONICAL, CHECKPOINT, REJECTS, VIEW

#: Tables whose files are counted after every build.
WATCHED = {
    "view": VIEW,
    "checkpoint": CHECKPOINT,
    "canonical": CANONICAL,
}
#: Builds per day of event time: the batches move forward one day every this many builds.
BUILDS_PER_DAY = 10
#: Scheduled builds from a new process, after the warm ones (each with a batch of its own).
COLD_BUILDS = 2
#: What each scheduled build runs: dbt build without dbt's tests (see the module's docstring).
BUILD_ARGS = ("--exclude", "resource_type:test", "resource_type:unit_test")
#: The dbt nodes a build's account gives seconds for (a scheduled build here runs no tests; its
#: hooks are operations).
NODE_TYPES = ("model", "snapshot", "seed", "test", "operation")


@dataclass
class AgingBuild:
    """One scheduled build: its number (1-based), rows loaded, the build's wall seconds
    (``seconds``), the Spark jobs and SQL executions it ran (``sparkwork.WorkCounter``), the
    maintenance step's seconds (the check for due tables, and the maintenance of those due) and the
    tables maintained, file counts after it, and where the build's time, jobs and executions went
    per dbt node (``nodes``: ``node_account``)."""

    number: int
    rows_loaded: int
    seconds: float
    spark_jobs: int
    sql_executions: int
    maintenance_s: float
    maintained: list[str]
    files: dict[str, FileCounts] = field(default_factory=dict)
    nodes: dict[str, dict[str, float]] = field(default_factory=dict)


def node_account(seconds: dict[str, float], work: dict[str, dict[str, int]]) -> dict[str, dict[str, float]]:
    """Where one build went, per dbt node: ``{node: {"seconds": s, "spark_jobs": n,
    "sql_executions": n}}``, from dbt's execution seconds per node (``seconds``:
    ``DbtInvocation.timings``) and the jobs and executions attributed to nodes by submission time
    (``work``: ``sparkwork.by_node``, whose ``sparkwork.BETWEEN_NODES`` entry has no seconds: 0).
    A node with seconds and no Spark work counts 0 of each."""
    nothing = {"spark_jobs": 0, "sql_executions": 0}
    return {node: {"seconds": round(seconds.get(node, 0.0), 2), **nothing, **work.get(node, {})} for node in sorted(set(seconds) | set(work))}


def node_medians(builds: list[AgingBuild]) -> dict[str, dict[str, float]]:
    """Each node's median seconds, Spark jobs and SQL executions over ``builds`` (a node missing
    from a build's account counts 0 there), slowest first: ``{node: {"seconds": s, "spark_jobs": n,
    "sql_executions": n}}``. ``{}`` when no build has an account."""
    names = {node for build in builds for node in build.nodes}
    medians = {
        node: {key: round(_median([build.nodes.get(node, {}).get(key, 0) for build in builds]), 2) for key in ("seconds", "spark_jobs", "sql_executions")}
        for node in names
    }
    return dict(sorted(medians.items(), key=lambda item: (-item[1]["seconds"], -item[1]["spark_jobs"], item[0])))


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def _cycle_peaks(counts: list[int]) -> list[int]:
    """The peak of each maintenance cycle of a file count: a cycle ends where the count drops."""
    peaks = [counts[0]]
    for previous, current in itertools.pairwise(counts):
        if current < previous:
            peaks.append(current)
        else:
            peaks[-1] = max(peaks[-1], current)
    return peaks


def aging_targets(builds: list[AgingBuild], reconciled: bool, resent: dict | None = None) -> list[dict]:
    """The aging targets, each as ``{name, value, limit, met, detail}``: the last ten builds' median
    <= 1.2 x the first ten's; the view's data and delete files stay bounded: the peak of every later
    maintenance cycle <= 1.1 x the first cycle's (with no maintenance there is one cycle and no
    bound: missed); the view reconciles at the end; with ``resent`` (``resend_first_day_event``'s
    result), the re-delivered first-day event is an exact duplicate of its original."""
    first, last = [b.seconds for b in builds[:10]], [b.seconds for b in builds[-10:]]
    found = []
    ratio = _median(last) / _median(first) if _median(first) else None
    found.append(
        {
            "name": "median of the last 10 builds <= 1.2 x the first 10's",
            "value": None if ratio is None else round(ratio, 3),
            "limit": 1.2,
            "met": ratio is not None and ratio <= 1.2,
            "detail": f"{_median(last):.1f} s vs {_median(first):.1f} s",
        }
    )
    for kind in ("data_files", "delete_files"):
        peaks = _cycle_peaks([getattr(b.files["view"], kind) for b in builds])
        value = max(peaks[1:]) / peaks[0] if len(peaks) > 1 and peaks[0] else None
        found.append(
            {
                "name": f"view {kind.replace('_', ' ')} stay bounded (each maintenance cycle's peak <= 1.1 x the first's)",
                "value": None if value is None else round(value, 3),
                "limit": 1.1,
                "met": value is not None and value <= 1.1,
                "detail": f"peaks per cycle {peaks}",
            }
        )
    found.append({"name": "the view reconciles after the last build", "value": int(not reconciled), "limit": 0, "met": reconciled, "detail": ""})
    if resent is not None:
        caught = resent["rejection_reason"] == "exact_duplicate" and resent["duplicate_of_ingest_seq"] == resent["original_ingest_seq"]
        found.append(
            {
                "name": f"a re-delivered event of the history's first day is an exact duplicate after {len(builds)} builds",
                "value": int(not caught),
                "limit": 0,
                "met": caught,
                "detail": f"{resent['event_id']}: {resent['rejection_reason']}, duplicate of ingest_seq"
                f" {resent['duplicate_of_ingest_seq']} (original {resent['original_ingest_seq']})",
            }
        )
    return found


def resend_first_day_event(spark, warehouse: Path, out_dir: Path) -> dict:
    """Land again, unchanged, the accepted event with the earliest ``event_time`` (the history's
    first day), run one scheduled build, and return how the build classified the copy:
    ``{event_id, original_ingest_seq, ingest_seq, rejection_reason, duplicate_of_ingest_seq}``
    (the copy's ``ingest_seq``, reason and ``duplicate_of_ingest_seq`` None when it is not among
    the rejects). The event's time comes back from Spark without a zone and is written as UTC, the
    session's zone. Raises
    ``scenario.BuildFailed`` when the build fails (issue 28: dedup however old the original)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql.functions import col

    from payledger.contract import EVENT_FILE_SCHEMA

    columns = ", ".join(EVENT_FILE_SCHEMA.names)
    first = spark.sql(f"select {columns}, ingest_seq from {CANONICAL} where is_accepted order by event_time, ingest_seq limit 1").first()
    path = out_dir / "first_day_resend.parquet"
    out_dir.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist([{name: first[name] for name in EVENT_FILE_SCHEMA.names}], schema=EVENT_FILE_SCHEMA), path)
    load_file(spark, "payment_events", path, warehouse)
    records: list[dict] = []
    scheduled_build(build_args=BUILD_ARGS, emit=records.append, maintain_every=0)
    build = next(r for r in records if r["event"] == "build")
    if not build["success"]:
        raise scenario.BuildFailed(f"the build of the re-delivered event failed: {build['failures']}")
    copies = spark.table(REJECTS).where((col("event_id") == first["event_id"]) & (col("ingest_seq") > first["ingest_seq"]))
    copy = copies.select("ingest_seq", "rejection_reason", "duplicate_of_ingest_seq").orderBy(col("ingest_seq").desc()).first()
    return {
        "event_id": first["event_id"],
        "original_ingest_seq": first["ingest_seq"],
        "ingest_seq": copy["ingest_seq"] if copy else None,
        "rejection_reason": copy["rejection_reason"] if copy else None,
        "duplicate_of_ingest_seq": copy["duplicate_of_ingest_seq"] if copy else None,
    }


#: The small-build targets (issue 26) by table format: a warm build's median seconds, and its median
#: Spark jobs (Delta only).
WARM_MEDIAN_LIMIT_S = {"delta": 10.0, "iceberg": 8.0}
WARM_JOBS_LIMIT = {"delta": 60}
#: A scheduled build from a new process (``payledger build``, what a cron line runs), and a
#: newcomer's ``dbt build`` with every test after one reference change, from a new process.
COLD_BUILD_LIMIT_S = 40.0
NEWCOMER_BUILD_LIMIT_S = {"delta": 60.0}


def _target(name: str, value: float | None, limit: float, detail: str) -> dict:
    return {"name": name, "value": None if value is None else round(value, 2), "limit": limit, "met": value is not None and value <= limit, "detail": detail}


def small_build_targets(
    builds: list[AgingBuild], table_format: str, cold: list[float], newcomer: list[float], cold_maintenance: list[float] | None = None
) -> list[dict]:
    """The small-build targets as ``{name, value, limit, met, detail}``: the warm builds' median
    seconds and (Delta) median Spark jobs, the slowest scheduled build from a new process
    (``cold``: wall seconds; ``cold_maintenance``: the seconds of the maintenance each ran when
    tables were due, 0 when none were, counted apart as the warm builds' is) and the slowest
    newcomer ``dbt build`` (``newcomer``: wall seconds; a target on Delta only, reported on Iceberg
    without one)."""
    maintained = list(cold_maintenance or [0.0] * len(cold))
    builds_only = [wall - maintenance for wall, maintenance in zip(cold, maintained, strict=True)]
    seconds = [b.seconds for b in builds]
    jobs = [b.spark_jobs for b in builds]
    median_s, median_jobs = _median(seconds), _median(jobs)
    found = [
        _target(
            f"warm scheduled build: median <= {WARM_MEDIAN_LIMIT_S[table_format]:g} s",
            median_s,
            WARM_MEDIAN_LIMIT_S[table_format],
            f"median {round(median_s, 2):g} s; {min(seconds):.1f}-{max(seconds):.1f} s over {len(seconds)} builds",
        )
    ]
    if table_format in WARM_JOBS_LIMIT:
        found.append(
            _target(
                f"warm scheduled build: median Spark jobs <= {WARM_JOBS_LIMIT[table_format]}",
                median_jobs,
                WARM_JOBS_LIMIT[table_format],
                f"median {round(median_jobs, 1):g}; {min(jobs)}-{max(jobs)} jobs, {_median([b.sql_executions for b in builds]):.0f} SQL executions (median)",
            )
        )
    found.append(
        _target(
            f"payledger build from a new process <= {COLD_BUILD_LIMIT_S:g} s",
            max(builds_only) if cold else None,
            COLD_BUILD_LIMIT_S,
            ", ".join(f"{wall:.1f} s" + (f" ({wall - m:.1f} s and maintenance {m:.1f} s)" if m else "") for wall, m in zip(cold, maintained, strict=True)),
        )
    )
    if table_format in NEWCOMER_BUILD_LIMIT_S:
        found.append(
            _target(
                f"newcomer dbt build (every test) after one reference change, new process <= {NEWCOMER_BUILD_LIMIT_S[table_format]:g} s",
                max(newcomer) if newcomer else None,
                NEWCOMER_BUILD_LIMIT_S[table_format],
                ", ".join(f"{s:.1f} s" for s in newcomer),
            )
        )
    return found


#: The newcomer's warehouse: about 15,000 events and 120 merchants.
NEWCOMER_EVENTS = 15_000
NEWCOMER_MERCHANTS = 120

_NEWCOMER_SETUP = """
import sys
from pathlib import Path
from payledger import scenario
from payledger.dbt import run_dbt
from payledger.formats import session_format
from payledger.spark import default_warehouse, get_spark
scenario.load_history(get_spark(), Path(sys.argv[1]), default_warehouse())
built = run_dbt("build", "--target-path", sys.argv[2])
sys.exit(0 if built.success else 1)
"""


def _process_env(warehouse: Path) -> dict[str, str]:
    """The environment of a new process on ``warehouse``, as a cron line or a newcomer runs one (no
    Spark UI)."""
    env = {**os.environ, "PAYLEDGER_WAREHOUSE": str(warehouse), "PAYLEDGER_HOME": str(PROJECT_ROOT)}
    env.pop("PAYLEDGER_SPARK_UI", None)
    return env


def _timed(argv: list[str], env: dict[str, str], what: str, output: list[str] | None = None) -> float:
    """Run ``argv`` from the project root; its wall seconds (its standard output appended to
    ``output`` when given). Raises ``scenario.BuildFailed`` (with the end of its output) when it
    exits non-zero."""
    started = time.monotonic()
    done = subprocess.run(argv, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=3600)
    seconds = time.monotonic() - started
    if output is not None:
        output.append(done.stdout)
    if done.returncode != 0:
        raise scenario.BuildFailed(f"{what} exited {done.returncode}: {(done.stdout + done.stderr)[-3000:]}")
    return seconds


def _bin(name: str) -> str:
    return str(Path(sys.executable).parent / name)


def cold_scheduled_builds(batch_dirs: list[Path], warehouse: Path, build_args: tuple[str, ...]) -> list[tuple[float, float]]:
    """For each batch: ``payledger load events`` (untimed), then ``payledger build <build_args>``
    from a new process, as a cron line runs it; per build ``(wall seconds, JVM start included;
    seconds of the maintenance it ran, from its ``maintenance`` JSON line, 0 when no table was
    due)``. A reduced run (fewer builds than the maintenance interval) makes these builds the
    ones that find tables due. Run after this process's JVM has ended (the Derby metastore admits
    one process)."""
    env = _process_env(warehouse)
    found = []
    for batch_dir in batch_dirs:
        _timed([_bin("payledger"), "load", "events", str(batch_dir / EVENT_FILE)], env, "payledger load")
        output: list[str] = []
        seconds = _timed([_bin("payledger"), "build", *build_args], env, "payledger build", output)
        found.append((seconds, maintenance_seconds(output[0])))
    return found


def maintenance_seconds(output: str) -> float:
    """The seconds of the maintenance that a ``payledger build``'s JSON lines (``output``) report
    for the tables that were due (``event`` ``maintenance`` with ``tables``), 0.0 when none was."""
    total = 0.0
    for line in output.splitlines():
        try:
            record = json.loads(line) if line.startswith("{") else None
        except json.JSONDecodeError:  # not one of the build's records
            continue
        if isinstance(record, dict) and record.get("event") == "maintenance" and record.get("tables"):
            total += float(record["seconds"])
    return total


def newcomer_builds(data_dir: Path, warehouse: Path) -> list[float]:
    """A newcomer's loop on a small warehouse (NEWCOMER_EVENTS events, NEWCOMER_MERCHANTS merchants),
    each step a new process: load and build it (untimed), then change one reference row and run
    ``dbt build`` with every test, twice: a retroactive policy change, then a merchant's segment move.
    Returns the two builds' wall seconds."""
    history = data_dir / "history"
    scenario.generate_history(history, NEWCOMER_EVENTS, NEWCOMER_MERCHANTS)
    env = _process_env(warehouse)
    target = str(PROJECT_ROOT / "target" / "bench_newcomer")
    _timed([sys.executable, "-c", _NEWCOMER_SETUP, str(history), target], env, "the newcomer's first build")
    dbt_build = [_bin("dbt"), "build", "--project-dir", str(PROJECT_ROOT), "--profiles-dir", str(PROJECT_ROOT / "profiles"), "--target-path", target]
    scenario.write_retroactive_policy(history, data_dir / "policy_change")
    _timed([_bin("payledger"), "load", "policies", str(data_dir / "policy_change" / POLICY_FILE)], env, "payledger load policies")
    seconds = [_timed(dbt_build, env, "the newcomer's dbt build after a policy change")]
    scenario.write_segment_move(history, data_dir / "segment_move")
    _timed([_bin("payledger"), "load", "merchants", str(data_dir / "segment_move" / MERCHANT_FILE)], env, "payledger load merchants")
    seconds.append(_timed(dbt_build, env, "the newcomer's dbt build after a segment move"))
    return seconds


def _plot(builds: list[AgingBuild], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    numbers = [b.number for b in builds]
    figure, (seconds_axis, files_axis) = plt.subplots(2, 1, figsize=(10, 7), sharex=True)
    seconds_axis.plot(numbers, [b.seconds for b in builds], marker=".", label="build (s)")
    seconds_axis.bar(numbers, [b.maintenance_s for b in builds], color="tab:orange", alpha=0.6, label="maintenance (s)")
    seconds_axis.set_ylabel("seconds")
    seconds_axis.set_title(title)
    seconds_axis.legend()
    for name in WATCHED:
        files_axis.plot(numbers, [b.files[name].data_files for b in builds], label=f"{name} data files")
    files_axis.plot(numbers, [b.files["view"].delete_files for b in builds], linestyle="--", label="view delete files")
    files_axis.set_xlabel("build")
    files_axis.set_ylabel("files (symlog)")
    files_axis.set_yscale("symlog")
    files_axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def run_aging(
    console: Console,
    data_dir: Path,
    out_dir: Path,
    *,
    events: int = 3_000_000,
    merchants: int = 5_000,
    builds: int = 100,
    batch_share: float = 0.0001,
    maintain_every: int = 24,
    retention_hours: float = DEFAULT_RETENTION_HOURS,
) -> dict:
    """Run the aging bench; writes ``out_dir/bench_aging.json`` and ``out_dir/bench_aging.png`` and
    returns the figures (``builds``: one dict per build, ``targets``). Raises ``scenario.BuildFailed``
    when the initial build, a scheduled build or its maintenance fails."""
    history = data_dir / "history"
    scenario.generate_history(history, events, merchants)
    batch_events = max(10, int(events * batch_share))
    batch_dirs = []
    # The last COLD_BUILDS batches are for the scheduled builds from a new process, after the rest.
    for number in range(1, builds + COLD_BUILDS + 1):
        batch_dir = data_dir / f"batch_{number:03d}"
        scenario.generate_new_batch(
            history,
            batch_dir,
            events=batch_events,
            merchants=merchants,
            days=2,
            end_date=scenario.END_DATE + dt.timedelta(days=1 + number // BUILDS_PER_DAY),
            seed=1000 + number,
            id_prefix=f"a{number:03d}_",
        )
        batch_dirs.append(batch_dir)
    console.print(f"generated {events:,} events and {builds + COLD_BUILDS} batches of {batch_events:,} new events")
    batch_dirs, cold_dirs = batch_dirs[:builds], batch_dirs[builds:]

    spark = get_spark()
    warehouse = default_warehouse()
    scenario.load_history(spark, history, warehouse)
    started = time.monotonic()
    initial = run_dbt("build", *BUILD_ARGS)
    if not initial.success:
        raise scenario.BuildFailed(f"the initial build failed: {initial.failures() or initial.exception}")
    console.print(f"initial build: {time.monotonic() - started:.1f}s")

    done: list[AgingBuild] = []
    for number, batch_dir in enumerate(batch_dirs, start=1):
        rows = load_file(spark, "payment_events", batch_dir / EVENT_FILE, warehouse)
        records: list[dict] = []
        accounts: list[dict[str, dict[str, float]]] = []

        def account(invocation, work, accounts=accounts) -> None:
            accounts.append(node_account(invocation.timings(NODE_TYPES), by_node(work, invocation.windows())))

        code = scheduled_build(
            build_args=BUILD_ARGS,
            emit=records.append,
            maintain_every=maintain_every,
            retention_hours=retention_hours,
            on_build=account,
        )
        build = next(r for r in records if r["event"] == "build")
        if not build["success"]:
            raise scenario.BuildFailed(f"scheduled build {number} failed (exit {code}): {build['failures']}")
        maintenance = next(r for r in records if r["event"] == "maintenance")
        if not maintenance["success"]:
            raise scenario.BuildFailed(f"maintenance after scheduled build {number} failed: {maintenance['error']}")
        result = AgingBuild(
            number,
            rows,
            build["seconds"],
            build["spark_jobs"],
            build["sql_executions"],
            maintenance["seconds"],
            [t["table"] for t in maintenance["tables"]],
            {name: file_counts(spark, table) for name, table in WATCHED.items()},
            accounts[0] if accounts else {},
        )
        done.append(result)
        # The curve so far, so that a long run can be read before it ends.
        out_dir.mkdir(parents=True, exist_ok=True)
        progress = {"events": events, "merchants": merchants, "batch_events": batch_events, "maintain_every": maintain_every, "complete": False}
        (out_dir / "bench_aging.json").write_text(json.dumps(progress | {"builds": [asdict(b) for b in done]}, indent=2) + "\n")
        view = result.files["view"]
        console.print(
            f"build {number:3d}: {result.seconds:5.1f}s, {result.spark_jobs} Spark jobs, {result.sql_executions} SQL executions"
            + (f", maintenance {result.maintenance_s:.1f}s ({len(result.maintained)} tables)" if result.maintained else f", check {result.maintenance_s:.1f}s")
            + f"; view files {view.data_files} data, {view.delete_files} delete"
        )

    resent = resend_first_day_event(spark, warehouse, out_dir)
    console.print(f"re-delivered first-day event {resent['event_id']}: {resent['rejection_reason']}")
    # Its own target path: dbt keeps its partial-parse state there (partial_parse.msgpack), and a
    # change of vars makes the next invocation from the same path parse the whole project again
    # (2.5-3 s more in a new process, 2026-12-06), which the scheduled builds below would pay.
    # They follow a scheduled build, as a cron line's do.
    check = run_dbt("test", *FULL_RECONCILIATION, target_path=PROJECT_ROOT / "target" / "bench_aging_check")
    reconciled = bool(check.success)
    table_format = session_format(spark)
    # New processes need the warehouse's metastore: this process's JVM ends here.
    stop_spark()
    console.print(f"scheduled builds from a new process ({len(cold_dirs)}): ", end="")
    cold_runs = cold_scheduled_builds(cold_dirs, warehouse, BUILD_ARGS)
    cold, cold_maintenance = [wall for wall, _ in cold_runs], [m for _, m in cold_runs]
    console.print(", ".join(f"{wall:.1f}s" + (f" (maintenance {m:.1f}s)" if m else "") for wall, m in cold_runs))
    console.print(f"newcomer dbt builds ({NEWCOMER_EVENTS:,} events, {NEWCOMER_MERCHANTS} merchants, new processes): ", end="")
    newcomer = newcomer_builds(data_dir.parent / "bench_newcomer", warehouse.parent / "bench_newcomer")
    console.print(", ".join(f"{seconds:.1f}s" for seconds in newcomer))
    found = aging_targets(done, reconciled, resent) + small_build_targets(done, table_format, cold, newcomer, cold_maintenance)
    figures = {
        "events": events,
        "merchants": merchants,
        "batch_events": batch_events,
        "maintain_every": maintain_every,
        "retention_hours": retention_hours,
        "complete": True,
        "builds": [asdict(b) for b in done],
        "reconciled": reconciled,
        "failures": check.failures(),
        "first_day_resend": resent,
        "table_format": table_format,
        "cold_build_s": [round(seconds, 1) for seconds in cold],
        "cold_build_maintenance_s": [round(seconds, 1) for seconds in cold_maintenance],
        "newcomer_build_s": [round(seconds, 1) for seconds in newcomer],
        "node_medians": node_medians(done),
        "targets": found,
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "bench_aging.json").write_text(json.dumps(figures, indent=2) + "\n")
    _plot(done, out_dir / "bench_aging.png", f"{builds} scheduled builds on {events:,} events, maintenance every {maintain_every} commits")
    console.print("per node, median of the warm builds (seconds, Spark jobs, SQL executions):")
    for node, median in figures["node_medians"].items():
        console.print(f"  {node}: {median['seconds']:.2f} s, {median['spark_jobs']:g} jobs, {median['sql_executions']:g} executions")
    for target in found:
        console.print(f"{'[green]met[/]' if target['met'] else '[red]missed[/]'}  {target['name']}: {target['detail'] or target['value']}")
    console.print(f"wrote {out_dir / 'bench_aging.json'} and {out_dir / 'bench_aging.png'}")
    return figures
