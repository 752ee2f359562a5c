"""``payledger.spark.spark_code_generation``: the body's queries run as compiled Spark code whatever
the session was set to (the bench's peer job), and the session's own settings come back after it."""

from __future__ import annotations

import pytest

from payledger.spark import SPARK_CODE_GENERATION, spark_code_generation

pytestmark = pytest.mark.integration

INTERPRETED = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}


def _ran_whole_stage_code(spark) -> bool:
    """Whether a small aggregate ran in a whole-stage code stage: the executed plan after the
    run (adaptive execution's final plan) marks each such stage `*(n)`."""
    query = spark.range(100).selectExpr("sum(id * 2) as total")
    assert query.first()["total"] == 9900
    return "*(" in query._jdf.queryExecution().executedPlan().toString()


def test_the_body_runs_compiled_and_the_session_gets_its_settings_back(spark):
    own = {key: spark.conf.get(key) for key in SPARK_CODE_GENERATION}
    try:
        for key, value in INTERPRETED.items():
            spark.conf.set(key, value)
        assert not _ran_whole_stage_code(spark)
        with spark_code_generation(spark):
            assert {key: spark.conf.get(key) for key in SPARK_CODE_GENERATION} == SPARK_CODE_GENERATION
            assert _ran_whole_stage_code(spark)
        assert {key: spark.conf.get(key) for key in INTERPRETED} == INTERPRETED
        assert not _ran_whole_stage_code(spark)
        with pytest.raises(ZeroDivisionError), spark_code_generation(spark):
            raise ZeroDivisionError
        assert {key: spark.conf.get(key) for key in INTERPRETED} == INTERPRETED
    finally:
        for key, value in own.items():
            spark.conf.set(key, value)
