"""The metrics-api endpoint: same targets and answers as gRPC, a number only when known."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import httpx
import pytest
from fastapi import FastAPI

from autoscaler.core.errors import ClusterUnavailable
from autoscaler.domain.access import Identity, Verdict
from autoscaler.domain.models import Snapshot
from autoscaler.engine.cycle.snapshots import SnapshotStore
from autoscaler.keda.http import VALUE_LOCATION, keda_router
from autoscaler.keda.targets import Activity, Target
from tests.keda.rig import DEADLINE, FakeClock, keda_ref, make_answers, running_scaler, stub_for
from tests.keda.snapshots import a_snapshot, gpu_pod
from tests.keda.test_targets import CASES
from tests.support.domain_builders import HOUR, NOW, THRESHOLD, a_workload, usage

THRESHOLD_WINDOW = HOUR

PATH = "/api/v1/keda/metrics"
TOKEN = "s3cret"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


class Client:
    """Calls the ASGI app in process through httpx (starlette's Client warns)."""

    def __init__(self, app: FastAPI) -> None:
        self._app = app

    def get(
        self,
        url: str,
        *,
        params: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        return asyncio.run(self._get(url, params=params, headers=headers))

    async def _get(
        self, url: str, *, params: Mapping[str, str] | None, headers: Mapping[str, str] | None
    ) -> httpx.Response:
        transport = httpx.ASGITransport(app=self._app)
        async with httpx.AsyncClient(transport=transport, base_url="http://scaler") as client:
            return await client.get(url, params=params, headers=headers)


def app_for(store: SnapshotStore, **options: object) -> Client:
    app = FastAPI()
    answers = make_answers(store, FakeClock(), profiles=("fast",))
    app.include_router(keda_router(answers=answers, **options))  # type: ignore[arg-type]
    return Client(app)


@pytest.fixture
def store() -> SnapshotStore:
    return SnapshotStore()


KEDA = Identity("system:serviceaccount:keda:keda-operator")


def keda_only(token: str) -> Identity | None:
    return KEDA if token == TOKEN else None


def reads_ml(who: Identity, namespace: str) -> Verdict:
    return Verdict(who == KEDA and namespace == "ml", "reads ml only")


@pytest.fixture
def client(store: SnapshotStore) -> Client:
    return app_for(store, authenticate=keda_only, authorize=reads_ml)


def rc(peak: float | None = 0.8, *, phase: str = "Running") -> Snapshot:
    workload = a_workload("ml", "rc").gpu_pod("rc-0", phase=phase).build()
    return a_snapshot(
        workload,
        usage_of=usage()
        if peak is None
        else usage().gpu("ml", "rc-0", peak=peak, last_busy=NOW if peak > THRESHOLD else None),
    )


def test_the_value_sits_at_the_documented_value_location(
    store: SnapshotStore, client: Client
) -> None:
    store.publish(rc(0.376))
    response = client.get(PATH, params={"namespace": "ml", "workload": "rc"}, headers=AUTH)
    assert response.status_code == 200
    body = response.json()
    assert body[VALUE_LOCATION] == pytest.approx(37.6)
    assert body["active"] is True
    assert body["metricName"] == "gpu-peak-utilization-ml-rc"


def test_a_pod_selector_and_a_profile_are_query_parameters(
    store: SnapshotStore, client: Client
) -> None:
    pods = (gpu_pod("ml", "llm-0", labels={"app": "llm"}),)
    store.publish(
        a_snapshot(
            usage_of=usage().gpu("ml", "llm-0", peak=0.01),
            pods=pods,
            profiles={"fast": (THRESHOLD_WINDOW, THRESHOLD)},
        )
    )
    params = {"namespace": "ml", "podSelector": "app=llm", "profile": "fast"}
    body = client.get(PATH, params=params, headers=AUTH).json()
    assert (body["value"], body["active"]) == (pytest.approx(1.0), False)


def test_no_running_pods_is_zero_and_inactive(store: SnapshotStore, client: Client) -> None:
    store.publish(rc(None, phase="Pending"))
    body = client.get(PATH, params={"namespace": "ml", "workload": "rc"}, headers=AUTH).json()
    assert (body["value"], body["active"]) == (0.0, False)


@pytest.mark.parametrize(
    ("params", "snapshot", "status", "says"),
    [
        pytest.param(
            {"namespace": "ml", "workload": "rc", "treshold": "5"},
            rc(),
            400,
            "treshold",
            id="unknown-parameter-is-named",
        ),
        pytest.param({"workload": "rc"}, rc(), 400, "namespace", id="namespace-is-required"),
        pytest.param(
            {"namespace": "ml", "workload": "ghost"}, rc(), 404, "ml/ghost", id="unknown-workload"
        ),
        pytest.param(
            {"namespace": "ml", "workload": "rc"},
            rc(None),
            503,
            "0 GPU series",
            id="unknown-data",
        ),
        pytest.param(
            {"namespace": "ml", "workload": "rc"}, None, 503, "no cycle", id="no-cycle-yet"
        ),
    ],
)
def test_anything_but_a_known_answer_is_a_non_200_saying_why(
    *,
    store: SnapshotStore,
    client: Client,
    params: dict[str, str],
    snapshot: Snapshot | None,
    status: int,
    says: str,
) -> None:
    if snapshot is not None:
        store.publish(snapshot)
    response = client.get(PATH, params=params, headers=AUTH)
    assert response.status_code == status, response.text
    assert says in response.json()["detail"]
    assert VALUE_LOCATION not in response.json()


def test_a_repeated_parameter_is_refused(store: SnapshotStore, client: Client) -> None:
    store.publish(rc())
    response = client.get(f"{PATH}?namespace=ml&workload=rc&workload=other", headers=AUTH)
    assert response.status_code == 400
    assert "workload" in response.json()["detail"]


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({}, id="no-token"),
        pytest.param({"Authorization": "Bearer wrong"}, id="wrong-token"),
        pytest.param({"Authorization": f"Basic {TOKEN}"}, id="not-a-bearer-token"),
    ],
)
def test_without_a_valid_bearer_token_the_answer_is_401(
    store: SnapshotStore, client: Client, headers: dict[str, str]
) -> None:
    store.publish(rc())
    response = client.get(PATH, params={"namespace": "ml", "workload": "rc"}, headers=headers)
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"] == "Bearer"


