"""The project's Spark session, configured from the dbt profile so dbt and the CLI share one warehouse."""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jinja2
import yaml

#: The repository root (python_helpers/payledger/spark.py -> repo root).
PROJECT_ROOT = Path(__file__).resolve().parents[2]
PROFILES_PATH = PROJECT_ROOT / "profiles" / "profiles.yml"

#: Spark's own defaults for code generation: whole-stage code on, expressions compiled (interpreted
#: only where compiling fails). The Delta target turns both off (``PAYLEDGER_CODEGEN``).
SPARK_CODE_GENERATION = {"spark.sql.codegen.wholeStage": "true", "spark.sql.codegen.factoryMode": "FALLBACK"}


def _env_var(name: str, default: str | None = None) -> str:
    if name in os.environ:
        return os.environ[name]
    if default is None:
        raise KeyError(f"environment variable {name} is not set and has no default")
    return default


def project_environment() -> None:
    """Set PAYLEDGER_HOME to the repo root when unset.

    The dbt profile falls back to ``$PWD``; pinning it here makes the CLI work from any directory.
    """
    os.environ.setdefault("PAYLEDGER_HOME", str(PROJECT_ROOT))


def default_warehouse() -> Path:
    """The warehouse folder: ``$PAYLEDGER_WAREHOUSE`` or ``$PAYLEDGER_HOME/warehouse`` (repo root)."""
    project_environment()
    home = Path(os.environ["PAYLEDGER_HOME"])
    return Path(os.environ.get("PAYLEDGER_WAREHOUSE", home / "warehouse"))


@functools.cache
def _dbt_project() -> dict[str, Any]:
    """``dbt_project.yml`` as written (YAML, not rendered), parsed once per process."""
    return yaml.safe_load((PROJECT_ROOT / "dbt_project.yml").read_text())


def project_vars() -> dict[str, Any]:
    """The ``vars`` of ``dbt_project.yml`` as written there (YAML, not rendered): the facts the
    macros and Python share, such as ``table_format_catalogs`` and ``identifier_patterns``."""
    return _dbt_project()["vars"]


def project_name() -> str:
    """The dbt project's ``name`` in ``dbt_project.yml`` (``payledger``)."""
    return _dbt_project()["name"]


def _profile() -> dict[str, Any]:
    """The ``payledger`` profile of ``profiles/profiles.yml`` as written (not rendered). Parsed once
    per version of the file (its modification time and size): run_dbt asks for it several times
    per invocation, and each parse took about 25 ms. Callers read it; they must not change it."""
    project_environment()
    stat = PROFILES_PATH.stat()
    return _parsed_profiles(stat.st_mtime_ns, stat.st_size)["payledger"]


