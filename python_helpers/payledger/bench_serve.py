"""``payledger bench-serve``: how fast ``payledger serve`` and ``payledger balance`` answer.

On a warehouse of its own (``warehouse/bench_serve``), in the session's table format: a history of
``events`` events is generated, loaded and built once with every test, so that a version is
published (kept for the next run with the same sizes). Then, each against 127.0.0.1:
- ``payledger serve`` runs as its own process (as ``make serve`` runs it); its resident memory is
  read (``/proc/<pid>/status``, VmRSS) once the published version is loaded; the memory of the
  version's in-memory index is measured in a new process (before and after loading it) and given
  per million keys (merchant, currency rows);
- idle: ``wrk`` (one thread, ``connections`` connections, a Lua script drawing merchants at random
  from the published view) for ``seconds``: requests per second, p50/p99/max latency, errors;
- under a build: a new batch is loaded and built (with its tests) in this process, its Spark JVM
  and the build's Python thread (dbt's parse and compile, and the threads it starts) at niceness
  ``build_nice`` (as the README's ``nice -n 10 payledger build``), while ``wrk`` runs
  in slices of ``SLICE_S`` seconds until the server serves the build's publication; reported per
  slice and over all of them (requests per second and percentiles of every request answered
  during the build, from wrk's raw latency counts; the worst slice's p99 beside them);
- ``payledger balance MERCHANT_ID`` from a new process, ``CLI_RUNS`` times, each wall time.
Throughout the load, a probe process at the server's priority does nothing but sleep 1 ms at a
time (``StallProbe``); each slice records the longest the probe woke up late
(``probe_late_ms``). A slow slice whose probe was as late as its requests is a stall of the
machine (every process waited), not of the server.
Writes ``target/bench_serve_<format>.json`` and prints the targets of ``serve_targets`` as met or
missed. Timings are measured, never asserted in tests.
"""

from __future__ import annotations

import collections
import contextlib
import datetime as dt
import json
import math
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from rich.console import Console
from rich.table import Table

from payledger.ports import free_port

#: Seconds of each load slice while a build runs.
SLICE_S = 5
#: ``payledger balance`` runs from new processes.
CLI_RUNS = 5
#: Merchants the load generator draws from (a random sample of the view's).
SAMPLED_MERCHANTS = 20_000
#: The targets (issue 27): requests/s at least, p99 at most (ms), balance CLI wall at most (s).
MIN_RPS, MAX_P99_MS, MAX_CLI_S = 1000.0, 10.0, 1.0

#: wrk's Lua: a random merchant per request; one JSON line of figures at the end, with wrk's raw
#: latency counts (``latency(i)``: each microsecond value recorded and how many requests took it).
WRK_SCRIPT = """
local ids = {%s}
math.randomseed(%d)
request = function()
  return wrk.format("GET", "/v1/merchants/" .. ids[math.random(#ids)] .. "/balances")
end
done = function(summary, latency, requests)
  local e = summary.errors
  local counts = {}
  for i = 1, #latency do
    local us, n = latency(i)
    counts[i] = string.format("[%%d, %%d]", us, n)
  end
  io.write(string.format('WRKJSON {"requests": %%d, "duration_us": %%d, "errors": %%d, "non_2xx": %%d, '
    .. '"p50_us": %%d, "p99_us": %%d, "max_us": %%d, "latency_us": [%%s]}\\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.status + e.timeout, e.status,
    latency:percentile(50), latency:percentile(99), latency.max, table.concat(counts, ", ")))
end
"""


