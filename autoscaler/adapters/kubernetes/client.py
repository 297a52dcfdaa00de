"""The one module that imports `kubernetes`: requests, patches, watches, and error mapping.

Everything above it sees plain dicts and our own errors. Every call names its
(apiGroup, resource, verb), and the client refuses any call not in `ALLOWED_CALLS` before
sending it, so the chart's RBAC and the code cannot drift apart silently. API discovery
(`GET /apis/<group>`) is a non-resource URL every authenticated user may read.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import quote

import urllib3
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from autoscaler.core.errors import (
    ClusterError,
    ClusterUnavailable,
    ConfigError,
    Conflict,
    Forbidden,
    NotFound,
    WatchExpired,
)
from autoscaler.settings.tree import ClusterSettings

Obj = dict[str, Any]
MERGE_PATCH = "application/merge-patch+json"

ALLOWED_CALLS: frozenset[tuple[str, str, str]] = frozenset(
    {
        *(("kueue.x-k8s.io", "workloads", v) for v in ("get", "list", "watch", "patch")),
        *(("ray.io", "rayclusters", v) for v in ("get", "list", "watch", "patch")),
        *(("ray.io", "rayjobs", v) for v in ("get", "list", "watch", "patch")),
        *(("batch", "jobs", v) for v in ("get", "list", "watch", "patch")),
        *(("", "pods", v) for v in ("get", "list", "watch")),
        ("", "events", "create"),
        *(("", "configmaps", v) for v in ("get", "create", "update", "patch")),
        *(("keda.sh", "scaledobjects", v) for v in ("get", "list", "watch")),
        *(("coordination.k8s.io", "leases", v) for v in ("get", "create", "update")),
        ("authentication.k8s.io", "tokenreviews", "create"),
        ("authorization.k8s.io", "subjectaccessreviews", "create"),
    }
)


@dataclass(frozen=True)
class ApiResource:
    group: str  # "" for the core group
    version: str
    plural: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, *, namespace: str | None = None, name: str | None = None) -> str:
        root = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace is not None:
            root += f"/namespaces/{quote(namespace, safe='')}"
        root += f"/{self.plural}"
        return root + (f"/{quote(name, safe='')}" if name is not None else "")

    def __str__(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural


PODS = ApiResource("", "v1", "pods")
EVENTS = ApiResource("", "v1", "events")
CONFIGMAPS = ApiResource("", "v1", "configmaps")
LEASES = ApiResource("coordination.k8s.io", "v1", "leases")
JOBS = ApiResource("batch", "v1", "jobs")
RAYCLUSTERS = ApiResource("ray.io", "v1", "rayclusters")
RAYJOBS = ApiResource("ray.io", "v1", "rayjobs")
SCALED_OBJECTS = ApiResource("keda.sh", "v1alpha1", "scaledobjects")
TOKEN_REVIEWS = ApiResource("authentication.k8s.io", "v1", "tokenreviews", namespaced=False)
ACCESS_REVIEWS = ApiResource("authorization.k8s.io", "v1", "subjectaccessreviews", namespaced=False)


def kueue_workloads(version: str) -> ApiResource:
    return ApiResource("kueue.x-k8s.io", version, "workloads")


@dataclass(frozen=True)
class ObjectList:
    items: tuple[Obj, ...]
    resource_version: str  # where a watch continues from


@dataclass(frozen=True)
class WatchEvent:
    type: str  # ADDED, MODIFIED, DELETED
    object: Obj


# Retry only a failed connect, quickly: the loop retries anything else next cycle, and an
# honoured Retry-After would stall a cycle far past its request timeout.
RETRIES = urllib3.Retry(
    total=2,
    connect=2,
    read=0,
    status=0,
    other=0,
    redirect=0,
    backoff_factor=0.1,
    respect_retry_after_header=False,
    raise_on_status=False,
)


def api_client_for(configuration: Any) -> Any:
    """An ApiClient for a loaded `kubernetes.client.Configuration`, with our retry policy."""
    configuration.retries = RETRIES
    return k8s.ApiClient(configuration)


def api_client_from_settings(settings: ClusterSettings) -> Any:
    """An ApiClient from the kubeconfig (path + context), or in-cluster config in a pod."""
    configuration = k8s.Configuration()
    try:
        if settings.kubeconfig is None and "KUBERNETES_SERVICE_HOST" in os.environ:
            k8s_config.load_incluster_config(  # type: ignore[no-untyped-call]
                client_configuration=configuration
            )
        else:
            k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
                config_file=str(settings.kubeconfig) if settings.kubeconfig else None,
                context=settings.context,
                client_configuration=configuration,
                persist_config=False,
            )
    except (k8s_config.ConfigException, OSError) as exc:
        raise ConfigError([f"cluster.kubeconfig: cannot load Kubernetes config: {exc}"]) from exc
    return api_client_for(configuration)


class KubeClient:
    """Small typed calls over one `kubernetes.client.ApiClient`; results are plain dicts."""

    def __init__(
        self,
        api_client: Any,
        *,
        timeout: timedelta,
        allowed: frozenset[tuple[str, str, str]] = ALLOWED_CALLS,
    ) -> None:
        self._api = api_client
        self._timeout = timeout.total_seconds()
        self._allowed = allowed

    @classmethod
    def from_settings(cls, settings: ClusterSettings) -> KubeClient:
        return cls(api_client_from_settings(settings), timeout=settings.request_timeout)

    def close(self) -> None:
        self._api.close()

    def group_versions(self, group: str) -> list[str]:
        """The versions a group serves, preferred first; [] when the group is not installed."""
        try:
            body = self._send("GET", f"/apis/{group}", what=f"discover {group}")
        except NotFound:
            return []
        versions = [v.get("version", "") for v in body.get("versions") or []]
        preferred = (body.get("preferredVersion") or {}).get("version")
        return sorted((v for v in versions if v), key=lambda v: v != preferred)

    def get(self, resource: ApiResource, name: str, *, namespace: str | None = None) -> Obj:
        self._check(resource, "get")
        path = resource.path(namespace=namespace, name=name)
        return self._send("GET", path, what=f"get {resource} {_where(namespace, name)}")

    def list_objects(
        self,
        resource: ApiResource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> ObjectList:
        """One list call: all namespaces unless `namespace` is given."""
        self._check(resource, "list")
        selectors = (("labelSelector", label_selector), ("fieldSelector", field_selector))
        query = [(key, value) for key, value in selectors if value]
        path = resource.path(namespace=namespace)
        body = self._send("GET", path, query=query, what=f"list {resource}")
        items = tuple(item for item in body.get("items") or [] if isinstance(item, dict))
        return ObjectList(items, str((body.get("metadata") or {}).get("resourceVersion", "")))

    def merge_patch(
        self, resource: ApiResource, name: str, body: Obj, *, namespace: str | None = None
    ) -> Obj:
        """A JSON merge patch (RFC 7386): exactly `body`, with no resourceVersion added."""
        self._check(resource, "patch")
        path = resource.path(namespace=namespace, name=name)
        what = f"patch {resource} {_where(namespace, name)}"
        return self._send("PATCH", path, body=body, content_type=MERGE_PATCH, what=what)

    def create(self, resource: ApiResource, body: Obj, *, namespace: str | None = None) -> Obj:
        self._check(resource, "create")
        path = resource.path(namespace=namespace)
        return self._send("POST", path, body=body, what=f"create {resource}")

    def update(
        self, resource: ApiResource, name: str, body: Obj, *, namespace: str | None = None
    ) -> Obj:
        """A PUT; the body's metadata.resourceVersion makes it fail with Conflict if stale."""
        self._check(resource, "update")
        path = resource.path(namespace=namespace, name=name)
        return self._send(
            "PUT", path, body=body, what=f"update {resource} {_where(namespace, name)}"
        )

    def review_token(self, token: str, *, audiences: tuple[str, ...] = ()) -> Obj:
        spec: Obj = {"token": token, **({"audiences": list(audiences)} if audiences else {})}
        review = {"apiVersion": TOKEN_REVIEWS.api_version, "kind": "TokenReview", "spec": spec}
        return self.create(TOKEN_REVIEWS, review)

    def review_access(self, spec: Mapping[str, Any]) -> Obj:
        kind = "SubjectAccessReview"
        review = {"apiVersion": ACCESS_REVIEWS.api_version, "kind": kind, "spec": dict(spec)}
        return self.create(ACCESS_REVIEWS, review)

    def watch(
        self,
        resource: ApiResource,
        *,
        resource_version: str,
        namespace: str | None = None,
        label_selector: str | None = None,
        timeout_seconds: int = 300,
    ) -> Iterator[WatchEvent]:
        """Changes after `resource_version`, reconnecting from the last one seen (bookmarks too).

        Runs until the consumer closes it; raises WatchExpired when the version is too old.
        """
        self._check(resource, "watch")
        version = resource_version
        while True:
            for kind, obj in self._watch_once(
                resource,
                namespace=namespace,
                label_selector=label_selector,
                resource_version=version,
                timeout_seconds=timeout_seconds,
            ):
                version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
                if kind != "BOOKMARK":
                    yield WatchEvent(kind, obj)

    def _watch_once(
        self,
        resource: ApiResource,
        *,
        namespace: str | None,
        label_selector: str | None,
        resource_version: str,
        timeout_seconds: int,
    ) -> Iterator[tuple[str, Obj]]:
        query = [
            ("watch", "true"),
            ("allowWatchBookmarks", "true"),
            ("resourceVersion", resource_version),
            ("timeoutSeconds", str(timeout_seconds)),
            *([("labelSelector", label_selector)] if label_selector else []),
        ]
        what = f"watch {resource}"
        timeout = (self._timeout, timeout_seconds + self._timeout)
        path = resource.path(namespace=namespace)
        response = self._open("GET", path, query=query, what=what, timeout=timeout)
        try:
            with _mapped_errors(what):
                for line in _lines(response.response.stream(amt=None, decode_content=True)):
                    yield _watch_event(json.loads(line), what)
        finally:
            response.response.release_conn()

    def _check(self, resource: ApiResource, verb: str) -> None:
        if (resource.group, resource.plural, verb) not in self._allowed:
            raise Forbidden(
                f"refused: {verb} {resource} is not among the calls this service may make"
            )

    def _send(
        self,
        method: str,
        path: str,
        *,
        what: str,
        query: list[tuple[str, str]] | None = None,
        body: Obj | None = None,
        content_type: str = "application/json",
    ) -> Obj:
        response = self._open(
            method,
            path,
            query=query or [],
            what=what,
            timeout=self._timeout,
            body=body,
            content_type=content_type,
        )
        with _mapped_errors(what):
            decoded = json.loads(response.read() or b"{}")
        if not isinstance(decoded, dict):
            raise ClusterError(f"{what}: the API answered with a non-object")
        return decoded

    def _open(
        self,
        method: str,
        path: str,
        *,
        query: list[tuple[str, str]],
        what: str,
        timeout: float | tuple[float, float],
        body: Obj | None = None,
        content_type: str = "application/json",
    ) -> Any:
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        with _mapped_errors(what):
            request = self._api.param_serialize(
                method=method,
                resource_path=path,
                query_params=query,
                header_params=headers,
                body=body,
                auth_settings=["BearerToken"],
            )
            response = self._api.call_api(*request, _request_timeout=timeout)
            if not 200 <= response.status <= 299:
                response.read()
                raise k8s.ApiException(http_resp=response)
        return response


