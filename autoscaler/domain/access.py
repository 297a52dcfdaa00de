"""Who is calling and the Kubernetes permission a change needs: the values the API's
authentication and authorization pass around.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from autoscaler.domain.policy.owners import KUEUE_GROUP, WORKLOADS

LIST = "list"


@dataclass(frozen=True)
class Identity:
    username: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Recalled:
    """A token's answer at hand without I/O (kept from an earlier review, or a table in
    memory). `identity` None: the token is known not to be valid."""

    identity: Identity | None


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


def read_target(namespace: str | None) -> Target:
    """The right every read of workloads asks (the listing, one workload, the audit trail of a
    namespace, the report, KEDA's metrics-api): `list` on Kueue Workloads in `namespace`;
    None: in every namespace (cluster-wide)."""
    return Target(LIST, KUEUE_GROUP, WORKLOADS, namespace)
