"""Who is calling (TokenReview) and what they may do (SubjectAccessReview), through the one
Kubernetes client. A review that cannot be made raises our ClusterError, which the API answers
with 503 (never a guess either way).

Answers are cached for a short while (`ReviewCaches`): a client that sends the same token on
every request, or a flood of garbage tokens, costs the API server one review per token per
TTL, not one per request. Refusals are kept shorter than grants, so a right just granted is
seen within seconds; a failed review (ClusterError) is never cached. Tokens are cached under
their SHA-256, never as themselves.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from cachetools import TTLCache

from autoscaler.adapters.kubernetes.client import KubeClient
from autoscaler.adapters.kubernetes.resources import ACCESS_REVIEWS, TOKEN_REVIEWS, Obj
from autoscaler.domain.access import Identity, Recalled, Target, Verdict

T = TypeVar("T")


def review_token(client: KubeClient, token: str, *, audiences: tuple[str, ...] = ()) -> Obj:
    """Create a TokenReview; its answer (status) says who the token belongs to."""
    spec: Obj = {"token": token, **({"audiences": list(audiences)} if audiences else {})}
    review = {"apiVersion": TOKEN_REVIEWS.api_version, "kind": "TokenReview", "spec": spec}
    return client.create(TOKEN_REVIEWS, review)


def review_access(client: KubeClient, spec: Mapping[str, Any]) -> Obj:
    """Create a SubjectAccessReview; its answer (status) says whether the call is allowed."""
    kind = "SubjectAccessReview"
    review = {"apiVersion": ACCESS_REVIEWS.api_version, "kind": kind, "spec": dict(spec)}
    return client.create(ACCESS_REVIEWS, review)


@dataclass(frozen=True)
class CachePolicy:
    """How long answers are kept, in seconds, and how many of each."""

    ttl_s: float = 10.0  # a grant: long enough to absorb a burst, short enough for revocation
    negative_ttl_s: float = 2.0  # a refusal: a right just granted works again within seconds
    max_entries: int = 4096  # per cache; least recently used first out when full


class ReviewCaches:
    """Two TTL caches (grants, refusals) behind one lock: the API reviews from many threads."""

    def __init__(self, policy: CachePolicy, *, timer: Callable[[], float]) -> None:
        self._granted: TTLCache[Hashable, Any] = TTLCache(
            policy.max_entries, policy.ttl_s, timer=timer
        )
        self._refused: TTLCache[Hashable, Any] = TTLCache(
            policy.max_entries, policy.negative_ttl_s, timer=timer
        )
        self._lock = threading.Lock()

    def answer(self, key: Hashable, review: Callable[[], T], *, granted: Callable[[T], bool]) -> T:
        """The cached answer for `key`, else `review()` (outside the lock), then kept."""
        kept = self.kept(key)
        if kept is not None:
            found: T = kept[0]
            return found
        fresh = review()
        with self._lock:
            (self._granted if granted(fresh) else self._refused)[key] = fresh
        return fresh

    def kept(self, key: Hashable) -> tuple[Any] | None:
        """The cached answer for `key` in a 1-tuple (an answer may itself be None), else None."""
        with self._lock:
            for cache in (self._granted, self._refused):
                if key in cache:
                    return (cache[key],)
        return None


class KubernetesReviews:
    """Authenticator and Authorizer backed by TokenReview and SubjectAccessReview."""

    def __init__(
        self,
        client: KubeClient,
        *,
        audiences: tuple[str, ...] = (),
        cache: CachePolicy | None = None,
        timer: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client = client
        self._audiences = audiences
        policy = cache or CachePolicy()
        self._tokens = ReviewCaches(policy, timer=timer)
        self._access = ReviewCaches(policy, timer=timer)

    def authenticate(self, token: str) -> Identity | None:
        return self._tokens.answer(
            _token_key(token),
            lambda: self._review_token(token),
            granted=lambda found: found is not None,
        )

    def recall(self, token: str) -> Recalled | None:
        kept = self._tokens.kept(_token_key(token))
        return None if kept is None else Recalled(kept[0])

    def authorize(self, identity: Identity, target: Target) -> Verdict:
        extra = tuple(sorted(identity.extra.items()))
        key = (identity.username, identity.uid, identity.groups, extra, target)
        return self._access.answer(
            key, lambda: self._review_access(identity, target), granted=lambda v: v.allowed
        )

    def _review_token(self, token: str) -> Identity | None:
        status = review_token(self._client, token, audiences=self._audiences).get("status") or {}
        if status.get("authenticated") is not True:
            return None
        if self._audiences and not set(self._audiences) & set(status.get("audiences") or []):
            return None
        user = status.get("user") or {}
        username = str(user.get("username") or "")
        if not username:
            return None
        return Identity(
            username=username,
            uid=str(user.get("uid") or ""),
            groups=tuple(str(g) for g in user.get("groups") or []),
            extra=_extra(user.get("extra")),
        )

    def _review_access(self, identity: Identity, target: Target) -> Verdict:
        spec: dict[str, Any] = {
            "user": identity.username,
            "groups": list(identity.groups),
            "resourceAttributes": target.attributes(),
        }
        if identity.uid:
            spec["uid"] = identity.uid
        if identity.extra:
            spec["extra"] = {key: list(values) for key, values in identity.extra.items()}
        status = review_access(self._client, spec).get("status") or {}
        allowed = status.get("allowed") is True and status.get("denied") is not True
        reason = str(status.get("reason") or status.get("evaluationError") or "")
        return Verdict(allowed=allowed, reason=reason or _default_reason(allowed, target))


def _default_reason(allowed: bool, target: Target) -> str:
    return f"allowed to {target}" if allowed else f"RBAC does not allow {target}"


def _extra(raw: object) -> dict[str, tuple[str, ...]]:
    if not isinstance(raw, Mapping):
        return {}
    return {str(key): tuple(str(v) for v in values or []) for key, values in raw.items()}


def _token_key(token: str) -> str:
    """Tokens are kept by digest: the cache never holds a credential."""
    return hashlib.sha256(token.encode()).hexdigest()
