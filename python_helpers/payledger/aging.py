"""``payledger bench-aging``: many small scheduled builds in a row, to show builds do not slow down
as commits pile up when the tables are maintained on the documented schedule.

One history (3M events, 5,000 merchants by default) is built once; then ``builds`` batches of about
0.01% new events each (with the generator's duplicates, late events and bad rows) are loaded and
built one after the other, each through the cron wrapper's own path (``schedule.scheduled_build``:
source freshness, ``dbt build``, then maintenance of the tables due, ``maintain_every`` commits).
The builds leave out dbt's tests (they recompute from all of history, a cost that grows with it by
design); one ``dbt test`` at the end checks that the view reconciles. Records, per build, the build's
wall seconds, the maintenance step's seconds and the data and delete files of the view, the daily
checkpoint and the canonical events; writes ``target/bench_aging.json`` (after every build, with
``complete`` false until the end) and a plot, ``target/bench_aging.png``.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rich.console import Console

from payledger import scenario
from payledger.dbt import run_dbt
from payledger.generate import EVENT_FILE
from payledger.load import load_file
from payledger.maintain import DEFAULT_RETENTION_HOURS, FileCounts, file_counts
from payledger.schedule import scheduled_build
from payledger.spark import default_warehouse, get_spark
from payledger.warehouse import VIEW

#: Tables whose files are counted after every build.
WATCHED = {
    "view": VIEW,
    "checkpoint": "payledger_intermediate.int_merchant_daily_balances",
    "canonical": "payledger_intermediate.int_payment_events_classified",
}
#: Builds per day of event time: the batches move forward one day every this many builds.
BUILDS_PER_DAY = 10


@dataclass
class AgingBuild:
    """One scheduled build: its number (1-based), rows loaded, the build's wall seconds, the
    maintenance step's seconds (the check for due tables, and the maintenance of those due) and the
    tables maintained, and file counts after it."""

    number: int
    rows_loaded: int
    build_s: float
    maintenance_s: float
    maintained: list[str]
    files: dict[str, FileCounts] = field(default_factory=dict)


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


def aging_targets(builds: list[AgingBuild], reconciled: bool) -> list[dict]:
    """The aging targets, each as ``{name, value, limit, met, detail}``: the last ten builds' median
    <= 1.2 x the first ten's; the view's data and delete files stay bounded: the peak of every later
    maintenance cycle <= 1.1 x the first cycle's (with no maintenance there is one cycle and no
    bound: missed); the view reconciles at the end."""
    first, last = [b.build_s for b in builds[:10]], [b.build_s for b in builds[-10:]]
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
    return found


def _plot(builds: list[AgingBuild], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    numbers = [b.number for b in builds]
    figure, (seconds_axis, files_axis) = plt.subplots(2, 1, figsize=(10, 7), sharex=True)
    seconds_axis.plot(numbers, [b.build_s for b in builds], marker=".", label="build (s)")
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
    for number in range(1, builds + 1):
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
    console.print(f"generated {events:,} events and {builds} batches of {batch_events:,} new events")

    spark = get_spark()
    warehouse = default_warehouse()
    scenario.load_history(spark, history, warehouse)
    started = time.monotonic()
    initial = run_dbt("build", "--exclude", "resource_type:test", "resource_type:unit_test")
    if not initial.success:
        raise scenario.BuildFailed(f"the initial build failed: {initial.failures() or initial.exception}")
    console.print(f"initial build: {time.monotonic() - started:.1f}s")

    done: list[AgingBuild] = []
    for number, batch_dir in enumerate(batch_dirs, start=1):
        rows = load_file(spark, "payment_events", batch_dir / EVENT_FILE, warehouse)
        records: list[dict] = []
        code = scheduled_build(
            build_args=("--exclude", "resource_type:test", "resource_type:unit_test"),
            emit=records.append,
            maintain_every=maintain_every,
            retention_hours=retention_hours,
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
            maintenance["seconds"],
            [t["table"] for t in maintenance["tables"]],
            {name: file_counts(spark, table) for name, table in WATCHED.items()},
        )
        done.append(result)
        # The curve so far, so that a long run can be read before it ends.
        out_dir.mkdir(parents=True, exist_ok=True)
        progress = {"events": events, "merchants": merchants, "batch_events": batch_events, "maintain_every": maintain_every, "complete": False}
        (out_dir / "bench_aging.json").write_text(json.dumps(progress | {"builds": [asdict(b) for b in done]}, indent=2) + "\n")
        view = result.files["view"]
        console.print(
            f"build {number:3d}: {result.build_s:5.1f}s"
            + (f", maintenance {result.maintenance_s:.1f}s ({len(result.maintained)} tables)" if result.maintained else f", check {result.maintenance_s:.1f}s")
            + f"; view files {view.data_files} data, {view.delete_files} delete"
        )

    check = run_dbt("test")
    reconciled = bool(check.success)
    found = aging_targets(done, reconciled)
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
        "targets": found,
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "bench_aging.json").write_text(json.dumps(figures, indent=2) + "\n")
    _plot(done, out_dir / "bench_aging.png", f"{builds} scheduled builds on {events:,} events, maintenance every {maintain_every} commits")
    for target in found:
        console.print(f"{'[green]met[/]' if target['met'] else '[red]missed[/]'}  {target['name']}: {target['detail'] or target['value']}")
    console.print(f"wrote {out_dir / 'bench_aging.json'} and {out_dir / 'bench_aging.png'}")
    return figures
