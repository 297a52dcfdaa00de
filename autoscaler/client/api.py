"""The Python client of the REST API, on httpx. Answers are the API's JSON, as dicts."""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import datetime, timedelta
from types import TracebackType
from typing import Any
from urllib.parse import quote

import httpx

from autoscaler.client.credentials import TokenSources, find_token
from autoscaler.client.kubeconfig import kubeconfig_token
from autoscaler.domain.durations import format_duration
from autoscaler.domain.problem_types import BLANK

DEFAULT_URL = "http://localhost:8080"  # after next_steps.PORT_FORWARD
URL_VARIABLE = "IGA_URL"
Json = dict[str, Any]


class ClientError(Exception):
    """The API refused (4xx/5xx) or could not be reached (status 0); `type`: the problem's
    type (RFC 9457: `about:blank` when the answer named none), the kind a client acts on
    (`ProblemType`), never the detail's words; `server`: the base address asked, for the next
    step the command line names (`next_steps.py`)."""

    def __init__(
        self,
        status: int,
        detail: str,
        fields: list[Json] | None = None,
        *,
        server: str = "",
        type: str = BLANK,  # RFC 9457's name for it, as in the body
    ) -> None:
        super().__init__(f"{status} {detail}" if status else detail)
        self.status = status
        self.detail = detail
        self.fields = fields or []
        self.server = server
        self.type = type


class AutoscalerClient:
    def __init__(
        self,
        base_url: str | None = None,
        *,
        token: str | None = None,
        timeout: float = 10.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        url = base_url or os.environ.get(URL_VARIABLE) or DEFAULT_URL
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(
            base_url=url.rstrip("/"), headers=headers, timeout=timeout, transport=transport
        )

    @classmethod
    def from_kubeconfig(
        cls,
        base_url: str | None = None,
        *,
        context: str | None = None,
        environ: Mapping[str, str] | None = None,
        **kwargs: Any,
    ) -> AutoscalerClient:
        """Authenticated with the token of the kubeconfig's (current) context."""
        return cls(base_url, token=kubeconfig_token(context=context, environ=environ), **kwargs)

    @classmethod
    def from_environment(
        cls,
        base_url: str | None = None,
        *,
        environ: Mapping[str, str] | None = None,
        **kwargs: Any,
    ) -> AutoscalerClient:
        """Authenticated like the CLI: `IGA_TOKEN`, else the kubeconfig's current context."""
        return cls(base_url, token=find_token(TokenSources(), environ=environ), **kwargs)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> AutoscalerClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def workloads(
        self, *, namespace: str | None = None, queue: str | None = None, state: str | None = None
    ) -> Json:
        query = {"namespace": namespace, "queue": queue, "state": state}
        params = {key: value for key, value in query.items() if value is not None}
        return self._call("GET", "/api/v1/workloads", params=params)

    def workload(self, namespace: str, name: str) -> Json:
        return self._call("GET", _workload_path(namespace, name))

    def explain(self, namespace: str, name: str) -> Json:
        """Which rule the workload falls under, and why each earlier rule did not match."""
        return self._call("GET", _workload_path(namespace, name) + "/explain")

    def exempt(
        self,
        namespace: str,
        name: str,
        *,
        reason: str,
        duration: str | timedelta | None = None,
        until: datetime | None = None,
    ) -> Json:
        """Exempt for a duration (`"4h"` or a timedelta) or until a timezone-aware time."""
        body: Json = {"reason": reason}
        if isinstance(duration, timedelta):
            body["duration"] = format_duration(duration)
        elif duration is not None:
            body["duration"] = duration
        if until is not None:
            body["until"] = until.isoformat()
        return self._call("PUT", _workload_path(namespace, name, "exemption"), json=body)

    def unexempt(self, namespace: str, name: str) -> Json:
        return self._call("DELETE", _workload_path(namespace, name, "exemption"))

    def snooze(self, namespace: str, name: str, *, duration: str | timedelta, reason: str) -> Json:
        """Keep a warned workload running: push its planned stop back by `duration`, clipped
        to its rule's longest snooze (the answer's `clippedFrom` says when it was)."""
        length = format_duration(duration) if isinstance(duration, timedelta) else duration
        body: Json = {"duration": length, "reason": reason}
        return self._call("POST", _workload_path(namespace, name, "snooze"), json=body)

    def unsnooze(self, namespace: str, name: str) -> Json:
        return self._call("DELETE", _workload_path(namespace, name, "snooze"))

    def pauses(self) -> Json:
        return self._call("GET", "/api/v1/pauses")

    def pause(self, namespace: str | None = None, *, reason: str) -> Json:
        """Pause one namespace, or the whole service (admins) when no namespace is given."""
        return self._call("POST", _scope(namespace) + "/pause", json={"reason": reason})

    def resume(self, namespace: str | None = None, *, reason: str) -> Json:
        return self._call("POST", _scope(namespace) + "/resume", json={"reason": reason})

    def reactivate(self, namespace: str, name: str, *, reason: str) -> Json:
        path = _workload_path(namespace, name, "reactivate")
        return self._call("POST", path, json={"reason": reason})

    def deactivate(self, namespace: str, name: str, *, reason: str) -> Json:
        """Admins only: deactivate now, whatever the usage."""
        path = _workload_path(namespace, name, "deactivate")
        return self._call("POST", path, json={"reason": reason})

    def decisions(self, *, limit: int = 50, offset: int = 0, namespace: str | None = None) -> Json:
        params: dict[str, Any] = {"limit": limit, "offset": offset}
        if namespace is not None:
            params["namespace"] = namespace
        return self._call("GET", "/api/v1/decisions", params=params)

    def report(self, *, since: str, namespace: str | None = None) -> Json:
        """The savings report over the period `since` (a duration: 24h, 7d)."""
        params: dict[str, Any] = {"since": since}
        if namespace is not None:
            params["namespace"] = namespace
        return self._call("GET", "/api/v1/report", params=params)

    def breaker(self) -> Json:
        """The mass-idle circuit breaker as stored now."""
        return self._call("GET", "/api/v1/breaker")

    def reset_breaker(self, *, reason: str) -> Json:
        """Admins only: close the breaker; deactivations resume next cycle, within the caps."""
        return self._call("POST", "/api/v1/breaker/reset", json={"reason": reason})

    def uncontest(self, namespace: str, name: str) -> Json:
        """Admins only: clear a contested mark, so the loop may deactivate the workload again."""
        return self._call("DELETE", _workload_path(namespace, name, "contested"))

    def _call(self, method: str, path: str, **kwargs: Any) -> Json:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            server = str(self._http.base_url)
            raise ClientError(0, f"cannot reach {server}: {exc}", server=server) from exc
        body = _json(response)
        if response.is_error:
            detail = str(body.get("detail") or response.reason_phrase)
            fields = list(body.get("fields") or [])
            raise ClientError(
                response.status_code,
                detail,
                fields,
                server=str(self._http.base_url),
                type=str(body.get("type") or BLANK),
            )
        return body


def _workload_path(namespace: str, name: str, *rest: str) -> str:
    return "/".join(["/api/v1/workloads", quote(namespace, safe=""), quote(name, safe=""), *rest])


def _scope(namespace: str | None) -> str:
    return f"/api/v1/namespaces/{quote(namespace, safe='')}" if namespace else "/api/v1"


def _json(response: httpx.Response) -> Json:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}
