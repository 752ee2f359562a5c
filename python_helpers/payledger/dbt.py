"""Run dbt on the project in-process through ``dbtRunner``, sharing this process's Spark session."""

from __future__ import annotations

import datetime as dt
import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from payledger.spark import PROJECT_ROOT, SPARK_CODE_GENERATION, project_environment, session_settings
from payledger.warehouse import VIEW

#: dbt arguments that make the reconciliation test compare every key (dbt_project.yml's var
#: ``reconcile_full``; a build compares one rotating slice otherwise).
FULL_RECONCILIATION = ("--vars", '{"reconcile_full": true}')
#: dbt arguments of every scheduled build (``payledger build``, the warm loop, the bench's steps
#: with tests): dbt's unit tests read the rows they are given, never the warehouse, so a build of
#: new data cannot fail them; they run in development and CI (``make test``), as dbt's
#: documentation of unit tests advises. Data tests run on every build.
SCHEDULED_BUILD_EXCLUDES = ("--exclude-resource-type", "unit_test")
#: The environment variable through which run_dbt tells the data tests over history what the
#: published build checked (``checked_since_published``; read by macros/reconciliation/).
CHECKED_SINCE_ENV = "PAYLEDGER_CHECKED_SINCE"
#: The environment variable that fixes Spark's code generation for every run (profiles/profiles.yml);
#: unset, run_dbt chooses it per invocation (``code_generation_settings``).
CODEGEN_ENV = "PAYLEDGER_CODEGEN"
#: The session setting through which run_dbt lets a model compile its own statements when it finds
#: that this run of it reads whole histories (``code_generation_settings``): the settings to use, as
#: JSON (macros/engine/compile_whole_history_read.sql reads it; unset: the model changes nothing).
WHOLE_HISTORY_READS_SETTING = "payledger.codegen.whole_history_reads"


@dataclass
class DbtInvocation:
    """One dbt invocation: ``success``, its ``invocation_id`` and the run results by node unique_id.

    ``nodes[uid]`` is dbt's RunResult (``status``, ``execution_time`` in seconds, ``adapter_response``,
    ``message``). ``exception`` is set when dbt itself failed (for example a compilation error).
    ``messages`` holds what macros logged (dbt's ``JinjaLogInfo`` events), in order.
    ``publication`` is the ``payledger.publish.Publication`` that holds the view's version after
    this invocation audited it (new, or kept when the view did not change), or None when the
    invocation audited nothing or failed.
    """

    args: tuple[str, ...]
    success: bool
    invocation_id: str
    nodes: dict[str, Any]
    exception: BaseException | None
    messages: list[str]
    publication: Any = None
    #: The project's parsed ``manifest.json`` as this invocation wrote it (``build`` only), or None.
    manifest: dict[str, Any] | None = None

    def logged_json(self, prefix: str) -> Any:
        """The JSON a macro logged as ``"<prefix> <json>"`` (the last such line); KeyError if none."""
        for message in reversed(self.messages):
            if message.startswith(prefix + " "):
                return json.loads(message[len(prefix) + 1 :])
        raise KeyError(f"no {prefix} line among {len(self.messages)} logged messages")

    def status(self, name: str) -> str:
        """Status of the node whose name is ``name``; raises ``KeyError`` if it did not run."""
        for uid, result in self.nodes.items():
            if uid.split(".")[-1] == name:
                return str(result.status)
        raise KeyError(f"node {name} did not run; ran: {sorted(self.nodes)}")

    def failures(self) -> list[str]:
        """One line per node that errored or failed, with dbt's message."""
        return [f"{uid}: {r.status} {r.message}" for uid, r in self.nodes.items() if str(r.status) in {"error", "fail"}]

    def windows(self) -> dict[str, tuple[dt.datetime, dt.datetime]]:
        """When each node ran, compile and execute: ``{node name: (started, completed)}``, UTC."""
        found = {}
        for uid, result in self.nodes.items():
            timing = [t for t in getattr(result, "timing", []) if t.started_at and t.completed_at]
            if timing:
                found[uid.split(".")[-1]] = (timing[0].started_at.replace(tzinfo=dt.UTC), timing[-1].completed_at.replace(tzinfo=dt.UTC))
        return found

    def timings(self, resource_types: tuple[str, ...] = ("model", "snapshot")) -> dict[str, float]:
        """Execution seconds per node name, for nodes of the given resource types."""
        return {uid.split(".")[-1]: float(r.execution_time) for uid, r in self.nodes.items() if uid.split(".")[0] in resource_types}


