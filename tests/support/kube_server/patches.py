"""JSON merge patch (RFC 7386), the only patch type the test server applies.

Strategic merge patch is accepted and applied as a merge patch: for the objects the autoscaler
touches the two differ only in how lists of objects merge, which it never patches.
"""

from __future__ import annotations

import copy
from typing import Any

from .errors import ApiError

MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
SUPPORTED_PATCH_TYPES = (MERGE_PATCH, STRATEGIC_MERGE_PATCH)


def merge_patch(target: Any, patch: Any) -> Any:
    """Return `target` with `patch` merged in: objects merge key by key, null deletes a key,
    anything else (lists included) replaces the value. Neither input is modified."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def check_patch_type(content_type: str | None) -> None:
    media_type = (content_type or "").split(";")[0].strip()
    if media_type not in SUPPORTED_PATCH_TYPES:
        raise ApiError(
            415,
            f"the test API server does not apply {media_type or 'empty'} patches; "
            f"supported: {', '.join(SUPPORTED_PATCH_TYPES)}",
        )
