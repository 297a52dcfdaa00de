"""The Kubeflow training jobs Kueue queues, one row each: what the emulation of their operator
(`job_controllers`), Kueue's integration for them (`kueue_integrations`, `kueue_pod_sets`) and
the builders (`builders.kinds.make_kubeflow_job`) need to know of each. Plain data, so that
the test API server's catalog can read it too.

- PyTorchJob, TFJob, XGBoostJob, PaddleJob, JAXJob (`kubeflow.org/v1`, kubeflow/training-operator
  v1.9.0): the operator makes every replica a pod `<job>-<type>-<index>`, controlled by the job
  (pkg/controller.v1/common/pod.go, createNewPod; pkg/controller.v1/common/util.go,
  GenGeneralName), labelled with its operator's name (each controller's `controllerName`), the
  job's name, the replica type and index, and `job-role: master` where the kind's IsMasterRole
  says (pkg/controller.v1/<kind>/*_controller.go); a suspended job's pods are deleted.
- MPIJob (`kubeflow.org/v2beta1`, kubeflow/mpi-operator, the MPIJob Kueue integrates): workers are
  pods `<job>-worker-<index>` controlled by the job, the launcher a batch Job `<job>-launcher`
  controlled by the job whose `suspend` follows the MPIJob's; suspending the MPIJob deletes the
  workers (pkg/controller/mpi_job_controller.go, syncHandler, newWorker, newLauncherJob).

Kueue suspends all six through `spec.runPolicy.suspend`, and makes one pod set per replica type
the job has, named in lower case, in the kind's order (kueue pkg/controller/jobs/kubeflow/
kubeflowjob/kubeflowjob_controller.go, PodSets and OrderedReplicaTypes, with each kind's
OrderedReplicaTypes in pkg/controller/jobs/kubeflow/jobs/<kind>/<kind>_controller.go;
pkg/controller/jobs/mpijob/mpijob_controller.go, PodSets and orderedReplicaTypes).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

KUBEFLOW_GROUP = "kubeflow.org"
SUSPEND_PATH = ("runPolicy", "suspend")
# The labels both operators put on their pods (training-operator pkg/apis/kubeflow.org/v1/
# common_types.go; mpi-operator pkg/apis/kubeflow/v2beta1/constants.go).
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
OPERATOR_LABEL = "training.kubeflow.org/operator-name"
REPLICA_TYPE_LABEL = "training.kubeflow.org/replica-type"
REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"
JOB_ROLE_LABEL = "training.kubeflow.org/job-role"


@dataclass(frozen=True)
class KubeflowKind:
    kind: str
    version: str
    replica_specs: str  # the spec field holding its replica specs
    replica_types: tuple[str, ...]  # Kueue's order of its pod sets
    container: str  # the container the operator looks for (its DefaultContainerName)
    operator: str  # the operator-name label on its pods
    # IsMasterRole: the first of these the job has is its master; without any, worker 0 is
    # when `worker_zero_leads`.
    master_types: tuple[str, ...] = ()
    worker_zero_leads: bool = False
    launcher_job: bool = False  # MPIJob: the launcher is a batch Job, not a pod of its own

    @property
    def api_version(self) -> str:
        return f"{KUBEFLOW_GROUP}/{self.version}"

    @property
    def resource(self) -> str:
        """The store key, "<plural>.kubeflow.org"."""
        return f"{self.kind.lower()}s.{KUBEFLOW_GROUP}"

    def is_master(self, present: Collection[str], replica_type: str, index: int) -> bool:
        if any(t in present for t in self.master_types):
            return replica_type in self.master_types
        return self.worker_zero_leads and replica_type == "Worker" and index == 0


KUBEFLOW_KINDS: dict[str, KubeflowKind] = {
    row.kind: row
    for row in (
        KubeflowKind(
            "PyTorchJob",
            "v1",
            "pytorchReplicaSpecs",
            ("Master", "Worker"),
            container="pytorch",
            operator="pytorchjob-controller",
            master_types=("Master",),
            worker_zero_leads=True,
        ),
        KubeflowKind(
            "TFJob",
            "v1",
            "tfReplicaSpecs",
            ("Chief", "Master", "PS", "Worker", "Evaluator"),
            container="tensorflow",
            operator="tfjob-controller",
            master_types=("Chief", "Master"),
            worker_zero_leads=True,
        ),
        KubeflowKind(
            "XGBoostJob",
            "v1",
            "xgbReplicaSpecs",
            ("Master", "Worker"),
            container="xgboost",
            operator="xgboostjob-controller",
            master_types=("Master",),
        ),
        KubeflowKind(
            "PaddleJob",
            "v1",
            "paddleReplicaSpecs",
            ("Master", "Worker"),
            container="paddle",
            operator="paddlejob-controller",
            master_types=("Master",),
        ),
        KubeflowKind(
            "JAXJob",
            "v1",
            "jaxReplicaSpecs",
            ("Worker",),
            container="jax",
            operator="jaxjob-controller",
            worker_zero_leads=True,
        ),
        KubeflowKind(
            "MPIJob",
            "v2beta1",
            "mpiReplicaSpecs",
            ("Launcher", "Worker"),
            container="mpi",
            operator="mpi-operator",
            launcher_job=True,
        ),
    )
}
