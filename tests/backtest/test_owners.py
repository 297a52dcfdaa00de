"""A GPU pod's owner from kube-state-metrics' series, as the live service follows ownership."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from autoscaler.adapters.prometheus.range import RangeReply, RangeSeries
from autoscaler.backtest.command import configured_kinds, owner_note
from autoscaler.backtest.owners import (
    NOT_SCRAPED,
    NotOurs,
    Owner,
    OwnerAnswers,
    OwnerHistory,
    Unknown,
    label_rows,
    sanitized,
)
from autoscaler.domain.policy.owners import (
    KNOWN_OWNERS,
    OWNER_KINDS,
    POD_GROUP_KEY,
    OwnerKind,
    PodsFound,
)
from autoscaler.settings.tree import Settings


def table_row(  # noqa: PLR0917 -- the table's own column order, as its rows read
    kind: str,
    group: str,
    plural: str,
    versions: tuple[str, ...],
    selector: str,
    enabled: bool,
    stop_means: str,
    bring_back: str,
) -> OwnerKind:
    """A row of the owner kinds' table: found by its selector, else by ownership."""
    found = PodsFound.SELECTOR if selector else PodsFound.OWNERSHIP
    return OwnerKind(
        kind, group, plural, versions, found, selector, enabled, stop_means, bring_back, "-"
    )


NS = "ns"
STATEFULSET_CUT = "StatefulSet/ss: kube-state-metrics exports no kube_statefulset_owner"


def owner(metric: str, name_label: str, name: str, kind: str, owner_name: str) -> RangeSeries:
    labels = {"namespace": NS, name_label: name, "owner_kind": kind, "owner_name": owner_name}
    return RangeSeries({**labels, "owner_is_controller": "true"}, [[0.0, "1"]])


def pod(name: str, kind: str, owner_name: str) -> RangeSeries:
    return owner("kube_pod_owner", "pod", name, kind, owner_name)


def labels(name: str, **found: str) -> RangeSeries:
    return RangeSeries({"namespace": NS, "pod": name, **found}, [[0.0, "1"]])


def history(
    series: Mapping[str, Sequence[RangeSeries]],
    *,
    kinds: Sequence[OwnerKind] = OWNER_KINDS,
    failures: Mapping[str, str] | None = None,
) -> OwnerHistory:
    found = OwnerHistory(kinds=kinds)
    replies = {metric: RangeReply(tuple(s), ()) for metric, s in series.items()}
    found.feed(OwnerAnswers(replies, failures or {}))
    return found


def kinds_selected_by(kind: str, selector: str) -> Sequence[OwnerKind]:
    """The owner kinds of a config that enables `kind`, its pods found by `selector`."""
    owner_kinds = {kind: {"enabled": True, "podSelector": selector}}
    return configured_kinds(Settings.model_validate({"cluster": {"ownerKinds": owner_kinds}}))


def test_a_cronjobs_job_is_the_highest_kind_of_the_table_in_its_chain() -> None:
    seen = history(
        {
            "kube_pod_owner": [pod("nightly-1-abcde", "Job", "nightly-1")],
            "kube_job_owner": [owner("kube_job_owner", "job_name", "nightly-1", "CronJob", "n")],
        }
    )

    assert seen.owner_of(NS, "nightly-1-abcde") == Owner(
        KNOWN_OWNERS["Job"], "nightly-1", "ownerReferences"
    )


def test_a_jobsets_job_gives_its_pods_to_the_jobset_and_says_a_trainjob_cannot_be_told() -> None:
    seen = history(
        {
            "kube_pod_owner": [pod("t-w-0-0-abcde", "Job", "t-w-0")],
            "kube_job_owner": [owner("kube_job_owner", "job_name", "t-w-0", "JobSet", "t")],
        }
    )

    assert seen.owner_of(NS, "t-w-0-0-abcde") == Owner(
        KNOWN_OWNERS["JobSet"], "t", "ownerReferences"
    )
    # TrainJob -> JobSet -> Job -> Pod: no series names a JobSet's owner
    assert seen.blind == {
        "a TrainJob above a JobSet (kube-state-metrics exports no JobSet owner)": {"ns/JobSet/t"}
    }
    assert owner_note(seen, named=0) == (
        "a TrainJob above a JobSet (kube-state-metrics exports no JobSet owner) cannot be "
        "told: counted as ns/JobSet/t"
    )


def test_a_deployments_pod_goes_to_the_deployment_through_its_replicaset() -> None:
    seen = history(
        {
            "kube_pod_owner": [pod("web-abc-xyz", "ReplicaSet", "web-abc")],
            "kube_replicaset_owner": [
                owner("kube_replicaset_owner", "replicaset", "web-abc", "Deployment", "web")
            ],
        }
    )

    assert seen.owner_of(NS, "web-abc-xyz") == Owner(
        KNOWN_OWNERS["Deployment"], "web", "ownerReferences"
    )
    assert seen.blind == {}


