"""`check-config --cluster` (docs/CLI.md): what the configuration meets in the cluster, read
once as `serve` would read it (its kubeconfig and context, `--kubeconfig` and `--context`
instead where given, or the in-cluster config in a pod). One discovery request (is Kueue
there) and one list of Kueue's Configuration ConfigMap (adapters/kueue/configuration.py);
nothing is written.

Each finding is one line. Where a rule says `reclaim: via-kueue`, the line says whether
Kueue serves the priority boost it rests on (domain/kueue_config.py `gate_served`): on, a
comment beside the effective configuration; off or unknown, a warning, since such a rule
then does nothing at all (the configuration is still valid: exit 0). A cluster that cannot
be reached is one `error:` line naming what to do next, and exit 3.
"""

from __future__ import annotations

import sys
from pathlib import Path

from autoscaler.adapters.kubernetes.client import KubeClient
from autoscaler.adapters.kueue.configuration import list_configuration
from autoscaler.adapters.kueue.resources import KUEUE_GROUP
from autoscaler.client.next_steps import CLUSTER_FOR_CHECK
from autoscaler.core.errors import ClusterError, ConfigError
from autoscaler.domain.kueue_config import PRIORITY_BOOST_GATE, gate_served
from autoscaler.domain.policy.rules import Reclaim
from autoscaler.settings.rules import build_policy
from autoscaler.settings.tree import ClusterSettings, Settings

EXIT_UNREACHABLE = 3


def check_cluster(settings: Settings, *, kubeconfig: Path | None, context: str | None) -> int:
    """The cluster's lines on stdout (comments) and stderr (warnings, errors); the exit code."""
    cluster = pointed(settings.cluster, kubeconfig=kubeconfig, context=context)
    try:
        client = KubeClient.from_settings(cluster)
    except ConfigError as exc:
        problem = "; ".join(exc.problems)
        print(f"error: cannot reach the cluster: {problem}; {CLUSTER_FOR_CHECK}", file=sys.stderr)
        return EXIT_UNREACHABLE
    try:
        return _read(settings, cluster, client)
    finally:
        client.close()


def _read(settings: Settings, cluster: ClusterSettings, client: KubeClient) -> int:
    try:
        served = client.group_versions(KUEUE_GROUP)
    except ClusterError as exc:
        print(f"error: cannot reach the cluster: {exc}; {CLUSTER_FOR_CHECK}", file=sys.stderr)
        return EXIT_UNREACHABLE
    via = [r.name for r in build_policy(settings).rules if r.reclaim is Reclaim.VIA_KUEUE]
    several = len(via) > 1
    rules = f"rule{'s' if several else ''} {', '.join(via)} with reclaim: via-kueue"
    rules += " do nothing" if several else " does nothing"
    if not served:
        if via:
            print(
                f"warning: the cluster does not serve {KUEUE_GROUP} (Kueue is not installed): "
                f"{rules}",
                file=sys.stderr,
            )
        print(f"# cluster: {KUEUE_GROUP} not served")
        return 0
    config = list_configuration(client, cluster.kueue_configuration)
    print(f"# cluster: {config.summary()}")
    if via:
        gate = gate_served(config, PRIORITY_BOOST_GATE)
        if gate.on:
            print(f"# cluster: {gate.line}")
        else:
            print(f"warning: {gate.line}; {rules}", file=sys.stderr)
    return 0


def pointed(
    cluster: ClusterSettings, *, kubeconfig: Path | None, context: str | None
) -> ClusterSettings:
    """The cluster settings, pointed where the command line says."""
    update: dict[str, object] = {}
    if kubeconfig is not None:
        update["kubeconfig"] = kubeconfig
    if context is not None:
        update["context"] = context
    return cluster.model_copy(update=update)
