"""Static-token mode, for clusters where the service may not create reviews.

The file (mounted from a Secret) lists each token with its user and rights:

    tokens:
      - token: "4f1c..."          # compared in constant time
        username: alice
        groups: [data-science]
        namespaces: [team-a]      # may read and change workloads and pauses here; ["*"]: everywhere
        readNamespaces: [team-c]  # may only read here (KEDA's metrics-api token, a viewer)
        admin: false              # global pause/resume and "deactivate now"

Each entry is one identity: the rights are those of the entry whose token matched, never of
another entry that names the same user. A username listed twice is refused when the file is
read (the service does not start, and `check-config` says so): the audit trail names callers
by username, so two entries for one name would make its records ambiguous.
"""

from __future__ import annotations

import hmac
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from autoscaler.core.documents import read_yaml_file
from autoscaler.core.errors import ConfigError
from autoscaler.domain.access import Identity, Recalled, Target, Verdict, read_target
from autoscaler.settings.problems import written_path

EVERY_NAMESPACE = "*"
SETTING = "api.auth.staticTokensFile"
UID_PREFIX = "static-token-"  # an identity's uid: the entry's position in the file, from 1


class StaticToken(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    token: str = Field(min_length=16, description="The bearer token; at least 16 characters.")
    username: str = Field(min_length=1)
    groups: list[str] = Field(default_factory=list)
    namespaces: list[str] = Field(default_factory=list)
    read_namespaces: list[str] = Field(default_factory=list, alias="readNamespaces")
    admin: bool = False

    def may(self, target: Target) -> bool:
        """A read of workloads where it may read or change; anything else where it may change."""
        where = set(self.namespaces)
        if target == read_target(target.namespace):
            where |= set(self.read_namespaces)
        return EVERY_NAMESPACE in where or target.namespace in where


class StaticTokenFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    tokens: list[StaticToken]

    @model_validator(mode="after")
    def _one_entry_per_user_and_token(self) -> Self:
        users = Counter(entry.username for entry in self.tokens)
        twice = sorted(user for user, count in users.items() if count > 1)
        if twice:
            raise ValueError(
                f"username {', '.join(twice)} is listed more than once: each entry is one "
                "identity with its own rights, and the audit trail names callers by username. "
                "Give each token its own username (e.g. alice-ci beside alice), or keep one "
                "entry per user"
            )
        tokens = Counter(entry.token for entry in self.tokens)
        if any(count > 1 for count in tokens.values()):
            shared = [i for i, e in enumerate(self.tokens, 1) if tokens[e.token] > 1]
            raise ValueError(
                f"entries {', '.join(map(str, shared))} share one token: a token must name "
                "one entry"
            )
        return self


def read_token_file(path: Path) -> tuple[StaticToken, ...]:
    """The file's entries; a ConfigError naming the setting, the file and each problem, never
    a token (the file is a Secret: its values stay out of logs and terminals)."""
    raw = read_yaml_file(path, key=SETTING)  # bounded; one-line refusals, never its values
    try:
        parsed = StaticTokenFile.model_validate(raw)
    except ValidationError as exc:
        problems = [
            f"{SETTING}: {path}: {written_path(e['loc'])}: {e['msg']}"
            for e in exc.errors(include_input=False, include_url=False)
        ]
        raise ConfigError(problems) from None
    return tuple(parsed.tokens)


@dataclass(frozen=True)
class StaticTokens:
    """Authenticator and Authorizer from a fixed table; the admin target is the one the
    settings name, so `require_admin` asks the same question in both modes."""

    entries: tuple[StaticToken, ...]
    admin_target: Target

    @classmethod
    def load(cls, path: Path, *, admin_target: Target) -> StaticTokens:
        return cls(read_token_file(path), admin_target)

    def authenticate(self, token: str) -> Identity | None:
        position = self._position(token)
        if position is None:
            return None
        entry = self.entries[position]
        return Identity(
            username=entry.username, uid=f"{UID_PREFIX}{position + 1}", groups=tuple(entry.groups)
        )

    def recall(self, token: str) -> Recalled:
        """Always at hand: the table is in memory."""
        return Recalled(self.authenticate(token))

    def authorize(self, identity: Identity, target: Target) -> Verdict:
        entry = self._entry_of(identity)
        if entry is None:
            return Verdict(False, f"{identity.username} is not a token of the static token file")
        if target == self.admin_target:
            return Verdict(entry.admin, "static token is admin" if entry.admin else "not admin")
        allowed = entry.may(target)
        what = "read" if target == read_target(target.namespace) else "change"
        where = target.namespace or "every namespace"
        return Verdict(
            allowed, f"static token {'may' if allowed else 'may not'} {what} workloads in {where}"
        )

    def _entry_of(self, identity: Identity) -> StaticToken | None:
        """The entry this identity was authenticated as (its uid), never another entry that
        happens to carry the same username."""
        number = identity.uid.removeprefix(UID_PREFIX)
        if number == identity.uid or not number.isdecimal():
            return None
        position = int(number) - 1
        if not 0 <= position < len(self.entries):
            return None
        entry = self.entries[position]
        return entry if entry.username == identity.username else None

    def _position(self, token: str) -> int | None:
        wanted = token.encode()
        found = None
        for position, entry in enumerate(self.entries):  # every entry: no early exit to time
            if hmac.compare_digest(entry.token.encode(), wanted):
                found = position
        return found