def run_dbt(
    *args: str,
    target_path: Path | None = None,
    log_path: Path | None = None,
    quiet: bool = True,
    on_event: Callable[[Any], None] | None = None,
) -> DbtInvocation:
    """Invoke ``dbt <args>`` on the project (profiles in ``profiles/``) and return what it did.

    dbt-spark's ``session`` method reuses this process's SparkSession if one exists. ``on_event``
    receives every dbt event (``event.info.name`` is its type, e.g. ``NodeStart``). Never raises for
    a failed run: check ``success``.

    ``dbt build`` and ``dbt test`` on the embedded target check history since the published build
    (``checked_since_published``, passed in the environment variable ``CHECKED_SINCE_ENV`` for the
    invocation only: a dbt var that changes would make dbt parse the whole project again).

    Write-audit-publish: when the invocation ran the view's model and its reconciliation test on
    this process's Spark session, the view's version is published if every node succeeded, and the
    failure is recorded if not (``payledger.publish.publish_after``; ``publication`` says what was
    published). Builds through the Thrift target run on the server's session: they publish nothing.

    Code generation: an invocation that reads whole histories runs with Spark's default code
    generation on top of the profile's settings, and the session's values come back after it
    (``code_generation_settings``).

    Raises ``payledger.spark.WarehouseMoved`` before dbt starts when the embedded warehouse's
    catalog names schemas outside its folder (a copied or moved warehouse: ``spark.get_spark``).

    The run's stored watermarks: a ``build`` or ``run`` on the embedded Delta target gets the
    stored maxima of the warehouse's whole-number columns, read from the tables' logs
    (``payledger.stored_maxima``), so that ``run_watermarks`` asks Spark only for the rest.
    """
    project_environment()
    if args[:1] not in OFFLINE_COMMANDS:
        _launch_embedded_spark(args)  # the JVM starts while dbt imports
    from dbt.cli.main import dbtRunner
    from dbt_common.invocation import get_invocation_id

    from payledger.stored_maxima import stored_maxima_for_invocation

    argv = [*args, "--project-dir", str(PROJECT_ROOT), "--profiles-dir", str(PROJECT_ROOT / "profiles")]
    if target_path is not None:
        argv += ["--target-path", str(target_path)]
    if log_path is not None:
        argv += ["--log-path", str(log_path)]
    if quiet:
        argv.append("--quiet")
    messages: list[str] = []

    def collect(event) -> None:
        if event.info.name == "JinjaLogInfo":
            messages.append(event.data.msg)
        if on_event is not None:
            on_event(event)

    spark = None if args[:1] in OFFLINE_COMMANDS else _embedded_session(args)
    overrides = code_generation_settings(args, spark)
    _apply_session_settings_once(overrides)
    since = checked_since_published(args)
    os.environ.pop(CHECKED_SINCE_ENV, None)
    if since is not None:
        os.environ[CHECKED_SINCE_ENV] = json.dumps(since)
    _run_dbt_invocations.append(args)
    try:
        with session_settings(spark, overrides), stored_maxima_for_invocation(spark, args):  # no overrides: nothing set
            outcome = dbtRunner(callbacks=[collect]).invoke(argv)
    finally:
        _run_dbt_invocations.remove(args)
        os.environ.pop(CHECKED_SINCE_ENV, None)
        _invocation_settings.clear()
        _untag_this_thread()
    results = getattr(outcome.result, "results", None) or []
    # run-operation returns result entries without a node (RunResultOutput has unique_id instead).
    nodes = {(r.node.unique_id if hasattr(r, "node") else r.unique_id): r for r in results}
    invocation = DbtInvocation(tuple(args), bool(outcome.success), get_invocation_id(), nodes, outcome.exception, messages)
    if args[:1] == ("build",):
        manifest = (target_path or PROJECT_ROOT / "target") / "manifest.json"
        invocation.manifest = json.loads(manifest.read_text()) if manifest.exists() else None
    from payledger.publish import publish_after
    from payledger.spark import default_warehouse

    if spark is not None:  # the session dbt built with (embedded targets only)
        invocation.publication = publish_after(invocation, spark, default_warehouse())
    return invocation


