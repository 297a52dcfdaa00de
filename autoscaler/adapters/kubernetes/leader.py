"""Leader election on a `coordination.k8s.io/v1` Lease, in the manner of client-go's.

Every replica runs an elector; only the one holding the Lease may act.

- A candidate takes the Lease when it is free (no holder: released) or expired: unchanged
  for its leaseDurationSeconds by *our* clock since we first saw that version, so clock
  skew between replicas does not matter.
- The holder renews every retryPeriod with an update guarded by the resourceVersion it
  last wrote. A 409 means someone else wrote the Lease: stop leading at once, look again.
- `leads()` holds only within renewDeadline of the last successful renewal (timed from
  before the request), so a leader cut off from the API stops acting at least
  (leaseDuration - renewDeadline) before anyone else may take over, even while its own
  loop is stuck in a slow request.
- Stopping releases the Lease (no holder, 1 s duration): a successor takes over at its
  next retry instead of waiting out the lease.
"""

from __future__ import annotations

import logging
import math
import os
import socket
import threading
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from autoscaler.adapters.kubernetes.client import KubeClient
from autoscaler.adapters.kubernetes.objects import micro_time
from autoscaler.adapters.kubernetes.resources import LEASES, Obj
from autoscaler.core.errors import ClusterError, Conflict, NotFound
from autoscaler.core.ports import Clock
from autoscaler.settings.ha import LeaderElectionSettings


def default_identity(environ: Mapping[str, str] | None = None) -> str:
    """The pod's name (env POD_NAME, from the downward API), else hostname_pid."""
    env = os.environ if environ is None else environ
    return env.get("POD_NAME") or f"{socket.gethostname()}_{os.getpid()}"


