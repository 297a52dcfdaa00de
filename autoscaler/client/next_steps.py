"""The one home of the command line's error wording: each error is one line that says what is
wrong and what to do next (a flag, an environment variable, a command), docs/CLI.md.

The client's subcommands word their refusals here (`refusal`); the program's entry point
words a refused settings file with `config_refused`, and the composition root `serve`'s and
`backtest`'s start-up errors with the functions below, so the same flag or variable is named
the same way everywhere.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from http import HTTPStatus
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from autoscaler.client.api import DEFAULT_URL, URL_VARIABLE, ClientError
from autoscaler.client.credentials import TOKEN_VARIABLE
from autoscaler.client.kubeconfig import kubeconfig_paths
from autoscaler.core.documents import FileRefused
from autoscaler.core.errors import SHOWN_PROBLEMS, ConfigError
from autoscaler.domain.problem_types import BLANK, ProblemType
from autoscaler.domain.program import PROGRAM
from autoscaler.domain.text import counted
from autoscaler.settings.tree import PROMETHEUS_FORWARD, PROMETHEUS_URL_VARIABLE

# As README.md and docs/ROLLOUT.md install it: the release and its namespace are both
# idle-gpu-autoscaler, so the chart names its Service idle-gpu-autoscaler too.
PORT_FORWARD = "kubectl port-forward -n idle-gpu-autoscaler svc/idle-gpu-autoscaler 8080"
API_PREFIX = "/api/v1"
UNIT_WORDS = re.compile(
    r"^(s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?|w|weeks?)$", re.IGNORECASE
)
NUMBER = re.compile(r"^[0-9]+(\.[0-9]+)?$")
# The options whose value is a duration (the client's exempt/snooze/report, backtest's range
# and variants); a test reads the parser to keep this complete.
DURATION_OPTIONS = ("--for", "--since", "--step", "--regret-horizon", "--alternative", "--chunk")
# Commands whose positional DURATION follows the target (`snooze NS/NAME 4h`).
DURATION_POSITIONAL = ("snooze",)

SERVER = f"point --server or ${URL_VARIABLE} at the service's REST address (`{PORT_FORWARD}`)"
TOKEN = (
    f"pass --token-file PATH or set ${TOKEN_VARIABLE}, or pick a kubeconfig context that "
    "gives a bearer token with --context"
)

FORBIDDEN = (  # after the API's own words, which name the right that is missing
    "ask a cluster admin to grant that right (a Role or ClusterRole bound to you), or act as "
    f"someone who holds it: --token-file PATH, ${TOKEN_VARIABLE} or --context"
)

NAMESPACE_NAMES = "check its name with `kubectl get namespaces`"

# The next step of a problem by its type (docs/API.md "Problem types"), whatever its words;
# `_next_step` adds the one that needs the command's namespace. A problem of no type we know
# (`about:blank`, or a newer server's) gets its status's step.
STEP_OF_TYPE: dict[str, str] = {
    ProblemType.NO_SUCH_NAMESPACE: NAMESPACE_NAMES,
    ProblemType.MISSING_RIGHT: FORBIDDEN,
    ProblemType.UNSEEN_CHANGE: FORBIDDEN,
}
STEP_OF_STATUS: dict[int, str] = {HTTPStatus.UNAUTHORIZED: TOKEN, HTTPStatus.FORBIDDEN: FORBIDDEN}

CLUSTER_FOR_CHECK = (  # `check-config --cluster` that cannot reach the cluster
    "check --kubeconfig and --context (or cluster.kubeconfig and cluster.context), or run "
    "check-config without --cluster to check the file alone"
)


def refusal(exc: ClientError, *, namespace: str | None = None) -> str:
    """One line (or one per bad field), said once: the status, the API's reason, the next
    step where the status has one (`namespace`: the one the command named)."""
    if not exc.status:
        return unreachable(exc)
    try:
        phrase = HTTPStatus(exc.status).phrase
    except ValueError:
        phrase = "error"
    if len(exc.fields) > 1:
        lines = [f"  {f.get('field')}: {f.get('message')}" for f in exc.fields]
        return "\n".join([f"{exc.status} {phrase}:", *lines])
    said = f"{exc.status} {phrase}: {exc.detail}"
    step = _next_step(exc, namespace=namespace)
    return f"{said}; {step}" if step else said


def _next_step(exc: ClientError, *, namespace: str | None) -> str | None:
    if exc.type == ProblemType.NO_SUCH_WORKLOAD:
        listing = f"`{PROGRAM} status -n {namespace}`" if namespace else None
        return f"see the namespace's workloads with {listing}" if listing else None
    if exc.type in STEP_OF_TYPE:
        return STEP_OF_TYPE[exc.type]
    if exc.status == HTTPStatus.NOT_FOUND:
        return _wrong_address(exc.server) if _route_missing(exc) else None
    return STEP_OF_STATUS.get(exc.status)


def _route_missing(exc: ClientError) -> bool:
    """A 404 from a path no route serves: untyped, and saying nothing beyond its status (the
    status's own phrase, as Starlette's HTTPException words one given no detail). Any other
    untyped 404 (a Kubernetes object gone mid-request) is not the address's fault."""
    return exc.type == BLANK and exc.detail == HTTPStatus.NOT_FOUND.phrase


