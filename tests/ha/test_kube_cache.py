"""WatchCache against the session's test API server: list once, follow, resume, relist, back
off, stop. Each test watches only its own namespace."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import timedelta
from typing import Any

import pytest

from autoscaler.adapters.kubernetes.cache import WatchCache, retry_after, retry_delay
from autoscaler.adapters.kubernetes.client import KubeClient, api_client_for
from autoscaler.adapters.kubernetes.resources import PODS, ApiResource, Obj
from autoscaler.adapters.kubernetes.watching import WatchInterrupt
from autoscaler.core.errors import ClusterUnavailable, NotFound
from tests.ha.conftest import FAST_CACHE, ListCountingClient, eventually
from tests.support.builders import make_pod
from tests.support.kube_server import KubeServer, RecordedRequest

LOG = logging.getLogger("tests.ha.cache")
CacheFactory = Callable[..., WatchCache[Obj]]


def name_of(obj: Obj) -> str:
    return str(obj["metadata"]["name"])


def names(cache: WatchCache[Obj]) -> set[str]:
    return {name_of(obj) for obj in cache.items()}


def pods_path(namespace: str) -> str:
    return f"/api/v1/namespaces/{namespace}/pods"


def lists(kube: KubeServer, namespace: str) -> list[RecordedRequest]:
    return [r for r in kube.requests.matching("GET", pods_path(namespace)) if not r.is_watch]


def watches(kube: KubeServer, namespace: str) -> list[RecordedRequest]:
    return [r for r in kube.requests.matching("GET", pods_path(namespace)) if r.is_watch]


@pytest.fixture
def make_cache(kube: KubeServer, client: KubeClient, namespace: str) -> Iterator[CacheFactory]:
    """Pod caches of the test's namespace; every one started is stopped and joined after."""
    made: list[WatchCache[Obj]] = []

    def make(**options: Any) -> WatchCache[Obj]:
        defaults: dict[str, Any] = {
            "client": client,
            "resource": PODS,
            "settings": FAST_CACHE,
            "convert": lambda obj: obj,
            "logger": LOG,
            "namespace": namespace,
        }
        cache: WatchCache[Obj] = WatchCache(**{**defaults, **options})
        made.append(cache)
        return cache

    yield make
    for cache in made:
        cache.stop(timeout=0)
    kube.drop_watches()  # quiet watches reopen at once, and notice the stop
    assert all(cache.stop(timeout=5) for cache in made)


def started(cache: WatchCache[Obj]) -> WatchCache[Obj]:
    """The cache, started and filled (its first lists may fail and be retried)."""
    cache.start()
    eventually(lambda: cache.synced, what=f"{cache.name} synced")
    return cache


def test_a_cache_lists_once_then_follows_every_change_by_watching(
    kube: KubeServer, client: ListCountingClient, namespace: str, make_cache: CacheFactory
) -> None:
    kube.store.put(make_pod(namespace, "a").build())
    kube.store.put(make_pod(namespace, "b").build())
    cache = started(make_cache())
    assert names(cache) == {"a", "b"}

    kube.store.put(make_pod(namespace, "c").build())
    kube.store.patch("pods", name="a", namespace=namespace, patch={"spec": {"nodeName": "n1"}})
    kube.store.delete("pods", name="b", namespace=namespace)

    eventually(lambda: names(cache) == {"a", "c"}, what="add and delete followed")
    eventually(lambda: {o["spec"].get("nodeName") for o in cache.items()} == {"n1", None})
    assert client.lists == 1
    assert len(lists(kube, namespace)) == 1
    assert cache.failing is None


def test_items_is_a_snapshot_that_later_changes_do_not_touch(
    kube: KubeServer, namespace: str, make_cache: CacheFactory
) -> None:
    kube.store.put(make_pod(namespace, "a").build())
    cache = started(make_cache())
    before = cache.items()

    kube.store.put(make_pod(namespace, "b").build())
    eventually(lambda: names(cache) == {"a", "b"})

    assert [name_of(obj) for obj in before] == ["a"]


def test_a_view_is_derived_again_only_after_the_contents_changed(
    kube: KubeServer, namespace: str, make_cache: CacheFactory
) -> None:
    kube.store.put(make_pod(namespace, "a").build())
    cache = started(make_cache())
    derived: list[set[str]] = []

    def pod_names(found: Mapping[tuple[str, str], Obj]) -> set[str]:
        derived.append({name for _, name in found})
        return derived[-1]

    first, again = cache.view(pod_names), cache.view(pod_names)
    kube.store.put(make_pod(namespace, "b").build())
    eventually(lambda: names(cache) == {"a", "b"})
    after = cache.view(pod_names)

    assert (first, again, after) == ({"a"}, {"a"}, {"a", "b"})
    assert derived == [{"a"}, {"a", "b"}]  # once per change, not once per read


