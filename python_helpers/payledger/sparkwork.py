"""What a build makes Spark do: its Spark jobs and SQL executions, counted from Spark's own status
stores (the live ``AppStatusStore`` behind ``SparkContext.statusTracker`` and the SQL tab's
``SQLAppStatusStore``), which Spark keeps whether or not its UI is on.

``WorkCounter(spark).mark()`` notes where the counts stand; ``counter.since(mark)`` returns the jobs
and executions submitted after it, each with its submission time, so that they can be attributed
to the dbt nodes that ran then (``by_node``). The stores keep the last ``spark.ui.retainedJobs``
jobs (default 1,000) and ``spark.sql.ui.retainedExecutions`` executions (the profiles keep 10,000):
counts are taken from job and execution ids, which Spark numbers from 0 in submission order, so a
window that outgrows the retention is still counted right; only its attribution to nodes loses the
oldest entries.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Submitted:
    """A Spark job or SQL execution: its id, when it was submitted (epoch milliseconds) and its
    name (a job's call site or description, an execution's description)."""

    id: int
    submitted_ms: int
    name: str


@dataclass
class SparkWork:
    """The Spark jobs and SQL executions submitted in a window: counts, and the ones still retained."""

    spark_jobs: int
    sql_executions: int
    jobs: list[Submitted] = field(default_factory=list)
    executions: list[Submitted] = field(default_factory=list)

    def as_dict(self) -> dict[str, int]:
        """``{"spark_jobs": n, "sql_executions": n}``."""
        return {"spark_jobs": self.spark_jobs, "sql_executions": self.sql_executions}

    def job_names(self, top: int = 10) -> list[tuple[str, int]]:
        """The most frequent job names (Delta names its jobs, e.g. "Delta: Filtering files for
        query"), with their counts."""
        return Counter(job.name for job in self.jobs).most_common(top)


@dataclass(frozen=True)
class Mark:
    """Where the counts stood: the last job and execution ids (-1 before the first)."""

    last_job: int
    last_execution: int


class WorkCounter:
    """Counts the Spark jobs and SQL executions of a window in this process's Spark session."""

    def __init__(self, spark) -> None:
        self._context = spark.sparkContext._jsc.sc()
        self._sql_store = spark._jsparkSession.sharedState().statusStore()

    def _drain(self) -> None:
        """Wait until Spark's listener bus has delivered every event already posted, so that the
        stores hold the jobs and executions submitted so far."""
        self._context.listenerBus().waitUntilEmpty()

    def _jobs(self) -> list[Submitted]:
        found = []
        iterator = self._context.statusStore().jobsList(None).iterator()
        while iterator.hasNext():
            job = iterator.next()
            submitted = job.submissionTime()
            found.append(Submitted(job.jobId(), submitted.get().getTime() if submitted.isDefined() else 0, _job_name(job)))
        return found

    def _executions(self) -> list[Submitted]:
        found = []
        iterator = self._sql_store.executionsList().iterator()
        while iterator.hasNext():
            execution = iterator.next()
            found.append(Submitted(execution.executionId(), execution.submissionTime(), execution.description() or ""))
        return found

    def _last_ids(self) -> Mark:
        """The newest retained job and execution ids, read without walking the stores from Python:
        the job listing's two ends (Spark lists jobs newest first; both ends are read so that the
        order does not matter) and the last execution by id (the SQL store's view is sorted by
        execution id). Walking every retained entry through py4j took 1.2 s with about 1,200 of
        them, on every scheduled build."""
        self._drain()
        jobs = self._context.statusStore().jobsList(None)
        last_job = -1 if jobs.isEmpty() else max(jobs.head().jobId(), jobs.last().jobId())
        count = self._sql_store.executionsCount()
        last_execution = -1 if count == 0 else self._sql_store.executionsList(int(count) - 1, 1).head().executionId()
        return Mark(last_job, last_execution)

    def mark(self) -> Mark:
        """The current position: the last job and execution ids submitted so far."""
        return self._last_ids()

    def counts_since(self, mark: Mark) -> SparkWork:
        """The number of jobs and executions submitted after ``mark``, without their lists (what a
        scheduled build logs; ``since`` also lists them, for attribution to nodes)."""
        now = self._last_ids()
        return SparkWork(now.last_job - mark.last_job, now.last_execution - mark.last_execution)

    def since(self, mark: Mark) -> SparkWork:
        """The jobs and executions submitted after ``mark`` (counts from ids; lists of those
        retained, oldest first). Each is looked up by its id, newer than ``mark``'s, so the cost
        follows the window, not what the stores retain (up to 10,000 executions: a walk through
        py4j took 1.2 s with about 1,200 entries, ``_last_ids``)."""
        from py4j.protocol import Py4JJavaError

        now = self._last_ids()
        store = self._context.statusStore()
        jobs = []
        for job_id in range(mark.last_job + 1, now.last_job + 1):
            try:
                job = store.job(job_id)
            except Py4JJavaError:  # no longer retained (NoSuchElementException): counted, not listed
                continue
            submitted = job.submissionTime()
            jobs.append(Submitted(job_id, submitted.get().getTime() if submitted.isDefined() else 0, _job_name(job)))
        executions = []
        for execution_id in range(mark.last_execution + 1, now.last_execution + 1):
            execution = self._sql_store.execution(execution_id)
            if execution.isDefined():
                execution = execution.get()
                executions.append(Submitted(execution_id, execution.submissionTime(), execution.description() or ""))
        return SparkWork(now.last_job - mark.last_job, now.last_execution - mark.last_execution, jobs, executions)


def _job_name(job) -> str:
    description = job.description()
    return description.get() if description.isDefined() else job.name()


#: Where ``by_node`` counts what no node's window holds.
BETWEEN_NODES = "(between nodes)"


def by_node(work: SparkWork, windows: dict[str, tuple[dt.datetime, dt.datetime]]) -> dict[str, dict[str, int]]:
    """Attribute a window's retained jobs and executions to dbt nodes by submission time.

    ``windows``: ``{node name: (started, completed)}`` as timezone-aware datetimes (dbt's
    ``timing`` of a node: compile and execute). Whatever was submitted outside every node's window
    (dbt's start, hooks, the project's own reads) counts under ``BETWEEN_NODES``. Returns
    ``{node: {"spark_jobs": n, "sql_executions": n}}``.
    """
    spans = [(start.timestamp() * 1000, end.timestamp() * 1000, name) for name, (start, end) in windows.items()]
    counts: dict[str, dict[str, int]] = {}
    for kind, items in (("spark_jobs", work.jobs), ("sql_executions", work.executions)):
        for item in items:
            name = next((n for start, end, n in spans if start <= item.submitted_ms <= end), BETWEEN_NODES)
            counts.setdefault(name, {"spark_jobs": 0, "sql_executions": 0})[kind] += 1
    return counts
