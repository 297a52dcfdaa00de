"""The KEDA metrics-api route's OpenAPI answers are the ones it gives, as `serve` mounts it:
each documented status is provoked, and nothing is documented that no request gets (FastAPI
adds a 422 to a route with a parameter it validates; this one reads its query itself)."""

from __future__ import annotations

from collections.abc import Mapping

from autoscaler.settings.api import ApiSettings
from autoscaler.settings.keda import KedaSettings
from tests.api.rig import TOKENS, ApiRig

KEDA = "/api/v1/keda/metrics"
PROBLEM_JSON = "application/problem+json"


def test_the_documented_answers_are_the_ones_the_route_gives() -> None:
    small_head = ApiSettings(host="127.0.0.1", port=0, max_header_bytes=4096)
    with ApiRig(settings=small_head, keda=KedaSettings(enabled=True)) as rig:
        workload = rig.add_raycluster("team-a", "alice-rc")
        rig.cycle()

        def status(query: Mapping[str, str], user: str | None = "admin", **headers: str) -> int:
            sent = {**headers, **({"Authorization": f"Bearer {TOKENS[user]}"} if user else {})}
            return rig.http.get(KEDA, params=dict(query), headers=sent).status_code

        known = {"namespace": "team-a", "workload": workload}
        given = {
            status(known),  # 200
            status({"namespace": "team-a"}),  # 400: neither workload nor podSelector
            status(known, user=None),  # 401
            status(known, user="bob"),  # 403: bob reads team-b only
            status({"namespace": "team-a", "workload": "ghost"}),  # 404
            status(known, **{"X-Padding": "x" * 8192}),  # 431: past api.maxHeaderBytes
        }
        rig.usage.failing = True  # Prometheus gone: unknown, so KEDA holds its replicas
        rig.cycle()
        given.add(status(known))  # 503
        document = rig.http.get("/openapi.json").json()
    responses = document["paths"][KEDA]["get"]["responses"]
    assert given == {200, 400, 401, 403, 404, 431, 503}
    assert set(responses) == {str(code) for code in given}
    for code, answer in responses.items():  # refusals are the API's Problem bodies
        if code != "200":
            assert PROBLEM_JSON in answer["content"], code