#: The dbt invocations run_dbt has under way in this process (their command lines): the project's
#: dbt plugin (``prepare_command_line_invocation``) leaves those to run_dbt.
_run_dbt_invocations: list[tuple[str, ...]] = []


def prepare_command_line_invocation(project_name: str) -> None:
    """Give a dbt invocation that run_dbt did not start, such as ``dbt build`` typed in a shell, the
    stored state run_dbt passes (``payledger.stored_maxima.set_stored_state``: the watermarks'
    stored maxima and the tables' states, read from the tables' logs), so that it probes no more
    than ``payledger build`` does. Called by the project's dbt plugin (``dbt_payledger``) as dbt
    loads the project, before it parses or runs anything, with the project's name.

    Only for this project's ``build``, ``run`` or ``snapshot`` (dbt's ``WHICH`` flag) on a target
    of dbt-spark's ``session`` method: it starts the Spark session dbt-spark would (the profile's
    ``server_side_parameters`` as dbt rendered them, ``getOrCreate``; dbt reuses it), checks that
    its catalog is in its warehouse folder (``payledger.spark.check_catalog_location``, which also
    takes the metastore, so no other process writes between the read and the build), then reads.
    Anything else, or an invocation run_dbt started, gets nothing (what an earlier invocation in
    this process set is unset): ``run_watermarks`` then reads every watermark with Spark and each
    snapshot is probed, as before. The variables are set in ``os.environ`` and in the environment
    dbt's ``env_var`` reads, the copy of it that dbt made as the invocation started
    (``dbt_common.context.get_invocation_context().env``). Raises
    ``payledger.spark.WarehouseMoved`` for a copied or moved warehouse; dbt reports it as a runtime
    error and runs nothing."""
    import click
    from dbt.flags import get_flags

    from payledger.spark import check_catalog_location
    from payledger.spark import project_name as this_project
    from payledger.stored_maxima import STORED_STATE_COMMANDS, STORED_STATE_ENVIRONMENT, set_stored_state

    if _run_dbt_invocations:
        return
    context = click.get_current_context(silent=True)
    profile = (context.obj or {}).get("profile") if context is not None else None
    command = getattr(get_flags(), "WHICH", None)
    credentials = getattr(profile, "credentials", None)
    session = None
    if project_name == this_project() and command in STORED_STATE_COMMANDS and getattr(credentials, "method", None) == "session":
        session = _session_as_dbt_spark_starts_it(credentials.server_side_parameters)
        check_catalog_location(session)
    set_stored_state(session, command or "")
    _pass_to_dbt_env_var(STORED_STATE_ENVIRONMENT)


def _session_as_dbt_spark_starts_it(parameters: dict[str, Any]):  # -> pyspark.sql.SparkSession
    """The Spark session dbt-spark's ``session`` cursor gets before each statement
    (``dbt/adapters/spark/session.py``): Hive support, each of the profile's
    ``server_side_parameters`` (``parameters``), ``getOrCreate``, which returns this process's
    session, if one runs, with the modifiable settings applied."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.enableHiveSupport()
    for parameter, value in parameters.items():
        builder = builder.config(parameter, value)
    return builder.getOrCreate()


def _pass_to_dbt_env_var(names: tuple[str, ...]) -> None:
    """Give the current dbt invocation's environment (what its ``env_var`` reads: a copy of
    ``os.environ`` made as it started) ``os.environ``'s value of each of ``names``, or none."""
    from dbt_common.context import try_get_invocation_context

    invocation = try_get_invocation_context()
    if invocation is None:
        return
    environment = invocation.env
    for name in names:
        if name in os.environ:
            environment[name] = os.environ[name]
        else:
            environment.pop(name, None)