def _wrong_address(server: str) -> str:
    """A 404 from no route at all: the server is not the service's base address."""
    server = server.rstrip("/")
    if server.endswith(API_PREFIX):
        return (
            f"the server address (--server, ${URL_VARIABLE}) is the service's base address, "
            f"without {API_PREFIX}: {server.removesuffix(API_PREFIX)}"
        )
    return f"is {server} the idle-gpu-autoscaler's REST address? {SERVER}"


def unreachable(exc: ClientError) -> str:
    """No HTTP answer: what the transport said, and where to point the client instead."""
    base = exc.server.rstrip("/") or "the service"
    cause = exc.__cause__
    if isinstance(cause, httpx.UnsupportedProtocol):
        return f"--server {base} needs http:// or https://, e.g. --server {DEFAULT_URL}"
    if isinstance(cause, httpx.ProtocolError):  # h11 read HTTP/2 frames, or no HTTP at all
        return (
            f"cannot reach {base}: it does not answer HTTP/1.1 ({cause}); is that the gRPC "
            "(KEDA) port? The REST API listens on the service's `http` port (api.port, 8080 "
            f"by default): {SERVER}"
        )
    if isinstance(cause, httpx.ConnectError) and "WRONG_VERSION_NUMBER" in str(cause):
        return (
            f"cannot reach {base}: TLS failed ({cause}), the address answers plain HTTP (as "
            f"the service does): use --server http://{urlsplit(base).netloc}"
        )
    if isinstance(cause, httpx.ConnectError) and "SSL" in str(cause):
        return f"cannot reach {base}: TLS failed ({cause}); check the address and its certificate"
    if isinstance(cause, httpx.TimeoutException):
        return f"cannot reach {base}: no answer in time ({type(cause).__name__}); {SERVER}"
    return f"cannot reach {base}: {cause or exc.detail}; is it running? {SERVER}"


def empty_namespace(namespace: str) -> str:
    """`status -n NS` found nothing: the namespace is unknown to the service, or unreadable."""
    return (
        f"no workloads in namespace {namespace}: the service knows none there, or you cannot "
        f"read it; see which namespaces have some with `{PROGRAM} status` (every namespace you "
        "may read) or `kubectl get workloads.kueue.x-k8s.io -A`"
    )


def durations_written_apart(argv: Sequence[str]) -> str | None:
    """`--for 5 hours`: argparse would take `hours` for a stray argument and print the whole
    usage. A number followed by a unit word is a duration written apart only where a duration
    goes: right after a duration option, or as snooze's DURATION (a word no option takes);
    elsewhere (`status -n 5 d`: namespace 5, workload d) the words are left to argparse."""
    before = [None, *argv]
    for previous, number, word in zip(before, argv, argv[1:], strict=False):
        unit = UNIT_WORDS.match(word)
        if not (NUMBER.match(number) and unit and _takes_duration(argv, previous)):
            continue
        written = _written(number, unit.group(1).lower()[0])
        return (
            f"{number} {word}: durations are written as one word with a unit, s, m, h "
            f"or d: {written} (like 90m, 4h, 1h30m, 2d)"
        )
    return None


