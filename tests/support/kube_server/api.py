"""The resource verbs (list, get, create, update, patch, delete, reviews), free of HTTP details."""

from __future__ import annotations

import base64
import copy
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .errors import ApiError, bad_request, invalid
from .objects import Admit, Object
from .patches import check_patch_type
from .reviews import Reviews
from .routes import ResourceRoute
from .store import Store

if TYPE_CHECKING:
    from ..crd_validation import CrdSchemas

Reply = tuple[int, Object]


class ResourceApi:
    def __init__(self, *, store: Store, reviews: Reviews, schemas: CrdSchemas | None) -> None:
        self.store = store
        self.reviews = reviews
        self.schemas = schemas  # None: writes of CRD-backed kinds are not validated

    def handle(
        self,
        method: str,
        route: ResourceRoute,
        *,
        query: Mapping[str, str],
        body: Any,
        content_type: str | None,
    ) -> Reply:
        if route.resource.review:
            return self._review(method, route, body)
        if route.name is None:
            return self._collection(method, route, query=query, body=body)
        if method == "GET":
            return 200, self._served(
                route, self.store.get(route.resource, name=route.name, namespace=route.namespace)
            )
        if method == "PUT":
            return 200, self._served(route, self._replace(route, body))
        if method == "PATCH":
            check_patch_type(content_type)
            return 200, self._served(
                route,
                self.store.patch(
                    route.resource,
                    name=route.name,
                    namespace=route.namespace,
                    patch=_require_object(body),
                    subresource=route.subresource,
                    admit=self._admission(route),
                ),
            )
        if method == "DELETE" and route.subresource is None:
            preconditions = (body or {}).get("preconditions") or {}
            deleted = self.store.delete(
                route.resource,
                name=route.name,
                namespace=route.namespace,
                uid=preconditions.get("uid"),
            )
            return 200, self._served(route, deleted)
        raise ApiError(405, f"{method} is not supported on {route.resource.key}/{route.name}")

    def _collection(
        self, method: str, route: ResourceRoute, *, query: Mapping[str, str], body: Any
    ) -> Reply:
        if method == "GET":
            return 200, self._list(route, query)
        if method == "POST":
            obj = _require_object(body)
            _check_namespace(route, obj)
            created = self.store.create(route.resource, obj, admit=self._admission(route))
            return 201, self._served(route, created)
        raise ApiError(405, f"{method} is not supported on the {route.resource.key} collection")

    def _list(self, route: ResourceRoute, query: Mapping[str, str]) -> Object:
        revision, items = self.store.snapshot(
            route.resource,
            namespace=route.namespace,
            label_selector=query.get("labelSelector"),
            field_selector=query.get("fieldSelector"),
        )
        start = _decode_continue(query.get("continue"))
        limit = int(query.get("limit") or 0) or len(items)
        page = items[start : start + limit]
        metadata: Object = {"resourceVersion": str(revision)}
        if start + limit < len(items):
            metadata["continue"] = base64.urlsafe_b64encode(str(start + limit).encode()).decode()
        return {
            "kind": f"{route.resource.kind}List",
            "apiVersion": route.api_version,
            "metadata": metadata,
            "items": [self._served(route, obj) for obj in page],
        }

    def _replace(self, route: ResourceRoute, body: Any) -> Object:
        obj = _require_object(body)
        _check_namespace(route, obj)
        name = obj.get("metadata", {}).get("name")
        if name != route.name:
            raise bad_request(
                f"the name of the object ({name}) does not match the name on the URL ({route.name})"
            )
        return self.store.replace(
            route.resource, obj, subresource=route.subresource, admit=self._admission(route)
        )

    def _review(self, method: str, route: ResourceRoute, body: Any) -> Reply:
        if method != "POST" or route.name is not None:
            raise ApiError(405, f"only create is supported on {route.resource.key}")
        obj = _require_object(body)
        if route.resource.kind == "TokenReview":
            return 201, self.reviews.token_review(obj)
        return 201, self.reviews.subject_access_review(obj)

    def _admission(self, route: ResourceRoute) -> Admit:
        """Stamp the URL's apiVersion and kind; default and validate CRD-backed kinds."""

        def admit(new: Object, old: Object | None) -> Object:
            new = {**new, "apiVersion": route.api_version, "kind": route.resource.kind}
            if self.schemas is None or not route.resource.crd:
                return new
            new = self.schemas.apply_defaults(new)
            if errors := self.schemas.errors(new):
                raise invalid(route.resource, new["metadata"].get("name", ""), errors)
            return new

        return admit

    @staticmethod
    def _served(route: ResourceRoute, obj: Object) -> Object:
        """The object as read through the route's version (no field conversion)."""
        return {**obj, "apiVersion": route.api_version, "kind": route.resource.kind}


def _require_object(body: Any) -> Object:
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object")
    return copy.deepcopy(body)


def _check_namespace(route: ResourceRoute, obj: Object) -> None:
    """The URL decides the namespace; a different one in the body is a 400, as upstream."""
    meta = obj.setdefault("metadata", {})
    if not route.resource.namespaced:
        meta.pop("namespace", None)
        return
    if route.namespace is None:
        raise ApiError(404, f"{route.resource.key} must be created in a namespace")
    if meta.get("namespace", route.namespace) != route.namespace:
        raise bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    meta["namespace"] = route.namespace


def _decode_continue(token: str | None) -> int:
    if not token:
        return 0
    try:
        return int(base64.urlsafe_b64decode(token.encode()).decode())
    except ValueError:
        raise ApiError(410, "the provided continue parameter is too old or invalid") from None