#: sha256 of dbt-spark 1.11.0's ``Cursor.execute`` (``dbt/adapters/spark/session.py``, the method's
#: source text), which ``_execute_applying_settings_once`` replaces in run_dbt's processes;
#: ``tests/unit/test_upstream.py`` hashes the installed one again.
UPSTREAM_CURSOR_EXECUTE_SHA256 = "a9ed901c0957fd930b467bbf05056b85f4d7220b19a7adcb74878331499af98f"

#: The session the profile's settings were applied to in the current run_dbt invocation, and those
#: settings: ``[(session, settings)]``, or empty before the invocation's first statement.
_applied_settings: list[tuple[Any, dict[str, Any]]] = []
#: Settings the current run_dbt invocation applies on top of the profile's (``code_generation_settings``).
_invocation_settings: dict[str, str] = {}


def _execute_applying_settings_once(self, sql: str, *parameters: Any) -> None:
    """dbt-spark's ``session`` cursor's ``execute`` (``dbt/adapters/spark/session.py``, dbt-spark
    1.11.0), applying the profile's ``server_side_parameters`` to the session at the invocation's
    first statement only, instead of before every statement. Upstream builds
    ``SparkSession.builder`` with every parameter and calls ``getOrCreate`` for each statement; on an
    existing session PySpark 3.5 sends them to the JVM one by one and applies them again
    (``SparkSession.applyModifiableSettings``): 2-8 ms a statement with the Delta target's 31
    parameters, by machine speed, against 0.4 ms with none, and a tiny Delta build runs about 133
    (``CHANGELOG.md``, 2026-12-01: warm tiny builds 19.6-20.5 s against 21.4-22.8 s on a slow
    machine, no difference beyond the spread on a fast one). They are applied again when the
    session or the settings differ from the ones applied, so each invocation still starts from the
    profile's settings, as upstream's do, with the invocation's own on top (``_invocation_settings``).
    Each statement's jobs carry its dbt node's job tag (``_tag_jobs_with_node``).
    Raises dbt's ``DbtRuntimeError`` for Spark's ``AnalysisException``, as upstream does."""
    from dbt_common.exceptions import DbtRuntimeError
    from pyspark.sql import SparkSession
    from pyspark.sql.utils import AnalysisException

    if len(parameters) > 0:
        sql = sql % parameters
    # The session getOrCreate would return (PySpark's own check), without a call to the JVM.
    session = SparkSession._instantiatedSession
    applied = _applied_settings[0] if _applied_settings else (None, None)
    wanted = {**self.server_side_parameters, **_invocation_settings}
    if session is None or session._sc._jsc is None or session is not applied[0] or applied[1] != wanted:
        session = _session_as_dbt_spark_starts_it(wanted)
        _applied_settings[:] = [(session, wanted)]
    _tag_jobs_with_node(session)
    try:
        self._df = session.sql(sql)
    except AnalysisException as exc:
        raise DbtRuntimeError(str(exc)) from exc


#: The node whose job tag this thread's statements carry, and on which SparkContext (tags are a
#: context's, per JVM thread): ``_tag_jobs_with_node``.
_thread_tags = threading.local()


def _tag_jobs_with_node(session) -> None:
    """Tag the Spark jobs this thread submits from now on with the dbt node it runs (dbt's
    ``node_info`` of the thread's context; none outside a node, as in hooks), so that
    ``payledger.sparkwork`` can attribute them when dbt runs nodes on several threads. PySpark pins
    each Python thread to a JVM thread, and a job carries the job tags of the thread that submitted
    it (``SparkContext.addJobTag``, Spark 3.5), so one node's jobs cannot take another's tag. Calls
    the JVM only when the thread's node changes."""
    from dbt_common.events.contextvars import get_node_info

    from payledger.sparkwork import node_job_tag

    unique_id = get_node_info().get("unique_id")
    context = session.sparkContext
    if getattr(_thread_tags, "unique_id", None) == unique_id and getattr(_thread_tags, "context", None) is context:
        return
    context.clearJobTags()
    tag = node_job_tag(unique_id) if unique_id else None
    if tag is not None:
        context.addJobTag(tag)
    _thread_tags.unique_id, _thread_tags.context = unique_id, context


