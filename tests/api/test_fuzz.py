"""Schema-driven fuzzing of the API against its own OpenAPI document (schemathesis), with every
check schemathesis has: a documented answer, never a 5xx, a body and headers as documented,
schema-valid input accepted (or refused only by a bound of the rules its operation documents)
and invalid input refused, a declared token enforced, and a 405 listing exactly the documented
methods.

Replayable: schemathesis draws from the gate's seed (scripts/test.sh passes the seed it prints
as --hypothesis-seed; schemathesis keeps a seed of its own, set here from it), or from a fixed
one when none is given, with the same test files collected: Hypothesis also draws constants
found in the project's modules imported by then (hypothesis/internal/conjecture/providers.py,
`_get_local_constants`), so this file run alone can draw other requests. Bounded: a fixed
number of generated examples per operation, besides the coverage and example phases' own
cases, so the module runs in well under a minute.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, seed, settings
from schemathesis.checks import CHECKS, load_all_checks
from schemathesis.config import OperationConfig

from autoscaler.api.context import SnoozeNotifications
from autoscaler.engine.notify.links import LINK_PATH, LinkSigner
from autoscaler.settings.keda import KedaSettings
from tests.api.rig import ApiRig

load_all_checks()
# Every check but those that cannot apply to this API, each with the reason.
NOT_APPLICABLE = {
    # It replays one identity's reads as its peers, configured in a WFC auth file of
    # schemathesis' own; the tenants' rights on every route are the authorization tests'.
    "object_level_authorization",
}
CHECKS_RUN = [check for check in CHECKS.get_all() if check.__name__ not in NOT_APPLICABLE]
EXEMPT = ("PUT", "/api/v1/workloads/{namespace}/{name}/exemption")
# Schema-valid requests refused by a bound no schema can state (it depends on the clock and on
# the workload's rule), each operation with the status its document gives with that reason, and
# what such a refusal says: there, and only so, positive data may be refused.
RULE_BOUND_REFUSALS = {
    EXEMPT: (
        422,
        {"body.duration", "body.until"},
        re.compile(r"is in the past|is (longer|further away) than the maximum exemption of \S+"),
    ),
}
FALLBACK_SEED = 0  # without --hypothesis-seed, every run draws the same requests
EXAMPLES = 12  # generated requests per operation and identity
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    database=None,
)
SEQUENCES = settings(FUZZ, max_examples=8, stateful_step_count=6)  # scenarios, calls in each


def gate_seed(config: pytest.Config) -> int:
    given = config.getoption("hypothesis_seed", default=None)
    return int(given) if given is not None else FALLBACK_SEED


@pytest.fixture(scope="module")
def fuzz_rig() -> Iterator[ApiRig]:
    links = LinkSigner(
        key=b"a-fuzzing-signing-key-of-32-byte",
        base_url="https://idle-gpu.example.com",
        ttl=timedelta(hours=24),
        choices=[timedelta(hours=4)],
    )
    # KEDA's metrics-api route served too, as `serve` serves it with KEDA on.
    with ApiRig(notices=SnoozeNotifications(links=links), keda=KedaSettings(enabled=True)) as rig:
        rig.add_raycluster("team-a", "alice-rc")
        rig.add_raycluster("team-b", "bob-rc", peak=0.9)
        rig.cycle()
        yield rig
    assert rig.kube.errors == []


def schema_of(rig: ApiRig, request: pytest.FixtureRequest) -> Any:
    schema = schemathesis.openapi.from_dict(copy.deepcopy(rig.api.app.openapi()))
    schema.config.seed = gate_seed(request.config)
    # A path parameter far past its maxLength can pass the head limit: 431 refuses it too.
    refusals = schema.config.checks.negative_data_rejection
    refusals.expected_statuses = [*refusals.expected_statuses, "431"]
    accepted = schema.config.checks.positive_data_acceptance.expected_statuses
    for (method, path), (status, _, _) in RULE_BOUND_REFUSALS.items():
        schema.config.operations.operations.append(
            OperationConfig.from_dict(
                {
                    "include-name": f"{method} {path}",  # one filter: both must match
                    "checks": {
                        "positive_data_acceptance": {"expected-statuses": [*accepted, str(status)]}
                    },
                }
            )
        )
    return schema


def validate(case: Any, response: Any, **kwargs: Any) -> None:
    """Every check, and a schema-valid request refused where a rule's bound may refuse it is
    refused by that bound, naming one of its fields: not by the validation."""
    case.validate_response(response, checks=CHECKS_RUN, **kwargs)
    refusal = RULE_BOUND_REFUSALS.get((case.method.upper(), case.path))
    if refusal is None or case.meta is None or not case.meta.generation.mode.is_positive:
        return
    status, fields, message = refusal
    if response.status_code == status:
        problems = response.json()["fields"]
        assert [problem["field"] for problem in problems] in [[field] for field in fields]
        assert message.fullmatch(problems[0]["message"]), problems


@pytest.fixture(scope="module")
def anonymous_schema(fuzz_rig: ApiRig, request: pytest.FixtureRequest) -> Any:
    return schema_of(fuzz_rig, request)


@pytest.fixture(scope="module")
def admin_schema(fuzz_rig: ApiRig, request: pytest.FixtureRequest) -> Any:
    """Every case carries the admin's token as schemathesis' own configured header: the checks
    then know it was sent (and probe without it and with a forged one)."""
    schema = schema_of(fuzz_rig, request)
    schema.config.update(headers=fuzz_rig.as_user("admin"))
    return schema


anonymous = schemathesis.pytest.from_fixture("anonymous_schema")
admin = schemathesis.pytest.from_fixture("admin_schema")


def test_the_checks_are_every_check_schemathesis_has_but_the_named_few() -> None:
    names = {check.__name__ for check in CHECKS_RUN}
    assert names | NOT_APPLICABLE == set(CHECKS.get_all_names())
    assert {"positive_data_acceptance", "use_after_free", "ignored_auth"} <= names


def test_a_rule_bound_refusal_is_documented_on_its_operation_with_its_reason(
    fuzz_rig: ApiRig,
) -> None:
    paths = fuzz_rig.api.app.openapi()["paths"]
    for (method, path), (status, fields, _) in RULE_BOUND_REFUSALS.items():
        told = paths[path][method.lower()]["responses"][str(status)]["description"]
        assert told.startswith("Unprocessable Content: ")
        assert {field.removeprefix("body.") for field in fields} <= set(
            re.findall(r"`(\w+)`", told)
        )
        assert "maximum exemption" in told


def test_only_the_rule_bound_operations_accept_a_refusal_of_schema_valid_data(
    admin_schema: Any,
) -> None:
    def accepted(method: str, path: str) -> list[str]:
        operation = admin_schema[path][method]
        checks = admin_schema.config.checks_config_for(operation=operation, phase="fuzzing")
        return list(checks.positive_data_acceptance.expected_statuses)

    everywhere = accepted("GET", "/api/v1/workloads")
    assert "422" not in everywhere
    assert accepted("DELETE", EXEMPT[1]) == everywhere
    assert accepted(*EXEMPT) == [*everywhere, "422"]
    negative = admin_schema.config.checks_config_for(operation=admin_schema[EXEMPT[1]]["PUT"])
    assert "431" in negative.negative_data_rejection.expected_statuses


@anonymous.parametrize()
@FUZZ
def test_any_request_without_a_token_gets_a_documented_answer_and_never_a_5xx(
    case: Any, fuzz_rig: ApiRig
) -> None:
    response = case.call(base_url=fuzz_rig.url)
    validate(case, response)
    signed_link = case.path.startswith(LINK_PATH)  # its token is its credential
    if case.method.upper() not in ("GET", "HEAD", "OPTIONS") and not signed_link:
        assert response.status_code in (401, 405)


@admin.parametrize()
@FUZZ
def test_any_request_from_an_admin_gets_a_documented_answer_and_never_a_5xx(
    case: Any, fuzz_rig: ApiRig
) -> None:
    response = case.call(base_url=fuzz_rig.url)
    validate(case, response)


def test_request_sequences_the_document_links_get_documented_answers(
    admin_schema: Any, fuzz_rig: ApiRig, request: pytest.FixtureRequest
) -> None:
    """Stateful: sequences along the links schemathesis finds in the document (a listed
    workload's name into its exemption, snooze, deactivation...), each answer checked with the
    checks that look back along the sequence (a resource used after its delete, or missing
    after its creation) as well as the rest."""

    class Sequences(admin_schema.as_state_machine()):  # type: ignore[misc]
        def get_call_kwargs(self, case: Any) -> dict[str, Any]:
            return {"base_url": fuzz_rig.url}

        def validate_response(
            self, response: Any, case: Any, additional_checks: Any = None, **kwargs: Any
        ) -> None:
            validate(case, response, transport_kwargs=kwargs, recorder=self.recorder)

    seed(gate_seed(request.config))(Sequences)
    Sequences.run(settings=SEQUENCES)
