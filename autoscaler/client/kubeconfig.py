"""The bearer token of a kubeconfig context, as the official `kubernetes` loader reads it.

The one module of the client that imports `kubernetes`, and only its kubeconfig loader: so
whatever kubectl's Python twin understands works here too, static tokens, token files,
exec plugins (EKS, GKE, AKS, OIDC helpers such as kubelogin) and auth providers.
`KUBECONFIG` may list several files (`:`-separated), merged as that loader merges them.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import yaml
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

BEARER = "Bearer "


class KubeconfigError(Exception):
    """No usable token could be read; the message says what to do instead."""


def kubeconfig_paths(environ: Mapping[str, str] | None = None) -> list[Path]:
    env = os.environ if environ is None else environ
    listed = [p for p in env.get("KUBECONFIG", "").split(os.pathsep) if p]
    if listed:
        return [Path(p).expanduser() for p in listed]
    return [Path(env.get("HOME", str(Path.home()))) / ".kube" / "config"]


def kubeconfig_token(
    paths: list[Path] | None = None,
    *,
    context: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> str:
    """The token of `context` (the current one by default), running its exec plugin if any."""
    found = [path for path in (paths or kubeconfig_paths(environ)) if path.exists()]
    if not found:
        raise KubeconfigError("no kubeconfig found; pass --token-file, or set IGA_TOKEN")
    configuration = k8s_client.Configuration()
    with _loader_complaints() as complaints:
        try:
            k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
                config_file=os.pathsep.join(str(path) for path in found),
                context=context,
                client_configuration=configuration,
                persist_config=False,  # never rewrite a person's kubeconfig
            )
        except (k8s_config.ConfigException, OSError, yaml.YAMLError) as exc:
            raise KubeconfigError(f"cannot use the kubeconfig: {_plain(exc)}") from exc
    credential = str(configuration.api_key.get("BearerToken") or "")
    if not credential.startswith(BEARER):
        raise KubeconfigError(_no_bearer_token(context, complaints))
    return credential.removeprefix(BEARER).strip()  # a token file's newline is not the token


def _no_bearer_token(context: str | None, complaints: list[str]) -> str:
    which = f"kubeconfig context {context!r}" if context else "the current kubeconfig context"
    why = f" ({'; '.join(complaints)})" if complaints else ""
    return (
        f"{which} gave no bearer token{why}; pass --token-file or set IGA_TOKEN "
        "(e.g. from `kubectl create token <service-account>`)"
    )


def _plain(exc: BaseException) -> str:
    """The loader's message without its 'Invalid kube-config file.' preamble."""
    return str(exc).replace("Invalid kube-config file. ", "").strip() or type(exc).__name__


class _Collected(logging.Handler):
    def __init__(self, messages: list[str]) -> None:
        super().__init__(logging.WARNING)
        self.messages = messages

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage().strip())


@contextmanager
def _loader_complaints() -> Iterator[list[str]]:
    """What the loader logs instead of raising (a failed exec plugin is only logged), kept
    for our one error message rather than printed on its own."""
    messages: list[str] = []
    handler = _Collected(messages)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield messages
    finally:
        root.removeHandler(handler)
