"""Our exception tree. Adapters translate outside errors into these (`raise ... from exc`)
at one place each, so the service and the surfaces never see a client library's exceptions.

    AutoscalerError
    ├── ConfigError                 invalid configuration; names each bad key
    ├── MetricsUnavailable          Prometheus/Thanos unreachable, timing out, refusing or erroring
    ├── NotifyError                 a notification target refused or did not answer
    └── ClusterError                the Kubernetes API failed
        ├── ClusterUnavailable      connection failures, 5xx, 429 after retries
        │   └── AnswerLost          the request was sent, its answer never came: maybe applied
        ├── NotFound                404: the object is gone (skip, re-evaluate next cycle)
        ├── Conflict                409: someone else changed it (skip, re-evaluate next cycle)
        ├── WatchExpired            410: a watch's resourceVersion is too old (list again)
        └── Forbidden               401/403: our RBAC does not allow the call
"""

from __future__ import annotations


class AutoscalerError(Exception):
    """Base of every error the service raises on purpose."""


SHOWN_PROBLEMS = 50  # a file of 90,000 bad entries is told in a screenful, not 90,000 lines


class ConfigError(AutoscalerError):
    """The configuration is invalid; `problems` lists one line per bad key, and the message
    the first SHOWN_PROBLEMS of them."""

    def __init__(self, problems: list[str]) -> None:
        lines = [f"  - {p}" for p in problems[:SHOWN_PROBLEMS]]
        if len(problems) > SHOWN_PROBLEMS:
            lines.append(f"  … and {len(problems) - SHOWN_PROBLEMS} more")
        super().__init__("\n".join(["invalid configuration:", *lines]))
        self.problems = problems


class MetricsUnavailable(AutoscalerError):
    """No trustworthy answer from the metric source this cycle."""


class NotifyError(AutoscalerError):
    """A notification was not delivered; `retry`: whether trying again may help (5xx,
    timeout, connection refused) or not (4xx: the payload or the address is wrong)."""

    def __init__(self, message: str, *, retry: bool) -> None:
        super().__init__(message)
        self.retry = retry


class ClusterError(AutoscalerError):
    """The Kubernetes API did not do what we asked."""


class ClusterUnavailable(ClusterError):
    pass


class AnswerLost(ClusterUnavailable):
    """The request reached the API server but no answer came back (read timeout, connection
    dropped): a write may have been applied. Only the evidence on the object can tell."""


class NotFound(ClusterError):
    pass


class Conflict(ClusterError):
    pass


class WatchExpired(ClusterError):
    """410 Gone: the watch's resourceVersion is too old; list again, then watch from there."""


class Forbidden(ClusterError):
    pass