def _lines(chunks: Iterator[bytes]) -> Iterator[str]:
    """Whole non-empty lines of a streamed body; a watch sends one JSON event per line."""
    pending = b""
    for chunk in chunks:
        pending += chunk
        *complete, pending = pending.split(b"\n")
        yield from (line.decode() for line in complete if line.strip())
    if pending.strip():
        yield pending.decode()


def _watch_event(event: Obj, what: str) -> tuple[str, Obj]:
    kind, obj = str(event.get("type", "")), event.get("object")
    if not isinstance(obj, dict):
        raise ClusterError(f"{what}: malformed watch event")
    if kind == "ERROR":
        code = int(obj.get("code") or 500)
        raise _error_for(code, what=what, message=str(obj.get("message", "")), retry_after=None)
    return kind, obj


@contextmanager
def _mapped_errors(what: str) -> Iterator[None]:
    """The one place where client-library and transport errors become our ClusterErrors."""
    try:
        yield
    except k8s.ApiException as exc:
        status = int(exc.status or 0)
        raise _error_for(
            status, what=what, message=_status_message(exc), retry_after=_retry_after(exc)
        ) from exc
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        raise ClusterUnavailable(f"{what}: Kubernetes API unreachable: {exc}") from exc
    except ValueError as exc:  # an unparsable response body
        raise ClusterError(f"{what}: unreadable answer: {exc}") from exc


def _error_for(status: int, *, what: str, message: str, retry_after: str | None) -> ClusterError:
    text = f"{what}: {status} {message}".strip()
    if status == 404:
        return NotFound(text)
    if status == 409:
        return Conflict(text)
    if status in (401, 403):
        return Forbidden(text)
    if status == 410:
        return WatchExpired(text)
    if status in (0, 429) or status >= 500:
        hint = f" (retry after {retry_after}s)" if retry_after else ""
        return ClusterUnavailable(text + hint)
    return ClusterError(text)


def _status_message(exc: Any) -> str:
    """The Status object's message when the body is one, else the HTTP reason."""
    try:
        body = json.loads(exc.body or "")
    except (TypeError, ValueError):
        return str(exc.reason or "")
    return str(body.get("message") or exc.reason or "") if isinstance(body, dict) else ""


def _retry_after(exc: Any) -> str | None:
    headers = exc.headers or {}
    value = headers.get("Retry-After")
    return str(value) if value else None


def _where(namespace: str | None, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name
