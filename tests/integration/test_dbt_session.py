"""dbt in this process (``payledger.dbt.run_dbt``) applies the profile's Spark settings to the
session once per invocation, where dbt-spark's ``session`` cursor applies them before every
statement, and on top of them Spark's default code generation for an invocation that reads whole
histories (``code_generation_settings``)."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

import payledger.dbt
from payledger.spark import SPARK_CODE_GENERATION, spark_conf
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
