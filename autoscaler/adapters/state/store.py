"""The runtime-state ConfigMap: kill switches and a bounded audit list, shared by every replica.

The Helm chart never renders this ConfigMap, so `helm upgrade` cannot drop a kill switch.
Its `data` keys:

    pauses         {"everything": bool, "namespaces": [str]}   read by the loop each cycle
    pause-details  {"*" | <namespace>: {"by", "reason", "at"}} who paused what, and why
    audit          [record, ...] newest first, at most `audit_limit` records; the loop's
                   carry a `key` and are never written twice (`RecordKey`)
    breaker        the mass-idle circuit breaker     } see codec.py; absent in a
    contested      workloads we stopped fighting for } ConfigMap written before the guards

Every change is a read-modify-write guarded by the ConfigMap's resourceVersion and retried
when another replica wrote first (409).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import asdict
from datetime import datetime
from typing import Any, TypeVar

from autoscaler.adapters.kubernetes import objects as kube_objects
from autoscaler.adapters.kubernetes.client import KubeClient
from autoscaler.adapters.kubernetes.resources import CONFIGMAPS, EVENTS, Obj
from autoscaler.adapters.state.codec import UNREADABLE as GUARDS_UNREADABLE
from autoscaler.adapters.state.codec import (
    decode_breaker,
    decode_contested,
    decode_subject,
    encode_guards,
    encode_subject,
    time_of,
)
from autoscaler.core.documents import parse_json
from autoscaler.core.errors import Conflict, NotFound
from autoscaler.domain.annotations import time_text
from autoscaler.domain.audit.records import AuditRecord, Edit, PauseNote, RecordKey, RuntimeState
from autoscaler.domain.guards.breaker import BreakerState
from autoscaler.domain.guards.screen import Contest
from autoscaler.domain.models import OwnerRef, Pauses, WorkloadRef

DETAILS_KEY = "pause-details"
AUDIT_KEY = "audit"
UNREADABLE_BREAKER = "the stored breaker state cannot be read, so it counts as open"
_UNREADABLE = (ValueError, TypeError, KeyError, AttributeError)
T = TypeVar("T")


class RuntimeStateStore:
    """Reads and changes the runtime-state ConfigMap through the one Kubernetes client."""

    def __init__(
        self,
        *,
        client: KubeClient,
        name: str,
        namespace: str,
        audit_limit: int,
        attempts: int,
        logger: logging.Logger,
    ) -> None:
        self._client = client
        self._name = name
        self._namespace = namespace
        self._audit_limit = audit_limit
        self._attempts = attempts
        self._log = logger

    def read(self) -> RuntimeState:
        config_map = self._get()
        return RuntimeState() if config_map is None else self._decode(config_map)

    def change(self, edit: Edit) -> RuntimeState:
        """Apply `edit` to the current state and write it; retried on 409, then Conflict."""
        for _attempt in range(self._attempts):
            config_map = self._get()
            current = RuntimeState() if config_map is None else self._decode(config_map)
            wanted = edit(current)
            if config_map is not None and wanted == current:
                return current  # nothing new (a loop record already kept): no write request
            try:
                self._write(config_map, wanted)
            except Conflict:
                continue  # another replica wrote first: read again and redo the edit
            return wanted
        raise Conflict(
            f"configmap {self._namespace}/{self._name} changed under us {self._attempts} times"
        )

    def record(self, *records: AuditRecord) -> None:
        if records:
            self.change(lambda state: state.recorded(records, limit=self._audit_limit))

    def announce(self, *, reason: str, message: str, now: datetime) -> None:
        """An Event on the ConfigMap itself: where the state it reports on lives."""
        target = OwnerRef("v1", "ConfigMap", self._name)
        event = kube_objects.event_for(
            target, namespace=self._namespace, reason=reason, message=message, now=now
        )
        self._client.create(EVENTS, event, namespace=self._namespace)

    def _get(self) -> Obj | None:
        try:
            return self._client.get(CONFIGMAPS, self._name, namespace=self._namespace)
        except NotFound:
            return None

    def _write(self, config_map: Obj | None, state: RuntimeState) -> None:
        data = encode(state)
        if config_map is None:
            body = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": self._name, "namespace": self._namespace},
                "data": data,
            }
            self._client.create(CONFIGMAPS, body, namespace=self._namespace)
            return
        # the resourceVersion read above stays in metadata: a stale one is a 409
        body = {**config_map, "data": {**(config_map.get("data") or {}), **data}}
        self._client.update(CONFIGMAPS, self._name, body, namespace=self._namespace)

    def _decode(self, config_map: Obj) -> RuntimeState:
        data = config_map.get("data") or {}
        try:
            pauses = kube_objects.pauses_from_data(data)
        except _UNREADABLE as exc:  # the loop reads it the same way: pause everything
            self._log.error("runtime-state pauses unreadable, treated as paused: %s", exc)
            pauses = Pauses(everything=True)
        return RuntimeState(
            pauses,
            _notes(data, self._log),
            _audit(data, self._log),
            _breaker(data, self._log),
            _contested(data, self._log),
        )


def encode(state: RuntimeState) -> dict[str, str]:
    notes = {scope: _note_json(note) for scope, note in sorted(state.notes.items())}
    return {
        **kube_objects.pauses_to_data(state.pauses),
        DETAILS_KEY: json.dumps(notes, sort_keys=True),
        AUDIT_KEY: json.dumps([_record_json(r) for r in state.audit]),
        **encode_guards(state.breaker, state.contested),
    }


def _breaker(data: Mapping[str, str], log: logging.Logger) -> BreakerState:
    try:
        return decode_breaker(data)
    except GUARDS_UNREADABLE as exc:  # fail safe: a garbled breaker must not disarm it
        log.error("runtime-state breaker unreadable, treated as open: %s", exc)
        return BreakerState(
            open=True, reason=f"breaker state unreadable: {exc}", summary=UNREADABLE_BREAKER
        )


def _contested(data: Mapping[str, str], log: logging.Logger) -> dict[WorkloadRef, Contest]:
    try:
        return decode_contested(data)
    except GUARDS_UNREADABLE as exc:
        log.warning("runtime-state contested marks unreadable, ignored: %s", exc)
        return {}


def _notes(data: Mapping[str, str], log: logging.Logger) -> dict[str, PauseNote]:
    try:
        raw = parse_json(data.get(DETAILS_KEY) or "{}")
        return {str(scope): _note(value) for scope, value in raw.items()}
    except _UNREADABLE as exc:
        log.warning("runtime-state %s unreadable, ignored: %s", DETAILS_KEY, exc)
        return {}


def _audit(data: Mapping[str, str], log: logging.Logger) -> tuple[AuditRecord, ...]:
    try:
        raw = parse_json(data.get(AUDIT_KEY) or "[]")
        items = list(raw) if isinstance(raw, list) else []
    except _UNREADABLE as exc:
        log.warning("runtime-state %s unreadable, starting afresh: %s", AUDIT_KEY, exc)
        return ()
    records = []
    for item in items:
        try:
            records.append(_record(item))
        except _UNREADABLE as exc:  # one hand-edited record does not cost the others
            log.warning("skipping an unreadable audit record: %s", exc)
    return tuple(records)


def _note_json(note: PauseNote) -> dict[str, str]:
    return {"by": note.by, "reason": note.reason, "at": time_text(note.at)}


def _note(raw: Mapping[str, Any]) -> PauseNote:
    return PauseNote(by=str(raw["by"]), reason=str(raw["reason"]), at=time_of(raw["at"]))


def _record_json(record: AuditRecord) -> dict[str, Any]:
    fields = asdict(record)
    fields["at"] = time_text(record.at)
    fields["key"] = _key_json(record.key) if record.key is not None else None
    fields.pop("subject")
    fields.update(encode_subject(record.subject))
    return {key: value for key, value in fields.items() if value is not None}


def _key_json(key: RecordKey) -> dict[str, str]:
    fields = {"subject": key.subject, "detail": key.detail}
    if key.episode is not None:
        fields["episode"] = time_text(key.episode)
    return {name: value for name, value in fields.items() if value}


def _key(raw: Any) -> RecordKey | None:
    """A record written before keys existed has none: it is never taken for a repeat."""
    if raw is None:
        return None
    episode = raw.get("episode")
    return RecordKey(
        subject=str(raw["subject"]),
        episode=None if episode is None else time_of(episode),
        detail=str(raw.get("detail", "")),
    )


def _record(raw: Mapping[str, Any]) -> AuditRecord:
    return AuditRecord(
        at=time_of(raw["at"]),
        actor=str(raw["actor"]),
        action=str(raw["action"]),
        target=str(raw["target"]),
        reason=str(raw.get("reason", "")),
        outcome=str(raw.get("outcome", "done")),
        namespace=_optional(str, raw.get("namespace")),
        gpus=_optional(int, raw.get("gpus")),
        peak=_optional(float, raw.get("peak")),
        coverage=_optional(float, raw.get("coverage")),
        threshold=_optional(float, raw.get("threshold")),
        key=_key(raw.get("key")),
        subject=decode_subject(raw),
    )


def _optional(kind: Callable[[Any], T], value: Any) -> T | None:
    return None if value is None else kind(value)
