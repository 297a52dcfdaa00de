"""The job kinds' own controllers in miniature: what each makes of its object once Kueue
unsuspends it, and what it deletes when Kueue suspends it again.

- batch Job (kubernetes pkg/controller/job/job_controller.go): `parallelism` pods, named
  `<job>-<index>-<suffix>` when Indexed, labelled `batch.kubernetes.io/job-name`; a suspended
  Job's active pods are deleted.
- JobSet (kubernetes-sigs/jobset pkg/controllers/jobset_controller.go): `replicas` Jobs per
  replicated job, `<jobset>-<replicated job>-<index>`, labelled with the JobSet's names;
  suspending the JobSet suspends its Jobs, resuming it resumes them.
- The Kubeflow training jobs (`kubeflow_kinds`, which cites their operators): PyTorchJob, TFJob,
  XGBoostJob, PaddleJob and JAXJob run a pod `<job>-<replica type>-<index>` per replica;
  MPIJob a pod `<job>-worker-<index>` per worker and a launcher Job `<job>-launcher`; the pods
  labelled `training.kubeflow.org/*`. A suspended job's pods are deleted (MPIJob's launcher
  Job is suspended, which deletes its pod).
- TrainJob (kubeflow/trainer pkg/controller/trainjob_controller.go): a JobSet of the TrainJob's
  name built from its runtime, whose `suspend` follows the TrainJob's.
- AppWrapper (project-codeflare/appwrapper internal/controller/appwrapper/
  appwrapper_controller.go): each component created, controlled by the AppWrapper, while it
  is not suspended; deleted (with what they made) when it is. The component and the pod
  template at each of its declared pod sets are labelled `workload.codeflare.dev/appwrapper`
  (internal/controller/appwrapper/resource_management.go, createComponent), so its pods are.
"""

from __future__ import annotations

import copy
from datetime import datetime

from autoscaler.sim.kinds import stable_suffix
from tests.support import kubeflow_kinds as kf
from tests.support import kueue_pod_sets as sets
from tests.support.kind_pods import child_pod
from tests.support.kind_store import KindStore, Object, controlled_child, owner_reference
from tests.support.kueue_integrations import is_suspended

JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
JOB_INDEX_LABEL = "batch.kubernetes.io/job-completion-index"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
JOB_INDEX_IN_JOBSET = "jobset.sigs.k8s.io/job-index"
APPWRAPPER_LABEL = "workload.codeflare.dev/appwrapper"