def test_an_object_that_convert_drops_leaves_the_cache(
    kube: KubeServer, namespace: str, make_cache: CacheFactory
) -> None:
    kube.store.put(make_pod(namespace, "gpu").gpus(1).build())
    kube.store.put(make_pod(namespace, "cpu").build())
    cache = started(make_cache(convert=lambda obj: obj if "gpu" in name_of(obj) else None))
    assert names(cache) == {"gpu"}

    kube.store.delete("pods", name="gpu", namespace=namespace)

    eventually(lambda: names(cache) == set())


def test_a_dropped_watch_resumes_from_the_last_version_without_listing_again(
    kube: KubeServer, client: ListCountingClient, namespace: str, make_cache: CacheFactory
) -> None:
    cache = started(make_cache())
    listed = int(cache.resource_version)
    kube.store.put(make_pod(namespace, "before-drop").build())
    eventually(lambda: names(cache) == {"before-drop"})
    seen = int(cache.resource_version)

    kube.drop_watches()
    kube.store.put(make_pod(namespace, "after-drop").build())

    eventually(lambda: names(cache) == {"before-drop", "after-drop"})
    versions = [int(r.query["resourceVersion"]) for r in watches(kube, namespace)]
    assert versions[0] == listed
    assert versions == sorted(versions), "a watch never goes back to an older version"
    assert any(v >= seen for v in versions[1:]), "the watch was reopened after the drop"
    assert client.lists == 1
    assert len(lists(kube, namespace)) == 1


def test_an_expired_watch_lists_again_and_swaps_the_contents(
    kube: KubeServer, client: ListCountingClient, namespace: str, make_cache: CacheFactory
) -> None:
    kube.store.put(make_pod(namespace, "kept").build())
    kube.store.put(make_pod(namespace, "gone").build())
    cache = started(make_cache())

    kube.faults.expire_next_watch()
    kube.drop_watches()  # the reopened watch gets 410 Gone
    eventually(lambda: client.lists == 2, what="a relist after 410")
    kube.store.delete("pods", name="gone", namespace=namespace)
    kube.store.put(make_pod(namespace, "new").build())

    eventually(lambda: names(cache) == {"kept", "new"}, what="following after the relist")
    assert len(lists(kube, namespace)) == 2
    assert cache.failing is None


@pytest.mark.parametrize(
    "status",
    [pytest.param(500, id="server-error"), pytest.param(503, id="unavailable")],
)
def test_a_failing_list_is_retried_with_growing_waits_until_it_succeeds(
    kube: KubeServer,
    client: ListCountingClient,
    namespace: str,
    make_cache: CacheFactory,
    status: int,
) -> None:
    kube.store.put(make_pod(namespace, "a").build())
    kube.faults.fail_next(
        "GET", pods_path(namespace), status=status, times=3, when=lambda r: not r.is_watch
    )
    began = time.monotonic()

    cache = started(make_cache(jitter=lambda: 1.0))

    assert time.monotonic() - began >= 0.05 + 0.1 + 0.2  # three waits, each doubled
    assert len(lists(kube, namespace)) == 4
    assert (client.lists, names(cache), cache.failing) == (1, {"a"}, None)


def test_throttling_waits_at_least_the_servers_retry_after(
    kube: KubeServer, namespace: str, make_cache: CacheFactory
) -> None:
    kube.faults.fail_next(
        "GET", pods_path(namespace), status=429, retry_after=1, when=lambda r: not r.is_watch
    )
    began = time.monotonic()

    started(make_cache(jitter=lambda: 0.0))

    assert time.monotonic() - began >= 1.0
    assert len(lists(kube, namespace)) == 2


def test_a_failing_watch_reports_the_cache_failing_until_a_relist_succeeds(
    kube: KubeServer, client: ListCountingClient, namespace: str, make_cache: CacheFactory
) -> None:
    slow = FAST_CACHE.model_copy(update={"backoff_initial": timedelta(milliseconds=300)})
    cache = started(make_cache(settings=slow, jitter=lambda: 1.0))
    kube.faults.fail_next("GET", pods_path(namespace), status=500, when=lambda r: r.is_watch)

    kube.drop_watches()  # the reopened watch fails
    eventually(lambda: cache.failing is not None, what="the failure reported")
    assert "500" in (cache.failing or "")
    kube.store.put(make_pod(namespace, "during-failure").build())

    eventually(lambda: cache.failing is None, what="recovered by a relist")
    assert client.lists == 2
    eventually(lambda: names(cache) == {"during-failure"})


