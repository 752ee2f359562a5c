"""Fixtures shared by the PayLedger test suite.

One Spark session and one warehouse (in a temporary folder) serve the whole run; dbt runs in-process
through ``dbtRunner`` and reuses the session (dbt-spark's ``session`` method calls ``getOrCreate``).
Tests that need an empty warehouse ask for the ``warehouse`` fixture, which drops every PayLedger
schema first.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WAREHOUSE = Path(tempfile.mkdtemp(prefix="payledger-tests-"))
# Before any Spark or dbt import: the profile reads these when the session starts.
os.environ["PAYLEDGER_HOME"] = str(ROOT)
os.environ["PAYLEDGER_WAREHOUSE"] = str(WAREHOUSE / "warehouse")
os.environ.setdefault("PAYLEDGER_DRIVER_MEMORY", "4g")
# One shuffle partition, and one partition for Delta's log reads: on the tests' tiny data a second
# task per stage is only scheduling. Six tiny Delta builds in one process on the idle machine took
# 261 s and 279 s (431 and 466 CPU-seconds) in two runs, against 295 s and 312 s (496 and 509) with 2.
os.environ.setdefault("PAYLEDGER_SHUFFLE_PARTITIONS", "1")
# Tiny data: compiling generated code and adaptive re-planning cost more than they save.
os.environ.setdefault("PAYLEDGER_CODEGEN", "false")
os.environ.setdefault("PAYLEDGER_ADAPTIVE", "false")
os.environ["DBT_SEND_ANONYMOUS_USAGE_STATS"] = "false"
# dbt invocations that name no target path (the CLI's `balance` and `explain`) write this worker's
# own folder, not the repo's target/ that the other worker shares.
os.environ.setdefault("DBT_TARGET_PATH", str(WAREHOUSE / "dbt" / "target"))
# The processes that tests start (crash harness, CLI, Thrift Server, `make docs`, the history test's
# reader) live for one to three builds: their JVMs run the JIT's C1 compiler only, with a code cache
# large enough that its code is not flushed and compiled again. The overlap test alone on the idle
# machine: 331 s against 327 s, and 415 machine CPU-seconds against 578, left to the other worker.
# The workers' own JVMs live for the whole run and keep C2 (the ``spark`` fixture starts them
# without these options): two C1-only workers had finished 11 of 19 tests when two default ones had
# finished all 19. Any other PAYLEDGER_JAVA_OPTIONS, set by hand, applies to workers and processes
# alike. (xdist's workers inherit the controller's environment, where this line has already run:
# hence the comparison with the value, not a test of whether the variable is set.)
CHILD_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=512m"
CHILD_OPTIONS_ONLY = os.environ.setdefault("PAYLEDGER_JAVA_OPTIONS", CHILD_JAVA_OPTIONS) == CHILD_JAVA_OPTIONS
# The one switch between the table formats: PAYLEDGER_FORMAT=delta (default) or iceberg picks the
# default dbt target (profiles.yml), the CLI's Spark session and the Thrift Server's format.
FORMAT = os.environ.setdefault("PAYLEDGER_FORMAT", "delta")
if FORMAT not in ("delta", "iceberg"):
    raise pytest.UsageError(f"PAYLEDGER_FORMAT must be delta or iceberg, got {FORMAT!r}")

from payledger.warehouse import drop_project_schemas  # noqa: E402
from tests.support import DbtProject, Landing  # noqa: E402


def pytest_report_header(config) -> str:
    """Names the table format of this run in pytest's header."""
    return f"payledger table format: {FORMAT} (PAYLEDGER_FORMAT)"


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items) -> None:
    """Runs the tests marked ``slow`` first, keeping pytest-randomly's shuffled order within each
    group (its hook runs earlier): with two workers, a test of many minutes drawn near the end kept
    one worker busy while the other had nothing left to run."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def pytest_sessionfinish(session, exitstatus):
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()
    shutil.rmtree(WAREHOUSE, ignore_errors=True)


@pytest.fixture(scope="session")
def spark():
    """This worker's Spark session, its JVM started without ``CHILD_JAVA_OPTIONS``."""
    from payledger.spark import get_spark

    if not CHILD_OPTIONS_ONLY:
        return get_spark()
    del os.environ["PAYLEDGER_JAVA_OPTIONS"]
    try:
        return get_spark()
    finally:
        os.environ["PAYLEDGER_JAVA_OPTIONS"] = CHILD_JAVA_OPTIONS


@pytest.fixture(scope="session")
def dbt(spark) -> DbtProject:
    return DbtProject(WAREHOUSE / "dbt")


@pytest.fixture
def warehouse(spark) -> Landing:
    """An empty warehouse and a helper that lands rows through ``payledger load``."""
    drop_project_schemas(spark)
    return Landing(spark, WAREHOUSE / "files", Path(os.environ["PAYLEDGER_WAREHOUSE"]))
