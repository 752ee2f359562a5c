"""Helpers for tests that run the project in separate processes (crash, overlap, Thrift Server).

The embedded Derby metastore admits one JVM per warehouse, so these tests give each warehouse its own
processes: ``tests.crash_harness`` for landing, building and reporting, the ``payledger`` CLI for
scheduled builds and the Thrift Server.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from decimal import Decimal
from pathlib import Path

from tests.support import History, PendingLanding, by_key, event, merchant, policy

ROOT = Path(__file__).resolve().parents[1]
MERCHANTS = [f"k{i}" for i in range(6)]
SEGMENTS = ["retail", "travel"]


class Process:
    """A harness or CLI process in its own process group, its stdout lines collected as they come."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.lines: list[str] = []
        self.seen = threading.Condition()
        self.popen = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.popen.stdout:
            with self.seen:
                self.lines.append(line.rstrip("\n"))
                self.seen.notify_all()

    def wait_for(self, marker: str, timeout: float = 300) -> bool:
        """True once ``marker`` was printed; False if the process ended first."""
        deadline = time.monotonic() + timeout
        with self.seen:
            while marker not in self.lines:
                if self.popen.poll() is not None and not self._reader.is_alive():
                    return False
                assert time.monotonic() < deadline, f"no {marker} within {timeout} s: {self.lines[-20:]}"
                self.seen.wait(0.2)
        return True

    def kill(self) -> bool:
        """SIGKILL the whole group (Python and its Spark JVM); True if it was still running."""
        running = self.popen.poll() is None
        if running:
            os.killpg(self.popen.pid, signal.SIGKILL)
        self.popen.wait(timeout=60)
        self._reader.join(timeout=60)
        return running

    def finish(self, timeout: float = 600) -> int:
        code = self.popen.wait(timeout=timeout)
        self._reader.join(timeout=60)
        return code


class Harness:
    """A private warehouse driven through ``python -m tests.crash_harness`` processes."""

    def __init__(self, root: Path) -> None:
        self.env = {**os.environ, "PAYLEDGER_WAREHOUSE": str(root / "warehouse"), "PYTHONUNBUFFERED": "1"}
        self.landing = PendingLanding(root / "files")

    def start(self, *args: str, module: str = "tests.crash_harness") -> Process:
        return Process([sys.executable, "-m", module, *args], self.env)

    def verify(self, *files: str, counts: bool = True) -> dict:
        """Land ``files`` (``kind=path``), ``dbt build``, and return the harness's report (with
        every relation's row count only when ``counts``)."""
        return self._report("verify", *files, *(() if counts else ("--no-counts",)))

    def _report(self, *args: str) -> dict:
        process = self.start(*args)
        assert process.finish() == 0, process.lines[-30:]
        reports = [line for line in process.lines if line.startswith("REPORT ")]
        assert reports, process.lines[-30:]
        return json.loads(reports[-1][len("REPORT ") :])


def typed_view(report: dict) -> dict[tuple[str, str], dict]:
    """A harness report's view rows by key (``by_key``: no key twice), with typed values."""
    return {
        key: {
            **row,
            **{k: Decimal(row[k]) for k in ("available_balance", "pending_balance", "reserve_hold")},
            "source_watermark": int(row["source_watermark"]),
            "last_event_time": dt.datetime.fromisoformat(row["last_event_time"]),
        }
        for key, row in by_key(report["view"]).items()
    }


def executable(name: str) -> str:
    """A console script of this virtualenv (``payledger``, ``dbt``)."""
    return str(Path(sys.executable).parent / name)


def new_events(rng: random.Random, round_no: int, history: History, count: int = 40) -> list[dict]:
    rows = []
    for i in range(count):
        day = dt.date(2026, 1, 1) + dt.timedelta(days=rng.randrange(90))  # late and out of order
        kind = rng.choice(["capture_settled", "capture_settled", "funds_released", "funds_released", "payout_paid", "chargeback_opened", "reserve_released"])
        amount = f"{rng.randrange(1, 50_000) / 100:.2f}"
        rows.append(event(f"r{round_no}-{i}", rng.choice(MERCHANTS), kind, amount, f"{day} {rng.randrange(24):02d}:00:00", rng.choice(["USD", "EUR"])))
    if history.events:  # an exact and a conflicting duplicate of earlier events, and a bad row
        rows.append({k: v for k, v in rng.choice(history.events).items() if k != "ingest_seq"})
        conflicting = {k: v for k, v in rng.choice(history.events).items() if k != "ingest_seq"}
        rows.append({**conflicting, "amount": Decimal("999.99")})
    rows.append(event(f"r{round_no}-bad", rng.choice(MERCHANTS), "capture_settled", "-5.00", "2026-02-01 00:00:00"))
    return rows


def small_history(landing: PendingLanding, rng: random.Random, count: int = 40) -> History:
    """Six merchants in two segments, their policies, and ``count`` events (with a bad row)."""
    history = History()
    history.land_merchants(landing, [merchant(m, SEGMENTS[i % 2], "2026-01-01") for i, m in enumerate(MERCHANTS)])
    history.land_policies(landing, [policy("retail", "0.1000", "2026-01-01"), policy("travel", "0.0500", "2026-01-01")])
    history.land_events(landing, new_events(rng, 0, history, count=count))
    return history
