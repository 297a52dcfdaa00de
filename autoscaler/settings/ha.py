"""Settings for running more than one replica: the leader Lease and the watch caches.

Two sections meant for the tree in `autoscaler.settings.tree.Settings` (`leaderElection:` and
`watchCache:`); the conventions (frozen, camelCase, unknown keys rejected, durations) come
from `autoscaler.settings.base`.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Self

from pydantic import Field, model_validator

from autoscaler.settings.base import POSITIVE, Duration, Section

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


class LeaderElectionSettings(Section):
    enabled: bool = Field(
        False,
        description="Elect one acting replica through a Lease; only it deactivates workloads "
        "(the others decide and serve, and take over within leaseDuration when it dies). Each "
        "pod's identity is env POD_NAME (downward API). Off for a single replica, which has no "
        "one to agree with; the chart turns it on with its 2 replicas.",
    )
    lease_name: str = Field(
        "idle-gpu-autoscaler",
        description="Name of the coordination.k8s.io/v1 Lease in cluster.serviceNamespace. "
        "Replicas that share it elect one leader.",
    )
    lease_duration: Duration = Field(
        timedelta(seconds=15),
        description="Whole seconds a Lease stays taken without a renewal: how long the "
        "others wait after a leader dies without releasing it (a clean stop releases it at "
        "once). controller-runtime's default.",
    )
    renew_deadline: Duration = Field(
        timedelta(seconds=10),
        description="The leader stops acting when it has not renewed for this long (below "
        "leaseDuration), so it stops (leaseDuration - renewDeadline) before anyone else may "
        "take over. "
        "controller-runtime's default.",
    )
    retry_period: Duration = Field(
        timedelta(seconds=2),
        description="How often the leader renews and the others try to acquire (below "
        "renewDeadline); a released Lease is taken over within about this long. "
        "controller-runtime's default.",
    )

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if not _DNS_SUBDOMAIN.match(self.lease_name):
            raise ValueError(
                f"leaseName: {self.lease_name!r} is not a DNS subdomain name: lowercase letters, "
                "digits, '-' and '.'"
            )
        seconds = self.lease_duration.total_seconds()
        if seconds < 1 or seconds != int(seconds):
            raise ValueError("leaseDuration: must be a whole number of seconds, at least 1s")
        if not timedelta(0) < self.retry_period < self.renew_deadline < self.lease_duration:
            raise ValueError(
                "retryPeriod: must hold 0 < retryPeriod < renewDeadline < leaseDuration"
            )
        return self


class WatchCacheSettings(Section):
    enabled: bool = Field(
        True,
        description="Read Workloads, owners, pods and ScaledObjects from watch caches "
        "(list once, then watch), so a steady cycle makes no list call. Needs the `watch` "
        "verb on each of them; false lists everything every cycle.",
    )
    watch_timeout: Duration = Field(
        timedelta(seconds=60),
        description="Each watch request asks the server to end after this long and is "
        "reopened from the last version at once: one request per resource per period (at "
        "least 1s). Stopping does not wait for it: the stream being read is ended at once.",
        json_schema_extra=POSITIVE,
    )
    backoff_initial: Duration = Field(
        timedelta(milliseconds=500),
        description="First wait after a failed list or watch; doubled per failure, with "
        "jitter, and never shorter than the server's Retry-After.",
        json_schema_extra=POSITIVE,
    )
    backoff_max: Duration = Field(
        timedelta(seconds=30),
        description="Longest wait between attempts, so a recovered API server is noticed "
        "within half a minute; also how often an absent CRD (KEDA's) is looked for again. At "
        "least backoffInitial.",
        json_schema_extra=POSITIVE,
    )
    sync_timeout: Duration = Field(
        timedelta(seconds=30),
        description="How long the first cycle waits for the caches' first list. A cycle "
        "with an unfilled or failing cache is a cluster outage: reported, nothing acted on.",
        json_schema_extra=POSITIVE,
    )

    @model_validator(mode="after")
    def _positive(self) -> Self:
        if self.watch_timeout < timedelta(seconds=1):
            raise ValueError("watchTimeout: must be at least 1s (the API takes whole seconds)")
        if not timedelta(0) < self.backoff_initial <= self.backoff_max:
            raise ValueError("backoffInitial: must hold 0 < backoffInitial <= backoffMax")
        if self.sync_timeout <= timedelta(0):
            raise ValueError("syncTimeout: must be positive, longer than 0s")
        return self
