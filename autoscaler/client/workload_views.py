"""Workloads as a person reads them: the list, one workload with its decision and
evidence, and the rule explanation. The class is worded as every surface words it
(`domain/usage/words.py`); every value is escaped before it reaches the terminal."""

from __future__ import annotations

from typing import Any

from autoscaler.client.render import Json, minutes, moment, percent, short, table
from autoscaler.domain.policy.management import DEFAULT_MANAGER, MANAGERS
from autoscaler.domain.text import escape
from autoscaler.domain.usage.words import class_text, evidence_text

WORKLOAD_COLUMNS = (
    "NAMESPACE",
    "OWNER",
    "WORKLOAD",
    "GPUS",
    "STATE",
    "PEAK",
    "IDLE-LEFT",
    "STOP-AT",
    "EVIDENCE",
    "REASON",
)


def workloads(body: Json) -> str:
    items = body.get("items") or []
    if not items:
        return "no workloads" + ("" if body.get("snapshot") else " (no cycle has finished yet)")
    rows = [_workload_row(item) for item in items]
    if all(_manager(item) == DEFAULT_MANAGER for item in items):
        return table(WORKLOAD_COLUMNS, rows)  # a Kueue-only fleet reads as it always did
    # Some rows are RayClusters the service suspends itself: say who manages each.
    managers = [[row[0], _manager(item), *row[1:]] for row, item in zip(rows, items, strict=True)]
    return table((WORKLOAD_COLUMNS[0], "MANAGER", *WORKLOAD_COLUMNS[1:]), managers)


def workload(body: Json) -> str:
    exemption = body.get("exemption") or {}
    pairs = [
        ("Workload", f"{body.get('namespace')}/{body.get('name')}"),
        ("Owner", _owner_known(body)),
        *_manager_pairs(body),
        ("Queue", body.get("queue") or "-"),
        ("State", _class(body)),
        ("Action", body.get("action")),
        ("Reason", body.get("reason")),
        *_evidence_pairs(body),
        ("GPUs", body.get("gpus")),
        ("Peak utilization", percent(body.get("peakUtilization"))),
        ("Coverage", percent(body.get("coverage"))),
        ("Idle since", moment(body.get("idleSince") or "-")),
        ("Time left", minutes(body.get("timeLeftSeconds"))),
        ("Exempt until", _exempt_until(exemption) if exemption else "-"),
        *_notice_pairs(body.get("notice") or {}),
        *_stopped_pairs(body.get("stopped") or {}),
        *_via_kueue_pairs(body.get("viaKueue") or {}),
        *_stop_pairs(body),
    ]
    if exemption:
        pairs.append(
            ("Exempted by", f"{exemption.get('by') or '?'}: {exemption.get('reason') or ''}")
        )
    return "\n".join(f"{key + ':' if key else '':<18}{escape(str(value))}" for key, value in pairs)


def explanation(body: Json) -> str:
    """The rule, each earlier rule's miss, then the decision; every value escaped."""
    found = body.get("workload") or {}
    rule = str(body.get("rule"))
    verdict = "matched" if body.get("matched") else f"cannot be evaluated: {body.get('unknown')}"
    lines = [f"{'Rule:':<18}{escape(rule)} ({escape(verdict)})"]
    lines += [
        f"{'  not ' + escape(str(miss.get('rule'))) + ':':<18}{escape(str(miss.get('why')))}"
        for miss in body.get("misses") or []
    ]
    models = ", ".join(str(model) for model in body.get("gpuModels") or []) or "-"
    lines.append(f"{'GPU models:':<18}{escape(models)}")
    if body.get("ownerKind"):
        lines.append(f"{'Owner kind:':<18}{escape(_kind_text(body['ownerKind']))}")
    lines += _waiters(body.get("waiters"))
    return "\n".join([*lines, workload(found)])


def _waiters(judged: Json | None) -> list[str]:
    """The cycle's waiter judgement: counts, "fit unknown" by class, this workload's own."""
    if not judged:
        return []
    outcomes = ", ".join(f"{n} {k}" for k, n in sorted((judged.get("outcomes") or {}).items()))
    unknown = ", ".join(f"{k} {n}" for k, n in sorted((judged.get("fitUnknown") or {}).items()))
    text = f"{judged.get('judged', 0)}" + (f" ({outcomes})" if outcomes else "")
    text += f"; fit unknown: {unknown}" if unknown else ""
    if judged.get("failure"):
        text += f"; who waits is unknown: {judged['failure']}"
    lines = [f"{'Waiters judged:':<18}{escape(text)}"]
    if judged.get("judgement"):
        lines.append(f"{'Freed for:':<18}{escape(str(judged['judgement']))}")
    return lines


def _workload_row(item: Json) -> list[str]:
    return [
        str(item.get("namespace", "")),
        _owner(item),
        str(item.get("name", "")),
        str(item.get("gpus", "")),
        _class(item),
        percent(item.get("peakUtilization")),
        minutes(item.get("timeLeftSeconds")),
        _stop_at(item),
        short(evidence_text(_lines(item.get("evidence"))), 40),
        short(str(item.get("reason", ""))),
    ]


