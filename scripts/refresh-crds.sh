#!/usr/bin/env bash
# Replaces the vendored upstream CRDs in tests/crds/ with the copies in SOURCE_DIR, unmodified.
#
#   scripts/refresh-crds.sh SOURCE_DIR
#
# SOURCE_DIR holds the upstream files either flat (SOURCE_DIR/kueue.x-k8s.io_workloads.yaml)
# or in checkouts of the upstream repositories named kueue/, kuberay/, keda/, KAI-Scheduler/,
# jobset/, training-operator/, mpi-operator/, trainer/, lws/, appwrapper/ and notebooks/
# (SOURCE_DIR/kueue/config/components/crd/bases/kueue.x-k8s.io_workloads.yaml). Every file
# must be found before any is replaced. Afterwards, update the table in tests/crds/README.md
# (version, commit, git blob): tests/test_vendored_crds.py fails until it matches.
set -euo pipefail

if [[ $# -ne 1 || ! -d "$1" ]]; then
    echo "usage: $0 SOURCE_DIR   (a directory of upstream CRD files, or of upstream checkouts)" >&2
    exit 2
fi
source_dir="$(cd "$1" && pwd)"
target_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/tests/crds"

# file name -> its path under SOURCE_DIR when SOURCE_DIR holds upstream checkouts.
declare -A UPSTREAM=(
    [kueue.x-k8s.io_workloads.yaml]=kueue/config/components/crd/bases
    [kueue.x-k8s.io_clusterqueues.yaml]=kueue/config/components/crd/bases
    [kueue.x-k8s.io_localqueues.yaml]=kueue/config/components/crd/bases
    [kueue.x-k8s.io_resourceflavors.yaml]=kueue/config/components/crd/bases
    [kueue.x-k8s.io_workloadpriorityclasses.yaml]=kueue/config/components/crd/bases
    [ray.io_rayclusters.yaml]=kuberay/ray-operator/config/crd/bases
    [ray.io_rayjobs.yaml]=kuberay/ray-operator/config/crd/bases
    [keda.sh_scaledobjects.yaml]=keda/config/crd/bases
    [keda.sh_triggerauthentications.yaml]=keda/config/crd/bases
    [scheduling.run.ai_queues.yaml]=KAI-Scheduler/deployments/kai-scheduler/crds
    [scheduling.run.ai_podgroups.yaml]=KAI-Scheduler/deployments/kai-scheduler/crds
    [jobset.x-k8s.io_jobsets.yaml]=jobset/config/components/crd/bases
    [kubeflow.org_pytorchjobs.yaml]=training-operator/manifests/base/crds
    [kubeflow.org_tfjobs.yaml]=training-operator/manifests/base/crds
    [kubeflow.org_xgboostjobs.yaml]=training-operator/manifests/base/crds
    [kubeflow.org_paddlejobs.yaml]=training-operator/manifests/base/crds
    [kubeflow.org_jaxjobs.yaml]=training-operator/manifests/base/crds
    [kubeflow.org_mpijobs.yaml]=mpi-operator/manifests/base
    [trainer.kubeflow.org_trainjobs.yaml]=trainer/manifests/base/crds
    [trainer.kubeflow.org_clustertrainingruntimes.yaml]=trainer/manifests/base/crds
    [leaderworkerset.x-k8s.io_leaderworkersets.yaml]=lws/config/crd/bases
    [workload.codeflare.dev_appwrappers.yaml]=appwrapper/config/crd/bases
    [kubeflow.org_notebooks.yaml]=notebooks/components/notebook-controller/config/crd/bases
)

declare -A found=()
missing=0
for name in $(printf '%s\n' "${!UPSTREAM[@]}" | sort); do
    for candidate in "${source_dir}/${name}" "${source_dir}/${UPSTREAM[${name}]}/${name}"; do
        if [[ -f "${candidate}" ]]; then
            found[${name}]="${candidate}"
            break
        fi
    done
    if [[ -z "${found[${name}]:-}" ]]; then
        echo "refresh-crds: ${name} is in neither ${source_dir}/ nor ${source_dir}/${UPSTREAM[${name}]}/" >&2
        missing=1
    fi
done
if [[ ${missing} -ne 0 ]]; then
    echo "refresh-crds: nothing replaced" >&2
    exit 1
fi

for name in $(printf '%s\n' "${!found[@]}" | sort); do
    install -m 644 "${found[${name}]}" "${target_dir}/${name}"
    echo "${name} $(git hash-object "${target_dir}/${name}")"
done
echo "refresh-crds: now name each file's version, commit and blob in tests/crds/README.md"
