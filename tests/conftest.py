"""Fixtures shared by the PayLedger test suite.

One Spark JVM and one warehouse (in a temporary folder) serve a worker's whole run, with one Spark
session at a time, in the format of the test being run (``table_format``); dbt runs in-process
through ``dbtRunner`` and reuses the session (dbt-spark's ``session`` method calls ``getOrCreate``).
Tests that need an empty warehouse ask for the ``warehouse`` fixture, which drops every PayLedger
schema first.
"""

from __future__ import annotations

import collections
import os
import shutil
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# A space and a quote in the folder's name, as a user's folder may have: every in-process test then
# starts Spark (its JVM options, the Derby metastore) and reads the tables' folders through them.
WAREHOUSE = Path(tempfile.mkdtemp(prefix="payledger tests' "))
# Before any Spark or dbt import: the profile reads these when the session starts.
os.environ["PAYLEDGER_HOME"] = str(ROOT)
os.environ["PAYLEDGER_WAREHOUSE"] = str(WAREHOUSE / "warehouse")
os.environ.setdefault("PAYLEDGER_DRIVER_MEMORY", "4g")
# One shuffle partition, and one partition for Delta's log reads: on the tests' tiny data a second
# task per stage is only scheduling. Six tiny Delta builds in one process on the idle machine took
# 261 s and 279 s (431 and 466 CPU-seconds) in two runs, against 295 s and 312 s (496 and 509) with 2.
os.environ.setdefault("PAYLEDGER_SHUFFLE_PARTITIONS", "1")
os.environ.setdefault("PAYLEDGER_SNAPSHOT_PARTITIONS", "1")
# Tiny data: compiling generated code and adaptive re-planning cost more than they save.
os.environ.setdefault("PAYLEDGER_CODEGEN", "false")
os.environ.setdefault("PAYLEDGER_ADAPTIVE", "false")
# Dedup index units of 8 ids (dbt_project.yml's dedup_index_unit_rows, 5000 by default): the tests'
# histories of tens to hundreds of events then span many units, so every lookup is placed by the
# directory as at scale.
os.environ.setdefault("PAYLEDGER_DEDUP_UNIT_ROWS", "8")
os.environ["DBT_SEND_ANONYMOUS_USAGE_STATS"] = "false"
# dbt invocations that name no target path (the CLI's `balance` and `explain`) write this worker's
# own folder, not the repo's target/ that the other worker shares.
os.environ.setdefault("DBT_TARGET_PATH", str(WAREHOUSE / "dbt" / "target"))
# The processes that tests start (crash harness, CLI, Thrift Server, `make docs`, the history test's
# reader) live for one to three builds: their JVMs run the JIT's C1 compiler only, with a code cache
# large enough that its code is not flushed and compiled again. The overlap test alone on the idle
# machine: 331 s against 327 s, and 415 machine CPU-seconds against 578, left to the other worker.
# The workers' own JVMs live for the whole run and keep C2 (the ``spark`` fixture starts them with
# TEST_JAVA_OPTIONS only): two C1-only workers had finished 11 of 19 tests when two default ones had
# finished all 19. Their C2 inlines less than Java's defaults (WORKER_INLINING): its compiles are
# the JIT's largest cost, and the two workers share two cores, so a CPU-second one saves is one the
# other gets. Delta's and Iceberg's invalidation and maintenance modules in one process each, with
# and without it, side by side on the machine: 757 against 866 JVM CPU-seconds (plus 116 and 120 of
# Python) for the same 22 tests, 1,000 s against 976 s (the default one had the larger share of the
# cores); alone, C2 compiled less and its code ran slower, so a lone run's wall barely moved. Less
# inlining still was worse (CHANGELOG.md, 2026-12-04). Every JVM of the tests, workers' and
# processes' alike, runs the parallel collector instead of G1 (Java's default): a test's
# builds are a batch job, and G1's concurrent work and write barriers are CPU that the other worker
# needs. The Delta maintenance test alone on the idle machine used 236-258 machine CPU-seconds
# (143-153 s) in two runs with it, 265-299 (156-176 s) in four with G1. Any other
# PAYLEDGER_JAVA_OPTIONS, set by hand, applies to workers and processes alike. (xdist's workers
# inherit the controller's environment, where this line has already run: hence the comparison with
# the value, not a test of whether the variable is set.)
GARBAGE_COLLECTOR = "-XX:+UseParallelGC"
WORKER_INLINING = "-XX:MaxInlineLevel=6 -XX:InlineSmallCode=1000 -XX:FreqInlineSize=100"
TEST_JAVA_OPTIONS = f"{GARBAGE_COLLECTOR} {WORKER_INLINING}"
CHILD_JAVA_OPTIONS = f"{GARBAGE_COLLECTOR} -XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=512m"
CHILD_OPTIONS_ONLY = os.environ.setdefault("PAYLEDGER_JAVA_OPTIONS", CHILD_JAVA_OPTIONS) == CHILD_JAVA_OPTIONS
# The one switch between the table formats: PAYLEDGER_FORMAT=delta or iceberg picks the default dbt
# target (profiles.yml), the CLI's Spark session and the Thrift Server's format. Set when pytest
# starts, it runs every test in that format. Unset (as `make test` runs), one session runs every
# test on Delta and the tests marked `both_formats` on Iceberg too (the `table_format` parameter):
# a worker's JVM stays up when it switches, stopping one Spark session and starting the other, so
# its Iceberg builds run on code the JIT compiled for its Delta builds (three tiny Iceberg builds:
# 28.5/27.6/30.3 s after three Delta builds in the same JVM, 53.3/40.0/34.7 s in a new one), and
# the two formats' tests share one schedule. The choice is kept in PAYLEDGER_TEST_FORMATS, which
# xdist's workers inherit (PAYLEDGER_FORMAT itself is set to each test's format as it runs).
# The formats are dbt_project.yml's one list (var table_format_catalogs), the default first, as
# payledger.formats reads it (no Spark or dbt import: the environment above is already set).
from payledger.formats import catalog_classes  # noqa: E402