def _stop_at(item: Json) -> str:
    """The planned stop (or deletion), else the snooze's end: what to act on before. A stopped
    one says when it stopped: the warning's plan it may still carry is past."""
    notice, stopped = item.get("notice") or {}, item.get("stopped") or {}
    if notice.get("deleteAt"):
        return f"delete {moment(notice['deleteAt'])}"
    if stopped:
        return f"stopped {moment(stopped['at'])}" if stopped.get("at") else "stopped"
    if notice.get("stopAt"):
        return moment(notice["stopAt"])
    return f"kept {moment(notice['snoozedUntil'])}" if notice.get("snoozedUntil") else "-"


def _notice_pairs(notice: Json) -> list[tuple[str, str]]:
    """The warning, snooze and planned stop, each only when there is one."""
    snoozed = notice.get("snoozedUntil")
    by = f" (by {notice.get('snoozedBy') or '?'})" if snoozed else ""
    pairs = [
        ("Warned at", _time(notice.get("warnedAt"))),
        ("Stop planned at", _time(notice.get("stopAt"))),
        ("Snoozed until", f"{moment(snoozed)}{by}" if snoozed else None),
        ("Deletion at", _time(notice.get("deleteAt"))),
    ]
    return [(key, value) for key, value in pairs if value]


def _stopped_pairs(stopped: Json) -> list[tuple[str, str]]:
    """A stopped workload's story, each line only when known: when, by whom, for whom, on
    what, and the command that brings it back (or that it comes back by itself)."""
    if not stopped:
        return []
    back = "Comes back" if stopped.get("comesBackByItself") else "Bring back with"
    pairs = [
        ("Stopped at", _time(stopped.get("at"))),
        ("Stopped by", stopped.get("by")),
        ("Stopped for", stopped.get("waiter")),
        ("Stopped because", stopped.get("reason")),
        ("Evidence at stop", stopped.get("evidence")),
        (back, stopped.get("bringBack")),
    ]
    return [(key, str(value)) for key, value in pairs if value]


def _via_kueue_pairs(found: Json) -> list[tuple[str, str]]:
    """Rule `reclaim: via-kueue`: "Marked for Kueue's preemption since ...", or why it does
    nothing ("via-kueue does nothing: PriorityBoost is not on in Kueue's Configuration"),
    with the gate as read; nothing under another rule."""
    if not found:
        return []
    return [("Via Kueue", str(found.get("reason"))), ("Kueue gate", str(found.get("gateLine")))]


def _class(item: Json) -> str:
    """The state's word; idle-held with its count: "idle-held (2 of 4 GPUs idle)"."""
    return class_text(
        str(item.get("state", "")),
        idle_held_gpus=int(item.get("idleHeldGpus") or 0),
        gpus=int(item.get("gpus") or 0),
    )


def _evidence_pairs(item: Json) -> list[tuple[str, str]]:
    """One "Evidence" line per signal that saw something, or a single "-"."""
    lines = _lines(item.get("evidence")) or [evidence_text(())]
    return [("Evidence" if i == 0 else "", line) for i, line in enumerate(lines)]


def _lines(value: Any) -> list[str]:
    return [str(line) for line in value] if isinstance(value, list) else []


def _manager(item: Json) -> str:
    """An answer without a manager is Kueue's (a service older than ISSUE 17)."""
    return str(item.get("manager") or DEFAULT_MANAGER)


def _manager_pairs(item: Json) -> list[tuple[str, str]]:
    """ "Managed by" only for a row another manager than Kueue admits, with the field its stop
    sets: "kai (spec.suspend)"."""
    manager = _manager(item)
    if manager == DEFAULT_MANAGER:
        return []
    row = next((row for known, row in MANAGERS.items() if known == manager), None)
    return [("Managed by", f"{manager} ({row.stop_field})" if row else manager)]


def _owner(item: Json) -> str:
    owner = item.get("owner") or {}
    return f"{owner.get('kind')}/{owner.get('name')}" if owner else "-"


def _owner_known(item: Json) -> str:
    """As people know it: "RayCluster team-a/alice-rc" (an older service: "Kind/name")."""
    owner = item.get("owner") or {}
    return str(owner.get("display") or _owner(item))


def _stop_pairs(item: Json) -> list[tuple[str, str]]:
    """What a stop means for its kind, and how it comes back (an older service: none)."""
    pairs = [("Stop means", item.get("stopMeans")), ("Bring back", item.get("bringBack"))]
    return [(key, str(value)) for key, value in pairs if value]


def _kind_text(kind: Json) -> str:
    """Whether the service acts on the owner's kind: "PyTorchJob: opt-in (a stop restarts
    the job), not enabled here (cluster.ownerKinds.PyTorchJob.enabled): never stopped"."""
    name = str(kind.get("kind"))
    if not kind.get("known"):
        return f"{name}: not a kind the service knows: never stopped"
    opt_in = kind.get("optIn")
    said = f"{name}: opt-in (a stop restarts the job)" if opt_in else f"{name}: on by default"
    enabled = kind.get("enabled")
    if enabled is None:
        return said
    if enabled:
        return f"{said}, enabled here"
    return f"{said}, not enabled here (cluster.ownerKinds.{name}.enabled): never stopped"


def _time(value: Any) -> str | None:
    """A time as the CLI prints it (`render.moment`); None when there is none."""
    return moment(value) if value else None


def _exempt_until(found: Json) -> str:
    return "indefinitely" if found.get("indefinite") else moment(found.get("until"))
