"""The copy-and-apply examples in config/: each file validates, and every queue, flavor and
priority class they name is shipped there too."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

from autoscaler.engine.cycle.keda_managed import keda_managed_targets
from autoscaler.keda.http import PREFIX as KEDA_HTTP_PREFIX
from autoscaler.keda.http import VALUE_LOCATION
from autoscaler.keda.metadata import parse_metadata
from autoscaler.settings.tree import Settings, load_settings
from tests.deploy.tooling import CHART, RELEASE, REPO, Manifest
from tests.deploy.validation import describe, problems

CONFIG = REPO / "config"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
# The chart installed as documented: release and namespace idle-gpu-autoscaler.
SERVICE_HOST = f"{RELEASE}.{RELEASE}.svc.cluster.local"


RULES = (
    CONFIG / "recording-rules"
)  # Prometheus rules files (tests/adapters/test_recording_rules.py)


def config_files() -> list[Path]:
    return sorted(path for path in CONFIG.rglob("*.yaml") if RULES not in path.parents)


def is_service_config(path: Path) -> bool:
    """Our own settings files sit at the top of config/; Kubernetes objects in subfolders."""
    return path.parent == CONFIG


def manifests() -> Iterator[tuple[Path, Manifest]]:
    for path in config_files():
        if not is_service_config(path):
            for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
                if doc:
                    yield path, doc


def service_paths() -> list[Path]:
    return [path for path in config_files() if is_service_config(path)]


def service_configs() -> list[Settings]:
    return [load_settings(path, environ={}) for path in service_paths()]


def shipped(kind: str) -> dict[tuple[str, str], Manifest]:
    """Objects of `kind` by (namespace, name); a name shipped twice must be the same object."""
    found: dict[tuple[str, str], Manifest] = {}
    for _, doc in manifests():
        if doc["kind"] == kind:
            key = (doc["metadata"].get("namespace", ""), doc["metadata"]["name"])
            assert found.setdefault(key, doc) == doc, f"two different {kind}s named {key}"
    return found


def labelled(label: str) -> Iterator[tuple[Manifest, str]]:
    for _, doc in manifests():
        value = doc["metadata"].get("labels", {}).get(label)
        if value is not None:
            yield doc, value


def triggers() -> Iterator[dict[str, Any]]:
    for _, trigger in triggers_with_namespace():
        yield trigger


def triggers_with_namespace() -> Iterator[tuple[str, dict[str, Any]]]:
    """Each ScaledObject trigger with the ScaledObject's namespace."""
    for _, doc in manifests():
        if doc["kind"] == "ScaledObject":
            for trigger in doc["spec"]["triggers"]:
                yield doc["metadata"]["namespace"], trigger


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(p, id=str(p.relative_to(CONFIG)))
        for p in config_files()
        if is_service_config(p)
    ],
)
def test_service_configuration_loads_with_the_service_settings_model(path: Path) -> None:
    settings = load_settings(path, environ={})
    assert settings.policy.dry_run, "examples are copied: they must not act on first use"


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(p, id=str(p.relative_to(CONFIG)))
        for p in config_files()
        if not is_service_config(p)
    ],
)
def test_every_kubernetes_object_validates(path: Path) -> None:
    docs = [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc]
    assert docs, f"{path} holds no object"
    invalid = {describe(doc): found for doc in docs if (found := problems(doc))}
    assert invalid == {}


def test_kueue_objects_use_v1beta2() -> None:
    versions = {
        doc["apiVersion"] for _, doc in manifests() if "kueue.x-k8s.io" in doc["apiVersion"]
    }
    assert versions == {"kueue.x-k8s.io/v1beta2"}


def test_every_queue_label_names_a_shipped_local_queue_in_its_namespace() -> None:
    local_queues = shipped("LocalQueue")
    references = list(labelled(QUEUE_LABEL))
    assert references, "no object in config/ uses a queue"
    for doc, queue in references:
        assert (doc["metadata"]["namespace"], queue) in local_queues, describe(doc)


def test_every_local_queue_feeds_a_shipped_cluster_queue() -> None:
    cluster_queues = {name for _, name in shipped("ClusterQueue")}
    for local_queue in shipped("LocalQueue").values():
        assert local_queue["spec"]["clusterQueue"] in cluster_queues, describe(local_queue)


def test_every_cluster_queue_flavor_is_shipped() -> None:
    flavors = {name for _, name in shipped("ResourceFlavor")}
    for queue in shipped("ClusterQueue").values():
        for group in queue["spec"]["resourceGroups"]:
            for flavor in group["flavors"]:
                assert flavor["name"] in flavors, describe(queue)


