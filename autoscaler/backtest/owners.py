"""Which owner a GPU pod belonged to, from kube-state-metrics' history, as live pods are found.

The live service finds a Workload's pods the way its owner kind's row says (`OWNER_KINDS` in
`domain/policy/owners.py`, `PodsFound`; `adapters/kueue/ownership.py`). From history the same
facts come from kube-state-metrics (docs/metrics/workload/*.md in kubernetes/kube-state-metrics):

- `kube_pod_owner{namespace, pod, owner_kind, owner_name, owner_is_controller}`, a pod's
  owner (`owner_kind="<none>"` for a pod without one);
- `kube_replicaset_owner{replicaset, ...}` and `kube_job_owner{job_name, ...}`, the owner of
  an intermediate ReplicaSet or Job. kube-state-metrics exports no StatefulSet owner (no
  `kube_statefulset_owner`), nor the owners of custom resources (a JobSet's): a chain through
  one ends there;
- `kube_pod_labels{namespace, pod, label_<key>}`, a pod's labels, each `key` sanitized to
  `label_` and letters, digits and `_`. kube-state-metrics exposes only the labels its
  `--metric-labels-allowlist` names (`pods=[ray.io/cluster,...]`): without it no owner is
  found by labels.

Each row's way, from those series:
- SELECTOR (and every `cluster.ownerKinds` podSelector): the labels of the row's selector; a
  row whose kind is not in the pod's chain names an owner above it (a RayJob above its
  RayCluster) and wins;
- POD_GROUP: Kueue's pod-group label names the Workload (`POD_GROUP_KEY`); the kind is the
  one Kueue prefixes the name with (`leaderworkerset-`, `statefulset-`: kueue
  pkg/controller/jobframework/workload_names.go), else a pod group people named (Pod); a lone
  pod without an owner and with Kueue's queue-name label is its own Workload (Pod);
- OWNERSHIP and QUEUED_PODS: the chain of controller owners, from the pod's up to its top (an
  object whose owner is `<none>`, or whose owner no series names); the owner is the highest
  object of the chain whose kind is in the table (a JobSet over its Job, a Deployment over its
  ReplicaSet). Where the chain stops at a StatefulSet, a QUEUED_PODS row above it is told by
  the label its controller gives the pods (`NAMED_BY_LABEL`: a Notebook's `notebook-name`).

What cannot be told is said: a chain cut short (a StatefulSet no label names, a missing
series) leaves the owner unknown, per pod, and such a pod is never judged, so never idle; a
row above a kind whose owner kube-state-metrics never exports (a TrainJob above its JobSet, a
RayJob above its RayCluster) cannot be told at all, and the report says which owners it
counted in its place (`blind`).

A RayJob in particular: its pods are its RayCluster's (owned by it, labelled `ray.io/cluster`
with its name) and carry no label naming the RayJob (KubeRay puts `ray.io/originated-from-*`
on the RayCluster only: ray-project/kuberay ray-operator/controllers/ray/common/pod.go
labelPod); kube-state-metrics exports no RayCluster owner nor a custom resource's labels. So
the history shows a RayJob's pods as a RayCluster's, counted as that RayCluster (its name is
not the RayJob's: `<rayjob>-<5 random characters>`, utils/util.go GenerateRayClusterName), and
the RayJob is never named. The note lists each RayCluster KubeRay could have made for a RayJob:
those whose name ends in 5 characters of the alphabet Kubernetes draws such suffixes from
(`MADE_FOR_AN_OWNER`); a RayCluster otherwise named cannot be a RayJob's.
The queries are one range query per series and chunk, fleet-wide, as the GPU series' own.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from autoscaler.backtest.matrix import RangeAnswer
from autoscaler.core.errors import MetricsUnavailable
from autoscaler.domain.policy.management import KUEUE_QUEUE_LABEL
from autoscaler.domain.policy.owners import OWNER_KINDS, POD_GROUP_KEY, OwnerKind, PodsFound

POD_OWNER = "kube_pod_owner"
POD_LABELS = "kube_pod_labels"
NO_OWNER = "<none>"
# kind -> (the series naming the owner of an object of that kind, its label naming the object)
OWNER_SERIES: Mapping[str, tuple[str, str]] = {
    "ReplicaSet": ("kube_replicaset_owner", "replicaset"),
    "Job": ("kube_job_owner", "job_name"),
}
# Intermediate kinds whose owner kube-state-metrics never exports.
NO_OWNER_SERIES: Mapping[str, str] = {"StatefulSet": "kube_statefulset_owner"}
# The label a QUEUED_PODS kind's controller gives its pods, naming it, where kube-state-metrics
# cannot follow the chain up to it: the Kubeflow notebook controller labels the pods of a
# Notebook's StatefulSet `notebook-name` (kubeflow/notebooks components/notebook-controller/
# controllers/notebook_controller.go, generateStatefulSet).
NAMED_BY_LABEL: Mapping[str, str] = {"Notebook": "notebook-name"}
# Intermediate kinds an owner above names with a random suffix: only an object so named can be
# one such an owner made. KubeRay names a RayJob's RayCluster `<rayjob>-` and 5 characters of
# k8s.io/apimachinery pkg/util/rand's alphabet (ray-operator/controllers/ray/utils/util.go
# GenerateRayClusterName; rand.String).
MADE_FOR_AN_OWNER: Mapping[str, re.Pattern[str]] = {
    "RayCluster": re.compile(r".+-[bcdfghjklmnpqrstvwxz2456789]{5}"),
}
OWNER_METRICS = (POD_OWNER, *(metric for metric, _ in OWNER_SERIES.values()), POD_LABELS)
NOT_SCRAPED = f"{POD_OWNER} not found"
_TERM = re.compile(r"^\s*(?P<key>[^=!,\s]+)\s*==?\s*(?P<value>[^,\s]*)\s*$")

Link = tuple[str, str]  # (kind, name)


@dataclass(frozen=True)
class Owner:
    """A pod's owner of a kind in the table: the Workload's owner it belongs to."""

    kind: OwnerKind
    name: str
    found_by: str  # "ownerReferences" or the label that named it


@dataclass(frozen=True)
class Unknown:
    """The owner cannot be told: the pod is not judged (never idle)."""

    why: str


@dataclass(frozen=True)
class NotOurs:
    """The owner is known and is no kind of the table (or the pod has none)."""

    top: str  # "Kind/name", or NO_OWNER


Found = Owner | Unknown | NotOurs


@dataclass(frozen=True)
class LabelRow:
    """A row whose pods are found by labels: each `label_<key>` the pod must carry."""

    kind: OwnerKind
    fixed: Mapping[str, str]  # sanitized key -> value
    naming: str  # the sanitized key whose value is the owner's name
    label: str  # the label's own key, for the report


def label_rows(kinds: Sequence[OwnerKind]) -> tuple[LabelRow, ...]:
    """The rows whose `pod_selector` is equalities with one `{name}` (others: by ownership)."""
    found = []
    for kind in kinds:
        terms = [_TERM.match(term) for term in kind.pod_selector.split(",")]
        if not kind.pod_selector or any(term is None for term in terms):
            continue
        pairs = [(term["key"], term["value"]) for term in terms if term is not None]
        naming = [key for key, value in pairs if value == "{name}"]
        if len(naming) != 1 or any("{" in value for key, value in pairs if key != naming[0]):
            continue
        fixed = {sanitized(key): value for key, value in pairs if key != naming[0]}
        found.append(LabelRow(kind, fixed, sanitized(naming[0]), naming[0]))
    return tuple(found)


def sanitized(label: str) -> str:
    """A label key as kube_pod_labels names it (kube-state-metrics' SanitizeLabelName)."""
    return "label_" + re.sub(r"[^a-zA-Z0-9_]", "_", label)


def owner_queries(*, slot_range: str) -> tuple[str, ...]:
    """The per-slot forms of the owner series, read like the GPU series (`slot_range`: a
    slot's range selector duration, `ChunkPlan.slot_range`)."""
    return tuple(f"max_over_time({metric}[{slot_range}])" for metric in OWNER_METRICS)


@dataclass(frozen=True)
class OwnerAnswers:
    """One chunk's answers, by metric; a failed query's reason instead of its answer."""

    replies: Mapping[str, RangeAnswer] = field(default_factory=dict)
    failures: Mapping[str, str] = field(default_factory=dict)


def read_owner_series(ask: Callable[[str], RangeAnswer], *, slot_range: str) -> OwnerAnswers:
    """Ask each owner query; a failure is kept, not raised: its pods' owners are unknown."""
    replies: dict[str, RangeAnswer] = {}
    failures: dict[str, str] = {}
    for metric, promql in zip(OWNER_METRICS, owner_queries(slot_range=slot_range), strict=True):
        try:
            replies[metric] = ask(promql)
        except MetricsUnavailable as exc:
            failures[metric] = str(exc)
    return OwnerAnswers(replies, failures)


class OwnerHistory:
    """What the owner series said over the chunks fed so far, and each pod's owner from it."""

    def __init__(self, *, kinds: Sequence[OwnerKind] = OWNER_KINDS) -> None:
        self._kinds = {row.kind: row for row in kinds}
        self._label_rows = label_rows(kinds)
        self._pods: dict[tuple[str, str], set[Link]] = {}  # (namespace, pod) -> its owners
        self._parents: dict[tuple[str, str, str], set[Link]] = {}  # (ns, kind, name) -> owners
        self._labels: dict[tuple[str, str], dict[str, str]] = {}
        self.seen: set[str] = set()  # the metrics with at least one series so far
        self.failures: dict[str, str] = {}  # metric -> why its query failed
        # what could not be told above an owner found -> the owners counted ("ns/Kind/name")
        self.blind: dict[str, set[str]] = {}

    @property
    def scraped(self) -> bool:
        return POD_OWNER in self.seen

    def feed(self, answers: OwnerAnswers) -> None:
        self.failures.update(answers.failures)
        for metric, reply in answers.replies.items():
            for series in reply.series:
                self.seen.add(metric)
                self._take(metric, series.labels)

    def _take(self, metric: str, labels: Mapping[str, str]) -> None:
        namespace = labels.get("namespace", "")
        if metric == POD_LABELS:
            pod = (namespace, labels.get("pod", ""))
            self._labels.setdefault(pod, {}).update(
                (k, v) for k, v in labels.items() if k.startswith("label_") and v
            )
            return
        if labels.get("owner_is_controller", "true") != "true" and labels.get("owner_kind") != (
            NO_OWNER
        ):
            return  # only the controller owns, as ownerReferences' controller field says
        owner = (labels.get("owner_kind", ""), labels.get("owner_name", ""))
        if metric == POD_OWNER:
            self._pods.setdefault((namespace, labels.get("pod", "")), set()).add(owner)
            return
        for kind, (series, name_label) in OWNER_SERIES.items():
            if series == metric:
                child = (namespace, kind, labels.get(name_label, ""))
                self._parents.setdefault(child, set()).add(owner)

    def owner_of(self, namespace: str, pod: str) -> Found:
        """The pod's owner as far as the history tells it."""
        labels = self._labels.get((namespace, pod), {})
        by_label = self._by_label(labels)
        owners = self._pods.get((namespace, pod))
        chain, cut = self._chain(namespace, owners) if owners else ([], None)
        if by_label is not None and by_label.kind.kind not in {kind for kind, _ in chain}:
            return by_label
        if (group := self._pod_group(labels)) is not None:
            return group
        if not owners:
            return Unknown(self._pod_owner_missing())
        return self._by_chain(namespace, pod, chain, cut=cut, labels=labels)

    def _by_chain(
        self,
        namespace: str,
        pod: str,
        chain: list[Link],
        *,
        cut: str | None,
        labels: Mapping[str, str],
    ) -> Found:
        if cut is not None:
            return self._named_above(chain, labels) or Unknown(cut + self._unlabelled(chain))
        ours = [(self._kinds[kind], name) for kind, name in chain if kind in self._kinds]
        if ours:  # the highest: Kueue queues a Job's JobSet, and a CronJob's Job
            self._note_blind(namespace, chain[-1])
            return Owner(*ours[-1], "ownerReferences")
        if not chain and (lone := self._lone_pod(pod, labels)) is not None:
            return lone
        return NotOurs("/".join(chain[-1]) if chain else NO_OWNER)

    def _pod_owner_missing(self) -> str:
        if POD_OWNER in self.failures:
            return f"{POD_OWNER} unread: {self.failures[POD_OWNER]}"
        return f"{POD_OWNER} not found for this pod" if self.scraped else NOT_SCRAPED

    def _chain(self, namespace: str, owners: set[Link]) -> tuple[list[Link], str | None]:
        """The owners from the pod's up to the top; why it stops short, if it does."""
        chain: list[Link] = []
        while True:
            if len(owners) > 1:
                named = ", ".join(sorted(f"{k}/{n}" for k, n in owners))
                return chain, f"several owners over the range ({named})"
            (link,) = owners
            kind, name = link
            if kind == NO_OWNER:
                return chain, None
            chain.append(link)
            if kind in NO_OWNER_SERIES:
                missing = NO_OWNER_SERIES[kind]
                return chain, f"{kind}/{name}: kube-state-metrics exports no {missing}"
            if kind not in OWNER_SERIES:
                return chain, None  # no series names its owner: the top the history shows
            metric = OWNER_SERIES[kind][0]
            parents = self._parents.get((namespace, kind, name))
            if not parents:
                why = self.failures.get(metric)
                said = f"{metric} unread: {why}" if why else f"{metric} not found"
                return chain, f"{kind}/{name}: {said}"
            owners = parents

    def _by_label(self, labels: Mapping[str, str]) -> Owner | None:
        for row in self._label_rows:
            name = labels.get(row.naming)
            if name and all(labels.get(k) == v for k, v in row.fixed.items()):
                return Owner(row.kind, name, row.label)
        return None

    def _pod_group(self, labels: Mapping[str, str]) -> Owner | None:
        """The Workload Kueue's pod-group label names, of the POD_GROUP kind whose name Kueue
        prefixes it with, else a pod group people named (Pod)."""
        group = labels.get(sanitized(POD_GROUP_KEY))
        rows = [r for r in self._kinds.values() if r.pods_found is PodsFound.POD_GROUP]
        if not group or not rows:
            return None
        named = [r for r in rows if r.kind != "Pod" and group.startswith(r.kind.lower() + "-")]
        row = named[0] if named else self._kinds.get("Pod")
        return None if row is None else Owner(row, group, POD_GROUP_KEY)

    def _lone_pod(self, pod: str, labels: Mapping[str, str]) -> Owner | None:
        """A pod without an owner that Kueue queued (its queue-name label): its own Workload."""
        row = self._kinds.get("Pod")
        if row is None or not labels.get(sanitized(KUEUE_QUEUE_LABEL)):
            return None
        return Owner(row, pod, KUEUE_QUEUE_LABEL)

    def _named_above(self, chain: list[Link], labels: Mapping[str, str]) -> Owner | None:
        """A QUEUED_PODS row above where the chain stops, named by its pods' label."""
        for row in self._queued_above(chain):
            if name := labels.get(sanitized(NAMED_BY_LABEL[row.kind])):
                return Owner(row, name, NAMED_BY_LABEL[row.kind])
        return None

    def _unlabelled(self, chain: list[Link]) -> str:
        """What label would have named an owner above a cut chain, for its reason."""
        keys = [NAMED_BY_LABEL[row.kind] for row in self._queued_above(chain)]
        if chain and chain[-1][0] == "StatefulSet" and "StatefulSet" in self._kinds:
            keys.append(POD_GROUP_KEY)
        if not keys:
            return ""
        return f"; no label of {', '.join(keys)} in kube_pod_labels (--metric-labels-allowlist)"

    def _queued_above(self, chain: list[Link]) -> list[OwnerKind]:
        top = chain[-1][0] if chain else ""
        return [
            row
            for row in self._kinds.values()
            if row.pods_found is PodsFound.QUEUED_PODS
            and top in row.through
            and row.kind in NAMED_BY_LABEL
        ]

    def _note_blind(self, namespace: str, top: Link) -> None:
        """An OWNERSHIP row above the chain's top, where no series names the top's owner."""
        kind, name = top
        if kind in OWNER_SERIES:
            return
        if (made := MADE_FOR_AN_OWNER.get(kind)) is not None and not made.fullmatch(name):
            return  # not a name the owner above gives: no such owner above it
        for row in self._kinds.values():
            if row.pods_found is PodsFound.OWNERSHIP and kind in row.through:
                said = f"a {row.kind} above a {kind} (kube-state-metrics exports no {kind} owner)"
                self.blind.setdefault(said, set()).add(f"{namespace}/{kind}/{name}")
