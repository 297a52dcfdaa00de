"""The metadata part of the merge patches the actuators send: annotations (a None value
removes one), guarded by a resourceVersion when the write rests on what was read."""

from __future__ import annotations

from collections.abc import Mapping

from autoscaler.adapters.kubernetes.resources import Obj


def annotations_patch(
    annotations: Mapping[str, str | None], *, resource_version: str | None = None
) -> Obj:
    """`{"annotations": ...}`, with `resourceVersion` when given (not None or empty): the API
    server then applies the patch only to that version of the object (else 409 Conflict)."""
    metadata: Obj = {"annotations": dict(annotations)}
    if resource_version:
        metadata["resourceVersion"] = resource_version
    return metadata