def test_stop_ends_a_quiet_watch_at_once_not_at_the_servers_timeout(
    kube: KubeServer, namespace: str, make_cache: CacheFactory
) -> None:
    # A watch timeout of minutes (the product's default is one): a stop that waited for the
    # server to end the stream would hold a shutdown past Kubernetes' termination grace.
    quiet = FAST_CACHE.model_copy(update={"watch_timeout": timedelta(minutes=5)})
    cache = started(make_cache(settings=quiet))
    eventually(lambda: len(watches(kube, namespace)) == 1, what="the quiet watch open")
    assert f"watch-cache-{PODS}" in {t.name for t in threading.enumerate()}

    # Joined within 10 s, a thirtieth of the watch's 5 minutes: the stream was cut, not
    # waited out (a stop that waited would return False, its thread still running).
    assert cache.stop(timeout=10)

    assert f"watch-cache-{PODS}" not in {t.name for t in threading.enumerate()}
    assert len(watches(kube, namespace)) == 1  # ended, not reopened


def test_a_watch_whose_interrupt_has_fired_sends_no_request(
    kube: KubeServer, client: KubeClient, namespace: str
) -> None:
    interrupt = WatchInterrupt()
    interrupt.fire()

    events = list(
        client.watch(
            PODS,
            resource_version="0",
            namespace=namespace,
            timeout_seconds=300,
            interrupt=interrupt,
        )
    )

    assert events == []
    assert watches(kube, namespace) == []


SYNC_WAIT_S = 60.0  # what a caller would wait for a list that never comes


def test_waiting_for_the_first_list_ends_early_when_it_fails(
    kube: KubeServer, namespace: str, make_cache: CacheFactory
) -> None:
    kube.faults.fail_next("GET", pods_path(namespace), status=403, times=1000)
    cache = make_cache()
    cache.start()
    began = time.monotonic()

    assert not cache.wait_synced(SYNC_WAIT_S)

    # Ended by the failed list, long before the wait would have run out by itself.
    assert time.monotonic() - began < SYNC_WAIT_S / 2
    assert "403" in (cache.failing or "")


def test_a_stopped_cache_that_never_synced_still_ends(
    kube: KubeServer, namespace: str, make_cache: CacheFactory
) -> None:
    kube.faults.fail_next("GET", pods_path(namespace), status=500, times=1000)
    cache = make_cache()
    cache.start()
    eventually(lambda: cache.failing is not None)

    assert cache.stop(timeout=5)
    assert not cache.synced
    kube.faults.clear()


def test_a_resource_the_server_does_not_serve_can_be_an_empty_synced_cache(
    kube: KubeServer, make_cache: CacheFactory
) -> None:
    widgets = ApiResource("example.com", "v1", "widgets")
    allowed = frozenset((("example.com", "widgets", "list"), ("example.com", "widgets", "watch")))
    absent_ok = KubeClient(
        api_client_for(kube.configuration()), timeout=timedelta(seconds=5), allowed=allowed
    )
    try:
        cache = started(make_cache(client=absent_ok, resource=widgets, missing_is_empty=True))
        assert (cache.items(), cache.failing) == ((), None)
        assert cache.stop(timeout=5)
    finally:
        absent_ok.close()


@pytest.mark.parametrize(
    ("attempt", "error", "jitter", "expected"),
    [
        pytest.param(1, ClusterUnavailable("500"), 1.0, 0.5, id="first-wait-is-the-initial"),
        pytest.param(3, ClusterUnavailable("500"), 1.0, 2.0, id="doubles-per-failure"),
        pytest.param(3, ClusterUnavailable("500"), 0.0, 1.0, id="jitter-keeps-the-upper-half"),
        pytest.param(20, ClusterUnavailable("500"), 1.0, 30.0, id="capped-at-the-maximum"),
        pytest.param(
            1,
            ClusterUnavailable("list pods: 429 slow down (retry after 7s)"),
            0.0,
            7.0,
            id="retry-after-lengthens-it",
        ),
        pytest.param(
            1,
            ClusterUnavailable("list pods: 429 slow down (retry after 90s)"),
            0.0,
            30.0,
            id="retry-after-is-capped-too",
        ),
        pytest.param(8, NotFound("no"), 0.5, 0.75 * 30, id="any-error-backs-off"),
    ],
)
def test_retry_delays_grow_exponentially_within_bounds(
    attempt: int, error: Exception, jitter: float, expected: float
) -> None:
    delay = retry_delay(attempt, error=error, initial=0.5, maximum=30.0, jitter=jitter)
    assert delay == pytest.approx(expected)


def test_the_retry_after_is_read_from_the_clients_error() -> None:
    assert retry_after(ClusterUnavailable("watch pods: 429 busy (retry after 2s)")) == 2.0
    assert retry_after(ClusterUnavailable("watch pods: 500 broken")) is None
