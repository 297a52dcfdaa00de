"""The REST API's problem types: the one home of the `type` of each error a client acts on
(RFC 9457 §3.1.1), which the API sends (`autoscaler/api/problems.py`) and the command line
matches to pick its next step (`autoscaler/client/next_steps.py`), never the detail's words.
Here, below both, because neither surface may import the other (docs/ARCHITECTURE.md).

Each type is a string a client compares whole, so it never changes once released. It is an
`https://` address of its row in docs/API.md's "Problem types" table, as RFC 9457 advises for
a type one may look up, under the repository the chart names its home (Chart.yaml `home`).
Not at a release's tag, as the chart's NOTES link docs (`iga.docs`): the type would then
change with every release, and a client would no longer know the problems of a newer server;
the default branch's page is the one that lasts (a test keeps each anchor on it). Every other
error is `about:blank`: its status says all a client acts on, its `detail` what happened.
"""

from __future__ import annotations

from enum import StrEnum

BLANK = "about:blank"  # RFC 9457: the problem is what the status says, nothing more
PROBLEM_TYPES_PAGE = (
    "https://github.com/idle-gpu-autoscaler/idle-gpu-autoscaler/blob/main/docs/API.md"
)


class ProblemType(StrEnum):
    """Each one's status, when, and what a client does: docs/API.md "Problem types"."""

    NO_SUCH_WORKLOAD = f"{PROBLEM_TYPES_PAGE}#problem-no-such-workload"
    NO_SUCH_NAMESPACE = f"{PROBLEM_TYPES_PAGE}#problem-no-such-namespace"
    MISSING_RIGHT = f"{PROBLEM_TYPES_PAGE}#problem-missing-right"
    # A change refused to a caller who may not read the namespace: the same whether or not
    # the name matches a Workload, so it tells nothing of what is there.
    UNSEEN_CHANGE = f"{PROBLEM_TYPES_PAGE}#problem-unseen-change"
    ALREADY_ACTIVE = f"{PROBLEM_TYPES_PAGE}#problem-already-active"
    ALREADY_DEACTIVATED = f"{PROBLEM_TYPES_PAGE}#problem-already-deactivated"
    NOTHING_TO_REMOVE = f"{PROBLEM_TYPES_PAGE}#problem-nothing-to-remove"
    EXEMPT_BY_HAND = f"{PROBLEM_TYPES_PAGE}#problem-exempt-by-hand"
