"""Scheduled builds (cron): one build at a time per warehouse, logged as JSON lines.

``scheduled_build`` takes the warehouse's build lock (``locks.build_lock``), runs
``dbt source freshness``, ``dbt build`` and, when tables are due, table maintenance
(``maintain.maintain_tables``) in-process, and reports each step as one JSON object per
line (dbt's own messages, errors only, are JSON lines too: ``--log-format json``). A second build
that cannot get the lock within ``wait_s`` exits with ``EXIT_LOCKED`` (75, ``EX_TEMPFAIL``) before
touching the warehouse; the next scheduled run catches up, because every build replays whatever
is past the view's watermarks.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import time
from collections.abc import Callable
from typing import Any

from payledger.dbt import run_dbt
from payledger.locks import EXIT_LOCKED, BuildLocked, build_lock, load_lock
from payledger.maintain import every_commits_setting, maintain_tables, retention_hours_setting
from payledger.spark import default_warehouse, get_spark


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def scheduled_build(
    wait_s: float = 0.0,
    build_args: tuple[str, ...] = (),
    emit: Callable[[dict[str, Any]], None] | None = None,
    *,
    maintain_every: int | None = None,
    retention_hours: float | None = None,
) -> int:
    """Run ``dbt source freshness``, ``dbt build <build_args>`` and due table maintenance under the
    build lock.

    Maintenance (after a successful build, under the load lock too) covers the project tables with
    at least ``maintain_every`` commits since their last maintenance (default
    ``$PAYLEDGER_MAINTAIN_EVERY`` or 24; 0 turns it off), keeping ``retention_hours`` of history
    (default ``$PAYLEDGER_RETENTION_HOURS`` or 168).

    ``emit`` receives one dict per step (default: print it as a JSON line): ``event`` is one of
    ``locked``, ``lock_acquired``, ``freshness`` (``success``, ``stale``: sources past warn_after or
    error_after, with their status), ``build`` (``success``, ``invocation_id``, ``seconds``,
    ``failures``), ``maintenance`` (after a successful build, unless turned off: ``success``,
    ``seconds``, the check for due tables included, ``tables``: per table maintained, the commits
    since its last maintenance and data and delete file counts before and after, and ``error`` when
    it failed) and ``done`` (``exit_code``). Returns the process exit code: 0 when every step
    succeeds, 1 when one fails (a freshness error means late data: the build still runs),
    ``EXIT_LOCKED`` when another build holds the lock.
    """
    emit = emit or (lambda record: print(json.dumps(record), flush=True))
    warehouse = default_warehouse()

    def log(event: str, **fields: Any) -> None:
        emit({"ts": _now(), "event": event, "warehouse": str(warehouse), **fields})

    try:
        with build_lock(warehouse, wait_s):
            log("lock_acquired", pid=os.getpid())
            freshness = run_dbt("source", "freshness", "--log-format", "json")
            stale = {uid.split(".", 2)[-1]: str(r.status) for uid, r in freshness.nodes.items() if str(r.status) != "pass"}
            log("freshness", success=freshness.success, stale=stale)
            started = time.monotonic()
            build = run_dbt("build", "--log-format", "json", *build_args)
            log(
                "build",
                success=build.success,
                invocation_id=build.invocation_id,
                seconds=round(time.monotonic() - started, 1),
                failures=build.failures() or ([str(build.exception)] if build.exception else []),
            )
            code = 0 if freshness.success and build.success else 1
            every = every_commits_setting() if maintain_every is None else maintain_every
            if build.success and every > 0:
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