def _untag_this_thread() -> None:
    """Take this thread's node tag off its later Spark jobs (``_tag_jobs_with_node``): dbt runs the
    project's hooks on the calling thread, each as a node of its own, and what the caller runs after
    the invocation (publication, a test's own queries) is no node's."""
    context = getattr(_thread_tags, "context", None)
    if getattr(_thread_tags, "unique_id", None) is not None and context is not None and context._jsc is not None:
        context.clearJobTags()
    _thread_tags.unique_id = None


def _apply_session_settings_once(overrides: dict[str, str]) -> None:
    """Make dbt-spark's ``session`` cursor apply the profile's settings, with ``overrides``
    (``{key: value}``) on top, once per invocation (``_execute_applying_settings_once``), from this
    invocation on."""
    from dbt.adapters.spark.session import Cursor

    Cursor.execute = _execute_applying_settings_once
    _applied_settings.clear()
    _invocation_settings.clear()
    _invocation_settings.update(overrides)


def reads_whole_history(args: tuple[str, ...], view_exists: Callable[[], bool]) -> bool:
    """Whether the dbt command line ``args`` reads whole histories rather than a batch: a ``build``
    or ``run`` with a full refresh (``--full-refresh``, ``-f``, ``DBT_FULL_REFRESH``), a ``build``,
    ``run`` or ``test`` with a full reconciliation (var ``reconcile_full`` true), or a ``build`` or
    ``run`` before the balance view exists (``view_exists()`` false, asked only then: a first
    build). Options as dbt reads them (``dbt_options``). False for every other command (a seed
    reads its CSV file only)."""
    command = args[:1]
    if command not in (("build",), ("run",), ("test",)):
        return False
    options = dbt_options(args)
    if command != ("test",) and options.get("full_refresh"):
        return True
    if (options.get("vars") or {}).get("reconcile_full") is True:
        return True
    return command != ("test",) and not view_exists()


def dbt_options(args: tuple[str, ...]) -> dict[str, Any]:
    """The options of the dbt command line ``args`` (``{name: value}``, dbt's parameter names such
    as ``full_refresh``, ``target`` and ``vars``, a dict) as dbt's own command-line parser reads
    them, the environment included (``DBT_FULL_REFRESH``, ``DBT_TARGET``; ``-xf``; the last
    ``--vars`` wins), without running anything. ``args`` starts with the command, one word or a
    group's two (``("source", "freshness", "-t", "iceberg")``), as run_dbt passes it. ``{}`` for a
    command dbt does not have, a line that starts with an option, or a line dbt refuses (dbt then
    says why)."""
    import click
    from dbt.cli.main import cli

    name, rest = (args[0], list(args[1:])) if args else ("", [])
    command = cli.commands.get(name)
    try:
        parent = cli.make_context("dbt", [], resilient_parsing=True)
        if isinstance(command, click.Group):  # source freshness, docs generate: the subcommand's options
            parent = command.make_context(name, [], parent=parent, resilient_parsing=True)
            name, rest = (rest[0], rest[1:]) if rest else ("", [])
            command = command.commands.get(name)
        if command is None:
            return {}
        return dict(command.make_context(name, rest, parent=parent, resilient_parsing=True).params)
    except click.ClickException:
        return {}


def code_generation_settings(args: tuple[str, ...], spark) -> dict[str, str]:
    """The Spark settings run_dbt adds to the profile's for the dbt command line ``args`` on the
    session ``spark`` (None: the Thrift target, nothing added): Spark's default code generation
    (``SPARK_CODE_GENERATION``) when the invocation reads whole histories (``reads_whole_history``;
    the balance view's existence asked of the catalog); else only ``WHOLE_HISTORY_READS_SETTING``,
    which lets a model that finds at run time that it reads whole histories (the view re-summing
    replayed merchants) compile its own statements (``macros/engine/``); none whenever
    ``PAYLEDGER_CODEGEN`` is set (that value then holds for every run).

    The Delta target interprets expressions (``profiles/profiles.yml``): a small build plans
    hundreds of small queries, whose compiling cost more than it saved. Over millions of rows it is
    the other way round: at 3M events a full rebuild took 91.9 s interpreted and 49.6 s compiled, a
    full reconciliation 62.6 s and 23.6 s, while a batch's build took 28.5 s and 42.0 s
    (``CHANGELOG.md``, 2026-12-02)."""
    if spark is None or CODEGEN_ENV in os.environ:
        return {}
    if reads_whole_history(args, lambda: spark.catalog.tableExists(VIEW)):
        return dict(SPARK_CODE_GENERATION)
    return {WHOLE_HISTORY_READS_SETTING: json.dumps(SPARK_CODE_GENERATION)}


