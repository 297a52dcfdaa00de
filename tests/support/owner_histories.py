"""kube-state-metrics' owner series beside dcgm-exporter's, for the backtest's owner mapping.

`tests/backtest/test_backtest_owners_prometheus.py` reads them. Two stories in one area, apart
in time so that fleet-wide queries of one never reach the other:
- with owners (the last five hours): GPU pods of a JobSet (through its Job), a Deployment
  (through its ReplicaSet), a Notebook (its StatefulSet's pod, labelled `notebook-name`), a
  LeaderWorkerSet's group (its StatefulSet's pod, with Kueue's pod-group label naming the
  Workload `leaderworkerset-<name>-<group>-<hash>`), a RayCluster, and a StatefulSet's pod no
  label names; each busy until OWNED_IDLE before the end, then idle;
- without (eleven to seven hours before the end): the same kinds' GPU pods, idle throughout,
  with no kube-state-metrics series at all.
Series as kube-state-metrics writes them (docs/metrics/workload/pod-metrics.md,
replicaset-metrics.md, job-metrics.md in kubernetes/kube-state-metrics), scraped with its own
namespace and pod labels kept (honorLabels), with
`--metric-labels-allowlist=pods=[notebook-name,kueue.x-k8s.io/pod-group-name]`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tests.support.prom import Gpu, GpuSeries, Profile

M, H = 60, 3600
CHAT_GROUP = "leaderworkerset-chat-0-3f9a1"  # Kueue's Workload name for the set's group 0
OWNED_IDLE = 2 * H  # the owned pods go idle this long before the area's end
UNOWNED_END = 7 * H  # the story without owners ends this long before the area's end
KSM = {"job": "kube-state-metrics", "instance": "10.128.0.9:8080"}
INFO_HELP = {
    "kube_pod_owner": "Information about the Pod's owner.",
    "kube_replicaset_owner": "Information about the ReplicaSet's owner.",
    "kube_job_owner": "Information about the Job's owner.",
    "kube_pod_labels": "Kubernetes labels converted to Prometheus labels.",
}


@dataclass(frozen=True)
class InfoSeries:
    """A kube-state-metrics info series: 1 at every step of its span."""

    metric: str
    labels: Mapping[str, str]


def pod_owner(namespace: str, pod: str, kind: str, name: str) -> InfoSeries:
    labels = {"namespace": namespace, "pod": pod, "uid": f"uid-{pod}"}
    owner = {"owner_kind": kind, "owner_name": name, "owner_is_controller": "true"}
    return InfoSeries("kube_pod_owner", KSM | labels | owner)


def object_owner(metric: str, name_label: str, namespace: str, name: str, owner: str) -> InfoSeries:
    kind, _, owner_name = owner.partition("/")
    labels = {"namespace": namespace, name_label: name, "owner_kind": kind}
    return InfoSeries(
        metric, KSM | labels | {"owner_name": owner_name, "owner_is_controller": "true"}
    )


def pod_labels(namespace: str, pod: str, **labels: str) -> InfoSeries:
    named = {f"label_{key}": value for key, value in labels.items()}
    return InfoSeries("kube_pod_labels", KSM | {"namespace": namespace, "pod": pod} | named)


def owned_story(end: int) -> tuple[list[GpuSeries], list[InfoSeries]]:
    went_idle = Profile.busy(80).idle_from(end - OWNED_IDLE)

    def gpu(namespace: str, pod: str, node: str) -> GpuSeries:
        return Gpu(namespace=namespace, pod=pod, node=node).history(went_idle)

    gpus = [
        gpu("training", "train-workers-0-0-abcde", "o1"),
        gpu("serving", "infer-7d9f8c6b5-xk2p9", "o2"),
        gpu("lab", "nb-0", "o3"),
        gpu("ray", "rc-head-fghij", "o4"),
        gpu("lab", "lone-0", "o5"),
        gpu("serving", "chat-0", "o6"),
    ]
    info = [
        pod_owner("training", "train-workers-0-0-abcde", "Job", "train-workers-0"),
        object_owner("kube_job_owner", "job_name", "training", "train-workers-0", "JobSet/train"),
        pod_owner("serving", "infer-7d9f8c6b5-xk2p9", "ReplicaSet", "infer-7d9f8c6b5"),
        object_owner(
            "kube_replicaset_owner", "replicaset", "serving", "infer-7d9f8c6b5", "Deployment/infer"
        ),
        pod_owner("lab", "nb-0", "StatefulSet", "nb"),
        pod_labels("lab", "nb-0", notebook_name="nb"),
        pod_owner("ray", "rc-head-fghij", "RayCluster", "rc"),
        pod_owner("lab", "lone-0", "StatefulSet", "lone"),
        pod_labels("lab", "lone-0"),  # no label the allowlist keeps
        # a LeaderWorkerSet's leader: LeaderWorkerSet -> StatefulSet -> Pod
        pod_owner("serving", "chat-0", "StatefulSet", "chat"),
        pod_labels("serving", "chat-0", kueue_x_k8s_io_pod_group_name=CHAT_GROUP),
        # pods without a GPU: fleet-wide series the mapping meets and leaves alone
        pod_owner("kube-system", "coredns-5d78c9869d-abcde", "ReplicaSet", "coredns-5d78c9869d"),
        object_owner(
            "kube_replicaset_owner",
            "replicaset",
            "kube-system",
            "coredns-5d78c9869d",
            "Deployment/coredns",
        ),
    ]
    return gpus, info


def unowned_story() -> list[tuple[str, str, str]]:
    """(namespace, pod, node) of the GPU pods recorded with no kube-state-metrics at all."""
    return [
        ("training", "train-workers-0-0-klmno", "u1"),
        ("serving", "infer-7d9f8c6b5-pqrst", "u2"),
        ("lab", "nb-0", "u3"),
    ]


def write_info(series: Sequence[InfoSeries], out: list[str], *, times: range) -> None:
    """The samples of `series` at each of `times`, as OpenMetrics lines (no header)."""
    for one in series:
        body = ",".join(f'{key}="{value}"' for key, value in one.labels.items())
        prefix = f"{one.metric}{{{body}}} 1 "
        out.extend(f"{prefix}{t}\n" for t in times)
