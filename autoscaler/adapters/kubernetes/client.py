"""The one module that imports `kubernetes`: requests, patches, watches, and error mapping.

Everything above it sees plain dicts and our own errors (mapped in `errors`). Every call
names its (apiGroup, resource, verb), and the client refuses any call not in
`resources.ALLOWED_CALLS` before sending it. API discovery (`GET /apis/<group>`) is a
non-resource URL every authenticated user may read.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import urllib3
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from autoscaler.adapters.kubernetes.errors import (
    api_exception_error,
    transport_error,
)
from autoscaler.adapters.kubernetes.resources import (
    ALLOWED_CALLS,
    MERGE_PATCH,
    ApiResource,
    Obj,
    ObjectList,
)
from autoscaler.adapters.kubernetes.watching import WatchEvent, WatchInterrupt, lines, watch_event
from autoscaler.core.documents import read_yaml_file
from autoscaler.core.errors import ClusterError, ConfigError, Forbidden, NotFound
from autoscaler.settings.tree import ClusterSettings

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
            if settings.kubeconfig is not None:  # within bounds before the client's own reader
                read_yaml_file(settings.kubeconfig, key="cluster.kubeconfig")
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

    def delete(
        self, resource: ApiResource, name: str, *, namespace: str | None = None, uid: str
    ) -> Obj:
        """A DELETE only while the object is still `uid` (Conflict otherwise); what it owns is
        collected in the background by the API server's garbage collector."""
        self._check(resource, "delete")
        path = resource.path(namespace=namespace, name=name)
        options = {"propagationPolicy": "Background", "preconditions": {"uid": uid}}
        what = f"delete {resource} {_where(namespace, name)}"
        return self._send("DELETE", path, body=options, what=what)

    def watch(
        self,
        resource: ApiResource,
        *,
        resource_version: str,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int = 300,
        interrupt: WatchInterrupt | None = None,
    ) -> Iterator[WatchEvent]:
        """Changes after `resource_version`, reconnecting from the last one seen (bookmarks too).

        Runs until the consumer closes it; raises WatchExpired when the version is too old.
        `interrupt` ends the stream being read (the resource decides whether to reopen).
        """
        self._check(resource, "watch")
        version, interrupt = resource_version, interrupt or WatchInterrupt()
        while not interrupt.fired:
            for kind, obj in self._watch_once(
                resource,
                namespace=namespace,
                label_selector=label_selector,
                field_selector=field_selector,
                resource_version=version,
                timeout_seconds=timeout_seconds,
                interrupt=interrupt,
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
        field_selector: str | None,
        resource_version: str,
        timeout_seconds: int,
        interrupt: WatchInterrupt,
    ) -> Iterator[tuple[str, Obj]]:
        query = [
            ("watch", "true"),
            ("allowWatchBookmarks", "true"),
            ("resourceVersion", resource_version),
            ("timeoutSeconds", str(timeout_seconds)),
            *([("labelSelector", label_selector)] if label_selector else []),
            *([("fieldSelector", field_selector)] if field_selector else []),
        ]
        what = f"watch {resource}"
        timeout = (self._timeout, timeout_seconds + self._timeout)
        path = resource.path(namespace=namespace)
        response = self._open("GET", path, query=query, what=what, timeout=timeout)
        try:
            with _mapped_errors(what), interrupt.reading(response.response):
                for line in lines(response.response.stream(amt=None, decode_content=True)):
                    yield watch_event(json.loads(line), what)
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


@contextmanager
def _mapped_errors(what: str) -> Iterator[None]:
    """The one place where client-library and transport errors become our ClusterErrors."""
    try:
        yield
    except k8s.ApiException as exc:
        raise api_exception_error(exc, what=what) from exc
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        raise transport_error(exc, what=what) from exc
    except ValueError as exc:  # an unparsable response body
        raise ClusterError(f"{what}: unreadable answer: {exc}") from exc


def _where(namespace: str | None, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name