#: The probe: sleeps 1 ms at a time and prints each wake-up later than its threshold (ms) as
#: ``<epoch seconds when the sleep began> <ms late>``.
#: Each wake-up is timed from the previous one, not from just before its sleep, so the intervals
#: cover the probe's whole life: a stop that lands in the loop's own work (the check, the print)
#: is counted in the next interval instead of falling between two.
PROBE_CODE = """
import time
began, before = time.time(), time.monotonic()
while True:
    time.sleep(0.001)
    woke, woke_at = time.monotonic(), time.time()
    late_ms = (woke - before) * 1000 - 1
    if late_ms > %s:
        print(f"{began:.3f} {late_ms:.2f}", flush=True)
    began, before = woke_at, woke
"""
#: Wake-ups later than this (ms) are recorded.
PROBE_REPORT_MS = 2.0


class StallProbe:
    """A process that sleeps 1 ms at a time (``PROBE_CODE``) at this process's priority, and the
    wake-ups it reported late: ``(began, late_ms)``, ``began`` in epoch seconds. Use as a context
    manager; ``latest_within`` gives the longest lateness of a window."""

    def __init__(self, report_ms: float = PROBE_REPORT_MS) -> None:
        self.late: list[tuple[float, float]] = []
        code = PROBE_CODE % report_ms
        self.process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            began, late_ms = line.split()
            self.late.append((float(began), float(late_ms)))

    def latest_within(self, start: float, end: float) -> float:
        """The longest lateness (ms) of a sleep that overlapped ``[start, end]`` (epoch seconds);
        0.0 when none was over the report threshold."""
        return max((late for began, late in list(self.late) if began <= end and began + (late + 1) / 1000 >= start), default=0.0)

    def stop(self) -> None:
        """End the probe process; what it reported stays in ``late``."""
        self.process.terminate()
        self.process.wait(10)
        self._reader.join(10)

    def __enter__(self) -> StallProbe:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def probe_late_ms(probe: StallProbe, load: LoadResult) -> float:
    """The probe's longest lateness (ms) during the ``wrk`` run ``load``."""
    start = dt.datetime.fromisoformat(load.started_at).timestamp()
    return probe.latest_within(start, start + load.seconds)


@dataclass(frozen=True)
class LoadResult:
    """One ``wrk`` run: ``requests`` answered in ``seconds``, ``errors`` (connection errors,
    timeouts and non-2xx answers), latency percentiles in milliseconds; ``started_at``: when the
    run started (ISO 8601 UTC; None for a sum of runs), to line a slow slice up with the build's
    log (``logs/dbt.log``); ``latency_us``: wrk's raw latency counts, ``(microseconds, requests)``
    pairs in ascending order (empty when not recorded), from which runs combine exactly. They hold
    wrk's samples after its correction for coordinated omission (``stats_correct``), the same ones
    its percentiles rank, so they may count more than ``requests``."""

    requests: int
    seconds: float
    errors: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    started_at: str | None = None
    latency_us: tuple[tuple[int, int], ...] = field(default=(), repr=False)

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    @classmethod
    def parse(cls, output: str) -> LoadResult:
        """The figures of the script's ``WRKJSON`` line in ``output``; ``ValueError`` without one."""
        line = next((line for line in output.splitlines() if line.startswith("WRKJSON ")), None)
        if line is None:
            raise ValueError(f"wrk printed no figures: {output[-500:]}")
        data = json.loads(line.removeprefix("WRKJSON "))
        counts = tuple((int(us), int(n)) for us, n in data.get("latency_us", []))
        percentiles = (data["p50_us"] / 1000, data["p99_us"] / 1000, data["max_us"] / 1000)
        return cls(data["requests"], data["duration_us"] / 1e6, data["errors"], *percentiles, latency_us=counts)

    def as_dict(self) -> dict:
        """The figures as JSON values, without the raw latency counts."""
        figures = asdict(self)
        del figures["latency_us"]
        return figures | {"rps": round(self.rps, 1)}