def test_without_an_authenticator_every_token_is_refused(store: SnapshotStore) -> None:
    store.publish(rc())
    response = app_for(store).get(PATH, params={"namespace": "ml", "workload": "rc"}, headers=AUTH)
    assert response.status_code == 401


def test_a_token_that_cannot_be_checked_is_a_503(store: SnapshotStore) -> None:
    def unreachable(_token: str) -> Identity | None:
        raise ClusterUnavailable("TokenReview: connection refused")

    store.publish(rc())
    response = app_for(store, authenticate=unreachable).get(
        PATH, params={"namespace": "ml", "workload": "rc"}, headers=AUTH
    )
    assert response.status_code == 503
    assert "connection refused" in response.json()["detail"]


@pytest.mark.parametrize("workload", ["rc", "ghost"])
def test_a_caller_who_may_not_read_the_namespace_gets_403_whether_or_not_it_exists(
    store: SnapshotStore, workload: str
) -> None:
    store.publish(a_snapshot(a_workload("other", "rc").gpu_pod("rc-0").build()))
    client = app_for(store, authenticate=keda_only, authorize=reads_ml)
    response = client.get(PATH, params={"namespace": "other", "workload": workload}, headers=AUTH)
    assert response.status_code == 403
    assert response.json()["detail"] == (
        "system:serviceaccount:keda:keda-operator may not read workloads in other: reads ml only"
    )


def test_without_an_authorizer_every_caller_is_refused(store: SnapshotStore) -> None:
    store.publish(rc())
    client = app_for(store, authenticate=keda_only)
    response = client.get(PATH, params={"namespace": "ml", "workload": "rc"}, headers=AUTH)
    assert response.status_code == 403


def test_a_right_that_cannot_be_checked_is_a_503(store: SnapshotStore) -> None:
    def unreachable(_who: Identity, _namespace: str) -> Verdict:
        raise ClusterUnavailable("SubjectAccessReview: connection refused")

    store.publish(rc())
    client = app_for(store, authenticate=keda_only, authorize=unreachable)
    response = client.get(PATH, params={"namespace": "ml", "workload": "rc"}, headers=AUTH)
    assert response.status_code == 503
    assert VALUE_LOCATION not in response.json()


def test_tokens_can_be_switched_off(store: SnapshotStore) -> None:
    store.publish(rc())
    client = app_for(store, require_token=False)
    response = client.get(PATH, params={"namespace": "ml", "workload": "rc"})
    assert response.status_code == 200


@pytest.mark.parametrize(("snapshot", "target", "activity", "value"), CASES)
def test_value_above_the_activation_threshold_agrees_with_grpc_is_active(
    snapshot: Snapshot | None, target: Target, activity: Activity, value: float | None
) -> None:
    """`activationTargetValue` = thresholdPercent makes metrics-api and IsActive agree."""
    ours = {"workload": target.workload or "", "profile": target.profile}
    with running_scaler(profiles=("fast",)) as scaler, stub_for(scaler.target) as stub:
        if snapshot is not None:
            scaler.publish(snapshot)
        response = app_for(scaler.store, require_token=False).get(
            PATH, params={"namespace": target.namespace, **ours}
        )
        if activity in (Activity.ACTIVE, Activity.INACTIVE):
            grpc_active = stub.IsActive(keda_ref(ours), timeout=DEADLINE).result
            assert (response.json()["value"] > THRESHOLD * 100) is grpc_active
        else:
            assert response.status_code in (404, 503)
