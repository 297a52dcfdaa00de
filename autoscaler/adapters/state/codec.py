"""How the guards' memory is spelled in the runtime-state ConfigMap (JSON under two keys).

    breaker    {"open": bool, "since": RFC 3339 | null, "reason": str, "normalCycles": int,
                "summary": str (the reason without workload names; absent when written before it)}
    contested  {"<namespace>/<name>": {"since": RFC 3339, "reason": str}}

Both keys are optional: a ConfigMap written before the guards existed reads as a closed
breaker and no marks. A breaker entry that cannot be read counts as OPEN, so a garbled
hand edit cannot disarm it (an admin resets it through the API).

An audit record's subject (the workload as it stood when acted on) is spelled flat, beside
the record's own fields, each key optional so that records written before it read as
"not known":

    rule, beneficiary ("namespace/name"), beneficiaryQueue (the waiter's ClusterQueue),
    queue, clusterQueue, owner ("Kind/name"),
    idleSince (RFC 3339), evidence (what the evidence signals saw, on one line), held
    ("not-running" when the GPUs were held without work rather than idle)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from autoscaler.core.documents import parse_json
from autoscaler.domain.annotations import parse_time, time_text
from autoscaler.domain.audit.subjects import Subject
from autoscaler.domain.guards.breaker import CLOSED, BreakerState
from autoscaler.domain.guards.screen import Contest
from autoscaler.domain.models import WorkloadRef

BREAKER_KEY = "breaker"
CONTESTED_KEY = "contested"
UNREADABLE = (ValueError, TypeError, KeyError, AttributeError)


def encode_guards(
    breaker: BreakerState, contested: Mapping[WorkloadRef, Contest]
) -> dict[str, str]:
    marks = {
        str(ref): {"since": time_text(mark.since), "reason": mark.reason}
        for ref, mark in sorted(contested.items())
    }
    return {
        BREAKER_KEY: json.dumps(
            {
                "open": breaker.open,
                "since": time_text(breaker.since) if breaker.since else None,
                "reason": breaker.reason,
                "normalCycles": breaker.normal_cycles,
                **({"summary": breaker.summary} if breaker.summary else {}),
            },
            sort_keys=True,
        ),
        CONTESTED_KEY: json.dumps(marks, sort_keys=True),
    }


def decode_breaker(data: Mapping[str, str]) -> BreakerState:
    """The breaker; raises one of UNREADABLE for a garbled entry (the caller opens it)."""
    text = data.get(BREAKER_KEY)
    if not text:
        return CLOSED
    raw = parse_json(text)
    since = raw.get("since")
    state = BreakerState(
        open=_bool(raw["open"]),
        since=time_of(since) if since else None,
        reason=str(raw.get("reason", "")),
        normal_cycles=int(raw.get("normalCycles", 0)),
        summary=str(raw.get("summary", "")),
    )
    return state if state.open else CLOSED


def decode_contested(data: Mapping[str, str]) -> dict[WorkloadRef, Contest]:
    """The marks; raises one of UNREADABLE for a garbled entry."""
    raw = parse_json(data.get(CONTESTED_KEY) or "{}")
    return {
        ref_of(str(key)): Contest(since=time_of(value["since"]), reason=str(value["reason"]))
        for key, value in raw.items()
    }


_SUBJECT_TEXTS = {
    "rule": "rule",
    "beneficiary": "beneficiary",
    "beneficiaryQueue": "beneficiary_queue",
    "queue": "queue",
    "clusterQueue": "cluster_queue",
    "cohort": "cohort",
    "owner": "owner",
    "evidence": "evidence",
    "held": "held",
    "stoppedAfter": "stopped_after",
}
SUBJECT_KEYS = (*_SUBJECT_TEXTS, "idleSince", "beneficiaryGpus")


def encode_subject(subject: Subject | None) -> dict[str, str | int]:
    """The subject's known fields (none for None)."""
    if subject is None:
        return {}
    texts: dict[str, str | int | None] = {
        key: getattr(subject, name) for key, name in _SUBJECT_TEXTS.items()
    }
    if subject.idle_since is not None:
        texts["idleSince"] = time_text(subject.idle_since)
    texts["beneficiaryGpus"] = subject.beneficiary_gpus
    return {key: value for key, value in texts.items() if value is not None}


def decode_subject(raw: Mapping[str, Any]) -> Subject | None:
    """None for a record with none of the keys (written before subjects, or by a person)."""
    if not any(raw.get(key) is not None for key in SUBJECT_KEYS):
        return None
    texts = {name: raw.get(key) for key, name in _SUBJECT_TEXTS.items()}
    since, gpus = raw.get("idleSince"), raw.get("beneficiaryGpus")
    return Subject(
        **{name: None if value is None else str(value) for name, value in texts.items()},
        idle_since=None if since is None else time_of(since),
        beneficiary_gpus=None if gpus is None else int(gpus),
    )


def ref_of(target: str) -> WorkloadRef:
    namespace, slash, name = target.partition("/")
    if not slash or not namespace or not name:
        raise ValueError(f"not namespace/name: {target!r}")
    return WorkloadRef(namespace, name)


def time_of(value: Any) -> datetime:
    parsed = parse_time(str(value))
    if parsed is None:
        raise ValueError(f"not an RFC 3339 time: {value!r}")
    return parsed


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"not a boolean: {value!r}")
    return value
