"""A real uvicorn server in a thread of the test process, for tests of ``payledger serve``'s app."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

from payledger.ports import free_port


@contextlib.contextmanager
def uvicorn_in_thread(app, **config) -> Iterator[int]:
    """Serve ``app`` on a free port of 127.0.0.1 (``config``: more ``uvicorn.Config`` settings);
    yields the port once the server has started, and stops it after the block."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, **config))
    thread = threading.Thread(target=server.run)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.started, "uvicorn did not start within 30 s"
        yield port
    finally:
        server.should_exit = True
        thread.join(30)
