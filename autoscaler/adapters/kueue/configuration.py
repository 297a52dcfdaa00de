"""Reading Kueue's Configuration (`domain/kueue_config.py` interprets it): the ConfigMap the
manager mounts as its `--config` file, `cluster.kueueConfiguration` (by default
kueue-system/kueue-manager-config, key `controller_manager_config.yaml`, as Kueue's
config/components/manager/controller_manager_config.yaml ships it).

Listed by name (a `metadata.name` field selector, so the chart grants list and watch on that
one ConfigMap by resourceNames): one list per cycle without watch caches, one watch with
them, never a request per Workload. Refused, absent or malformed, it is unreadable and says
why; the not-running class then reports Kueue's deadline as unknown, and still leaves the
workload to Kueue.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from autoscaler.adapters.kubernetes.cache import WatchCache, not_following
from autoscaler.adapters.kubernetes.client import KubeClient
from autoscaler.adapters.kubernetes.resources import CONFIGMAPS
from autoscaler.core.documents import DocumentRefused, parse_yaml
from autoscaler.core.errors import ClusterError
from autoscaler.domain.kueue_config import (
    CONFIG_KEY,
    KueueConfiguration,
    interpret,
    unreadable,
)
from autoscaler.settings.cluster import KueueConfigurationSettings

Obj = Mapping[str, Any]


def source_of(settings: KueueConfigurationSettings) -> str:
    return f"{settings.namespace}/{settings.name}"


def name_selector(settings: KueueConfigurationSettings) -> str:
    return f"metadata.name={settings.name}"


def configuration_of(obj: Obj, *, source: str) -> KueueConfiguration:
    """The ConfigMap's Configuration; unreadable when the key is missing, or its text is not
    YAML or is refused by the bounded parser (too deep, too many values): whoever may edit the
    ConfigMap must not fail a cycle, nor raise in the watch cache's convert."""
    text = (obj.get("data") or {}).get(CONFIG_KEY)
    if not isinstance(text, str):
        return unreadable(source, f"cannot read {source}: no key {CONFIG_KEY}")
    try:
        document = parse_yaml(text)
    except DocumentRefused as refused:
        return unreadable(source, f"cannot read {source}: {CONFIG_KEY} refused ({refused})")
    return interpret(document, source=source)


def from_listed_values(found: tuple[KueueConfiguration, ...], *, source: str) -> KueueConfiguration:
    """The one ConfigMap a list by name finds; unreadable when there is none."""
    if not found:
        return unreadable(source, f"cannot read {source}: not found")
    return found[0]


def list_configuration(
    client: KubeClient, settings: KueueConfigurationSettings
) -> KueueConfiguration:
    """One list call; any failure makes it unreadable, with the API server's answer."""
    source = source_of(settings)
    try:
        listed = client.list_objects(
            CONFIGMAPS, namespace=settings.namespace, field_selector=name_selector(settings)
        )
    except ClusterError as exc:
        return unreadable(source, f"cannot read {source}: {exc}")
    found = tuple(configuration_of(obj, source=source) for obj in listed.items)
    return from_listed_values(found, source=source)


def cached_configuration(
    cache: WatchCache[KueueConfiguration], *, source: str, wait: timedelta
) -> KueueConfiguration:
    """From its watch cache: no request; unreadable while failing, empty or not filled."""
    if (why := not_following(cache, wait)) is not None:
        return unreadable(source, f"cannot read {source}: {_cause(why)}")
    return from_listed_values(cache.items(), source=source)


def _cause(failing: str) -> str:
    """A cache's failure without its "<resource> cache failing: " prefix."""
    return failing.partition(" cache failing: ")[2] or failing
