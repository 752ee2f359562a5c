"""Free TCP ports on 127.0.0.1 for servers this project starts beside others (tests, benches)."""

from __future__ import annotations

import random
import socket
from pathlib import Path

LOWEST = 15000
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def _ephemeral_start() -> int:
    try:
        return int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default range is 32768-60999


def free_port(host: str = "127.0.0.1", attempts: int = 200) -> int:
    """A TCP port on ``host`` that no socket holds right now, chosen below the kernel's ephemeral range.

    A port that ``bind(port 0)`` hands out comes from the ephemeral range
    (``/proc/sys/net/ipv4/ip_local_port_range``), the range every other ``bind(0)`` and ``connect``
    draws from too: between the choice and the server's bind, a Spark driver's RPC or block-manager
    port, or a client's socket, may take the same number, and a probe of the port then reaches the
    wrong listener (CI, 2026-12-07: a Thrift client got "TSocket read 0 bytes"; earlier "Address
    already in use"). This picks at random (``random.SystemRandom``: pytest-randomly reseeds
    ``random``, and two xdist workers would pick alike) from ``LOWEST`` up to the range's start,
    and keeps the first port a plain bind succeeds on. Raises ``OSError`` if ``attempts`` ports in
    a row are taken.
    """
    chooser = random.SystemRandom()
    top = max(_ephemeral_start(), LOWEST + 1000)
    for _ in range(attempts):
        port = chooser.randrange(LOWEST, top)
        with socket.socket() as sock:
            try:
                sock.bind((host, port))
            except OSError:
                continue
            return port
    raise OSError(f"no free TCP port on {host} in {LOWEST}-{top - 1} after {attempts} tries")