def _takes_duration(argv: Sequence[str], previous: str | None) -> bool:
    """Whether the word after `previous` is read as a duration."""
    if previous in DURATION_OPTIONS:
        return True
    positional = bool(argv) and argv[0] in DURATION_POSITIONAL
    return positional and previous is not None and not previous.startswith("-")


def _written(number: str, unit: str) -> str:
    if unit == "w":  # no week unit: in days
        return f"{float(number) * 7:g}d"
    return f"{number}{unit}"


def usage_error(prog: str, message: str) -> str:
    """argparse's complaint in one line, with the help to read instead of the usage dump."""
    return f"{message}; see `{prog} --help`"


def no_kubernetes_credentials(
    problems: Sequence[str],
    *,
    kubeconfig: Path | None,
    in_cluster: bool,
    environ: Mapping[str, str],
) -> str:
    """`serve` could not load a Kubernetes configuration: none at all, or one it cannot use."""
    demo = f"or try it without a cluster: `{PROGRAM} demo`"
    if kubeconfig is None and not in_cluster and not _any_exists(kubeconfig_paths(environ)):
        return (
            "no Kubernetes credentials found (not in a pod, no kubeconfig at $KUBECONFIG or "
            "~/.kube/config): run it in the cluster (the Helm chart), set KUBECONFIG or pass "
            f"--kubeconfig PATH (cluster.kubeconfig), {demo}"
        )
    said = "; ".join(p.removeprefix("cluster.kubeconfig: ") for p in problems)
    return (
        f"{said}; check KUBECONFIG or --kubeconfig PATH (cluster.kubeconfig) and --context "
        f"(`kubectl config get-contexts`), {demo}"
    )


def config_refused(refused: ConfigError, *, config: Path | None) -> list[str]:
    """A settings file refused: one line per problem (sorted by path when read from the
    file), then how many and the command that checks the file again; a file refused unread
    is its one line."""
    if isinstance(refused, FileRefused):
        return [str(refused)]
    problems = refused.problems
    lines = list(problems[:SHOWN_PROBLEMS])
    if len(problems) > SHOWN_PROBLEMS:
        lines.append(f"… and {len(problems) - SHOWN_PROBLEMS} more")
    count = counted(len(problems), "problem")
    where, again = (f" in {config}", f" --config {config}") if config is not None else ("", "")
    return [*lines, f"{count}{where}: fix each, then run {PROGRAM} check-config{again}"]


def prometheus_unreachable(url: str, error: BaseException) -> str:
    """`backtest` cannot connect to Prometheus: the short reason, and how to point it."""
    return (
        f"cannot connect to Prometheus at {url} ({short_reason(error)}): pass --prometheus-url "
        f"or set {PROMETHEUS_URL_VARIABLE}, e.g. http://localhost:9090 after "
        f"`{PROMETHEUS_FORWARD}`"
    )


def short_reason(error: BaseException) -> str:
    """The innermost operating-system reason of a chained error (`[Errno 111] Connection
    refused`), rather than the 400 characters urllib3 and requests wrap around it."""
    for found in _chain(error):
        if isinstance(found, OSError) and found.strerror:
            return f"[Errno {found.errno}] {found.strerror}"
    return type(error).__name__


def _chain(error: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    todo = [error]
    while todo:
        found = todo.pop(0)
        if id(found) in seen:
            continue
        seen.add(id(found))
        yield found
        linked = [found.__cause__, found.__context__, getattr(found, "reason", None)]
        linked += [arg for arg in found.args if isinstance(arg, BaseException)]
        todo += [e for e in linked if isinstance(e, BaseException)]


def _any_exists(paths: Sequence[Path]) -> bool:
    return any(path.exists() for path in paths)