def percentile_us(counts: dict[int, int], p: float) -> int:
    """The ``p``-th percentile (0 < p <= 100) of latencies given as ``{microseconds: requests}``,
    ranked as wrk's own ``latency:percentile`` ranks them (wrk 4.1 ``stats_percentile``: the
    smallest value whose running count reaches ``round(p / 100 * n + 0.5)``, capped at ``n``).
    ``ValueError`` for an empty ``counts`` or ``p`` out of range."""
    total = sum(counts.values())
    if total == 0 or not 0 < p <= 100:
        raise ValueError(f"no percentile {p} of {total} latencies")
    rank, seen = min(total, math.floor(total * p / 100) + 1), 0
    for us in sorted(counts):
        seen += counts[us]
        if seen >= rank:
            return us
    raise AssertionError("unreachable: the last value reaches every rank")


def combined(slices: list[LoadResult]) -> LoadResult:
    """Slices as one run: totals, and the percentiles of all their requests together, from the
    slices' raw latency counts. When a slice has no counts, the worst slice's percentiles stand in
    (an upper bound: percentiles alone do not add up)."""
    if all(s.latency_us for s in slices):
        merged: collections.Counter[int] = collections.Counter()
        for s in slices:
            merged.update(dict(s.latency_us))
        p50, p99, top = (percentile_us(merged, 50) / 1000, percentile_us(merged, 99) / 1000, max(merged) / 1000)
    else:
        p50, p99, top = (max(s.p50_ms for s in slices), max(s.p99_ms for s in slices), max(s.max_ms for s in slices))
    return LoadResult(sum(s.requests for s in slices), sum(s.seconds for s in slices), sum(s.errors for s in slices), p50, p99, top)


def serve_targets(idle: LoadResult, live: LoadResult, cli_seconds: list[float], worst_slice_p99_ms: float | None = None) -> list[dict]:
    """The targets, each ``{name, value, limit, met, detail}``: requests/s and p99 with no errors,
    idle and under a build (``live``: every request answered while the build ran, ``combined``),
    and the slowest ``payledger balance`` from a new process. ``worst_slice_p99_ms``, the highest
    p99 of one slice under the build, is reported in the detail, not judged."""

    def target(name: str, value: float, limit: float, met: bool, detail: str) -> dict:
        return {"name": name, "value": round(value, 3), "limit": limit, "met": met, "detail": detail}

    found = []
    for phase, load in (("idle", idle), ("under a build", live)):
        found.append(target(f"requests/s, {phase}", load.rps, MIN_RPS, load.rps >= MIN_RPS and load.errors == 0, f"{load.errors} errors"))
        detail = f"p50 {load.p50_ms:.2f} ms"
        if phase == "under a build" and worst_slice_p99_ms is not None:
            detail += f", worst {SLICE_S}-s slice p99 {worst_slice_p99_ms:.2f} ms"
        found.append(target(f"p99 ms, {phase}", load.p99_ms, MAX_P99_MS, load.p99_ms <= MAX_P99_MS and load.errors == 0, detail))
    slowest = max(cli_seconds)
    found.append(target("payledger balance, s (slowest)", slowest, MAX_CLI_S, slowest <= MAX_CLI_S, f"median {statistics.median(cli_seconds):.2f} s"))
    return found


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for process {pid}")


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def index_memory_kb(warehouse: Path, table_format: str) -> int:
    """Resident memory (KiB) that loading the current publication's ``serve.BalanceIndex`` adds to
    this process, with the readers imported and warmed first and Arrow's unused memory handed back
    before each reading. Run it in a new process (``_index_memory_mb``)."""
    import gc

    import pyarrow as pa

    from payledger.publish import read_document, read_published_view
    from payledger.serve import BalanceIndex

    publication = read_document(warehouse, table_format).current
    read_published_view(publication, columns=("merchant_id",))
    gc.collect()
    pa.default_memory_pool().release_unused()
    before = _rss_kb(os.getpid())
    index = BalanceIndex.load(publication)
    gc.collect()
    pa.default_memory_pool().release_unused()
    used = _rss_kb(os.getpid()) - before
    del index
    return used


