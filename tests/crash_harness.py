"""A separate process for crash and overlap tests: land files, build, and report the warehouse.

Run as ``python -m tests.crash_harness <command> ...`` with ``PAYLEDGER_WAREHOUSE`` set. The embedded
Derby metastore admits one JVM at a time, so the tests drive every step through this harness (one
process, one Spark driver each) and can SIGKILL it mid-build. It prints ``LANDED``, ``BUILDING`` and
``BUILT`` on stdout as it goes, and ``verify`` ends with one ``REPORT <json>`` line.

Commands (each lands its ``<kind>=<path>`` FILEs first, in order):
  land FILE...             only that
  land-and-build FILE...   then ``dbt build`` (exit 1 if it fails); ``--no-tests`` skips dbt's tests
  verify FILE...           then ``dbt build`` (reconciling every key) and report the view, rejects,
                           snapshots and table counts
``BUILDING`` is printed when dbt starts its first node. Builds leave out generic and unit tests.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def _say(marker: str) -> None:
    print(marker, flush=True)


def _build(artefacts: Path, with_tests: bool = True, full_reconciliation: bool = False):
    from payledger.dbt import FULL_RECONCILIATION, run_dbt
    from tests.support import SCENARIO_SELECTION, DbtProject

    started = []

    def on_event(event) -> None:  # BUILDING: the first node starts (parsing and start-up are over)
        if event.info.name == "NodeStart" and not started:
            started.append(True)
            _say("BUILDING")

    # Generic and unit tests are left out for speed; the singular tests (reconciliation,
    # conservation) run when with_tests is true, on every key when full_reconciliation is.
    selection = SCENARIO_SELECTION if with_tests else ("--exclude", "resource_type:test", "resource_type:unit_test")
    args = ("build", *selection, *(FULL_RECONCILIATION if full_reconciliation else ()))
    # The tests' target folder per --vars value (verify's full reconciliation has its own), so
    # dbt's partial parse survives; run here, not through DbtProject, for the event callback.
    target = DbtProject(artefacts).target_path(args)
    result = run_dbt(*args, target_path=target, log_path=artefacts / "logs", on_event=on_event)
    _say("BUILT" if result.success else "BUILD-FAILED")
    return result


def _report(spark, result) -> dict:
    """The warehouse after the build ``result`` as JSON-ready dicts."""
    from payledger.warehouse import VIEW, project_relations
    from tests.support import SNAPSHOTS

    def rows(query: str) -> list[dict]:
        return [{k: None if v is None else str(v) for k, v in r.asDict().items()} for r in spark.sql(query).collect()]

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
    }


def main(argv: list[str]) -> int:
    from payledger.spark import default_warehouse, get_spark
    from tests.support import land_specs

    command, args = argv[0], argv[1:]
    with_tests = "--no-tests" not in args
    args = [a for a in args if a != "--no-tests"]
    warehouse = default_warehouse()
    artefacts = warehouse.parent / f"dbt{os.environ.get('HARNESS_SLOT', '')}"  # one per concurrent process
    spark = get_spark()
    land_specs(spark, args, warehouse)
    _say("LANDED")
    if command in ("land", "land-and-build"):
        return 0 if command == "land" or _build(artefacts, with_tests).success else 1
    if command == "verify":
        result = _build(artefacts, with_tests, full_reconciliation=True)
        print("REPORT " + json.dumps(_report(spark, result)), flush=True)
        return 0
    raise SystemExit(f"unknown command {command!r}; expected land, land-and-build or verify")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
