"""Every kind Kueue queues besides Ray's, over the test API server's objects: Kueue's
integration for each (`kueue_integrations`) and each kind's own controller
(`job_controllers`, `set_controllers`), as `ClusterEmulator.sync()` runs them around Kueue's
admission step.

The life of each kind, one `sync()` at a time:

- JobSet, the Kubeflow training jobs (`kubeflow_kinds`), TrainJob, AppWrapper: applied
  (suspended, or suspended by Kueue's webhook) -> a Workload controlled by the job, pending ->
  admitted: unsuspended, and its controller makes the intermediates (TrainJob -> JobSet ->
  Jobs -> Pods; MPIJob -> its launcher Job -> Pod, and its worker Pods; AppWrapper -> its
  components -> Pods) and Running pods -> `spec.active: false`: suspended again, the pods
  deleted (a JobSet's Jobs and an MPIJob's launcher Job stay, suspended; an AppWrapper's
  components go). The stop lasts.
- StatefulSet and LeaderWorkerSet: gated pods and one Workload owned by the set (per group for
  an LWS) and by its pods, none controller -> admitted: the gates go, the pods run -> evicted:
  the pods are deleted, the set makes them again, gated, in the same Workload, which stays
  inactive. The stop lasts.
- Deployment, Notebook, plain pods: each gated pod (or pod group) its own Workload, owned by
  the pod(s) -> admitted: ungated, Running -> evicted: the pods are deleted, their Workload
  with them; the Deployment's ReplicaSet or the Notebook's StatefulSet makes a new gated pod,
  whose NEW Workload queues behind those already waiting (created now). A plain pod is not
  made again. The stop is a requeue.

Tests build the owners with `tests.support.builders.kinds` and `store.put` (or create them
through the API), then call `ClusterEmulator.sync()`: objects in the emulator's namespaces
only are touched. Everything written to a CRD-backed kind is validated against its CRD.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from autoscaler.sim.kueue_model import KueueState
from tests.support.job_controllers import JobControllers
from tests.support.kind_store import KindStore
from tests.support.kube_server.store import Store
from tests.support.kueue_integrations import KueueIntegrations
from tests.support.set_controllers import SetControllers

_ROUNDS = 8  # each round lets every controller act once; chains are at most 4 deep


class KindEmulator:
    def __init__(self, store: Store, *, namespaces: Collection[str] | None) -> None:
        self._kinds = KindStore(store, namespaces=namespaces)
        self._kueue = KueueIntegrations(self._kinds)
        self._sets = SetControllers(self._kinds)
        self._jobs = JobControllers(self._kinds)

    def before_admission(self, *, now: datetime) -> None:
        """Kueue's webhooks and Workloads for what was applied; the controllers make the
        (gated) pods; the pod groups' Workloads."""
        self._kueue.create_workloads(now=now)
        self._settle(now)
        self._kueue.create_workloads(now=now)

    def after_admission(self, state: KueueState, *, now: datetime) -> None:
        """Kueue runs what it admitted and stops the rest; the controllers follow; the pods
        they made again get their (new) Workloads."""
        self._kueue.run_or_stop(state, now=now)
        self._settle(now)
        self._kueue.create_workloads(now=now)

    def _settle(self, now: datetime) -> None:
        for _ in range(_ROUNDS):
            before = self._kinds.writes
            self._sets.reconcile(now=now)
            self._jobs.reconcile(now=now)
            if self._kinds.writes == before:
                return
        raise AssertionError("the emulated controllers did not settle")
