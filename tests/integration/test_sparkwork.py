"""Counting what Spark did (``payledger.sparkwork``): the newest ids, read from the ends of Spark's
status stores, and the entries looked up by id agree with a walk of every retained job and
execution, and jobs attributed to the dbt node whose thread submitted them."""

from __future__ import annotations

import datetime as dt
import threading

import pytest

from payledger.sparkwork import OVERLAPPING_NODES, Mark, WorkCounter, by_node

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


def test_jobs_go_to_the_node_whose_thread_submitted_them_while_nodes_overlap(spark):
    """Two threads run as two dbt nodes at once, as with dbt's ``threads: 2``: each job and each
    execution with jobs counts under the node that submitted it, though both windows hold all."""
    from dbt_common.events.contextvars import log_contextvars

    from payledger.dbt import _tag_jobs_with_node, _untag_this_thread

    counter = WorkCounter(spark)
    mark = counter.mark()
    queries = {"first_model": 3, "second_model": 5}
    barrier = threading.Barrier(len(queries))

    def node(name: str, count: int) -> None:
        with log_contextvars(node_info={"unique_id": f"model.payledger.{name}"}):
            _tag_jobs_with_node(spark)
            barrier.wait()
            for size in range(count):
                spark.range(size + 10).collect()  # one job, one execution

    started = dt.datetime.now(dt.UTC)
    threads = [threading.Thread(target=node, args=item) for item in queries.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # This thread runs a hook, as dbt does on run_dbt's thread; after the invocation its jobs are
    # no node's (run_dbt takes the tag off).
    with log_contextvars(node_info={"unique_id": "operation.payledger.payledger-on-run-end-0"}):
        _tag_jobs_with_node(spark)
    _untag_this_thread()
    spark.range(3).collect()
    window = (started, dt.datetime.now(dt.UTC) + dt.timedelta(seconds=1))
    account = by_node(counter.since(mark), dict.fromkeys(queries, window))
    assert {name: account[name]["spark_jobs"] for name in queries} == queries, account
    assert {name: account[name]["sql_executions"] for name in queries} == queries, account
    assert account[OVERLAPPING_NODES]["sql_executions"] >= 1, account
