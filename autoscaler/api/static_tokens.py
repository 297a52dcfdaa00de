"""Static-token mode, for clusters where the service may not create reviews.

The file (mounted from a Secret) lists each token with its user and rights:

    tokens:
      - token: "4f1c..."          # compared in constant time
        username: alice
        groups: [data-science]
        namespaces: [team-a]      # may change workloads and pauses here; ["*"]: everywhere
        admin: false              # global pause/resume and "deactivate now"
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import ErrorDetails

from autoscaler.core.documents import read_yaml_file
from autoscaler.core.errors import ConfigError
from autoscaler.domain.access import Identity, Recalled, Target, Verdict

EVERY_NAMESPACE = "*"


class StaticToken(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    token: str = Field(min_length=16, description="The bearer token; at least 16 characters.")
    username: str = Field(min_length=1)
    groups: list[str] = Field(default_factory=list)
    namespaces: list[str] = Field(default_factory=list)
    admin: bool = False


class StaticTokenFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    tokens: list[StaticToken]


@dataclass(frozen=True)
class StaticTokens:
    """Authenticator and Authorizer from a fixed table; the admin target is the one the
    settings name, so `require_admin` asks the same question in both modes."""

    entries: tuple[StaticToken, ...]
    admin_target: Target

    @classmethod
    def load(cls, path: Path, *, admin_target: Target) -> StaticTokens:
        raw = read_yaml_file(path, key="api.auth.staticTokensFile")  # bounded, one-line refusals
        try:
            parsed = StaticTokenFile.model_validate(raw)
        except ValidationError as exc:  # described without the input: it may be a token
            problems = [_problem(path, error) for error in exc.errors()]
            raise ConfigError(problems) from None
        return cls(tuple(parsed.tokens), admin_target)

    def authenticate(self, token: str) -> Identity | None:
        entry = self._entry(token)
        if entry is None:
            return None
        return Identity(username=entry.username, groups=tuple(entry.groups))

    def recall(self, token: str) -> Recalled:
        """Always at hand: the table is in memory."""
        return Recalled(self.authenticate(token))

    def authorize(self, identity: Identity, target: Target) -> Verdict:
        entry = next((e for e in self.entries if e.username == identity.username), None)
        if entry is None:
            return Verdict(False, f"{identity.username} is not in the static token file")
        if target == self.admin_target:
            return Verdict(entry.admin, "static token is admin" if entry.admin else "not admin")
        namespaces = set(entry.namespaces)
        allowed = EVERY_NAMESPACE in namespaces or target.namespace in namespaces
        where = target.namespace or "every namespace"
        return Verdict(
            allowed,
            f"static token {'may' if allowed else 'may not'} change workloads in {where}",
        )

    def _entry(self, token: str) -> StaticToken | None:
        wanted = token.encode()
        found = None
        for entry in self.entries:  # compare against every entry: no early exit to time
            if hmac.compare_digest(entry.token.encode(), wanted):
                found = entry
        return found


def _problem(path: Path, error: ErrorDetails) -> str:
    location = ".".join(str(part) for part in error["loc"]) or "the top level"
    return f"api.auth.staticTokensFile: {path}: {location}: {error['msg']}"
