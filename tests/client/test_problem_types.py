"""The command line picks its next step by the problem's `type` (docs/API.md "Problem types"),
never by the detail's words: the API may reword a detail and the hint stays."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from autoscaler.client.api import AutoscalerClient, ClientError
from autoscaler.client.next_steps import refusal
from autoscaler.domain.problem_types import BLANK, ProblemType
from tests.api.rig import TOKENS, ApiRig

Ask = Callable[[AutoscalerClient], object]
REFUSED = [
    pytest.param(
        "alice",
        lambda api: api.exempt("team-a", "ghost", duration="1h", reason="x"),
        "team-a",
        ProblemType.NO_SUCH_WORKLOAD,
        id="no-such-workload",
    ),
    pytest.param(
        "admin",
        lambda api: api.pause("no-such-team", reason="x"),
        "no-such-team",
        ProblemType.NO_SUCH_NAMESPACE,
        id="no-such-namespace",
    ),
    pytest.param(
        "alice", lambda api: api.pause(reason="x"), None, ProblemType.MISSING_RIGHT, id="right"
    ),
    pytest.param(
        "bob",
        lambda api: api.exempt("team-a", "alice-rc", duration="1h", reason="x"),
        "team-a",
        ProblemType.UNSEEN_CHANGE,
        id="unseen-change",
    ),
]


def refused(service: ApiRig, who: str, ask: Ask) -> ClientError:
    with AutoscalerClient(service.url, token=TOKENS[who]) as api, pytest.raises(ClientError) as e:
        ask(api)
    return e.value


def reworded(exc: ClientError, detail: str, *, problem_type: str) -> ClientError:
    return ClientError(exc.status, detail, exc.fields, server=exc.server, type=problem_type)


def step(line: str) -> str:
    """What follows the API's reason: the next step."""
    return line.partition("; ")[2]


@pytest.mark.parametrize(("who", "ask", "namespace", "problem_type"), REFUSED)
def test_a_reworded_detail_of_the_same_type_gets_the_same_next_step(
    service: ApiRig, who: str, ask: Ask, namespace: str | None, problem_type: ProblemType
) -> None:
    served = refused(service, who, ask)
    assert served.type == problem_type
    said = refusal(served, namespace=namespace)
    assert step(said), said

    other_words = reworded(served, "something else went wrong", problem_type=served.type)
    assert step(refusal(other_words, namespace=namespace)) == step(said)


@pytest.mark.parametrize(
    ("who", "ask", "namespace", "problem_type"),
    [param for param in REFUSED if param.id in ("no-such-workload", "no-such-namespace")],
)
def test_the_same_words_without_the_type_get_no_404_step(
    service: ApiRig, who: str, ask: Ask, namespace: str | None, problem_type: ProblemType
) -> None:
    """An untyped 404 with the words the CLI once matched: not a route missing either (it
    says more than its status), so no step rather than a guess from its wording."""
    served = refused(service, who, ask)
    untyped = reworded(served, served.detail, problem_type=BLANK)
    assert refusal(untyped, namespace=namespace) == f"404 Not Found: {served.detail}"


def test_a_problem_of_a_type_it_does_not_know_gets_its_status_step(service: ApiRig) -> None:
    """A newer server's type: the status's step, as for `about:blank`."""
    served = refused(service, "alice", lambda api: api.pause(reason="x"))
    newer = reworded(served, served.detail, problem_type="https://example.com/problems/newer")
    assert step(refusal(newer)) == step(refusal(served))
    assert step(refusal(newer))