KNOWN_FORMATS = tuple(catalog_classes())
FORMATS = tuple(os.environ.setdefault("PAYLEDGER_TEST_FORMATS", os.environ.get("PAYLEDGER_FORMAT") or ",".join(KNOWN_FORMATS)).split(","))
if not FORMATS or set(FORMATS) - set(KNOWN_FORMATS):
    raise pytest.UsageError(f"PAYLEDGER_FORMAT must be one of {', '.join(KNOWN_FORMATS)}, got {','.join(FORMATS)!r}")
os.environ.setdefault("PAYLEDGER_FORMAT", FORMATS[0])
# With both formats, the differential test's Iceberg run builds this many of its examples (the Delta
# run builds them all): the format-neutral fold is the Delta run's to cover.
ICEBERG_EXAMPLES = int(os.environ.get("PAYLEDGER_ICEBERG_EXAMPLES", "1"))

from payledger.formats import session_format  # noqa: E402
from payledger.warehouse import drop_project_schemas  # noqa: E402
from tests.support import BuiltState, DbtProject, Landing, build_balance_view_base  # noqa: E402


def pytest_report_header(config) -> str:
    """Names the table formats of this run in pytest's header."""
    both = len(FORMATS) > 1
    return f"payledger table formats: {' and '.join(FORMATS)}" + (" (tests marked both_formats)" if both else " (PAYLEDGER_FORMAT)")


def pytest_generate_tests(metafunc) -> None:
    """Every test runs once per format of this run: on Delta, and on Iceberg too when it is marked
    ``both_formats`` (or when PAYLEDGER_FORMAT=iceberg chose Iceberg alone)."""
    both = metafunc.definition.get_closest_marker("both_formats") is not None
    formats = FORMATS if len(FORMATS) == 1 or both else ("delta",)
    metafunc.parametrize("table_format", formats, indirect=True, scope="session")


def _format_of(item) -> str:
    return item.callspec.params["table_format"]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items) -> None:
    """Before xdist names the groups: a test's xdist group is per format (``invalidation`` on Delta
    and on Iceberg are two groups, which the two workers can run at the same time); with both
    formats, the differential test's Iceberg items beyond ``ICEBERG_EXAMPLES`` are deselected."""
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            item.add_marker(pytest.mark.xdist_group(_format_of(item)))  # xdist joins the names
    if len(FORMATS) > 1:
        extra = [i for i in items if _format_of(i) == "iceberg" and i.callspec.params.get("example", -1) >= ICEBERG_EXAMPLES]
        if extra:
            config.hook.pytest_deselected(items=extra)
            items[:] = [i for i in items if i not in extra]