class JobControllers:
    def __init__(self, kinds: KindStore) -> None:
        self._kinds = kinds

    def reconcile(self, *, now: datetime) -> None:
        for trainjob in self._kinds.list("TrainJob"):
            self._trainjob(trainjob)
        for appwrapper in self._kinds.list("AppWrapper"):
            self._appwrapper(appwrapper)
        for row in kf.KUBEFLOW_KINDS.values():
            for training in self._kinds.list(row.kind):
                self._kubeflow_job(training, row, now=now)
        for jobset in self._kinds.list("JobSet"):
            self._jobset(jobset)
        for job in self._kinds.list("Job"):
            self._job(job, now=now)

    def _trainjob(self, trainjob: Object) -> None:
        runtime = self._kinds.store.get(
            "clustertrainingruntimes.trainer.kubeflow.org",
            name=trainjob["spec"]["runtimeRef"]["name"],
        )
        meta = trainjob["metadata"]
        found = self._kinds.find("JobSet", meta["namespace"], meta["name"])
        if found is None:
            jobset = controlled_child(
                trainjob,
                api_version="jobset.x-k8s.io/v1alpha2",
                kind="JobSet",
                name=meta["name"],
                spec=sets.trainjob_jobset_spec(trainjob, runtime),
            )
            self._kinds.write(jobset)
        else:
            self._kinds.update(found, suspend=is_suspended(trainjob))

    def _appwrapper(self, appwrapper: Object) -> None:
        meta = appwrapper["metadata"]
        for component in appwrapper["spec"]["components"]:
            template = component["template"]
            found = self._kinds.find(
                template["kind"], meta["namespace"], template["metadata"]["name"]
            )
            if is_suspended(appwrapper):
                if found is not None:
                    self._kinds.delete_tree(found)
            elif found is None:
                wrapped = copy.deepcopy(template)
                wrapped["metadata"]["namespace"] = meta["namespace"]
                wrapped["metadata"].setdefault("labels", {})[APPWRAPPER_LABEL] = meta["name"]
                for declared in component.get("podSets", []):
                    pod_template = sets.at_path(wrapped, declared["path"].removeprefix("template."))
                    labels = pod_template.setdefault("metadata", {}).setdefault("labels", {})
                    labels[APPWRAPPER_LABEL] = meta["name"]
                wrapped["metadata"]["ownerReferences"] = [owner_reference(appwrapper)]
                self._kinds.write(wrapped)

    def _jobset(self, jobset: Object) -> None:
        meta, spec = jobset["metadata"], jobset["spec"]
        suspended = spec.get("suspend", False)
        for replicated in spec["replicatedJobs"]:
            for index in range(replicated.get("replicas", 1)):
                name = f"{meta['name']}-{replicated['name']}-{index}"
                found = self._kinds.find("Job", meta["namespace"], name)
                if found is not None:
                    self._kinds.update(found, suspend=suspended)
                    continue
                labels = {
                    JOBSET_NAME_LABEL: meta["name"],
                    REPLICATED_JOB_LABEL: replicated["name"],
                    JOB_INDEX_IN_JOBSET: str(index),
                }
                job_spec = copy.deepcopy(replicated["template"]["spec"])
                job_spec["suspend"] = suspended
                template_meta = job_spec["template"].setdefault("metadata", {})
                template_meta.setdefault("labels", {}).update(labels)
                job = controlled_child(
                    jobset,
                    api_version="batch/v1",
                    kind="Job",
                    name=name,
                    spec=job_spec,
                    labels=labels,
                )
                self._kinds.write(job)

    def _job(self, job: Object, *, now: datetime) -> None:
        pods = self._kinds.children("Pod", job)
        if job["spec"].get("suspend", False):
            for pod in pods:
                self._kinds.delete_tree(pod)
            return
        have = {p["metadata"]["labels"].get(JOB_INDEX_LABEL) for p in pods}
        name, uid = job["metadata"]["name"], job["metadata"]["uid"]
        for index in range(job["spec"].get("parallelism", 1)):
            if str(index) in have:
                continue
            labels = {
                JOB_NAME_LABEL: name,
                "job-name": name,
                "batch.kubernetes.io/controller-uid": uid,
                JOB_INDEX_LABEL: str(index),
            }
            pod_name = f"{name}-{index}-{stable_suffix(f'{uid}/{index}/{now}')}"
            self._kinds.write(
                child_pod(job, pod_name, job["spec"]["template"], now=now, labels=labels)
            )

    def _kubeflow_job(self, training: Object, row: kf.KubeflowKind, *, now: datetime) -> None:
        """The pods of each replica (MPIJob's launcher as a Job), or none while suspended."""
        name = training["metadata"]["name"]
        suspended = is_suspended(training)
        if row.launcher_job:
            self._mpi_launcher(training, suspended=suspended)
        pods = self._kinds.children("Pod", training)
        if suspended:
            for pod in pods:
                self._kinds.delete_tree(pod)
            return
        have = {p["metadata"]["name"] for p in pods}
        specs = training["spec"][row.replica_specs]
        for replica_type, spec in specs.items():
            if row.launcher_job and replica_type == "Launcher":
                continue  # made by the launcher Job
            role = replica_type.lower()
            for index in range(spec.get("replicas", 1)):
                pod_name = f"{name}-{role}-{index}"
                if pod_name in have:
                    continue
                labels = {
                    kf.OPERATOR_LABEL: row.operator,
                    kf.JOB_NAME_LABEL: name,
                    kf.REPLICA_INDEX_LABEL: str(index),
                }
                if row.launcher_job:  # mpi-operator: defaultLabels(name, "worker")
                    labels[kf.JOB_ROLE_LABEL] = role
                else:  # training-operator: createNewPod
                    labels[kf.REPLICA_TYPE_LABEL] = role
                    if row.is_master(specs, replica_type, index):
                        labels[kf.JOB_ROLE_LABEL] = "master"
                pod = child_pod(training, pod_name, spec["template"], now=now, labels=labels)
                self._kinds.write(pod)

    def _mpi_launcher(self, mpijob: Object, *, suspended: bool) -> None:
        """The launcher Job, made at once (launcherCreationPolicy AtStartup, or the workers all
        ready) and suspended with the MPIJob (mpi-operator pkg/controller/mpi_job_controller.go,
        syncHandler and newLauncherJob)."""
        meta = mpijob["metadata"]
        name = f"{meta['name']}-launcher"
        found = self._kinds.find("Job", meta["namespace"], name)
        if found is not None:
            self._kinds.update(found, suspend=suspended)
            return
        spec = mpijob["spec"]["mpiReplicaSpecs"]["Launcher"]
        template = copy.deepcopy(spec["template"])
        labels = template.setdefault("metadata", {}).setdefault("labels", {})
        labels.update(
            {
                kf.OPERATOR_LABEL: "mpi-operator",
                kf.JOB_NAME_LABEL: meta["name"],
                kf.JOB_ROLE_LABEL: "launcher",
            }
        )
        policy = spec.get("restartPolicy", "OnFailure")  # setRestartPolicy
        template["spec"]["restartPolicy"] = "Never" if policy == "ExitCode" else policy
        launcher = controlled_child(
            mpijob,
            api_version="batch/v1",
            kind="Job",
            name=name,
            spec={"template": template, "suspend": suspended},
            labels={"app": meta["name"]},
        )
        self._kinds.write(launcher)
