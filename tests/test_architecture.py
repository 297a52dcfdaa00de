"""Architecture rules beside the import-linter contracts, checked on the source (no imports run).

The layers are import-linter contracts in pyproject.toml (tests/test_import_contracts.py).
Here: each outside client has one home module, the domain imports only an allow-list of the
standard library (a forbidden contract can only deny), never reads the clock, and only the
composition root builds adapters.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "autoscaler"

# Third-party client → the only module allowed to import it.
CLIENT_HOMES = {
    # API calls in one adapter module; the client's kubeconfig loader in one module of its own
    "kubernetes": {
        "autoscaler/adapters/kubernetes/client.py",
        "autoscaler/client/kubeconfig.py",
    },
    "prometheus_api_client": {"autoscaler/adapters/prometheus/source.py"},
}
DOMAIN_MAY_IMPORT = {
    "autoscaler.domain",
    "__future__",
    "collections",
    "dataclasses",
    "datetime",
    "decimal",
    "enum",
    "typing",
    "math",
    "re",
    "itertools",
    "functools",
}


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def source_files() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "_pb2" not in p.name)


def relative(path: Path) -> str:
    return str(path.relative_to(PACKAGE.parent))


@pytest.mark.parametrize("path", source_files(), ids=relative)
def test_third_party_clients_are_imported_by_their_one_module_only(path: Path) -> None:
    for module in imported_modules(path):
        top = module.split(".")[0]
        homes = CLIENT_HOMES.get(top)
        if homes is not None:
            assert relative(path) in homes, f"{relative(path)} imports {module}"


@pytest.mark.parametrize("path", sorted((PACKAGE / "domain").rglob("*.py")), ids=relative)
def test_domain_imports_only_itself_and_the_standard_library(path: Path) -> None:
    for module in imported_modules(path):
        allowed = any(module == ok or module.startswith(ok + ".") for ok in DOMAIN_MAY_IMPORT)
        assert allowed, f"{relative(path)} imports {module}: the domain does no I/O"


def test_the_domain_never_reads_the_clock() -> None:
    for path in (PACKAGE / "domain").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        for forbidden in ("datetime.now(", ".utcnow(", "time.time(", "date.today("):
            assert forbidden not in text, f"{relative(path)} reads the clock: {forbidden}"


def test_only_the_composition_root_builds_adapters() -> None:
    builders = {
        "KubeClient.from_settings(",
        "PrometheusMetricSource(",
        "KueueCluster(",
        "CachedKueueCluster(",
        "KueueQueues(",
        "LeaderElector(",
        "WebhookNotifier(",
        "SlackNotifier(",
    }
    for path in source_files():
        if {"adapters", "compose"} & set(path.relative_to(PACKAGE).parts):
            continue
        text = path.read_text(encoding="utf-8")
        for builder in builders:
            assert builder not in text, f"{relative(path)} builds {builder}"