class LeaderElector:
    def __init__(
        self,
        *,
        client: KubeClient,
        settings: LeaderElectionSettings,
        namespace: str,
        identity: str,
        clock: Clock,
        logger: logging.Logger,
        on_change: Callable[[bool], None] | None = None,
    ) -> None:
        self._client = client
        self._settings = settings
        self._namespace = namespace
        self._name = settings.lease_name
        self._seconds = math.ceil(settings.lease_duration.total_seconds())
        self.identity = identity
        self._clock = clock
        self._log = logger
        self._on_change = on_change
        self._lock = threading.Lock()
        self._held = False  # the Lease is ours; `leads()` also asks that it was renewed in time
        self._renewed_at: datetime | None = None
        self._lease: Obj | None = None  # as we last wrote it, while held
        self._observed: tuple[str, datetime] | None = None  # (resourceVersion, first seen at)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def leads(self) -> bool:
        """True while this replica holds the Lease and renewed it within renewDeadline."""
        with self._lock:
            renewed, held = self._renewed_at, self._held
        return held and self._within_deadline(renewed, self._clock.now())

    def start(self) -> None:
        """Run the election in a background thread until `stop()`."""
        self._thread = threading.Thread(target=self._run, name="leader-election", daemon=True)
        self._thread.start()

    def stop(self, timeout: float | None = None) -> None:
        """Stop the loop and release the Lease if held (the thread does it as it ends)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def try_acquire_or_renew(self) -> bool:
        """One round of the election (the thread runs one every retryPeriod); True if leading."""
        now = self._clock.now()
        try:
            written = self._claim(now)
        except Conflict as exc:
            self._step_down(f"lost the race for the Lease: {exc}")
            return False
        except ClusterError as exc:
            self._log.warning("leader election: %s", exc, extra={"lease": self._name})
            self._check_deadline(now)
            return self.leads()
        if written is None:
            self._step_down("the Lease is held by another replica")
            return False
        self._renewed(written, now)
        return True

    def release(self) -> None:
        """Stop leading, then give the Lease up so a successor takes over at once."""
        with self._lock:
            lease = self._lease if self._held else None
        self._step_down("stopping")
        if lease is None:
            return
        now = micro_time(self._clock.now())
        spec = {"holderIdentity": "", "leaseDurationSeconds": 1, "acquireTime": now}
        body = {**lease, "spec": {**(lease.get("spec") or {}), **spec, "renewTime": now}}
        try:
            self._client.update(LEASES, self._name, body, namespace=self._namespace)
        except ClusterError as exc:
            self._log.warning("Lease not released, successors wait for it to expire: %s", exc)
            return
        self._log.info("released the Lease %s/%s", self._namespace, self._name)

    def _run(self) -> None:
        period = self._settings.retry_period.total_seconds()
        while not self._stop.is_set():
            try:
                self.try_acquire_or_renew()
            except Exception:  # the loop's throttling boundary: log, try again next period
                self._log.exception("leader election round failed")
            self._stop.wait(period)
        self.release()

    def _claim(self, now: datetime) -> Obj | None:
        """Renew or take the Lease; None when someone else holds it."""
        with self._lock:
            mine = self._lease if self._held else None
        if mine is not None:  # renew what we last wrote: one request, guarded by its version
            return self._update(self._claimed(mine, now))
        try:
            current = self._client.get(LEASES, self._name, namespace=self._namespace)
        except NotFound:
            return self._client.create(LEASES, self._new_lease(now), namespace=self._namespace)
        if not self._may_take(current, now):
            return None
        return self._update(self._claimed(current, now))

    def _may_take(self, lease: Obj, now: datetime) -> bool:
        spec = lease.get("spec") or {}
        holder = str(spec.get("holderIdentity") or "")
        version = str((lease.get("metadata") or {}).get("resourceVersion", ""))
        with self._lock:
            if self._observed is None or self._observed[0] != version:
                self._observed = (version, now)
            seen_at = self._observed[1]
        duration = timedelta(seconds=int(spec.get("leaseDurationSeconds") or self._seconds))
        return holder in ("", self.identity) or now >= seen_at + duration

    def _claimed(self, lease: Obj, now: datetime) -> Obj:
        spec: dict[str, Any] = dict(lease.get("spec") or {})
        if spec.get("holderIdentity") != self.identity:
            spec["acquireTime"] = micro_time(now)
            spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
        spec.update(
            holderIdentity=self.identity,
            leaseDurationSeconds=self._seconds,
            renewTime=micro_time(now),
        )
        return {**lease, "spec": spec}

    def _new_lease(self, now: datetime) -> Obj:
        return {
            "apiVersion": LEASES.api_version,
            "kind": "Lease",
            "metadata": {"name": self._name, "namespace": self._namespace},
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": self._seconds,
                "acquireTime": micro_time(now),
                "renewTime": micro_time(now),
                "leaseTransitions": 0,
            },
        }

    def _update(self, body: Obj) -> Obj:
        return self._client.update(LEASES, self._name, body, namespace=self._namespace)

    def _renewed(self, written: Obj, now: datetime) -> None:
        version = str((written.get("metadata") or {}).get("resourceVersion", ""))
        with self._lock:
            held_before = self._held
            self._held, self._renewed_at, self._lease = True, now, written
            self._observed = (version, now)
        if not held_before:
            self._log.info("became the leader (Lease %s/%s)", self._namespace, self._name)
            self._notify(True)

    def _check_deadline(self, now: datetime) -> None:
        with self._lock:
            renewed, held = self._renewed_at, self._held
        if held and not self._within_deadline(renewed, now):
            self._step_down("could not renew the Lease within renewDeadline")

    def _within_deadline(self, renewed: datetime | None, now: datetime) -> bool:
        return renewed is not None and now < renewed + self._settings.renew_deadline

    def _step_down(self, reason: str) -> None:
        with self._lock:
            held_before = self._held
            self._held, self._renewed_at, self._lease = False, None, None
        if held_before:
            self._log.warning("stopped leading: %s", reason, extra={"lease": self._name})
            self._notify(False)

    def _notify(self, leads: bool) -> None:
        if self._on_change is not None:
            self._on_change(leads)
