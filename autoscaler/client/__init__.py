"""A client for people: an importable Python client and the command-line subcommands.

    from autoscaler.client import AutoscalerClient
    with AutoscalerClient.from_environment("http://idle-gpu-autoscaler.gpu-tools:8080") as api:
        api.exempt("team-a", "my-workspace-cluster", duration="4h", reason="I am presenting")

The token is `IGA_TOKEN`'s, else the kubeconfig's current context's (read by the official
`kubernetes` loader, exec plugins included), unless one is given.
"""

from autoscaler.client.api import AutoscalerClient, ClientError
from autoscaler.client.credentials import TOKEN_VARIABLE, TokenSources, find_token
from autoscaler.client.kubeconfig import KubeconfigError, kubeconfig_token

__all__ = [
    "TOKEN_VARIABLE",
    "AutoscalerClient",
    "ClientError",
    "KubeconfigError",
    "TokenSources",
    "find_token",
    "kubeconfig_token",
]