class _Order:
    """First the slow tests that run the project only in processes of their own (no ``spark``
    fixture: the crash, overlap, Thrift Server, `make docs` and quiet-CLI tests, in both formats),
    then one format's tests, then the other's, each with the tests of an xdist group first, then the
    other tests marked ``slow``, then the rest, keeping pytest-randomly's shuffled order within each
    part (its hook runs earlier). `make test` runs xdist with `--no-loadscope-reorder`, so the
    workers take the tests in this order: each worker switches its Spark session once (a switch ends
    the module fixtures built in the other format), and no test of many minutes starts when the
    other worker has nothing left to run. The first part needs no session of the worker, so its
    Iceberg tests run before any Delta one without a switch.

    The format with the fewest tests comes first (Iceberg: its both-format tests, nearly all long),
    the default format's last: its many short tests (Delta's part of the rest held 186-220 s of
    a 2-worker run's 2,550-3,610 s) end the run and fill both workers' last minutes. Iceberg's rest
    held 4-11 s: when it ended the run, a worker that finished its last long Iceberg test early sat
    idle (171 s of a clean clone's 1,845 s, 2026-12-07). Replaying xdist's scheduling (each worker
    given up to three tests ahead) over the measured durations of three clean clones, 300 shuffles
    each, put the median run 33-42 s shorter this way. A group is one unit of work for xdist, and
    among the longest: in a clean clone, Delta's balance-view group took 412 s, its invalidation
    group 278 s, Iceberg's 142 s and 164 s."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items) -> None:
        tests_of = collections.Counter(_format_of(item) for item in items)
        formats = sorted(FORMATS, key=lambda name: tests_of[name])  # stable: FORMATS' order on ties

        def key(item) -> tuple[int, int]:
            slow = item.get_closest_marker("slow") is not None
            if slow and "spark" not in item.fixturenames:
                return (0, 0)
            part = 0 if item.get_closest_marker("xdist_group") is not None else 1 if slow else 2
            return (1 + formats.index(_format_of(item)), part)

        items.sort(key=key)


def pytest_configure(config) -> None:
    config.pluginmanager.register(_Order(), "payledger-test-order")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item) -> None:
    """PAYLEDGER_FORMAT is the test's format before any of its fixtures is set up (a module fixture
    builds with dbt, which picks its target from it; the processes a test starts inherit it)."""
    os.environ["PAYLEDGER_FORMAT"] = _format_of(item)


def pytest_sessionfinish(session, exitstatus):
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()
    shutil.rmtree(WAREHOUSE, ignore_errors=True)


@pytest.fixture(scope="session")
def table_format(request) -> str:
    """The table format of the test being run: ``delta`` or ``iceberg`` (``pytest_generate_tests``)."""
    return request.param


@pytest.fixture(autouse=True)
def _each_test_has_a_format(table_format) -> None:
    """Makes ``table_format`` a parameter of every test (see ``pytest_generate_tests``)."""


@pytest.fixture(scope="session")
def spark(table_format):
    """This worker's Spark session in ``table_format``, its JVM started with ``TEST_JAVA_OPTIONS``
    instead of ``CHILD_JAVA_OPTIONS``. When a test of the other format needs Spark, pytest ends
    this fixture: the session stops (and Delta's cached table states are dropped), the JVM stays,
    and the next session starts in it."""
    from payledger.spark import get_spark, spark_conf

    if not CHILD_OPTIONS_ONLY:
        session = get_spark()
    else:
        os.environ["PAYLEDGER_JAVA_OPTIONS"] = TEST_JAVA_OPTIONS
        try:
            session = get_spark()
        finally:
            os.environ["PAYLEDGER_JAVA_OPTIONS"] = CHILD_JAVA_OPTIONS
    assert session_format(session) == table_format, (session_format(session), table_format)
    yield session
    jvm = session._jvm
    jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()
    session.stop()
    # PySpark launched the JVM with the first session's settings as `--conf`, which Spark keeps as
    # system properties, and a later session's SparkConf loads them: without this, an Iceberg
    # session started after a Delta one would keep Delta's settings its profile does not name.
    for key in {key for name in KNOWN_FORMATS for key in spark_conf(name)}:
        jvm.java.lang.System.clearProperty(key)


@pytest.fixture(scope="session")
def dbt(spark, table_format) -> DbtProject:
    """dbt in this process, its artefacts (target, logs) in a folder per format."""
    return DbtProject(WAREHOUSE / f"dbt-{table_format}")


@pytest.fixture(scope="session")
def balance_view_base(spark, dbt, tmp_path_factory) -> BuiltState:
    """``build_balance_view_base``'s state (``tests/support.py``), built once per worker and
    format and restored by each test that starts from it (tests in the ``BALANCE_VIEW_BASE`` xdist
    group, which one worker per format runs: balance-view tests and the docs site)."""
    return BuiltState(spark, tmp_path_factory.mktemp("balance-view"), lambda landing: build_balance_view_base(dbt, landing))


@pytest.fixture
def warehouse(spark) -> Landing:
    """An empty warehouse and a helper that lands rows through ``payledger load``."""
    drop_project_schemas(spark)
    return Landing(spark, WAREHOUSE / "files", Path(os.environ["PAYLEDGER_WAREHOUSE"]))
