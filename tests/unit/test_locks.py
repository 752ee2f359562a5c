"""The warehouse's build and load locks (``payledger.locks``): a second holder is refused with the
first holder's name, and a holder that dies releases the lock."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from filelock import FileLock, Timeout

from payledger.locks import BUILD_LOCK_FILE, LOAD_LOCK_FILE, BuildLocked, build_lock

HOLD = """
import sys, time
from pathlib import Path
from payledger.locks import build_lock, load_lock
with build_lock(Path(sys.argv[1])), load_lock(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(600)
"""


def test_a_second_build_lock_names_the_holder_and_waits_no_longer_than_asked(tmp_path):
    with build_lock(tmp_path) as path:
        assert path == tmp_path / BUILD_LOCK_FILE
        started = time.monotonic()
        with pytest.raises(BuildLocked, match=rf"another build holds .*\(pid {os.getpid()} since 20\d\d-") as refused, build_lock(tmp_path, wait_s=1.5):
            pass
        assert 1.4 <= time.monotonic() - started < 10
        assert "waited 1.5 s" in str(refused.value)
    with build_lock(tmp_path):  # released on leaving the block
        pass


def test_a_killed_holder_releases_both_locks(tmp_path):
    load = FileLock(tmp_path / LOAD_LOCK_FILE)
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(BuildLocked, match=f"pid {holder.pid} since"), build_lock(tmp_path):
            pass
        with pytest.raises(Timeout):
            load.acquire(timeout=0)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
    with build_lock(tmp_path, wait_s=5), load.acquire(timeout=5):
        assert (tmp_path / BUILD_LOCK_FILE).read_text().startswith(f"pid {os.getpid()} since")
