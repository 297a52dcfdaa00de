"""TokenReview and SubjectAccessReview answers are cached briefly: one review per token (and
per question) per TTL, refusals for a shorter while, failures never."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta

import pytest
from kubernetes.client import ApiClient

from autoscaler.adapters.kubernetes.client import KubeClient
from autoscaler.adapters.kubernetes.reviews import CachePolicy, KubernetesReviews
from autoscaler.core.errors import ClusterError
from autoscaler.domain.access import Target
from tests.support.kube_server import KubeServer

TOKEN_REVIEWS = "/apis/authentication.k8s.io"
ACCESS_REVIEWS = "/apis/authorization.k8s.io"
PATCH_TEAM_A = Target("patch", "kueue.x-k8s.io", "workloads", "team-a")
POLICY = CachePolicy(ttl_s=10, negative_ttl_s=2, max_entries=100)


@dataclass
class Timer:
    now: float = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Setup:
    kube: KubeServer
    reviews: KubernetesReviews
    timer: Timer

    def token_reviews(self) -> int:
        return len(self.kube.requests.matching("POST", TOKEN_REVIEWS))

    def access_reviews(self) -> int:
        return len(self.kube.requests.matching("POST", ACCESS_REVIEWS))


@pytest.fixture
def setup() -> Iterator[Setup]:
    with KubeServer() as kube:
        kube.reviews.add_token("alice-token", username="alice")
        kube.reviews.allow(user="alice", verb="patch", namespace="team-a")
        with ApiClient(kube.configuration()) as api_client:
            client = KubeClient(api_client, timeout=timedelta(seconds=5))
            timer = Timer()
            yield Setup(kube, KubernetesReviews(client, cache=POLICY, timer=timer), timer)


def test_a_token_reviewed_once_is_not_reviewed_again_within_the_ttl(setup: Setup) -> None:
    first = setup.reviews.authenticate("alice-token")
    setup.timer.now += 9.9
    again = setup.reviews.authenticate("alice-token")
    assert first == again
    assert first is not None and first.username == "alice"
    assert setup.token_reviews() == 1


def test_a_token_is_reviewed_again_once_the_ttl_passed(setup: Setup) -> None:
    setup.reviews.authenticate("alice-token")
    setup.timer.now += 10.1
    setup.reviews.authenticate("alice-token")
    assert setup.token_reviews() == 2


def test_a_garbage_token_is_refused_from_the_cache_for_a_shorter_while(setup: Setup) -> None:
    for _ in range(50):
        assert setup.reviews.authenticate("garbage") is None
    assert setup.token_reviews() == 1
    setup.timer.now += 2.1
    setup.reviews.authenticate("garbage")
    assert setup.token_reviews() == 2


def test_an_access_answer_is_cached_per_caller_and_question(setup: Setup) -> None:
    alice = setup.reviews.authenticate("alice-token")
    assert alice is not None
    for _ in range(3):
        assert setup.reviews.authorize(alice, PATCH_TEAM_A).allowed
        assert not setup.reviews.authorize(alice, Target("get", "", "secrets", "team-a")).allowed
    assert setup.access_reviews() == 2


def test_a_refusal_is_asked_again_after_its_short_ttl_so_a_new_grant_is_seen(
    setup: Setup,
) -> None:
    alice = setup.reviews.authenticate("alice-token")
    assert alice is not None
    team_b = Target("patch", "kueue.x-k8s.io", "workloads", "team-b")
    assert not setup.reviews.authorize(alice, team_b).allowed
    setup.kube.reviews.allow(user="alice", verb="patch", namespace="team-b")
    assert not setup.reviews.authorize(alice, team_b).allowed  # still the cached refusal
    setup.timer.now += 2.1
    assert setup.reviews.authorize(alice, team_b).allowed


def test_a_failed_review_is_not_cached(setup: Setup) -> None:
    setup.kube.faults.fail_next("POST", TOKEN_REVIEWS, status=503)
    with pytest.raises(ClusterError):
        setup.reviews.authenticate("alice-token")
    assert setup.reviews.authenticate("alice-token") is not None


def test_recall_answers_only_what_a_review_already_gave(setup: Setup) -> None:
    assert setup.reviews.recall("alice-token") is None  # never reviewed: nothing at hand
    reviewed = setup.reviews.authenticate("alice-token")
    recalled = setup.reviews.recall("alice-token")
    assert recalled is not None and recalled.identity == reviewed
    assert setup.token_reviews() == 1  # recalling asks nobody


def test_recall_keeps_a_refusal_as_known_invalid_until_its_ttl(setup: Setup) -> None:
    setup.reviews.authenticate("garbage")
    recalled = setup.reviews.recall("garbage")
    assert recalled is not None and recalled.identity is None
    setup.timer.now += 2.1
    assert setup.reviews.recall("garbage") is None  # expired: a review must ask again