@functools.lru_cache(maxsize=2)
def _parsed_profiles(mtime_ns: int, size: int) -> dict[str, Any]:
    """``profiles/profiles.yml`` parsed (libyaml's loader when PyYAML has it); the arguments are the
    file's version, the cache key."""
    return yaml.load(PROFILES_PATH.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _render(value: Any) -> str:
    """A profile value rendered with dbt's ``env_var`` semantics."""
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    env.globals["env_var"] = _env_var
    return env.from_string(str(value)).render()


def profile_targets() -> list[str]:
    """The names of the profile's targets (``outputs`` of ``profiles/profiles.yml``), in file order."""
    return list(_profile()["outputs"])


def default_target() -> str:
    """The dbt target the CLI uses: the profile's default, rendered as dbt renders it
    (``$PAYLEDGER_TARGET``, else the target named after ``$PAYLEDGER_FORMAT``, else ``delta``)."""
    return _render(_profile()["target"])


def command_target(args: tuple[str, ...] = ()) -> str:
    """The dbt target of a dbt command line ``args`` (``("build", "-t", "iceberg")``) as dbt reads
    it (``--target``, ``-t``, ``--target=``, ``$DBT_TARGET``: ``payledger.dbt.dbt_options``), else
    ``default_target()``. ``()``: ``default_target()``, without importing dbt."""
    if not args:
        return default_target()
    from payledger.dbt import dbt_options

    return dbt_options(args).get("target") or default_target()


def embedded_target(args: tuple[str, ...] = ()) -> bool:
    """Whether the dbt target of a dbt command line ``args`` (``command_target``) runs Spark in this
    process (dbt-spark's ``session`` method)."""
    return _profile()["outputs"][command_target(args)].get("method") == "session"


def spark_conf(target: str | None = None) -> dict[str, str]:
    """Return the Spark configuration of a dbt profile target as ``{key: value}`` strings.

    Source: ``profiles/profiles.yml``, output ``target`` (default: ``default_target()``), key
    ``server_side_parameters``, rendered with dbt's ``env_var`` semantics. Raises ``KeyError`` if
    the target does not exist.
    """
    params: dict[str, Any] = _profile()["outputs"][target or default_target()].get("server_side_parameters", {})
    return {key: _render(value) for key, value in params.items()}


def spark_setting(key: str, target: str | None = None) -> str | None:
    """One key of ``spark_conf(target)``, rendering only that value (a reader that starts no Spark
    asks for one key); None when the target does not set it."""
    params: dict[str, Any] = _profile()["outputs"][target or default_target()].get("server_side_parameters", {})
    return _render(params[key]) if key in params else None


def session_options(target: str | None = None) -> dict[str, str]:
    """The options ``get_spark`` makes the session with, ``{key: value}``: Hive support (what
    ``SparkSession.builder.enableHiveSupport`` sets), ``spark_conf(target)``, and ANSI off."""
    # dbt-spark forces ANSI off for its sessions; match it so both see the same semantics.
    return {"spark.sql.catalogImplementation": "hive", **spark_conf(target), "spark.sql.ansi.enabled": "false"}


def launch_spark(target: str | None = None) -> None:
    """Start this process's Spark JVM (pyspark's gateway: ``spark-submit`` with
    ``session_options(target)``, as ``get_spark`` would start it) in a background thread and
    return at once, so that what the process does meanwhile overlaps the JVM's start: ``run_dbt``
    imports dbt (about 1 s). ``payledger build`` from a new process started its first dbt
    invocation 5.14 s after it started, against 5.58 s without (means of four runs each,
    alternating, on 2 cores, 2026-12-06).

    ``get_spark`` then makes the session on that JVM: pyspark launches it in
    ``SparkContext._ensure_initialized``, under ``SparkContext._lock``, which the session's
    ``SparkContext`` takes too, so it waits for the launch. Does nothing when the JVM is up or
    launching. A launch that fails leaves no JVM, and ``get_spark`` launches again and raises
    pyspark's error there."""
    from pyspark import SparkConf, SparkContext

    with _launch_lock:
        if SparkContext._gateway is not None or _launch[0] is not None:
            return
        default_warehouse().mkdir(parents=True, exist_ok=True)  # Derby writes its log there
        conf = SparkConf()  # no JVM yet: pyspark keeps it in Python and passes it to spark-submit
        for key, value in session_options(target).items():
            conf.set(key, value)
        _launch[0] = threading.Thread(target=_launch_gateway, args=(conf,), name="payledger-spark-launch", daemon=True)
        _launch[0].start()


def _launch_gateway(conf) -> None:
    """launch_spark's thread: pyspark's launch of the JVM with ``conf`` (a ``SparkConf``). An error
    is left for ``get_spark``, which launches again and raises it in the caller's thread."""
    from pyspark import SparkContext

    with contextlib.suppress(Exception):
        SparkContext._ensure_initialized(conf=conf)


#: The thread launch_spark started (None before it), and the lock that makes it one.
_launch: list[threading.Thread | None] = [None]
_launch_lock = threading.Lock()


def get_spark(target: str | None = None):  # -> pyspark.sql.SparkSession
    """Return the process's SparkSession, creating it with ``session_options(target)`` if none
    exists (on the JVM ``launch_spark`` started, if it did).

    Like dbt-spark's ``session`` method this enables Hive support and calls ``getOrCreate``, so a
    dbt invocation in the same process reuses the session. Raises ``WarehouseMoved`` when the
    session's catalog names schemas outside its warehouse folder (``check_catalog_location``, once
    per session): every command that starts Spark, a load as much as a build, stops before it
    writes to a copied warehouse's original.
    """
    from pyspark.sql import SparkSession

    default_warehouse().mkdir(parents=True, exist_ok=True)  # Derby writes its log there
    builder = SparkSession.builder
    for key, value in session_options(target).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    if session is not _checked_session[0]:
        check_catalog_location(session)
        _checked_session[0] = session
    return session


def warehouse_folder(spark) -> Path:
    """The folder of ``spark``'s warehouse (``spark.sql.warehouse.dir``, the format's folder of
    ``default_warehouse()``). Spark keeps the setting as a path qualified with ``file:``, written as
    is (a space stays a space, ``%41`` stays ``%41``), unlike the catalog's folder URIs."""
    return Path(spark.conf.get("spark.sql.warehouse.dir").removeprefix("file:"))


#: The session whose catalog check_catalog_location last found in its warehouse folder: get_spark
#: checks each session once.
_checked_session: list = [None]


class WarehouseMoved(RuntimeError):
    """The catalog of the warehouse folder names schemas outside that folder (``check_catalog_location``)."""


def check_catalog_location(spark) -> None:
    """Raise ``WarehouseMoved`` when a schema of ``spark``'s catalog lives outside the session's
    warehouse folder (``spark.sql.warehouse.dir``: the format's folder of ``default_warehouse()``).

    The embedded metastore records each schema's and table's folder as an absolute path. A
    warehouse folder copied or moved elsewhere keeps a catalog that names the old folders: Spark
    would read and write the tables there, while what reads the folder itself (the stored maxima
    and table states run_dbt passes, publication, ``payledger balance`` and ``serve``) reads the
    copy, so that a build could take newly landed events for ones already classified. One call to
    the catalog (``listDatabases``: each schema with its folder as a URI, percent-encoded)."""
    from urllib.parse import unquote, urlparse

    root = warehouse_folder(spark).resolve()
    for database in spark.catalog.listDatabases():
        if not database.locationUri:
            continue
        uri = database.locationUri
        location = Path(unquote(urlparse(uri).path) if uri.startswith("file:") else uri).resolve()
        if location != root and root not in location.parents:
            raise WarehouseMoved(
                f"schema {database.name} of this warehouse's catalog is in {location}, outside {root}: the warehouse "
                "folder was copied or moved from where it was built, and Spark would read and write the tables there. "
                "Use the warehouse where it was built (PAYLEDGER_WAREHOUSE), or build a new one."
            )


@contextlib.contextmanager
def session_settings(spark, settings: dict[str, str]) -> Iterator[None]:
    """Run the body with the runtime SQL settings ``settings`` (``{key: value}``) set on ``spark`` (a
    SparkSession), and give each key its value from before back after it, also on an error (a key
    that had none is unset again). Nothing else changes; an empty ``settings`` changes nothing."""
    before = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def spark_code_generation(spark) -> contextlib.AbstractContextManager[None]:
    """Run the body with Spark's default code generation (``SPARK_CODE_GENERATION``), whatever the
    target's profile set: ``session_settings`` of those keys, so the session's own values come back
    after it, also on an error.

    For a job that stands for plain Spark, such as the bench's peer: the Delta target interprets
    expressions for its many small statements (``profiles/profiles.yml``), which a hand-written
    job over millions of rows would not (2.6 x slower at 3M events: ``CHANGELOG.md``, 2026-12-02).
    """
    return session_settings(spark, SPARK_CODE_GENERATION)


def stop_spark() -> None:
    """Stop this process's Spark session and end its JVM, so that another process can open the
    warehouse (the embedded Derby metastore admits one JVM, and keeps its lock until that JVM
    exits, whatever ``SparkSession.stop`` says). PySpark's gateway JVM exits when its stdin closes
    (``PythonGatewayServer``); this waits up to two minutes for it. Spark cannot be started again in
    this process afterwards."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()
    gateway = SparkContext._gateway
    if gateway is not None:
        # py4j frees the JVM side of every Java proxy Python collects later, unless the client is
        # marked disconnected (GatewayClient.garbage_collect_object checks is_connected); with the
        # JVM exiting or gone, each attempt logged an ERROR with a traceback. Marked before the JVM
        # is told to exit: a collection while it exits logged "Answer from Java side is empty".
        gateway._gateway_client.is_connected = False
    process = getattr(gateway, "proc", None)
    if process is not None and process.poll() is None:
        process.stdin.close()
        process.wait(timeout=120)
