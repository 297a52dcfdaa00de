"""Kubernetes `Status` failures: one exception type carrying the code, reason and details."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .catalog import ResourceType

REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


class ApiError(Exception):
    """A failure the server answers with a `Status` object (and the same HTTP code)."""

    def __init__(
        self,
        code: int,
        message: str,
        *,
        reason: str | None = None,
        details: dict[str, Any] | None = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason or REASONS.get(code, "Unknown")
        self.details = dict(details or {})
        self.retry_after = retry_after
        if retry_after is not None:
            self.details["retryAfterSeconds"] = retry_after

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            body["details"] = self.details
        return body


def _details(resource: ResourceType, name: str) -> dict[str, Any]:
    return {"name": name, "group": resource.group, "kind": resource.plural}


def not_found(resource: ResourceType, name: str) -> ApiError:
    return ApiError(404, f'{resource.key} "{name}" not found', details=_details(resource, name))


def already_exists(resource: ResourceType, name: str) -> ApiError:
    return ApiError(
        409,
        f'{resource.key} "{name}" already exists',
        reason="AlreadyExists",
        details=_details(resource, name),
    )


def conflict(resource: ResourceType, name: str) -> ApiError:
    message = (
        f'Operation cannot be fulfilled on {resource.key} "{name}": the object has been '
        "modified; please apply your changes to the latest version and try again"
    )
    return ApiError(409, message, details=_details(resource, name))


def uid_precondition_failed(
    resource: ResourceType, name: str, *, expected: str, found: Mapping[str, Any]
) -> ApiError:
    """A delete whose preconditions.uid names another object than the one stored."""
    message = (
        f"Precondition failed: UID in precondition: {expected}, "
        f"UID in object meta: {found.get('uid')}"
    )
    return ApiError(409, message, details=_details(resource, name))


def invalid(resource: ResourceType, name: str, causes: list[tuple[str, str]]) -> ApiError:
    """422 naming each (field, message) like the API server's field errors."""
    kind = f"{resource.kind}.{resource.group}" if resource.group else resource.kind
    text = ", ".join(f"{field}: {message}" for field, message in causes)
    details = {
        "name": name,
        "group": resource.group,
        "kind": resource.kind,
        "causes": [
            {"reason": "FieldValueInvalid", "message": message, "field": field}
            for field, message in causes
        ],
    }
    return ApiError(422, f'{kind} "{name}" is invalid: {text}', details=details)


def gone(resource_version: int, oldest: int) -> ApiError:
    return ApiError(410, f"too old resource version: {resource_version} ({oldest})")


def bad_request(message: str) -> ApiError:
    return ApiError(400, message)
