"""The warehouse's two locks, both ``filelock.FileLock`` (an ``flock`` that the kernel releases when
the holder exits, even on SIGKILL):

- the build lock, ``<warehouse>/.payledger-build.lock``: one scheduled build or maintenance at a
  time. A process that cannot take it within its wait raises ``BuildLocked``, which names the
  holder (pid and start time, written into the lock file by the holder); the scheduled build then
  exits ``EXIT_LOCKED`` (75, ``EX_TEMPFAIL``) without touching the warehouse;
- the load lock, ``<warehouse>/.load.lock``: loaders wait for each other (``ingest_seq`` is the
  table's max + 1, so two loads must not interleave), and maintenance waits for loaders.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
from collections.abc import Iterator
from pathlib import Path

from filelock import FileLock, Timeout

BUILD_LOCK_FILE = ".payledger-build.lock"
LOAD_LOCK_FILE = ".load.lock"
#: The scheduled build's exit status when another build holds the lock (``EX_TEMPFAIL``).
EXIT_LOCKED = 75


class BuildLocked(RuntimeError):
    """Another process holds the build lock of this warehouse."""


def _write_holder(fd: int) -> None:
    """Record who holds the lock in the lock file (filelock's ``on_acquired`` hook)."""
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, f"pid {os.getpid()} since {dt.datetime.now(dt.UTC).isoformat(timespec='seconds')}".encode())


def _lock(path: Path) -> FileLock:
    """The lock on ``path`` (created, with its folder, when missing); its holder writes itself into it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return FileLock(path, preserve_lock_file=True, on_acquired=_write_holder)


@contextlib.contextmanager
def build_lock(warehouse: Path, wait_s: float = 0.0) -> Iterator[Path]:
    """Hold the warehouse's build lock for the ``with`` block; yields the lock file's path.

    Waits up to ``wait_s`` seconds, polling every second. Raises ``BuildLocked`` (naming the
    holder's pid and start time) when the lock stays taken.
    """
    path = warehouse / BUILD_LOCK_FILE
    lock = _lock(path)
    try:
        lock.acquire(timeout=wait_s, poll_interval=1.0)
    except Timeout:
        holder = path.read_text().strip()
        raise BuildLocked(
            f"another build holds {path} ({holder or 'unknown holder'}); waited {wait_s:g} s. Nothing was run; the next scheduled build catches up."
        ) from None
    try:
        yield path
    finally:
        lock.release()


@contextlib.contextmanager
def load_lock(warehouse: Path) -> Iterator[Path]:
    """Hold the warehouse's load lock for the ``with`` block, waiting as long as another load runs."""
    with _lock(warehouse / LOAD_LOCK_FILE):
        yield warehouse / LOAD_LOCK_FILE
