"""Faults of the Kubernetes API server, injected into the service's own requests (the control
beside it, with another token, is spared; see tests/faults/rig.py). The service reads through
its watch caches, as `serve` does by default.
"""

from __future__ import annotations

import itertools
import time
from collections import defaultdict
from collections.abc import Callable

import pytest

from tests.faults.rig import FaultRig, Role
from tests.support.kube_server import KubeServer, RecordedRequest

pytestmark = pytest.mark.slow

EVERY_REQUEST = 1_000_000  # `times` for a fault that lasts until cleared


def writes(rig: FaultRig, *, only_the_patch: bool) -> Callable[[RecordedRequest], bool]:
    """For `fail_next(when=...)`: the service's writes, or only its deactivation patches."""

    def matches(request: RecordedRequest) -> bool:
        if only_the_patch:
            return rig.from_service(request) and request.deactivates
        return rig.from_service(request) and request.method in ("PATCH", "PUT", "POST")

    return matches


@pytest.mark.parametrize(
    "only_the_patch",
    [
        pytest.param(False, id="every-write"),  # the audit record first: nothing goes further
        pytest.param(True, id="the-deactivation-patch"),  # audited, then the patch refused
    ],
)
def test_conflicts_deactivate_nothing_and_it_acts_once_writes_go_through(
    rig: FaultRig, kube_server: KubeServer, only_the_patch: bool
) -> None:
    conflicts = writes(rig, only_the_patch=only_the_patch)
    before = len(kube_server.requests.all())
    kube_server.faults.fail_next(status=409, times=EVERY_REQUEST, when=conflicts)
    rig.hold()
    assert all(not rig.deactivated(name) for name in rig.roles)
    tried = [r for r in kube_server.requests.all()[before:] if conflicts(r)]
    assert tried, "the service never tried to write, so no conflict was met"

    kube_server.faults.clear()
    rig.recovers()
    rig.assert_safe()


class Refusals:
    """For `fail_next(when=...)`: the service's requests, each cluster-wide list or watch of
    a resource (a cache's) noted with the time it was refused."""

    def __init__(self, rig: FaultRig) -> None:
        self._rig = rig
        self.at: dict[str, list[float]] = defaultdict(list)

    def __call__(self, request: RecordedRequest) -> bool:
        if not self._rig.from_service(request):
            return False
        if request.method == "GET" and _collection(request.path):
            self.at[request.path].append(time.monotonic())
        return True

    def shortest_wait(self) -> float:
        gaps = [b - a for times in self.at.values() for a, b in itertools.pairwise(times)]
        return min(gaps, default=float("inf"))


@pytest.mark.parametrize(
    "status, retry_after",
    [pytest.param(429, 1, id="429-retry-after"), pytest.param(500, None, id="500")],
)
def test_an_api_server_refusing_every_request_deactivates_nothing_and_it_acts_once_it_serves(
    rig: FaultRig, kube_server: KubeServer, status: int, retry_after: int | None
) -> None:
    rig.cycle()  # the caches are filled and watching when the API server starts refusing
    assert rig.snapshots[-1].cluster_ok
    refusals = Refusals(rig)
    kube_server.faults.fail_next(
        status=status, retry_after=retry_after, times=EVERY_REQUEST, when=refusals
    )
    rig.hold()
    assert all(not rig.deactivated(name) for name in rig.roles)
    assert any(not s.cluster_ok for s in rig.snapshots), "no cycle saw the outage"
    if retry_after is not None:  # the caches wait at least as long as they are told to
        assert refusals.at, "no cache asked again"
        assert refusals.shortest_wait() >= retry_after * 0.95, dict(refusals.at)

    kube_server.faults.clear()
    rig.recovers()
    rig.assert_safe()


def _collection(path: str) -> bool:
    """`/api/v1/PLURAL` or `/apis/GROUP/VERSION/PLURAL`: every namespace's objects."""
    parts = path.strip("/").split("/")
    return len(parts) == (3 if parts[0] == "api" else 4)


def changes_while_watches_fail(rig: FaultRig) -> None:
    """What happens meanwhile, and must reach the caches: a user exempts idle-b, and a new
    idle RayCluster is admitted."""
    rig.exempt("idle-b")
    rig.add("late", Role.IDLE)


def test_every_watch_dropped_over_and_over_loses_no_change(
    rig: FaultRig, kube_server: KubeServer
) -> None:
    changes_while_watches_fail(rig)
    rig.hold(during=kube_server.drop_watches)

    rig.recovers()
    rig.assert_safe()


def test_watches_ending_410_gone_relist_and_lose_no_change(
    rig: FaultRig, kube_server: KubeServer
) -> None:
    def expire_every_watch() -> None:
        kube_server.faults.expire_next_watch(times=3)  # one per cache
        kube_server.drop_watches()  # so that each reopens now, and meets its 410

    def pod_lists() -> int:
        found = kube_server.requests.matching("GET", "/api/v1/pods")
        return sum(1 for r in found if not r.is_watch and rig.from_service(r))

    changes_while_watches_fail(rig)
    before = pod_lists()
    rig.hold(during=expire_every_watch)
    assert pod_lists() > before, "the pod cache never listed again after a 410"

    kube_server.faults.clear()
    rig.recovers()
    rig.assert_safe()
