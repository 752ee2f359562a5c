"""dbt in this process (``payledger.dbt.run_dbt``) applies the profile's Spark settings to the
session once per invocation, where dbt-spark's ``session`` cursor applies them before every
statement, and on top of them Spark's default code generation for an invocation that reads whole
histories (``code_generation_settings``). A ``dbt`` command line gets the stored state run_dbt
passes, from the project's dbt plugin (``dbt_payledger``)."""

from __future__ import annotations

import json

import pytest
from pyspark.sql import SparkSession

import payledger.dbt
from payledger.formats import session_table_format
from payledger.spark import PROJECT_ROOT, SPARK_CODE_GENERATION, spark_conf, warehouse_folder
from payledger.stored_maxima import STORED_MAXIMA_ENV, TABLE_STATES_ENV
from payledger.warehouse import VIEW
from tests.support import code_generation, recorded_statements

pytestmark = pytest.mark.integration


def test_the_profiles_settings_are_applied_once_per_invocation_with_code_generation_over_whole_histories(dbt, warehouse, monkeypatch):
    spark = warehouse.spark
    key = "spark.sql.shuffle.partitions"
    profile_value = spark_conf()[key]
    spark.conf.set(key, str(int(profile_value) + 6))  # changed between invocations
    interpreted = code_generation(spark)
    assert interpreted != tuple(SPARK_CODE_GENERATION.values())  # the tests' sessions interpret (tests/conftest.py)
    builds: list[int] = []
    get_or_create = SparkSession.Builder.getOrCreate
    monkeypatch.setattr(SparkSession.Builder, "getOrCreate", lambda self: builds.append(1) or get_or_create(self))
    statements = recorded_statements(monkeypatch)
    # As if PAYLEDGER_CODEGEN were unset (run_dbt then chooses), without changing the profile's
    # rendering: a changed environment variable of the profile would make dbt parse the project again.
    monkeypatch.setattr(payledger.dbt, "CODEGEN_ENV", "PAYLEDGER_CODEGEN_UNSET_IN_THIS_TEST")
    dbt("seed")  # the seed: a table created and filled, several statements
    # Back to the profile's value: the invocation applied the settings before its first statement.
    assert spark.conf.get(key) == profile_value
    # Once by run_dbt's own session start, once by dbt's first statement; never per statement.
    assert len(statements) > 2 and len(builds) == 2, (len(builds), statements)
    # A seed reads its file only: the profile's code generation throughout.
    assert {settings for _, settings in statements} == {interpreted}
    statements.clear()
    # A build before the view exists (the catalog asked) reads whole histories: compiled
    # throughout, and the session's own settings back after it.
    dbt("build", "--select", "payment_event_types", "--exclude", "resource_type:test")
    assert statements and {settings for _, settings in statements} == {tuple(SPARK_CODE_GENERATION.values())}
    assert code_generation(spark) == interpreted
    # Once the view exists, a build is a batch's.
    spark.sql(f"create schema if not exists {VIEW.split('.')[0]}")
    spark.sql(f"create view {VIEW} as select 1 as stand_in")
    assert payledger.dbt.code_generation_settings(("build",), spark).keys() == {payledger.dbt.WHOLE_HISTORY_READS_SETTING}


@pytest.mark.both_formats
def test_a_dbt_command_line_gets_the_stored_state_run_dbt_passes(dbt, warehouse, table_format, monkeypatch):
    """dbt invoked without run_dbt (as ``dbt build`` in a shell) gets the tables' states and stored
    maxima that run_dbt passes, in the environment its ``env_var`` reads, from the project's dbt
    plugin. Delta's tables have states; Iceberg's none, and on Iceberg the plugin's session start
    and catalog check must not break the build."""
    from dbt.cli.main import dbtRunner
    from dbt_common.context import get_invocation_context

    for name in (STORED_MAXIMA_ENV, TABLE_STATES_ENV):
        monkeypatch.delenv(name, raising=False)  # and unset again after the test
    dbt("seed")
    folder, stored = warehouse_folder(warehouse.spark), session_table_format(warehouse.spark)
    states, maxima = stored.table_states(folder), stored.stored_maxima(folder)
    assert bool(states) == (table_format == "delta"), states
    args = ("build", "--select", "payment_event_types", "--exclude", "resource_type:test")
    outcome = dbtRunner().invoke(
        [*args, "--project-dir", str(PROJECT_ROOT), "--profiles-dir", str(PROJECT_ROOT / "profiles"), "--target-path", str(dbt.target_path(args)), "--quiet"]
    )
    assert outcome.success, outcome.exception
    # What dbt's env_var read in that invocation (its copy of the environment, still this thread's).
    environment = get_invocation_context().env
    assert json.loads(environment.get(TABLE_STATES_ENV, "{}")) == states
    assert json.loads(environment.get(STORED_MAXIMA_ENV, "{}")) == maxima
