"""``payledger demo``: the main job end to end on the embedded default warehouse.

Generate a history, load it, ``dbt build``; load a new batch (duplicates, late events, bad rows),
``dbt build``; change one segment's reserve policy retroactively, ``dbt build``; print a summary.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from payledger import scenario
from payledger.dbt import FULL_RECONCILIATION, DbtInvocation
from payledger.formats import session_format
from payledger.generate import EVENT_FILE, POLICY_FILE
from payledger.load import load_file
from payledger.spark import PROJECT_ROOT, default_warehouse, get_spark
from payledger.warehouse import RECONCILIATION_FAILURES, REJECTS, VIEW


@dataclass
class Step:
    """One ``dbt build`` of the demo and what it wrote to the view."""

    name: str
    build: DbtInvocation
    records_written: int
    seconds: float


class DemoFailed(RuntimeError):
    """A dbt build of the demo failed; the message lists the failing nodes."""


def _build(console: Console, spark, name: str) -> Step:
    # Every key is reconciled in each of the demo's builds (a scheduled build compares one slice),
    # so that "reconciled" below holds for the whole view after every build.
    done = scenario.build(spark, "build", *FULL_RECONCILIATION)
    step = Step(name, done.invocation, done.records_written, done.seconds)
    console.print(f"[bold]{name}[/]: dbt build {'ok' if step.build.success else 'FAILED'} in {step.seconds:.1f}s, {step.records_written} view records written")
    errors = [line for line in step.build.failures() if not line.startswith("test.")]
    if step.build.exception is not None or errors:
        raise DemoFailed(f"{name}: {errors or step.build.exception}")
    return step


def run_demo(events: int, merchants: int, data_dir: Path, console: Console) -> bool:
    """Run the demo; returns True when every build passed and the view reconciled."""
    history, batch, change = data_dir / "history", data_dir / "batch", data_dir / "policy_change"
    console.print(f"Generating {events:,} events for {merchants:,} merchants into {history}")
    scenario.generate_history(history, events, merchants)
    scenario.generate_new_batch(
        history,
        batch,
        events=max(100, events // 100),
        merchants=merchants,
        days=3,
        end_date=scenario.END_DATE + dt.timedelta(days=3),
        seed=43,
        id_prefix="b43_",
    )
    segment, pct, effective = scenario.write_retroactive_policy(history, change)

    spark = get_spark()
    warehouse = default_warehouse()
    dropped, loaded = scenario.load_history(spark, history, warehouse)
    if dropped:
        console.print(f"Dropped the previous demo's schemas: {', '.join(dropped)}")
    console.print(f"Loaded {loaded:,} event rows")
    steps = [_build(console, spark, "1 history")]
    loaded = load_file(spark, "payment_events", batch / EVENT_FILE, warehouse)
    console.print(f"Loaded a new batch of {loaded:,} event rows (re-sent duplicates, late events, bad rows)")
    steps.append(_build(console, spark, "2 new batch"))
    load_file(spark, "reserve_policies", change / POLICY_FILE, warehouse)
    console.print(f"Changed the reserve policy of segment {segment!r} to {pct} effective {effective}")
    steps.append(_build(console, spark, "3 policy change"))
    return _summary(console, spark, steps, warehouse)


def _summary(console: Console, spark, steps: list[Step], warehouse: Path) -> bool:
    view_rows = spark.sql(f"select count(*) as n from {VIEW}").first()["n"]
    rejects = spark.sql(f"select rejection_reason, count(*) as n from {REJECTS} group by 1 order by 1").collect()
    reconciled = all(s.build.success for s in steps)
    console.rule("PayLedger demo summary")
    console.print(f"Rows in {VIEW}: {view_rows:,}")
    console.print("Rejected rows: " + ", ".join(f"{r['rejection_reason']} {r['n']}" for r in rejects))
    if reconciled:
        console.print("Reconciliation: [green]reconciled[/] (the view equals the fold over canonical history after every build)")
    else:
        console.print("Reconciliation: [red]differences[/]")
        for failure in steps[-1].build.failures():
            console.print(f"  {failure}")
        if spark.catalog.tableExists(RECONCILIATION_FAILURES):
            for row in spark.sql(f"select * from {RECONCILIATION_FAILURES} limit 20").collect():
                console.print(f"  {row.asDict()}")
    table = Table(title="Builds")
    table.add_column("build")
    table.add_column("view records written", justify="right")
    table.add_column("wall s", justify="right")
    for step in steps:
        table.add_row(step.name, f"{step.records_written:,}", f"{step.seconds:.1f}")
    console.print(table)
    timings = Table(title="Model and snapshot execution seconds per build")
    timings.add_column("node")
    for step in steps:
        timings.add_column(step.name, justify="right")
    for node in sorted(steps[0].build.timings()):
        timings.add_row(node, *(f"{s.build.timings().get(node, 0.0):.2f}" for s in steps))
    console.print(timings)
    console.print(f"Warehouse: {warehouse} ({session_format(spark)} tables in {spark.conf.get('spark.sql.warehouse.dir')}, Derby metastore beside it)")
    console.print(f"Generated files: {PROJECT_ROOT / 'data' / 'demo'}; dbt artefacts: {PROJECT_ROOT / 'target'}")
    return reconciled