def test_a_notebooks_pod_is_named_by_its_notebook_name_label_above_the_statefulset() -> None:
    seen = history(
        {
            "kube_pod_owner": [pod("nb-0", "StatefulSet", "nb"), pod("p", "StatefulSet", "ss")],
            "kube_pod_labels": [labels("nb-0", label_notebook_name="nb"), labels("p")],
        }
    )

    assert seen.owner_of(NS, "nb-0") == Owner(KNOWN_OWNERS["Notebook"], "nb", "notebook-name")
    assert seen.owner_of(NS, "p") == Unknown(
        f"{STATEFULSET_CUT}; no label of notebook-name, {POD_GROUP_KEY} in kube_pod_labels "
        "(--metric-labels-allowlist)"
    )


@pytest.mark.parametrize(
    ("owner_kind", "group", "kind"),
    [
        pytest.param(
            "StatefulSet", "leaderworkerset-infer-0-1a2b3", "LeaderWorkerSet", id="lws-group"
        ),
        pytest.param("StatefulSet", "statefulset-db-9f8e7", "StatefulSet", id="statefulset"),
        pytest.param("<none>", "my-group", "Pod", id="pods-people-grouped"),
    ],
)
def test_kueues_pod_group_label_names_the_workload_and_its_kind(
    owner_kind: str, group: str, kind: str
) -> None:
    seen = history(
        {
            "kube_pod_owner": [pod("p", owner_kind, "set" if owner_kind != "<none>" else "<none>")],
            "kube_pod_labels": [labels("p", label_kueue_x_k8s_io_pod_group_name=group)],
        }
    )

    assert seen.owner_of(NS, "p") == Owner(KNOWN_OWNERS[kind], group, POD_GROUP_KEY)


def test_a_lone_pod_kueue_queued_is_its_own_workload_and_an_unqueued_one_is_not_ours() -> None:
    seen = history(
        {
            "kube_pod_owner": [pod("queued", "<none>", "<none>"), pod("alone", "<none>", "<none>")],
            "kube_pod_labels": [labels("queued", label_kueue_x_k8s_io_queue_name="team-a")],
        }
    )

    assert seen.owner_of(NS, "queued") == Owner(
        KNOWN_OWNERS["Pod"], "queued", "kueue.x-k8s.io/queue-name"
    )
    assert seen.owner_of(NS, "alone") == NotOurs("<none>")


def test_a_configured_pod_selector_finds_the_kind_by_its_labels() -> None:
    seen = history(
        {
            "kube_pod_owner": [pod("infer-0", "StatefulSet", "infer")],
            "kube_pod_labels": [
                labels("infer-0", label_leaderworkerset_sigs_k8s_io_name="infer"),
            ],
        },
        kinds=kinds_selected_by("LeaderWorkerSet", "leaderworkerset.sigs.k8s.io/name={name}"),
    )

    found = seen.owner_of(NS, "infer-0")

    assert isinstance(found, Owner)
    assert (found.kind.kind, found.name, found.found_by) == (
        "LeaderWorkerSet",
        "infer",
        "leaderworkerset.sigs.k8s.io/name",
    )


@pytest.mark.parametrize(
    ("series", "failures", "why"),
    [
        pytest.param(
            {"kube_pod_owner": [pod("p", "ReplicaSet", "rs")]},
            {},
            "ReplicaSet/rs: kube_replicaset_owner not found",
            id="a-replicaset-without-its-owner-series",
        ),
        pytest.param(
            {"kube_pod_owner": [pod("p", "ReplicaSet", "rs")]},
            {"kube_replicaset_owner": "Prometheus answered 503"},
            "ReplicaSet/rs: kube_replicaset_owner unread: Prometheus answered 503",
            id="a-failed-owner-query",
        ),
        pytest.param(
            {"kube_pod_owner": [pod("p", "StatefulSet", "ss")]},
            {},
            f"{STATEFULSET_CUT}; no label of notebook-name, {POD_GROUP_KEY} in kube_pod_labels "
            "(--metric-labels-allowlist)",
            id="a-statefulset-no-label-names",
        ),
        pytest.param(
            {"kube_pod_owner": [pod("p", "RayCluster", "a"), pod("p", "RayCluster", "b")]},
            {},
            "several owners over the range (RayCluster/a, RayCluster/b)",
            id="a-name-reused-by-two-owners",
        ),
        pytest.param(
            {"kube_pod_owner": [pod("other", "RayCluster", "a")]},
            {},
            "kube_pod_owner not found for this pod",
            id="scraped-but-not-this-pod",
        ),
        pytest.param({}, {}, NOT_SCRAPED, id="no-kube-state-metrics"),
    ],
)
def test_a_chain_that_cannot_be_followed_leaves_the_owner_unknown_and_says_why(
    series: Mapping[str, Sequence[RangeSeries]], failures: Mapping[str, str], why: str
) -> None:
    assert history(series, failures=failures).owner_of(NS, "p") == Unknown(why)


