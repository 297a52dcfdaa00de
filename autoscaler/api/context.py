"""Everything a request handler may use, built once by the composition root, and the
FastAPI dependencies that hand it (and the authenticated caller) to the routes."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Depends, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from prometheus_client import CollectorRegistry

from autoscaler.api.access import Access
from autoscaler.api.listing import Listings
from autoscaler.api.middleware import IDENTITY
from autoscaler.api.problems import ApiProblem
from autoscaler.core.errors import ClusterError
from autoscaler.core.ports import Clock, ClusterReader, StateStore, WorkloadActuator
from autoscaler.domain.access import Identity
from autoscaler.domain.audit.records import AuditRecord
from autoscaler.domain.policy.decisions import Policy
from autoscaler.engine.cycle.snapshots import SnapshotStore
from autoscaler.engine.metrics.telemetry import ServiceMetrics
from autoscaler.engine.notify.links import LinkSigner
from autoscaler.engine.notify.notices import EVENTS_ONLY, Notices
from autoscaler.settings.api import ApiSettings


@dataclass(frozen=True)
class SnoozeNotices:
    """The notification parts a snooze through the API uses (ISSUE 15)."""

    links: LinkSigner | None = None  # checks "keep it" links; None: the link routes 404
    # The loop's own sink and route, so a snooze is told where the warning went; the default
    # tells nobody (the Event alone).
    loop: Notices = EVENTS_ONLY


NO_SNOOZE_NOTICES = SnoozeNotices()


@dataclass(frozen=True)
class ApiContext:
    settings: ApiSettings
    store: SnapshotStore  # reads answer from the latest snapshot only
    cluster: ClusterReader  # fresh reads before a change
    actuator: WorkloadActuator  # every write on a workload, in the loop's act sequence
    state: StateStore  # pauses and the audit list
    access: Access
    metrics: ServiceMetrics
    registry: CollectorRegistry
    clock: Clock
    logger: logging.Logger
    policy: Policy | None = None  # the loop's, whose rules `explain` and exemptions match
    notices: SnoozeNotices = NO_SNOOZE_NOTICES
    listings: Listings = field(default_factory=Listings)  # the listing, rendered per snapshot

    def audit(self, *records: AuditRecord) -> None:
        """Keep audit records. A failure is logged and counted; the change itself stands."""
        try:
            self.state.record(*records)
        except ClusterError as exc:
            self.logger.warning("audit record not written: %s", exc)
            self.metrics.error("runtime-state")


# The dependencies below only read what the app and the middleware hold: `async`, so FastAPI
# calls them on the event loop instead of a worker thread. Each thread hop waits for the GIL,
# which the loop's cycle holds for long stretches (issue 18: REST p99 during a cycle).
async def _context(request: Request) -> ApiContext:
    context: ApiContext = request.app.state.context
    return context


BEARER = HTTPBearer(
    auto_error=False,  # the middleware has already answered 401; this only documents it
    description="A Kubernetes bearer token, e.g. `kubectl config view --raw` or "
    "`kubectl create token`.",
)


async def _caller(
    request: Request,
    _credentials: Annotated[HTTPAuthorizationCredentials | None, Security(BEARER)],
) -> Identity:
    """The user the middleware authenticated."""
    identity = getattr(request.state, IDENTITY, None)
    if not isinstance(identity, Identity):
        raise ApiProblem(401, "a bearer token is required")
    return identity


async def _reader(request: Request) -> Identity | None:
    """The user the middleware authenticated, if any. Not declared as a security requirement
    in the schema: with `readsOpen` a read needs no token, so the header is not required."""
    identity = getattr(request.state, IDENTITY, None)
    return identity if isinstance(identity, Identity) else None


Context = Annotated[ApiContext, Depends(_context)]
Caller = Annotated[Identity, Depends(_caller)]
Reader = Annotated[Identity | None, Depends(_reader)]
