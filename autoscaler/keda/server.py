"""The grpc.aio server of the external scaler, on its own thread and event loop.

Open streams hold no worker thread, so hundreds of ScaledObjects cost memory, not threads.
The reconcile loop publishes on its own thread; the store's listener only hands a wake-up to
this loop with `call_soon_threadsafe`, so a publish never waits for a stream.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import grpc

from autoscaler.core.errors import ConfigError
from autoscaler.domain.models import Snapshot
from autoscaler.engine.cycle.snapshots import SnapshotStore
from autoscaler.keda import externalscaler_pb2_grpc as pb_grpc
from autoscaler.keda.answers import KedaAnswers
from autoscaler.keda.malformed import MalformedRequests
from autoscaler.keda.servicer import ExternalScalerServicer, SnapshotSignal
from autoscaler.settings.keda import KedaTlsSettings

_START_TIMEOUT = 10.0
# KEDA sends a ScaledObject reference and its trigger metadata: a few KiB. gRPC would take
# 4 MiB by default; anything larger than this is refused (RESOURCE_EXHAUSTED) unread.
MAX_MESSAGE_BYTES = 64 * 1024


@dataclass(frozen=True)
class TlsMaterial:
    """PEM bytes read once at start; a rotated certificate needs a restart (rollout)."""

    cert_chain: bytes
    private_key: bytes
    client_ca: bytes | None

    @classmethod
    def read(cls, tls: KedaTlsSettings) -> TlsMaterial | None:
        if tls.cert_file is None or tls.key_file is None:
            return None
        return cls(
            cert_chain=_read(tls.cert_file),
            private_key=_read(tls.key_file),
            client_ca=_read(tls.client_ca_file) if tls.client_ca_file else None,
        )

    @property
    def mode(self) -> str:
        return "TLS" if self.client_ca is None else "mutual TLS"

    def credentials(self) -> grpc.ServerCredentials:
        return grpc.ssl_server_credentials(
            [(self.private_key, self.cert_chain)],
            root_certificates=self.client_ca,
            require_client_auth=self.client_ca is not None,
        )


class KedaGrpcServer:
    def __init__(
        self,
        *,
        answers: KedaAnswers,
        store: SnapshotStore,
        tls: KedaTlsSettings,
        heartbeat: timedelta,
        address: str,
        logger: logging.Logger,
    ) -> None:
        """`address` is host:port, e.g. `[::]:9090`; port 0 picks a free one (tests)."""
        self._answers = answers
        self._store = store
        self._heartbeat = heartbeat
        self._address = address
        self._log = logger
        self._tls = TlsMaterial.read(tls)  # read now: a bad file fails the start-up
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._grace = 2.0
        self.port = 0  # the bound port, once started

    def start(self) -> int:
        """Serve in a background thread; returns the bound port. Raises if it cannot bind."""
        started: concurrent.futures.Future[int] = concurrent.futures.Future()
        self._thread = threading.Thread(
            target=self._run, args=(started,), name="keda-grpc", daemon=True
        )
        self._thread.start()
        self.port = started.result(timeout=_START_TIMEOUT)
        mode = "plaintext" if self._tls is None else self._tls.mode
        self._log.info("KEDA external scaler listening on %s (%s)", self._address, mode)
        return self.port

    def stop(self, grace: float = 2.0) -> None:
        """Close streams (KEDA reconnects elsewhere) and wait for the thread to end."""
        loop, stopping, thread = self._loop, self._stopping, self._thread
        if loop is None or stopping is None or thread is None:
            return
        self._grace = grace
        loop.call_soon_threadsafe(stopping.set)
        thread.join()
        self._thread = None

    def _run(self, started: concurrent.futures.Future[int]) -> None:
        try:
            asyncio.run(self._serve(started))
        except BaseException as exc:
            if not started.done():
                started.set_exception(exc)  # start() raises it
            else:
                self._log.exception("KEDA external scaler stopped by an error")

    async def _serve(self, started: concurrent.futures.Future[int]) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        signal = SnapshotSignal()
        # No port sharing: a second process on the same port must fail to start, not split calls.
        server = grpc.aio.server(
            interceptors=[MalformedRequests()],
            options=[
                ("grpc.so_reuseport", 0),
                ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ],
        )
        servicer = ExternalScalerServicer(
            answers=self._answers,
            signal=signal,
            heartbeat=self._heartbeat,
            logger=self._log,
        )
        pb_grpc.add_ExternalScalerServicer_to_server(servicer, server)  # type: ignore[no-untyped-call]
        port = self._bind(server)
        await server.start()
        unsubscribe = self._store.subscribe(_wake_on(self._loop, signal.notify))
        started.set_result(port)
        try:
            await self._stopping.wait()
        finally:
            unsubscribe()
            signal.close()
            await server.stop(self._grace)

    def _bind(self, server: grpc.aio.Server) -> int:
        if self._tls is None:
            port = server.add_insecure_port(self._address)
        else:
            port = server.add_secure_port(self._address, self._tls.credentials())
        if not port:
            raise OSError(f"cannot listen on {self._address}")
        return int(port)


def _wake_on(
    loop: asyncio.AbstractEventLoop, notify: Callable[[], None]
) -> Callable[[Snapshot], None]:
    """A store listener for the loop's thread: schedules `notify`, never waits."""

    def listener(_snapshot: Snapshot) -> None:
        # RuntimeError: the server's loop closed during shutdown, nobody is left to wake.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(notify)

    return listener


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ConfigError([f"keda.tls: cannot read {path}: {exc.strerror}"]) from exc