def test_labels_name_an_owner_above_what_the_owner_series_reach() -> None:
    """A configured selector (an existing config's RayJob podSelector) names an owner above the
    pod's RayCluster, where some controller puts that label on the pods."""
    seen = history(
        {
            "kube_pod_owner": [pod("job-rc-head-abcde", "RayCluster", "job-rc")],
            "kube_pod_labels": [
                labels("job-rc-head-abcde", label_ray_io_originated_from_cr_name="train"),
            ],
        },
        kinds=kinds_selected_by("RayJob", "ray.io/originated-from-cr-name={name}"),
    )

    found = seen.owner_of(NS, "job-rc-head-abcde")

    assert isinstance(found, Owner)
    assert (found.kind.kind, found.name, found.found_by) == (
        "RayJob",
        "train",
        "ray.io/originated-from-cr-name",
    )


def test_a_rayjobs_pods_count_as_its_raycluster_and_the_note_says_the_rayjob_cannot_be_told() -> (
    None
):
    """KubeRay labels a RayJob's pods as its RayCluster's (`ray.io/cluster`), never with the
    RayJob's name, and kube-state-metrics exports no RayCluster owner: the pods count as the
    RayCluster's, and the note names each RayCluster KubeRay could have made for a RayJob
    (`<rayjob>-<5 of k8s.io/apimachinery's rand alphabet>`), not one otherwise named."""
    seen = history(
        {
            "kube_pod_owner": [
                pod("train-x7k2p-head-qwrtz", "RayCluster", "train-x7k2p"),
                pod("lab-head-bcdfg", "RayCluster", "lab"),
                pod("team-rc-head-bcdfg", "RayCluster", "team-rc"),  # "rc" cannot be a suffix
            ],
            "kube_pod_labels": [
                labels("train-x7k2p-head-qwrtz", label_ray_io_cluster="train-x7k2p"),
                labels("lab-head-bcdfg", label_ray_io_cluster="lab"),
                labels("team-rc-head-bcdfg", label_ray_io_cluster="team-rc"),
            ],
        }
    )

    raycluster = KNOWN_OWNERS["RayCluster"]
    for name, cluster in [
        ("train-x7k2p-head-qwrtz", "train-x7k2p"),
        ("lab-head-bcdfg", "lab"),
        ("team-rc-head-bcdfg", "team-rc"),
    ]:
        assert seen.owner_of(NS, name) == Owner(raycluster, cluster, "ownerReferences")
    assert seen.blind == {
        "a RayJob above a RayCluster (kube-state-metrics exports no RayCluster owner)": {
            "ns/RayCluster/train-x7k2p"
        }
    }


@pytest.mark.parametrize(
    ("series", "top"),
    [
        pytest.param(
            {
                "kube_pod_owner": [pod("p", "ReplicaSet", "web-abc")],
                "kube_replicaset_owner": [
                    owner("kube_replicaset_owner", "replicaset", "web-abc", "Rollout", "web")
                ],
            },
            "Rollout/web",
            id="an-argo-rollouts-replicaset",
        ),
        pytest.param(
            {"kube_pod_owner": [pod("p", "Sandbox", "s")]}, "Sandbox/s", id="a-custom-kind"
        ),
    ],
)
def test_a_chain_ending_in_a_kind_outside_the_table_is_not_ours(
    series: Mapping[str, Sequence[RangeSeries]], top: str
) -> None:
    assert {"Rollout", "ReplicaSet", "Sandbox"}.isdisjoint(KNOWN_OWNERS)
    assert history(series).owner_of(NS, "p") == NotOurs(top)


def test_rows_found_by_labels_come_from_their_pod_selector() -> None:
    def kind(name: str, selector: str) -> OwnerKind:
        return table_row(name, "g", "ps", ("v1",), selector, True, "-", "-")

    rows = label_rows(
        [
            kind("Plain", "ray.io/cluster={name}"),
            kind("Fixed", "app.kubernetes.io/part-of=lws, leaderworkerset.sigs.k8s.io/name={name}"),
            kind("ByOwnership", ""),
            kind("NoName", "app=web"),
            kind("NotEquality", "tier in (a,b),x={name}"),
        ]
    )

    assert [(r.kind.kind, dict(r.fixed), r.naming, r.label) for r in rows] == [
        ("Plain", {}, "label_ray_io_cluster", "ray.io/cluster"),
        (
            "Fixed",
            {"label_app_kubernetes_io_part_of": "lws"},
            "label_leaderworkerset_sigs_k8s_io_name",
            "leaderworkerset.sigs.k8s.io/name",
        ),
    ]
    assert sanitized("app.kubernetes.io/part-of") == "label_app_kubernetes_io_part_of"