def test_every_priority_class_named_anywhere_is_shipped() -> None:
    classes = {name for _, name in shipped("WorkloadPriorityClass")}
    labels = {value for _, value in labelled(PRIORITY_LABEL)}
    protected = {name for s in service_configs() for name in s.policy.protected_priority_classes}
    assert labels, "no object in config/ carries a priority class"
    assert labels | protected <= classes


def test_every_namespaced_kueue_or_ray_object_has_its_namespace_shipped() -> None:
    namespaces = {name for _, name in shipped("Namespace")}
    for _, doc in manifests():
        group = doc["apiVersion"].split("/")[0]
        if group in ("kueue.x-k8s.io", "ray.io") and "namespace" in doc["metadata"]:
            assert doc["metadata"]["namespace"] in namespaces, describe(doc)


def test_the_seed_setups_are_reproduced() -> None:
    classes = {name: doc["value"] for (_, name), doc in shipped("WorkloadPriorityClass").items()}
    assert classes == {"prod-priority": 1000, "dev-priority": 100}
    queues = {name: doc["spec"] for (_, name), doc in shipped("ClusterQueue").items()}
    assert gpu_quota(queues["cq-production"]) == 12
    assert gpu_quota(queues["cq-development"]) == 8
    assert queues["cq-production"]["cohortName"] == queues["cq-development"]["cohortName"]
    assert gpu_quota(queues["cluster-queue"]) == 2
    demo = {name for (namespace, name) in shipped("RayCluster") if namespace == "demo"}
    assert demo == {"first-raycluster", "second-raycluster"}


def gpu_quota(spec: dict[str, Any]) -> int:
    return sum(
        int(resource["nominalQuota"])
        for group in spec["resourceGroups"]
        for flavor in group["flavors"]
        for resource in flavor["resources"]
        if resource["name"] == "nvidia.com/gpu"
    )


def test_keda_examples_point_at_the_chart_service_ports() -> None:
    found = list(triggers())
    assert {t["type"] for t in found} == {"external", "external-push", "metrics-api"}
    for trigger in found:
        metadata = trigger["metadata"]
        if trigger["type"] == "metrics-api":
            url = urlsplit(metadata["url"])
            assert (url.hostname, url.port) == (SERVICE_HOST, 8080)
        else:
            assert metadata["scalerAddress"] == f"{SERVICE_HOST}:9090"
        assert "authenticationRef" in trigger


def test_every_trigger_selects_a_target_the_scaler_accepts() -> None:
    profiles = {rule.name for s in service_configs() for rule in s.rules}  # a trigger's views
    for namespace, trigger in triggers_with_namespace():
        metadata = trigger["metadata"]
        if trigger["type"] == "metrics-api":
            url = urlsplit(metadata["url"])
            assert url.path == f"{KEDA_HTTP_PREFIX}/metrics"
            assert metadata["valueLocation"] == VALUE_LOCATION
            assert metadata["authMode"] == "bearer"
            query = parse_qs(url.query, strict_parsing=True)
            assert all(len(values) == 1 for values in query.values()), "a repeated parameter"
            raw, default_namespace = {k: v[0] for k, v in query.items()}, None
        else:
            raw, default_namespace = metadata, namespace
        parse_metadata(raw, default_namespace=default_namespace, profiles=profiles)


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(p, id=p.name)
        for p in service_paths()
        if load_settings(p, environ={}).keda.enabled
    ],
)
def test_the_loop_leaves_every_example_target_to_keda(path: Path) -> None:
    settings = load_settings(path, environ={})
    scaled_objects = [doc for _, doc in manifests() if doc["kind"] == "ScaledObject"]
    addresses = settings.keda.addresses(settings.cluster.service_namespace)
    managed = keda_managed_targets(scaled_objects, self_addresses=addresses)
    assert len(managed) == len(scaled_objects)


def test_metrics_api_activation_is_the_chart_policy_threshold() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text(encoding="utf-8"))
    threshold = float(values["config"]["policy"]["thresholdPercent"])
    activations = [
        float(trigger["metadata"]["activationTargetValue"])
        for trigger in triggers()
        if trigger["type"] == "metrics-api"
    ]
    assert activations == [threshold]


def test_a_keda_example_scales_a_kueue_workload() -> None:
    targets = [
        doc["spec"]["scaleTargetRef"] for _, doc in manifests() if doc["kind"] == "ScaledObject"
    ]
    workloads = [target for target in targets if target.get("kind") == "Workload"]
    assert [target["apiVersion"] for target in workloads] == ["kueue.x-k8s.io/v1beta2"]


def test_every_trigger_authentication_is_used_by_a_scaled_object_beside_it() -> None:
    used = {
        (doc["metadata"]["namespace"], trigger["authenticationRef"]["name"])
        for _, doc in manifests()
        if doc["kind"] == "ScaledObject"
        for trigger in doc["spec"]["triggers"]
    }
    assert set(shipped("TriggerAuthentication")) <= used
