"""Who is calling (TokenReview) and what they may do (SubjectAccessReview).

Both reviews go through the one Kubernetes client; a review that cannot be made raises our
ClusterError, which the API answers with 503 (never a guess either way).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from autoscaler.adapters.kube_client import KubeClient


@dataclass(frozen=True)
class Identity:
    username: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Target:
    """The Kubernetes permission a change needs, as a SubjectAccessReview asks it."""

    verb: str
    group: str
    resource: str
    namespace: str | None = None
    name: str | None = None

    def __str__(self) -> str:
        kind = f"{self.resource}.{self.group}" if self.group else self.resource
        where = "/".join(part for part in (self.namespace, self.name) if part)
        return f"{self.verb} {kind}" + (f" {where}" if where else "")

    def attributes(self) -> dict[str, str]:
        found = {
            "verb": self.verb,
            "group": self.group,
            "resource": self.resource,
            "namespace": self.namespace,
            "name": self.name,
        }
        return {key: value for key, value in found.items() if value is not None}


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    reason: str


class Authenticator(Protocol):
    def authenticate(self, token: str) -> Identity | None:
        """The token's user, or None when it is not a valid token. Raises ClusterError."""
        ...


class Authorizer(Protocol):
    def authorize(self, identity: Identity, target: Target) -> Verdict:
        """Whether `identity` holds `target`. Raises ClusterError when it cannot ask."""
        ...


class KubernetesReviews:
    """Authenticator and Authorizer backed by TokenReview and SubjectAccessReview."""

    def __init__(self, client: KubeClient, *, audiences: tuple[str, ...] = ()) -> None:
        self._client = client
        self._audiences = audiences

    def authenticate(self, token: str) -> Identity | None:
        status = self._client.review_token(token, audiences=self._audiences).get("status") or {}
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

    def authorize(self, identity: Identity, target: Target) -> Verdict:
        spec: dict[str, Any] = {
            "user": identity.username,
            "groups": list(identity.groups),
            "resourceAttributes": target.attributes(),
        }
        if identity.uid:
            spec["uid"] = identity.uid
        if identity.extra:
            spec["extra"] = {key: list(values) for key, values in identity.extra.items()}
        status = self._client.review_access(spec).get("status") or {}
        allowed = status.get("allowed") is True and status.get("denied") is not True
        reason = str(status.get("reason") or status.get("evaluationError") or "")
        return Verdict(allowed=allowed, reason=reason or _default_reason(allowed, target))


def _default_reason(allowed: bool, target: Target) -> str:
    return f"allowed to {target}" if allowed else f"RBAC does not allow {target}"


def _extra(raw: object) -> dict[str, tuple[str, ...]]:
    if not isinstance(raw, Mapping):
        return {}
    return {str(key): tuple(str(v) for v in values or []) for key, values in raw.items()}
