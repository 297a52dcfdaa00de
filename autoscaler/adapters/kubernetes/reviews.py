"""Who is calling (TokenReview) and what they may do (SubjectAccessReview), through the one
Kubernetes client. A review that cannot be made raises our ClusterError, which the API answers
with 503 (never a guess either way).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autoscaler.adapters.kubernetes.client import KubeClient
from autoscaler.domain.access import Identity, Target, Verdict


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
