"""What a build makes Spark do: its Spark jobs and SQL executions, counted from Spark's own status
stores (the live ``AppStatusStore`` behind ``SparkContext.statusTracker`` and the SQL tab's
``SQLAppStatusStore``), which Spark keeps whether or not its UI is on.

``WorkCounter(spark).mark()`` notes where the counts stand; ``counter.since(mark)`` returns the jobs
and executions submitted after it, each with its submission time and the dbt node that submitted it
where Spark says so, so that they can be attributed to dbt nodes (``by_node``). ``run_dbt`` tags
each Spark job with the node whose statement submitted it (Spark 3.5's job tags, set on the
statement's thread: ``node_job_tag``), which holds when dbt runs nodes on several threads. The
stores keep the last ``spark.ui.retainedJobs`` jobs (default 1,000) and
``spark.sql.ui.retainedExecutions`` executions (the profiles keep 10,000): counts are taken from job
and execution ids, which Spark numbers from 0 in submission order, so a window that outgrows the
retention is still counted right; only its attribution to nodes loses the oldest entries.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class Submitted:
    """A Spark job or SQL execution: its id, when it was submitted (epoch milliseconds), its name
    (a job's call site or description, an execution's description) and the dbt node that submitted
    it, if known."""

    id: int
    submitted_ms: int
    name: str
    #: The dbt node (its name) that submitted it, from its job tags (an execution: from its jobs'),
    #: or None where Spark does not say (submitted outside dbt's nodes, or a job-less execution).
    node: str | None = None


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
            found.append(_submitted_job(iterator.next()))
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
            jobs.append(_submitted_job(job))
        node_of_job = {job.id: job.node for job in jobs}
        executions, roots = [], {}
        for execution_id in range(mark.last_execution + 1, now.last_execution + 1):
            execution = self._sql_store.execution(execution_id)
            if execution.isDefined():
                execution = execution.get()
                job_ids = [int(j) for j in execution.jobs().keys().mkString(",").split(",") if j]
                node = next((node_of_job[j] for j in sorted(job_ids) if node_of_job.get(j)), None)
                executions.append(Submitted(execution_id, execution.submissionTime(), execution.description() or "", node))
                roots[execution_id] = execution.rootExecutionId()
        # A job-less execution nested in another (Delta's commands run their reads as executions of
        # their own) belongs to its root's node.
        node_of_execution = {execution.id: execution.node for execution in executions}
        executions = [replace(execution, node=node_of_execution.get(roots[execution.id])) if execution.node is None else execution for execution in executions]
        return SparkWork(now.last_job - mark.last_job, now.last_execution - mark.last_execution, jobs, executions)


def _submitted_job(job) -> Submitted:
    """A job (Spark's ``JobData``) as ``Submitted``: its id, submission time (0 if Spark has none),
    name and tagged node."""
    submitted = job.submissionTime()
    return Submitted(job.jobId(), submitted.get().getTime() if submitted.isDefined() else 0, _job_name(job), _tagged_node(job))


def _job_name(job) -> str:
    description = job.description()
    return description.get() if description.isDefined() else job.name()


#: The prefix of the Spark job tag that names the dbt node (its unique_id) whose statement submitted
#: a job (``node_job_tag``).
NODE_TAG_PREFIX = "payledger-node:"


def node_job_tag(unique_id: str) -> str | None:
    """The Spark job tag that marks jobs as submitted by the dbt node ``unique_id``, or None for an
    id Spark cannot take as a tag (one with a comma: ``SparkContext.addJobTag``)."""
    return None if "," in unique_id else NODE_TAG_PREFIX + unique_id


def _tagged_node(job) -> str | None:
    """The name of the dbt node whose tag the job (Spark's ``JobData``) carries, or None."""
    for tag in job.jobTags().mkString(",").split(","):
        if tag.startswith(NODE_TAG_PREFIX):
            return tag[len(NODE_TAG_PREFIX) :].split(".")[-1]
    return None


#: Where ``by_node`` counts what no node's window holds.
BETWEEN_NODES = "(between nodes)"
#: Where ``by_node`` counts what carries no node and was submitted while several nodes ran (dbt's
#: threads): it cannot tell whose it was.
OVERLAPPING_NODES = "(overlapping nodes)"


def by_node(work: SparkWork, windows: dict[str, tuple[dt.datetime, dt.datetime]]) -> dict[str, dict[str, int]]:
    """Attribute a window's retained jobs and executions to dbt nodes.

    A job or execution that names its node (``Submitted.node``: a job's tag, an execution's jobs')
    counts there. The rest go by submission time: to the node whose time window holds it
    (``windows``: ``{node name: (started, completed)}`` as timezone-aware datetimes, dbt's
    ``timing`` of a node: compile and execute); under ``BETWEEN_NODES`` when no window holds it
    (dbt's start, hooks, the project's own reads); under ``OVERLAPPING_NODES`` when several do (dbt
    ran nodes on several threads then). Returns ``{node: {"spark_jobs": n, "sql_executions": n}}``.
    """
    spans = [(start.timestamp() * 1000, end.timestamp() * 1000, name) for name, (start, end) in windows.items()]
    counts: dict[str, dict[str, int]] = {}
    for kind, items in (("spark_jobs", work.jobs), ("sql_executions", work.executions)):
        for item in items:
            name = item.node
            if name is None:
                holders = [n for start, end, n in spans if start <= item.submitted_ms <= end]
                name = holders[0] if len(holders) == 1 else OVERLAPPING_NODES if holders else BETWEEN_NODES
            counts.setdefault(name, {"spark_jobs": 0, "sql_executions": 0})[kind] += 1
    return counts
