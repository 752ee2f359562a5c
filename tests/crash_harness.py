"""A separate process for crash and overlap tests: land files, build, and report the warehouse.

Run as ``python -m tests.crash_harness <command> ...`` with ``PAYLEDGER_WAREHOUSE`` set. The embedded
Derby metastore admits one JVM at a time, so the tests drive every step through this harness (one
process, one Spark driver each) and can SIGKILL it mid-build. It prints ``LANDED``, ``BUILDING``,
``NODE <unique_id> <materialization>`` as each node starts, and ``BUILT`` on stdout as it goes;
``verify`` ends with one ``REPORT <json>`` line.

Commands (each lands its ``<kind>=<path>`` FILEs first, in order):
  land FILE...             only that
  land-and-build FILE...   then ``dbt build`` (exit 1 if it fails); ``--no-tests`` skips dbt's tests
  verify FILE...           then ``dbt build`` (reconciling every key) and report the view, rejects,
                           snapshots, table counts and the nodes the build started;
                           ``--no-counts`` leaves out the counts (``counts`` is null)
``BUILDING`` is printed when dbt starts its first node. Builds leave out generic and unit tests.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

#: dbt calls back from each of its threads: one marker at a time, each a line of its own.
_saying = threading.Lock()


def _say(marker: str) -> None:
    with _saying:
        sys.stdout.write(marker + "\n")
        sys.stdout.flush()


def _build(artefacts: Path, with_tests: bool = True, full_reconciliation: bool = False):
    from payledger.dbt import FULL_RECONCILIATION, run_dbt
    from tests.support import SCENARIO_SELECTION, DbtProject

    nodes: list[str] = []
    starting = threading.Lock()

    def on_event(event) -> None:  # BUILDING: the first node starts (parsing and start-up are over)
        if event.info.name == "NodeStart":
            with starting:  # dbt's threads start nodes at once: one BUILDING, nodes in order
                if not nodes:
                    _say("BUILDING")
                nodes.append(f"{event.data.node_info.unique_id} {event.data.node_info.materialized}")
                _say(f"NODE {nodes[-1]}")  # the crash test kills when its chosen node starts

    # Generic and unit tests are left out for speed; the singular tests (reconciliation,
    # conservation) run when with_tests is true, on every key when full_reconciliation is.
    selection = SCENARIO_SELECTION if with_tests else ("--exclude", "resource_type:test", "resource_type:unit_test")
    args = ("build", *selection, *(FULL_RECONCILIATION if full_reconciliation else ()))
    # The tests' target folder per --vars value (verify's full reconciliation has its own), so
    # dbt's partial parse survives; run here, not through DbtProject, for the event callback.
    target = DbtProject(artefacts).target_path(args)
    result = run_dbt(*args, target_path=target, log_path=artefacts / "logs", on_event=on_event)
    _say("BUILT" if result.success else "BUILD-FAILED")
    return result, nodes


def _report(spark, result, nodes: list[str], with_counts: bool = True) -> dict:
    """The warehouse after the build ``result`` (which started ``nodes``, "<unique_id>
    <materialization>" in order) as JSON-ready dicts; ``counts`` (every relation's rows: each
    table and view is readable) only ``with_counts``, else None."""
    from payledger.warehouse import VIEW, project_relations
    from tests.support import SNAPSHOTS

    def rows(query: str) -> list[dict]:
        return [{k: None if v is None else str(v) for k, v in r.asDict().items()} for r in spark.sql(query).collect()]

    counts = None
    if with_counts:
        counts = {}
        for schema, objects in project_relations(spark).items():
            for name in objects["tables"] + objects["views"]:
                counts[f"{schema}.{name}"] = spark.sql(f"select count(*) from {schema}.{name}").collect()[0][0]
    snapshots = {}
    for table in SNAPSHOTS:
        snapshots[table] = rows(f"select * from {table}")
    return {
        "build_ok": result.success,
        "failures": result.failures() or ([str(result.exception)] if result.exception else []),
        "view": rows(f"select * from {VIEW}"),
        "rejects": rows("select ingest_seq, rejection_reason from payledger.payment_event_rejects"),
        "snapshots": snapshots,
        "counts": counts,
        "nodes": nodes,
    }


def main(argv: list[str]) -> int:
    from payledger.spark import default_warehouse, get_spark
    from tests.support import land_specs

    command, args = argv[0], argv[1:]
    with_tests = "--no-tests" not in args
    with_counts = "--no-counts" not in args
    args = [a for a in args if a not in ("--no-tests", "--no-counts")]
    warehouse = default_warehouse()
    artefacts = warehouse.parent / f"dbt{os.environ.get('HARNESS_SLOT', '')}"  # one per concurrent process
    spark = get_spark()
    land_specs(spark, args, warehouse)
    _say("LANDED")
    if command in ("land", "land-and-build"):
        return 0 if command == "land" or _build(artefacts, with_tests)[0].success else 1
    if command == "verify":
        result, nodes = _build(artefacts, with_tests, full_reconciliation=True)
        print("REPORT " + json.dumps(_report(spark, result, nodes, with_counts)), flush=True)
        return 0
    raise SystemExit(f"unknown command {command!r}; expected land, land-and-build or verify")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
