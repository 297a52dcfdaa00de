"""Where the client's bearer token comes from, in one order for the CLI and notebooks alike.

1. a token given directly (`--token`; visible in shell history, so the last resort of habit),
2. a file holding it (`--token-file`, e.g. a mounted service-account token),
3. the `IGA_TOKEN` environment variable (beside `IGA_URL`, the service's address),
4. the kubeconfig, through the official loader: static tokens, token files, exec plugins.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from autoscaler.client.kubeconfig import KubeconfigError, kubeconfig_paths, kubeconfig_token

TOKEN_VARIABLE = "IGA_TOKEN"


@dataclass(frozen=True)
class TokenSources:
    """What a person pointed at; all empty means the environment, then the kubeconfig."""

    token: str | None = None
    token_file: Path | None = None
    context: str | None = None


def find_token(
    sources: TokenSources,
    *,
    environ: Mapping[str, str] | None = None,
    optional: bool = False,
) -> str | None:
    """The first token in the order above. `optional` (reads): with no token given and no
    kubeconfig at all, go without one rather than fail; the API may answer reads openly."""
    env = os.environ if environ is None else environ
    if sources.token:
        return sources.token
    if sources.token_file is not None:
        return _read_token_file(sources.token_file)
    if env.get(TOKEN_VARIABLE, "").strip():
        return env[TOKEN_VARIABLE].strip()
    if optional and not any(path.exists() for path in kubeconfig_paths(env)):
        return None
    return kubeconfig_token(context=sources.context, environ=env)


def _read_token_file(path: Path) -> str:
    try:
        token = path.expanduser().read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise KubeconfigError(f"cannot read the token file {path}: {exc.strerror}") from exc
    if not token:
        raise KubeconfigError(f"the token file {path} is empty")
    return token
