"""A client for people: an importable Python client and the command-line subcommands.

    from autoscaler.client import AutoscalerClient
    with AutoscalerClient.from_kubeconfig("http://idle-gpu-autoscaler.gpu-tools:8080") as api:
        api.exempt("team-a", "my-workspace-cluster", duration="4h", reason="I am presenting")

The token is the current kubeconfig context's unless one is given. No `kubernetes` import:
the kubeconfig is read as YAML.
"""

from autoscaler.client.api import AutoscalerClient, ClientError
from autoscaler.client.kubeconfig import KubeconfigError, kubeconfig_token

__all__ = ["AutoscalerClient", "ClientError", "KubeconfigError", "kubeconfig_token"]
