"""dbt in this process (``payledger.dbt.run_dbt``) applies the profile's Spark settings to the
session once per invocation, where dbt-spark's ``session`` cursor applies them before every
statement."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from payledger.spark import spark_conf

pytestmark = pytest.mark.integration


def test_the_profiles_settings_are_applied_once_per_invocation_and_again_by_the_next(dbt, warehouse, monkeypatch):
    spark = warehouse.spark
    key = "spark.sql.shuffle.partitions"
    profile_value = spark_conf()[key]
    spark.conf.set(key, str(int(profile_value) + 6))  # changed between invocations
    builds, statements = [], []
    get_or_create, sql = SparkSession.Builder.getOrCreate, SparkSession.sql
    monkeypatch.setattr(SparkSession.Builder, "getOrCreate", lambda self: builds.append(1) or get_or_create(self))
    monkeypatch.setattr(SparkSession, "sql", lambda self, *args, **kwargs: statements.append(args[0]) or sql(self, *args, **kwargs))
    dbt("seed")  # the seed: a table created and filled, several statements
    # Back to the profile's value: the invocation applied the settings before its first statement.
    assert spark.conf.get(key) == profile_value
    # Once by run_dbt's own session start, once by dbt's first statement; never per statement.
    assert len(statements) > 2 and len(builds) == 2, (len(builds), statements)
