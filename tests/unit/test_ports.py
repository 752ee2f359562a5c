"""Ports for the servers tests and benches start (``payledger.ports``), and ``payledger thrift
start``'s wait for a server that opens a session, not just a port that accepts
(``payledger.thrift``). The integration tests start real servers (``test_thrift_target.py``)."""

from __future__ import annotations

import random
import socket
import subprocess
import threading

import pytest

from payledger import ports, thrift


def test_free_ports_lie_below_the_ephemeral_range_are_bindable_and_vary():
    start = ports._ephemeral_start()
    chosen = {ports.free_port() for _ in range(20)}
    assert all(ports.LOWEST <= port < start for port in chosen), (chosen, start)
    assert len(chosen) > 1, chosen  # two xdist workers must not draw the same sequence
    for port in chosen:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))


def test_a_taken_port_is_passed_over(monkeypatch):
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        taken = held.getsockname()[1]
        draws = iter([taken, taken, ports.LOWEST + 7])
        monkeypatch.setattr(random.SystemRandom, "randrange", lambda self, low, high: next(draws))
        assert ports.free_port() == ports.LOWEST + 7


def test_the_thrift_wait_needs_a_session_not_a_port_that_accepts(tmp_path, monkeypatch):
    """A listener that accepts and hangs up (as a Spark driver's RPC port does to a Thrift client;
    CI, 2026-12-07: "TSocket read 0 bytes") is not the server: the wait ends with the server
    process's exit, named in the error, instead of returning as if the server were up."""
    monkeypatch.setattr(thrift, "_state_dir", lambda: tmp_path)
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.settimeout(0.2)
        port = listener.getsockname()[1]
        stop = threading.Event()

        def hang_up() -> None:
            while not stop.is_set():
                try:
                    connection, _ = listener.accept()
                except TimeoutError:
                    continue
                connection.close()

        thread = threading.Thread(target=hang_up)
        thread.start()
        server = subprocess.Popen(["sleep", "1"])
        (tmp_path / "thrift.pid").write_text(str(server.pid))
        try:
            with pytest.raises(thrift.ThriftError, match="thrift exited"):
                thrift._wait_for_thrift(port, timeout_s=60)
        finally:
            stop.set()
            thread.join()
            server.kill()
