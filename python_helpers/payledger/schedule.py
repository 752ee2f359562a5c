"""Scheduled builds (cron): one build at a time per warehouse, logged as JSON lines.

``scheduled_build`` takes the warehouse's build lock (``locks.build_lock``), runs
``dbt source freshness``, ``dbt build`` and, when tables are due, table maintenance
(``maintain.maintain_tables``) in-process, and reports each step as one JSON object per
line (dbt's own messages, errors only, are JSON lines too: ``--log-format json``). A second build
that cannot get the lock within ``wait_s`` exits with ``EXIT_LOCKED`` (75, ``EX_TEMPFAIL``) before
touching the warehouse; the next scheduled run catches up, because every build replays whatever
is past the view's watermarks.

``build_loop`` runs ``scheduled_build`` again and again in one process (``payledger build --every``),
so that the JVM's start, dbt's project load and the JIT's warm-up are paid once; SIGTERM or SIGINT
ends it after the current step.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

from payledger.dbt import SCHEDULED_BUILD_EXCLUDES, DbtInvocation, run_dbt
from payledger.locks import EXIT_LOCKED, BuildLocked, build_lock, load_lock
from payledger.maintain import every_commits_setting, maintain_tables, retention_hours_setting
from payledger.spark import default_warehouse, get_spark
from payledger.sparkwork import SparkWork, WorkCounter


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def scheduled_build(
    wait_s: float = 0.0,
    build_args: tuple[str, ...] = (),
    emit: Callable[[dict[str, Any]], None] | None = None,
    *,
    maintain_every: int | None = None,
    retention_hours: float | None = None,
    stop_requested: Callable[[], bool] = lambda: False,
    on_build: Callable[[DbtInvocation, SparkWork], None] | None = None,
) -> int:
    """Run ``dbt source freshness``, ``dbt build <build_args>`` (without dbt's unit tests:
    ``SCHEDULED_BUILD_EXCLUDES``) and due table maintenance under the build lock.

    Maintenance (after a successful build, under the load lock too) covers the project tables with
    at least ``maintain_every`` commits since their last maintenance (default
    ``$PAYLEDGER_MAINTAIN_EVERY`` or 24; 0 turns it off), keeping ``retention_hours`` of history
    (default ``$PAYLEDGER_RETENTION_HOURS`` or 168).

    ``emit`` receives one dict per step (default: print it as a JSON line): ``event`` is one of
    ``locked``, ``lock_acquired``, ``freshness`` (``success``, ``stale``: sources past warn_after or
    error_after, with their status), ``build`` (``success``, ``invocation_id``, ``seconds``,
    ``failures``, ``spark_jobs`` and ``sql_executions``: what the build made Spark do,
    ``sparkwork.WorkCounter``), ``maintenance`` (after a successful build, unless turned off: ``success``,
    ``seconds``, the check for due tables included, ``tables``: per table maintained, the commits
    since its last maintenance and data and delete file counts before and after, and ``error`` when
    it failed) and ``done`` (``exit_code``). Returns the process exit code: 0 when every step
    succeeds, 1 when one fails (a freshness error means late data: the build still runs),
    ``EXIT_LOCKED`` when another build holds the lock.

    ``on_build``, when given, receives the build's invocation and the Spark jobs and executions
    it submitted, listed (``WorkCounter.since``), once its record is emitted: what the aging bench
    attributes to dbt's nodes.

    ``stop_requested`` is asked between steps: once it is true, the remaining steps are skipped
    (logged as ``stopped`` with the step that would have come next) and the lock is released.
    """
    emit = emit or (lambda record: print(json.dumps(record), flush=True))
    warehouse = default_warehouse()

    def log(event: str, **fields: Any) -> None:
        emit({"ts": _now(), "event": event, "warehouse": str(warehouse), **fields})

    try:
        with build_lock(warehouse, wait_s):
            log("lock_acquired", pid=os.getpid())
            # No relation cache: freshness reads load_log with its own queries, and listing the
            # project's six schemas first cost about 0.9 s of a new process's step (2026-12-06).
            freshness = run_dbt("source", "freshness", "--no-populate-cache", "--log-format", "json")
            log("freshness", success=freshness.success, stale=stale_sources(freshness.nodes))
            if stop_requested():
                log("stopped", before="build")
                log("done", exit_code=0 if freshness.success else 1)
                return 0 if freshness.success else 1
            counter = WorkCounter(get_spark())
            mark = counter.mark()
            started = time.monotonic()
            build = run_dbt("build", "--log-format", "json", *SCHEDULED_BUILD_EXCLUDES, *build_args)
            seconds = round(time.monotonic() - started, 1)
            work = counter.since(mark) if on_build else counter.counts_since(mark)
            log(
                "build",
                success=build.success,
                invocation_id=build.invocation_id,
                seconds=seconds,
                failures=build.failures() or ([str(build.exception)] if build.exception else []),
                # The view's version published after this build (payledger.publish: new, or kept
                # when the build changed nothing), or null: a build whose tests fail, or that runs
                # without the reconciliation test, publishes nothing.
                published_version=build.publication.version if build.publication else None,
                **work.as_dict(),
            )
            if on_build:
                on_build(build, work)
            code = 0 if freshness.success and build.success else 1
            every = every_commits_setting() if maintain_every is None else maintain_every
            if build.success and every > 0 and stop_requested():
                log("stopped", before="maintenance")
            elif build.success and every > 0:
                started = time.monotonic()
                try:
                    with load_lock(warehouse):
                        done = maintain_tables(
                            get_spark(),
                            warehouse,
                            every_commits=every,
                            retention_hours=retention_hours_setting() if retention_hours is None else retention_hours,
                        )
                    log("maintenance", success=True, seconds=round(time.monotonic() - started, 1), tables=[t.as_dict() for t in done])
                except Exception as error:  # reported as a failed step, like a failed build
                    log("maintenance", success=False, seconds=round(time.monotonic() - started, 1), tables=[], error=str(error)[:2000])
                    code = 1
    except BuildLocked as locked:
        log("locked", message=str(locked))
        code = EXIT_LOCKED
    log("done", exit_code=code)
    return code


def source_statuses(results: dict[str, Any]) -> dict[str, str]:
    """Each source's status in a ``dbt source freshness`` run: {"<source>.<table>": status}
    (``pass``, ``warn``, ``error`` or ``runtime error``), from its results by unique id. The
    project's hooks, which the run reports beside the sources (status ``success``), are not
    sources."""
    return {uid.split(".", 2)[-1]: str(result.status) for uid, result in results.items() if uid.startswith("source.")}


def stale_sources(results: dict[str, Any]) -> dict[str, str]:
    """The sources of a ``dbt source freshness`` run that did not pass (``source_statuses``)."""
    return {name: status for name, status in source_statuses(results).items() if status != "pass"}


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h)?\s*$")


def parse_duration(text: str) -> float:
    """Seconds in a duration written as a number with an optional unit: ``90``, ``90s``, ``5m``,
    ``1.5h``. Raises ``ValueError`` for anything else, or a duration of 0."""
    match = _DURATION.match(text)
    if not match:
        raise ValueError(f"{text!r} is not a duration: write seconds, or a number with s, m or h (90, 90s, 5m, 1h)")
    seconds = float(match.group(1)) * {"s": 1, "m": 60, "h": 3600}[match.group(2) or "s"]
    if seconds <= 0:
        raise ValueError(f"{text!r}: the interval must be more than 0")
    return seconds


def build_loop(
    every_s: float,
    *,
    iterations: int | None = None,
    wait_s: float = 0.0,
    build_args: tuple[str, ...] = (),
    emit: Callable[[dict[str, Any]], None] | None = None,
    maintain_every: int | None = None,
    retention_hours: float | None = None,
) -> int:
    """Run ``scheduled_build`` every ``every_s`` seconds in this process until SIGTERM or SIGINT
    (or ``iterations`` builds, when given).

    Builds start on a fixed cadence: build n is due ``n * every_s`` after the loop's start. A build
    that overruns the interval is followed at once by the next one, and missed starts are skipped,
    not queued (as cron's overlap rule). A failed build (exit 1) or a held lock (75) is logged and
    the loop goes on. SIGTERM or SIGINT ends the loop after the current step (freshness, build or
    maintenance: a dbt invocation is never cut short), with the lock released; while waiting, at
    once. The JVM of PySpark ignores SIGINT (pyspark.java_gateway), so Ctrl-C reaches Python only.

    Every record of ``scheduled_build`` carries ``iteration`` (1-based); the loop adds
    ``loop_started`` (``every_s``, ``pid``), ``waiting`` (``seconds`` until the next start) and
    ``loop_stopped`` (``reason``: the signal's name or ``iterations``; ``exit_code``). Returns 0 when
    a signal ended the loop, or the last build's exit code when ``iterations`` did. Must run in the
    main thread (signal handlers).
    """
    emit = emit or (lambda record: print(json.dumps(record), flush=True))
    stop = threading.Event()
    received: list[str] = []

    def on_signal(number: int, _frame) -> None:
        received.append(signal.Signals(number).name)
        stop.set()

    # Spark first: a SparkContext started in the main thread installs its own SIGINT handler
    # (pyspark.context: cancel every job, raise KeyboardInterrupt), which would replace this one
    # and cut the dbt invocation under way short.
    get_spark()
    previous = {number: signal.signal(number, on_signal) for number in (signal.SIGTERM, signal.SIGINT)}
    warehouse = str(default_warehouse())
    emit({"ts": _now(), "event": "loop_started", "warehouse": warehouse, "every_s": every_s, "pid": os.getpid()})
    started = time.monotonic()
    code = 0
    iteration = 0
    try:
        while not stop.is_set():
            iteration += 1
            code = scheduled_build(
                wait_s,
                build_args,
                lambda record, iteration=iteration: emit({**record, "iteration": iteration}),
                maintain_every=maintain_every,
                retention_hours=retention_hours,
                stop_requested=stop.is_set,
            )
            if iterations is not None and iteration >= iterations:
                break
            elapsed = time.monotonic() - started
            next_start = (int(elapsed // every_s) + 1) * every_s
            if not stop.is_set():
                emit({"ts": _now(), "event": "waiting", "warehouse": warehouse, "seconds": round(next_start - elapsed, 1)})
                stop.wait(next_start - elapsed)
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    code = 0 if received else code
    emit({"ts": _now(), "event": "loop_stopped", "warehouse": warehouse, "reason": received[0] if received else "iterations", "exit_code": code})
    return code