def _index_memory_mb(warehouse: Path, table_format: str) -> float:
    """``index_memory_kb`` in a new process (this one holds the bench's own data), in MB."""
    probe = f"from pathlib import Path; from payledger.bench_serve import index_memory_kb; print(index_memory_kb(Path({str(warehouse)!r}), {table_format!r}))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return int(done.stdout.strip().splitlines()[-1]) / 1024


def _renice_jvm(spark, niceness: int) -> None:
    """Lower the priority of every thread of this process's Spark JVM (Linux: niceness is per
    thread; threads started later inherit their creator's), as ``nice -n N payledger build`` runs
    a build."""
    pid = int(spark._jvm.java.lang.ProcessHandle.current().pid())
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(ProcessLookupError):
            os.setpriority(os.PRIO_PROCESS, int(task.name), niceness)


def _health(port: int) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/health", timeout=5) as response:
        return json.load(response)


class Server:
    """A ``payledger serve`` process on a free port of 127.0.0.1, over ``warehouse``."""

    def __init__(self, warehouse: Path, table_format: str, log: Path) -> None:
        self.port = free_port()
        env = os.environ | {"PAYLEDGER_WAREHOUSE": str(warehouse), "PAYLEDGER_FORMAT": table_format}
        argv = [str(Path(sys.executable).with_name("payledger")), "serve", "--port", str(self.port)]
        self.log = open(log, "w")  # noqa: SIM115 (closed in stop)
        self.process = subprocess.Popen(argv, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        self.started = time.monotonic()

    def wait(self, ready, timeout_s: float = 600) -> dict:
        """Poll ``/v1/health`` until ``ready(health)``; returns that health. ``RuntimeError`` when the
        server exits or ``timeout_s`` passes."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"payledger serve exited with {self.process.returncode} (log: {self.log.name})")
            try:
                health = _health(self.port)
                if ready(health):
                    return health
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"payledger serve was not ready within {timeout_s} s (log: {self.log.name})")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()


def run_wrk(port: int, script: Path, seconds: float, connections: int) -> LoadResult:
    """One ``wrk`` run (one thread) against the server."""
    wrk = shutil.which("wrk")
    if wrk is None:
        raise RuntimeError("wrk is not installed (make setup installs it from Debian's packages)")
    argv = [wrk, "-t1", f"-c{connections}", f"-d{seconds}s", "--timeout", "2s", "-s", str(script), f"http://127.0.0.1:{port}"]
    started = dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    return replace(LoadResult.parse(done.stdout + done.stderr), started_at=started)


def _ensure_published(spark, console: Console, data_dir: Path, events: int, merchants: int) -> Path:
    """The warehouse's publication of a view built from ``events`` events, built (and published)
    when the warehouse holds no such one; returns the history's folder (for a new batch)."""
    from payledger import scenario
    from payledger.dbt import run_dbt
    from payledger.formats import session_format
    from payledger.generate import EVENT_FILE
    from payledger.publish import read_document
    from payledger.spark import default_warehouse
    from payledger.warehouse import drop_project_schemas

    warehouse, table_format = default_warehouse(), session_format(spark)
    history = data_dir / "history"
    marker = warehouse / f"bench_serve_{table_format}.json"
    wanted = {"events": events, "merchants": merchants}
    if not (history / EVENT_FILE).exists() or json.loads((history / "sizes.json").read_text() if (history / "sizes.json").exists() else "{}") != wanted:
        shutil.rmtree(history, ignore_errors=True)
        scenario.generate_history(history, events, merchants)
        (history / "sizes.json").write_text(json.dumps(wanted))
    if marker.exists() and json.loads(marker.read_text()) == wanted and read_document(warehouse, table_format).current is not None:
        console.print(f"reusing the published view of {events:,} events ({marker})")
        return history
    drop_project_schemas(spark)
    scenario.load_history(spark, history, warehouse)
    started = time.monotonic()
    build = run_dbt("build")
    if not build.success or build.publication is None:
        raise scenario.BuildFailed(f"the initial build published nothing: {build.failures() or build.exception}")
    console.print(f"built and published {events:,} events in {time.monotonic() - started:.0f} s")
    marker.write_text(json.dumps(wanted))
    return history


def run_bench_serve(
    console: Console, data_dir: Path, out_dir: Path, *, events: int, merchants: int, seconds: int = 20, connections: int = 4, build_nice: int = 10
) -> dict:
    """Run the serving bench (see the module docstring); returns the figures written to
    ``out_dir/bench_serve_<format>.json``. Raises ``scenario.BuildFailed`` when a build fails and
    ``RuntimeError`` when the server or wrk cannot run."""
    from payledger import scenario
    from payledger.dbt import run_dbt
    from payledger.formats import session_format
    from payledger.generate import EVENT_FILE
    from payledger.load import load_file
    from payledger.publish import read_document, read_published_view
    from payledger.spark import default_warehouse, get_spark

    spark = get_spark()
    table_format, warehouse = session_format(spark), default_warehouse()
    history = _ensure_published(spark, console, data_dir, events, merchants)
    publication = read_document(warehouse, table_format).current
    keys = read_published_view(publication, columns=("merchant_id",)).column("merchant_id").to_pylist()
    merchant_ids = sorted(set(keys))
    sample = random.Random(7).sample(merchant_ids, min(SAMPLED_MERCHANTS, len(merchant_ids)))
    logs = out_dir / "bench_serve_logs"
    logs.mkdir(parents=True, exist_ok=True)
    script = logs / "balances.lua"
    script.write_text(WRK_SCRIPT % (",".join(json.dumps(m) for m in sample), 42))

    index_mb = _index_memory_mb(warehouse, table_format)
    server = Server(warehouse, table_format, logs / f"serve_{table_format}.log")
    probe = StallProbe()
    try:
        server.wait(lambda health: health["published_by_build"] == publication.invocation_id)
        loaded_s = time.monotonic() - server.started
        loaded_kb = _rss_kb(server.process.pid)
        per_million_mb = index_mb / len(keys) * 1_000_000
        console.print(
            f"serving {len(keys):,} keys of {len(merchant_ids):,} merchants; ready in {loaded_s:.1f} s; "
            f"server RSS {loaded_kb / 1024:.0f} MB, of which the version's index {index_mb:.1f} MB"
        )

        cpu_before, children_before = _cpu_s(server.process.pid), resource.getrusage(resource.RUSAGE_CHILDREN)
        idle = run_wrk(server.port, script, seconds, connections)
        children_after = resource.getrusage(resource.RUSAGE_CHILDREN)
        idle_cpu = {
            "server_cpu_s": round(_cpu_s(server.process.pid) - cpu_before, 2),
            "wrk_cpu_s": round(children_after.ru_utime + children_after.ru_stime - children_before.ru_utime - children_before.ru_stime, 2),
        }
        console.print(f"idle: {idle.rps:,.0f} requests/s, p50 {idle.p50_ms:.2f} ms, p99 {idle.p99_ms:.2f} ms, {idle.errors} errors; CPU {idle_cpu}")

        # Under a build: a new batch loaded and built here while wrk runs in slices.
        batch = data_dir / "batch"
        shutil.rmtree(batch, ignore_errors=True)
        stamp = int(time.time())
        scenario.generate_new_batch(
            history, batch, events=max(1000, events // 5000), merchants=merchants, days=2, end_date=scenario.END_DATE, seed=stamp, id_prefix=f"s{stamp}_"
        )
        outcome: dict = {}

        def build() -> None:
            # dbt's Python side (parse, compile, its node threads, which inherit this thread's
            # niceness) at the build's niceness too: `nice -n N payledger build` lowers the whole
            # process, not only its JVM.
            if build_nice:
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), build_nice)
            started = time.monotonic()
            try:
                load_file(spark, "payment_events", batch / EVENT_FILE, warehouse)
                result = run_dbt("build")
                outcome.update(success=result.success, publication=result.publication, failures=result.failures())
            except Exception as error:  # reported below; the load must stop either way
                outcome.update(success=False, publication=None, failures=[repr(error)])
            outcome["seconds"] = round(time.monotonic() - started, 1)

        if build_nice:
            _renice_jvm(spark, build_nice)
        builder = threading.Thread(target=build)
        builder.start()
        slices = []
        while builder.is_alive():
            slices.append(run_wrk(server.port, script, SLICE_S, connections))
        new = outcome.get("publication")
        if not outcome.get("success") or new is None:
            raise scenario.BuildFailed(f"the build under load published nothing: {outcome.get('failures')}")
        switch_started = time.monotonic()
        while _health(server.port)["published_by_build"] != new.invocation_id:
            slices.append(run_wrk(server.port, script, 1, connections))
            if time.monotonic() - switch_started > 600:
                raise RuntimeError("the server did not switch to the new publication within 600 s")
        live = combined(slices)
        late = [probe_late_ms(probe, load) for load in slices]
        worst = max(range(len(slices)), key=lambda n: slices[n].p99_ms)
        console.print(
            f"under a build ({outcome['seconds']} s, {len(slices)} slices): {live.rps:,.0f} requests/s, p99 {live.p99_ms:.2f} ms, {live.errors} errors; "
            f"worst slice p99 {slices[worst].p99_ms:.2f} ms, in it the longest request {slices[worst].max_ms:.1f} ms, the probe {late[worst]:.1f} ms late"
        )
        idle_late = probe_late_ms(probe, idle)
    finally:
        server.stop()
        probe.stop()

    cli = []
    env = os.environ | {"PAYLEDGER_WAREHOUSE": str(warehouse), "PAYLEDGER_FORMAT": table_format}
    payledger = str(Path(sys.executable).with_name("payledger"))
    for merchant_id in random.Random(11).sample(merchant_ids, min(CLI_RUNS, len(merchant_ids))):
        started = time.monotonic()
        subprocess.run([payledger, "balance", merchant_id, "--format", "json"], env=env, check=True, capture_output=True)
        cli.append(round(time.monotonic() - started, 3))

    found = serve_targets(idle, live, cli, worst_slice_p99_ms=slices[worst].p99_ms)
    figures = {
        "table_format": table_format,
        "events": events,
        "merchants": len(merchant_ids),
        "keys": len(keys),
        "connections": connections,
        "build_nice": build_nice,
        "server_ready_s": round(loaded_s, 2),
        "server_rss_mb": round(loaded_kb / 1024, 1),
        "index_mb": round(index_mb, 1),
        "rss_mb_per_million_keys": round(per_million_mb, 1),
        "idle": idle.as_dict() | idle_cpu | {"probe_late_ms": idle_late},
        "under_build": live.as_dict()
        | {
            "build_s": outcome["seconds"],
            "worst_slice_p99_ms": slices[worst].p99_ms,
            "slices": [load.as_dict() | {"probe_late_ms": ms} for load, ms in zip(slices, late, strict=True)],
        },
        "balance_cli_s": cli,
        "targets": found,
    }
    table = Table(title=f"bench-serve targets ({table_format})")
    for column in ("target", "measured", "limit", "", "detail"):
        table.add_column(column)
    for target in found:
        table.add_row(target["name"], f"{target['value']:g}", f"{target['limit']:g}", "[green]met[/]" if target["met"] else "[red]missed[/]", target["detail"])
    console.print(table)
    console.print(f"memory: {per_million_mb:,.0f} MB of resident memory per million keys (the in-memory index)")
    out = out_dir / f"bench_serve_{table_format}.json"
    out.write_text(json.dumps(figures, indent=2) + "\n")
    console.print(f"wrote {out}")
    return figures