#: dbt commands that open no connection: run_dbt starts no Spark session for them.
OFFLINE_COMMANDS = {("parse",), ("deps",), ("clean",), ("list",), ("ls",), ("debug",)}


def _launch_embedded_spark(args: tuple[str, ...]) -> None:
    """``spark.launch_spark`` for a dbt command line ``args`` that names no target (no ``-t``,
    ``--target``, ``$DBT_TARGET``), when the profile's default target is embedded: reading another
    target from ``args`` imports dbt (``dbt_options``), which the launch is meant to overlap.
    Nothing otherwise: ``get_spark`` then starts Spark as before."""
    from payledger.spark import embedded_target, launch_spark

    if os.environ.get("DBT_TARGET") or any(arg.startswith(("-t", "--target")) for arg in args):
        return
    if embedded_target(()):
        launch_spark()


def _embedded_session(args: tuple[str, ...]):  # -> pyspark.sql.SparkSession | None
    """Start this process's Spark session for the embedded target of ``args`` as payledger makes it
    (``spark.get_spark``), before dbt-spark would, and return it: dbt reuses it. When dbt-spark's ``session``
    method made it, the Iceberg view's table loaded from Python afterwards
    (``Spark3Util.loadIcebergTable``, to publish) came back as Spark's V1Table: a scheduled build
    from a new process on Iceberg built and then failed with "... is not an Iceberg table".
    None for the Thrift target."""
    from payledger.spark import command_target, embedded_target, get_spark

    return get_spark(command_target(args)) if embedded_target(args) else None


def checked_since_published(args: tuple[str, ...]) -> dict[str, int | str] | None:
    """What the data tests over history of the dbt command line ``args`` may skip: the current
    publication of the embedded warehouse, when its build ran and passed every such check
    (``Publication.checked``), as ``{"events_watermark": <the max ingest_seq it folded>,
    "view_version": <the view's version holding its rows: Delta table version or Iceberg snapshot
    id>, "written_after": <its published_at, UTC, "YYYY-MM-DD HH:MM:SS.ffffff": every row a later
    build writes carries that build's later start>}``; those tests then check only what came after
    it (``macros/reconciliation/checked_since.sql``). None (every row checked) for other commands
    than ``build`` and ``test``, for a full refresh (``--full-refresh``, ``-f``,
    ``DBT_FULL_REFRESH``: a rebuild is checked whole), for the Thrift target (its builds publish
    nothing), before a checked publication, after a build that failed since it (what it wrote is
    checked whole), when the view's table no longer holds the published version
    (``TableFormat.time_travels_to``), and when this machine's clock is not past the publication's
    time (a zoneless ``published_at`` is UTC). Reads the publication document and the table's folder
    (no Spark); raises ``PublicationError`` when the document is unreadable.
    """
    from payledger.formats import format_named, target_format
    from payledger.publish import as_utc, read_document
    from payledger.spark import command_target, default_warehouse, embedded_target

    if args[:1] not in (("build",), ("test",)) or dbt_options(args).get("full_refresh") or not embedded_target(args):
        return None
    document = read_document(default_warehouse(), target_format(command_target(args)))
    current = document.current
    if current is None or not current.checked or current.events_watermark is None or document.failed_since_published():
        return None
    if not format_named(current.table_format).time_travels_to(current.location, current.readable_version):
        return None  # a replaced table (Iceberg's full refresh) no longer holds the published version
    published_at = as_utc(dt.datetime.fromisoformat(current.published_at))
    if published_at >= dt.datetime.now(dt.UTC):
        return None  # a clock behind the publication's: rows written now would look checked
    return {
        "events_watermark": current.events_watermark,
        "view_version": current.readable_version,
        "written_after": published_at.strftime("%Y-%m-%d %H:%M:%S.%f"),
    }
