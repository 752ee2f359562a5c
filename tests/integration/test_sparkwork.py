"""Counting what Spark did (``payledger.sparkwork``): the newest ids, read from the ends of Spark's
status stores, and the entries looked up by id agree with a walk of every retained job and
execution."""

from __future__ import annotations

import pytest

from payledger.sparkwork import Mark, WorkCounter

pytestmark = pytest.mark.integration


def test_counts_from_the_newest_ids_equal_a_walk_of_every_entry(spark):
    counter = WorkCounter(spark)
    mark = counter.mark()
    for size in (10, 20, 30):
        spark.range(size).selectExpr("sum(id)").collect()
    spark.sql("select 1").collect()
    walked = counter.since(mark)
    assert walked.spark_jobs >= 3 and walked.sql_executions >= 4, walked.as_dict()
    assert counter.counts_since(mark).as_dict() == walked.as_dict()
    assert counter.mark() == Mark(max(j.id for j in counter._jobs()), max(e.id for e in counter._executions()))
    assert walked.jobs == sorted((j for j in counter._jobs() if j.id > mark.last_job), key=lambda j: j.id)
    assert walked.executions == sorted((e for e in counter._executions() if e.id > mark.last_execution), key=lambda e: e.id)
