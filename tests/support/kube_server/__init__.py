"""An in-process Kubernetes API server for tests, spoken to by the official client over HTTP.

    from tests.support.kube_server import KubeServer

Layout: catalog (served resources), store (objects, resourceVersions, history), selectors,
patches, watch, reviews (TokenReview/SubjectAccessReview), faults (request log, injected
failures), discovery, routes, api (the verbs), http (transport), server (KubeServer).
"""

from .catalog import DEFAULT_RESOURCES, Catalog, ResourceType
from .errors import ApiError
from .faults import Faults, RecordedRequest, RequestLog
from .objects import Change
from .reviews import AccessRule, Reviews, TokenIdentity
from .server import KubeServer
from .store import Store

__all__ = [
    "DEFAULT_RESOURCES",
    "AccessRule",
    "ApiError",
    "Catalog",
    "Change",
    "Faults",
    "KubeServer",
    "RecordedRequest",
    "RequestLog",
    "ResourceType",
    "Reviews",
    "Store",
    "TokenIdentity",
]
