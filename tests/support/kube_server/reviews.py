"""TokenReview and SubjectAccessReview answered from tables a test fills in.

Unknown tokens are not authenticated; a SubjectAccessReview is allowed only when a rule matches
(None in a rule matches anything), so a test states exactly what the service may do.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class TokenIdentity:
    username: str
    groups: tuple[str, ...] = ()
    uid: str = ""


@dataclass(frozen=True)
class AccessRule:
    verb: str | None = None
    resource: str | None = None
    group: str | None = None  # API group: "" is core, "kueue.x-k8s.io", ...
    namespace: str | None = None
    name: str | None = None
    subresource: str | None = None
    user: str | None = None
    member_of: str | None = None  # a user group the reviewed subject must belong to
    reason: str = "allowed by a test rule"

    def allows(self, spec: dict[str, Any]) -> bool:
        attributes = spec.get("resourceAttributes") or {}
        wanted = {
            "verb": self.verb,
            "resource": self.resource,
            "group": self.group,
            "namespace": self.namespace,
            "name": self.name,
            "subresource": self.subresource,
        }
        if any(
            value is not None and attributes.get(key, "") != value for key, value in wanted.items()
        ):
            return False
        if self.user is not None and spec.get("user") != self.user:
            return False
        return self.member_of is None or self.member_of in (spec.get("groups") or [])


@dataclass
class Reviews:
    """The server's answers to authentication and authorization reviews (thread-safe)."""

    tokens: dict[str, TokenIdentity] = field(default_factory=dict)
    rules: list[AccessRule] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add_token(
        self, token: str, *, username: str, groups: tuple[str, ...] = (), uid: str = ""
    ) -> None:
        with self._lock:
            self.tokens[token] = TokenIdentity(username, tuple(groups), uid)

    def allow(self, **rule: Any) -> AccessRule:
        """Add an AccessRule, e.g. allow(user="alice", verb="patch", group="kueue.x-k8s.io",
        resource="workloads", namespace="team-a")."""
        added = AccessRule(**rule)
        with self._lock:
            self.rules.append(added)
        return added

    def token_review(self, body: dict[str, Any]) -> dict[str, Any]:
        spec = body.get("spec") or {}
        with self._lock:
            identity = self.tokens.get(spec.get("token", ""))
        status: dict[str, Any] = {"authenticated": identity is not None}
        if identity is None:
            status["error"] = "token not recognised by the test server"
        else:
            status["user"] = {
                "username": identity.username,
                "uid": identity.uid,
                "groups": list(identity.groups),
            }
            status["audiences"] = spec.get("audiences") or []
        return {**body, "status": status}

    def subject_access_review(self, body: dict[str, Any]) -> dict[str, Any]:
        spec = body.get("spec") or {}
        with self._lock:
            rule = next((rule for rule in self.rules if rule.allows(spec)), None)
        status = (
            {"allowed": True, "reason": rule.reason}
            if rule is not None
            else {"allowed": False, "reason": "no test rule allows this request"}
        )
        return {**body, "status": status}
