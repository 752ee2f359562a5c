"""A Spark Thrift Server (and optionally a standalone master and worker) from the pip pyspark.

The pip distribution ships the ``spark-hive-thriftserver`` jar but no ``sbin/start-thriftserver.sh``:
``start`` runs ``spark-submit --class org.apache.spark.sql.hive.thriftserver.HiveThriftServer2
spark-internal`` itself, in the table format ``PAYLEDGER_FORMAT`` names (``delta``, the default, or
``iceberg``): with the Spark configuration of the embedded target of that format (``delta`` or
``iceberg``: same catalog, same warehouse), that format's jars on the driver class path, and the
server bound to 127.0.0.1; ``dbt --target thrift`` reads the same variable for its tables'
format. With ``standalone=True`` it first starts ``bin/spark-class`` Master and Worker on 127.0.0.1
and submits to ``spark://127.0.0.1:7077``. Processes, pid files and logs live in
``<warehouse>/thrift/``. The warehouse's embedded Derby metastore admits one JVM: while the server
runs, use ``--target thrift`` (not an embedded target, nor ``payledger load``) on it.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from payledger.formats import FORMATS, format_named
from payledger.spark import default_warehouse, project_environment, spark_conf

THRIFT_CLASS = "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2"
MASTER_PORT = 7077
PROCESSES = ("thrift", "worker", "master")  # stop order


class ThriftError(RuntimeError):
    """The server (or the standalone cluster) did not start, or a port is taken."""


def spark_home() -> Path:
    """The pip pyspark distribution (it has ``bin/spark-submit`` and ``bin/spark-class``)."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _state_dir() -> Path:
    path = default_warehouse() / "thrift"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _port_open(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def _spawn(name: str, argv: list[str], extra_env: dict[str, str] | None = None) -> int:
    state = _state_dir()
    log = open(state / f"{name}.log", "ab")  # noqa: SIM115 - the child keeps it open
    env = {**os.environ, "SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": "127.0.0.1", **(extra_env or {})}
    process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True, cwd=state)
    (state / f"{name}.pid").write_text(str(process.pid))
    return process.pid


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs; a child of this process that exited is reaped (``os.kill``
    alone finds a zombie alive)."""
    try:
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    except ChildProcessError:
        pass  # not this process's child
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _wait_for(name: str, port: int, timeout_s: float, failure: Callable[[int], str | None]) -> None:
    """Until ``failure(port)`` returns None (the process ``name`` answers on 127.0.0.1:``port``).
    Raises ``ThriftError`` if the process exits, or after ``timeout_s``, with the last failure."""
    deadline = time.monotonic() + timeout_s
    pid = int((_state_dir() / f"{name}.pid").read_text())
    log = _state_dir() / f"{name}.log"
    while (last := failure(port)) is not None:
        if not _alive(pid):
            raise ThriftError(f"{name} exited ({last}); see {log}")
        if time.monotonic() > deadline:
            raise ThriftError(f"{name} did not answer on 127.0.0.1:{port} within {timeout_s:g} s ({last}); see {log}")
        time.sleep(1)


def _nothing_accepts(port: int) -> str | None:
    return None if _port_open(port) else "nothing accepts connections"


def _open_session(port: int, timeout_s: float = 10) -> None:
    """Open and close one HiveServer2 session on 127.0.0.1:``port`` as dbt-spark's PyHive
    connection does (SASL PLAIN, ``auth`` NONE), each socket read bounded by ``timeout_s``
    (PyHive's own ``connect`` waits without a bound). Raises what the Thrift client raises."""
    import getpass

    import thrift_sasl
    from pyhive import hive
    from thrift.transport import TSocket

    sock = TSocket.TSocket("127.0.0.1", port)
    sock.setTimeout(timeout_s * 1000)
    user = getpass.getuser()
    transport = thrift_sasl.TSaslClientTransport(
        lambda: hive.get_installed_sasl(host="127.0.0.1", sasl_auth="PLAIN", username=user, password="x"), "PLAIN", sock
    )
    hive.connect(thrift_transport=transport, username=user).close()


def _no_session(port: int) -> str | None:
    try:
        _open_session(port)
    except Exception as error:  # Thrift, SASL and socket errors alike mean "not serving yet"
        return f"{type(error).__name__}: {error}"
    return None


def _wait_for_thrift(port: int, timeout_s: float) -> None:
    """Until the server opens a session on 127.0.0.1:``port``, not just until the port accepts: a
    Spark driver binds its own RPC and block-manager ports first, and the port may be answered by
    another listener. Raises ``ThriftError`` as ``_wait_for`` does."""
    socket_log = logging.getLogger("thrift.transport.TSocket")  # logs each refused connect as an error
    level = socket_log.level
    socket_log.setLevel(logging.CRITICAL)
    try:
        _wait_for("thrift", port, timeout_s, _no_session)
    finally:
        socket_log.setLevel(level)


def server_format() -> str:
    """The table format a server is started in: ``$PAYLEDGER_FORMAT`` (``delta`` or ``iceberg``),
    default ``delta``. Raises ``ThriftError`` for any other value."""
    fmt = os.environ.get("PAYLEDGER_FORMAT", "delta")
    if fmt not in FORMATS:
        raise ThriftError(f"PAYLEDGER_FORMAT must be one of {sorted(FORMATS)}, got {fmt!r}")
    return fmt


def start(port: int = 10000, standalone: bool = False, timeout_s: float = 180) -> dict[str, int]:
    """Start the Thrift Server on 127.0.0.1:``port`` (and a standalone cluster first if asked), in
    the format ``server_format()`` names.

    Returns ``{process name: pid}`` once the server opens a session. Raises ``ThriftError`` if a
    port is taken or a process does not come up within ``timeout_s`` seconds (the log's path is in
    the message), after stopping what it started.
    """
    project_environment()
    if _port_open(port):
        raise ThriftError(f"127.0.0.1:{port} is already in use (is a server running? `payledger thrift stop`)")
    home = spark_home()
    fmt = server_format()
    conf = spark_conf(format_named(fmt).target)  # the embedded target's Spark configuration
    # The profile's driver class path: the server's too, and shipped to a standalone cluster's executors.
    class_path = conf.pop("spark.driver.extraClassPath")
    jars = class_path.split(os.pathsep)
    missing = [path for path in jars if not os.path.exists(path)]
    if missing:
        raise ThriftError(f"missing {', '.join(missing)}: run make setup")
    (_state_dir() / "format").write_text(fmt)
    pids = {}
    master = conf.pop("spark.master", "local[*]")
    if standalone:
        # The master's, the worker's and the executors' JVMs run on the same Java as the driver
        # (payledger.java_runtime) and need the same jars first on their class path: pyspark's
        # Hadoop 3.3.4 client cannot start on Java 25 (pom.xml).
        daemon_env = {"SPARK_DAEMON_CLASSPATH": class_path}
        conf["spark.executor.extraClassPath"] = class_path
        conf["spark.executor.extraJavaOptions"] = conf.get("spark.driver.extraJavaOptions", "")
        pids["master"] = _spawn(
            "master",
            [
                str(home / "bin" / "spark-class"),
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(MASTER_PORT),
                "--webui-port",
                "0",
            ],
            daemon_env,
        )
        try:
            _wait_for("master", MASTER_PORT, timeout_s, _nothing_accepts)
        except ThriftError:
            stop()
            raise
        master = f"spark://127.0.0.1:{MASTER_PORT}"
        pids["worker"] = _spawn(
            "worker",
            [
                str(home / "bin" / "spark-class"),
                "org.apache.spark.deploy.worker.Worker",
                master,
                "--host",
                "127.0.0.1",
                "--webui-port",
                "0",
                "--cores",
                "2",
                "--memory",
                "4g",
            ],
            daemon_env,
        )
    argv = [str(home / "bin" / "spark-submit"), "--class", THRIFT_CLASS, "--name", "payledger-thrift", "--master", master]
    argv += ["--driver-class-path", class_path, "--jars", ",".join(jars)]
    for key, value in conf.items():
        argv += ["--conf", f"{key}={value}"]
    argv += ["--conf", "spark.sql.ansi.enabled=false"]
    argv += ["--hiveconf", "hive.server2.thrift.bind.host=127.0.0.1", "--hiveconf", f"hive.server2.thrift.port={port}", "spark-internal"]
    pids["thrift"] = _spawn("thrift", argv)
    try:
        _wait_for_thrift(port, timeout_s)
    except ThriftError:
        stop()  # the standalone master and worker too: nothing half-started stays behind
        raise
    return pids


def stop() -> list[str]:
    """Stop whatever ``start`` started (SIGTERM to each process group, then SIGKILL); returns names."""
    stopped = []
    for name in PROCESSES:
        pid_file = _state_dir() / f"{name}.pid"
        if not pid_file.exists():
            continue
        pid = int(pid_file.read_text())
        try:
            os.killpg(pid, signal.SIGTERM)
            for _ in range(30):
                time.sleep(0.5)
                os.killpg(pid, 0)
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        pid_file.unlink()
        stopped.append(name)
    return stopped


def status(port: int = 10000) -> dict[str, object]:
    """Which processes have pid files and are alive, whether the Thrift port answers, and the format
    the server was last started in."""
    alive = {}
    for name in PROCESSES:
        pid_file = _state_dir() / f"{name}.pid"
        if pid_file.exists():
            pid = int(pid_file.read_text())
            try:
                os.kill(pid, 0)
                alive[name] = pid
            except ProcessLookupError:
                pass
    fmt_file = _state_dir() / "format"
    return {"processes": alive, "thrift_port_open": _port_open(port), "format": fmt_file.read_text() if fmt_file.exists() else None}
