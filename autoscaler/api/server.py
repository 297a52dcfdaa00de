"""uvicorn on its own thread, beside the loop, with a clean stop.

The socket is bound before the thread starts, so a port taken by someone else fails at once
in the caller, and port 0 (tests) yields the real port. It is a TCP socket by protocol number
with TCP_NODELAY set: asyncio sets TCP_NODELAY on accepted connections only when their
protocol says TCP, and without it every keep-alive request after the first waits ~40 ms for
Nagle's algorithm and delayed ACKs. uvicorn speaks h11, whose limit on a head still
arriving we set; the connections' own bounds are in `connections.py`.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn

from autoscaler.api.connections import ConnectionLimits, protocol_class

STOP_TIMEOUT_S = 10.0
START_TIMEOUT_S = 10.0


class ApiServer:
    def __init__(
        self,
        app: Any,
        *,
        host: str,
        port: int,
        max_header_bytes: int,
        limits: ConnectionLimits,
    ) -> None:
        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            http=protocol_class(limits),
            h11_max_incomplete_event_size=max_header_bytes,
            log_config=None,  # the composition root configures logging once
            access_log=False,
            lifespan="off",
            ws="none",
            proxy_headers=False,
            timeout_graceful_shutdown=int(STOP_TIMEOUT_S / 2),
        )
        self._server = uvicorn.Server(config)
        self._socket = _bind(host, port)
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        bound: int = self._socket.getsockname()[1]
        return bound

    def start(self) -> None:
        """Serve in a background thread; returns once the server accepts connections."""
        self._thread = threading.Thread(
            target=self._server.run,
            kwargs={"sockets": [self._socket]},
            name="api-server",
            daemon=True,
        )
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the API server did not start; see the log")
            time.sleep(0.01)

    def stop(self) -> None:
        """Finish the requests in flight, then stop (bounded by STOP_TIMEOUT_S)."""
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(STOP_TIMEOUT_S)
            self._thread = None
        self._socket.close()


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # inherited by accepted ones
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock
