"""Leader election with two electors against the session's test API server. Rounds are driven
by hand on a fake clock (no sleeping); one test runs the real threads on short durations."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from autoscaler.adapters.kubernetes.client import KubeClient
from autoscaler.adapters.kubernetes.leader import LeaderElector, default_identity
from autoscaler.core.clock import SystemClock
from autoscaler.core.ports import Clock
from autoscaler.settings.ha import LeaderElectionSettings
from tests.ha.conftest import eventually
from tests.support.fakes import FakeClock
from tests.support.kube_server import KubeServer, RecordedRequest

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SETTINGS = LeaderElectionSettings(enabled=True, lease_name="leader")  # 15s / 10s / 2s
RETRY = SETTINGS.retry_period
LOG = logging.getLogger("tests.ha.leader")


def leases_path(namespace: str) -> str:
    return f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"


def written_by(identity: str) -> Any:
    def check(request: RecordedRequest) -> bool:
        body = request.body if isinstance(request.body, dict) else {}
        return bool((body.get("spec") or {}).get("holderIdentity") == identity)

    return check


class Electors:
    def __init__(self, client: KubeClient, namespace: str, clock: Clock) -> None:
        self.client, self.namespace, self.clock = client, namespace, clock
        self.changes: dict[str, list[bool]] = {}

    def make(self, identity: str, settings: LeaderElectionSettings = SETTINGS) -> LeaderElector:
        changes = self.changes.setdefault(identity, [])
        return LeaderElector(
            client=self.client,
            settings=settings,
            namespace=self.namespace,
            identity=identity,
            clock=self.clock,
            logger=LOG,
            on_change=changes.append,
        )


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture
def electors(client: KubeClient, namespace: str, clock: FakeClock) -> Electors:
    return Electors(client, namespace, clock)


@pytest.fixture
def pair(electors: Electors) -> tuple[LeaderElector, LeaderElector]:
    return electors.make("a"), electors.make("b")


def lease_time(value: str) -> datetime:
    """A Lease's MicroTime, as the API server writes it (RFC 3339, microseconds, Z)."""
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


def lease_spec(kube: KubeServer, namespace: str) -> dict[str, Any]:
    lease = kube.store.get("leases.coordination.k8s.io", name="leader", namespace=namespace)
    return dict(lease["spec"])


def test_the_first_candidate_creates_the_lease_and_the_other_waits(
    kube: KubeServer, namespace: str, pair: tuple[LeaderElector, LeaderElector]
) -> None:
    a, b = pair

    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()

    assert (a.leads(), b.leads()) == (True, False)
    spec = lease_spec(kube, namespace)
    assert (spec["holderIdentity"], spec["leaseDurationSeconds"]) == ("a", 15)
    assert spec["leaseTransitions"] == 0


def test_the_leader_renews_with_one_version_guarded_update_per_round(
    kube: KubeServer, namespace: str, pair: tuple[LeaderElector, LeaderElector], clock: FakeClock
) -> None:
    a, _ = pair
    a.try_acquire_or_renew()
    version = kube.store.get("leases.coordination.k8s.io", name="leader", namespace=namespace)[
        "metadata"
    ]["resourceVersion"]
    kube.requests.clear()

    clock.advance(RETRY)
    assert a.try_acquire_or_renew()

    sent = kube.requests.matching(path_prefix=leases_path(namespace))
    assert [r.method for r in sent] == ["PUT"]
    assert sent[0].body["metadata"]["resourceVersion"] == version
    assert lease_spec(kube, namespace)["renewTime"] == "2026-03-01T12:00:02.000000Z"


def test_a_leader_that_cannot_renew_stops_acting_before_its_lease_can_expire(
    kube: KubeServer,
    namespace: str,
    electors: Electors,
    pair: tuple[LeaderElector, LeaderElector],
    clock: FakeClock,
) -> None:
    a, b = pair
    a.try_acquire_or_renew()
    b.try_acquire_or_renew()  # b first sees the lease now
    kube.faults.fail_next(
        "PUT", leases_path(namespace), status=500, times=100, when=written_by("a")
    )
    stopped_at = taken_at = None

    while taken_at is None:
        clock.advance(RETRY)
        a.try_acquire_or_renew()
        if b.try_acquire_or_renew():
            taken_at = clock.now()
        if stopped_at is None and not a.leads():
            stopped_at = clock.now()
        assert not (a.leads() and b.leads()), f"two leaders at {clock.now()}"

    assert stopped_at == T0 + SETTINGS.renew_deadline
    assert taken_at == T0 + timedelta(seconds=16)  # the first retry after 15s
    assert (electors.changes["a"], electors.changes["b"]) == ([True, False], [True])


def test_leads_turns_false_by_time_alone_when_renewals_stall(
    pair: tuple[LeaderElector, LeaderElector], clock: FakeClock
) -> None:
    a, _ = pair
    a.try_acquire_or_renew()

    clock.advance(SETTINGS.renew_deadline - timedelta(milliseconds=1))
    assert a.leads()
    clock.advance(timedelta(milliseconds=1))
    assert not a.leads()


def test_a_released_lease_is_taken_over_at_once(
    kube: KubeServer, namespace: str, pair: tuple[LeaderElector, LeaderElector]
) -> None:
    a, b = pair
    a.try_acquire_or_renew()
    b.try_acquire_or_renew()

    a.release()

    assert not a.leads()
    assert lease_spec(kube, namespace)["holderIdentity"] == ""
    assert b.try_acquire_or_renew(), "no need to wait out the 15s lease"
    spec = lease_spec(kube, namespace)
    assert (spec["holderIdentity"], spec["leaseDurationSeconds"]) == ("b", 15)
    assert spec["leaseTransitions"] == 1


def test_releasing_without_leading_writes_nothing(
    kube: KubeServer, namespace: str, pair: tuple[LeaderElector, LeaderElector]
) -> None:
    a, b = pair
    a.try_acquire_or_renew()
    b.try_acquire_or_renew()
    kube.requests.clear()

    b.release()

    assert kube.requests.writes() == []
    assert lease_spec(kube, namespace)["holderIdentity"] == "a"


def test_a_conflict_on_renew_makes_the_leader_step_down_at_once_then_look_again(
    kube: KubeServer,
    namespace: str,
    electors: Electors,
    pair: tuple[LeaderElector, LeaderElector],
    clock: FakeClock,
) -> None:
    a, _ = pair
    a.try_acquire_or_renew()
    kube.faults.fail_next("PUT", leases_path(namespace), status=409)

    clock.advance(RETRY)
    assert not a.try_acquire_or_renew()
    assert not a.leads()

    clock.advance(RETRY)
    assert a.try_acquire_or_renew(), "the Lease still names it: it takes it back"
    assert electors.changes["a"] == [True, False, True]


def test_losing_the_race_for_a_free_lease_is_no_error(
    kube: KubeServer, namespace: str, pair: tuple[LeaderElector, LeaderElector]
) -> None:
    a, b = pair
    a.try_acquire_or_renew()
    a.release()
    kube.faults.fail_next("PUT", leases_path(namespace), status=409, when=written_by("b"))

    assert not b.try_acquire_or_renew()
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()


def test_a_leader_whose_lease_was_taken_steps_down_and_follows(
    kube: KubeServer, namespace: str, pair: tuple[LeaderElector, LeaderElector], clock: FakeClock
) -> None:
    a, _ = pair
    a.try_acquire_or_renew()
    kube.store.patch(
        "leases.coordination.k8s.io",
        name="leader",
        namespace=namespace,
        patch={"spec": {"holderIdentity": "c"}},
    )

    clock.advance(RETRY)
    assert not a.try_acquire_or_renew()
    clock.advance(RETRY)
    assert not a.try_acquire_or_renew()
    assert lease_spec(kube, namespace)["holderIdentity"] == "c"


def test_an_unreachable_api_leaves_a_candidate_following(
    kube: KubeServer, namespace: str, pair: tuple[LeaderElector, LeaderElector]
) -> None:
    a, _ = pair
    kube.faults.fail_next("GET", leases_path(namespace), status=503)

    assert not a.try_acquire_or_renew()
    assert a.try_acquire_or_renew()


LEASE = timedelta(seconds=30)  # long beside a handover (a retry period, 0.1 s)


@pytest.fixture
def running(client: KubeClient, namespace: str) -> Iterator[list[LeaderElector]]:
    short = LeaderElectionSettings(
        enabled=True,
        lease_name="leader",
        lease_duration=LEASE,
        renew_deadline=LEASE * 2 / 3,
        retry_period=timedelta(milliseconds=100),
    )
    electors = Electors(client, namespace, SystemClock())
    started = [electors.make("a", short), electors.make("b", short)]
    yield started
    for elector in started:
        elector.stop(timeout=5)
    assert not [t for t in threading.enumerate() if t.name == "leader-election"]


def test_two_running_electors_elect_one_leader_and_hand_over_when_it_stops(
    kube: KubeServer, namespace: str, running: list[LeaderElector]
) -> None:
    for elector in running:
        elector.start()
    eventually(lambda: any(e.leads() for e in running), what="a leader elected")
    leader, other = sorted(running, key=lambda e: not e.leads())
    for _ in range(20):  # several renewals: still exactly one leader
        assert (leader.leads(), other.leads()) == (True, False)
        time.sleep(0.02)

    renewed = lease_time(
        lease_spec(kube, namespace)["renewTime"]
    )  # its last renewal, or one before
    leader.stop(timeout=5)  # releases the Lease
    eventually(other.leads, within=2 * LEASE.total_seconds(), what="the other took over")

    # Taken over before the Lease, left alone, could have expired: released, not waited out.
    taken = lease_spec(kube, namespace)
    assert taken["holderIdentity"] == other.identity
    assert lease_time(taken["acquireTime"]) < renewed + LEASE
    assert not leader.leads()
    other.stop(timeout=5)
    assert lease_spec(kube, namespace)["holderIdentity"] == ""


@pytest.mark.parametrize(
    ("environ", "expected_prefix"),
    [
        pytest.param({"POD_NAME": "iga-7f9c-x2"}, "iga-7f9c-x2", id="pod-name-from-downward-api"),
        pytest.param({}, "", id="else-hostname-and-pid"),
    ],
)
def test_the_identity_is_the_pod_name_else_hostname_and_pid(
    environ: dict[str, str], expected_prefix: str
) -> None:
    identity = default_identity(environ)
    if expected_prefix:
        assert identity == expected_prefix
    else:
        host, _, pid = identity.rpartition("_")
        assert host and pid.isdigit()
