"""The authorization matrix: who may call which route, in both auth modes. Read MATRIX as the
specification; each cell is the status that identity gets, asserted against the running API
(the test API server answering TokenReview and SubjectAccessReview, or the static tokens).

Identities (the same rights in both modes):

- admin: the admin permission (`update` on the runtime-state ConfigMap; static: `admin`),
  and may read and change workloads everywhere;
- editor (alice): `patch` on RayClusters and Workloads and `list` on Workloads in team-a
  (static: `namespaces: [team-a]`);
- viewer (carol): `list` on Workloads in team-a (static: `readNamespaces: [team-a]`);
- other (bob): the editor's rights, in team-b only;
- no token;
- twin (static mode only): a second token of the existing username `admin`, with no rights.
  A file cannot hold it (a username listed twice is refused, tests/api/test_static_tokens.py);
  built in code it shows that the matched token's entry, not its username, decides.
  In TokenReview mode rights belong to the user, whichever token reviewed as them.

Team-a holds alice-rc (active), alice-kept (exempt and snoozed), alice-off (deactivated) and
`shared`, a RayCluster that owns two Workloads: a change naming `shared` is a 409 naming both,
but only after the change right is granted on each. The breaker is open and alice-rc marked
contested, both naming its Workload. Every cell starts from the same cluster and runtime
state. No answer to a caller without rights in team-a holds the name of a team-a Workload the
request did not name.

Alice-rc is also freed for `team-b/bob-train`, a waiter in ClusterQueue team-b-cq: its
decision's reason, the cycle's waiter judgement and a follow-up record in team-a's trail name
it. WAITER_TOLD says who reads its name where a route shows them: a caller who may read
team-b (the admin); the editor and the viewer, who read team-a only, read "a Workload in
ClusterQueue team-b-cq" instead (domain/tenant_names.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

import httpx
import pytest
from fastapi.routing import iter_route_contexts

from autoscaler.api.access import admin_target
from autoscaler.api.context import SnoozeNotifications
from autoscaler.api.static_tokens import StaticToken, StaticTokens
from autoscaler.compose.api import Auth
from autoscaler.domain import annotations as keys
from autoscaler.domain.annotations import time_text
from autoscaler.domain.audit.records import LOOP_ACTOR, AuditRecord, RuntimeState
from autoscaler.domain.audit.subjects import Subject
from autoscaler.domain.guards.breaker import BreakerState
from autoscaler.domain.guards.screen import Contest
from autoscaler.domain.models import GuardReport, Snapshot, WaitersSeen, WorkloadRef
from autoscaler.domain.tenant_names import Named, ServedFor
from autoscaler.engine.notify.links import LinkSigner
from autoscaler.settings.api import AdminVerbSettings
from autoscaler.settings.keda import KedaSettings
from tests.api.rig import SERVICE_NAMESPACE, STATE_CONFIG_MAP, TOKENS, ApiRig

ADMIN, EDITOR, VIEWER, OTHER, NO_TOKEN, TWIN = "admin", "editor", "viewer", "other", "-", "twin"
COLUMNS = (ADMIN, EDITOR, VIEWER, OTHER, NO_TOKEN, TWIN)
WITHOUT_RIGHTS_IN_TEAM_A = (OTHER, NO_TOKEN, TWIN)

ONE = {"namespace": "team-a", "name": "alice-rc"}
KEPT = {"namespace": "team-a", "name": "alice-kept"}
OFF = {"namespace": "team-a", "name": "alice-off"}
SHARED = {"namespace": "team-a", "name": "shared"}  # owns two Workloads
GHOST = {"namespace": "team-a", "name": "ghost"}
TEAM_A = {"namespace": "team-a"}
WHY = {"reason": "matrix"}
FOR_AN_HOUR = {"duration": "1h", "reason": "matrix"}
A_LINK = {"token": "forged.not-signed"}
KEDA = "/api/v1/keda/metrics"
W = "{workload}"  # the query's placeholder for alice-rc's Workload name


@dataclass(frozen=True)
class Row:
    method: str
    route: str  # the route's path template, as the app declares it
    expect: dict[str, int]
    at: dict[str, str] = field(default_factory=dict)  # the template's path parameters
    query: str = ""
    body: dict[str, Any] | None = None

    def path(self, workload: str) -> str:
        return self.route.format(**self.at) + self.query.replace(W, workload)

    @property
    def id(self) -> str:
        return f"{self.method} {self.route.format(**self.at)}{self.query.replace(W, 'W')}"


def row(method: str, route: str, *statuses: int, **request: Any) -> Row:
    """One row: the statuses in COLUMNS order (admin, editor, viewer, other, no token, twin)."""
    assert len(statuses) == len(COLUMNS)
    return Row(method, route, dict(zip(COLUMNS, statuses, strict=True)), **request)


WL = "/api/v1/workloads/{namespace}/{name}"
NS = "/api/v1/namespaces/{namespace}"
MATRIX = (
    #                                                          admin edit view other -   twin
    # Open: probes, metrics and the schema; /readyz tells counts, never a workload's name.
    row("GET", "/healthz", 200, 200, 200, 200, 200, 200),
    row("GET", "/readyz", 200, 200, 200, 200, 200, 200),
    row("GET", "/metrics", 200, 200, 200, 200, 200, 200),
    row("GET", "/openapi.json", 200, 200, 200, 200, 200, 200),
    # Reads: `list` on Workloads in the namespace read (cluster-wide when not narrowed).
    row("GET", "/api/v1/workloads", 200, 200, 200, 403, 401, 403, query="?namespace=team-a"),
    row("GET", "/api/v1/workloads", 200, 403, 403, 403, 401, 403),
    row("GET", WL, 200, 200, 200, 403, 401, 403, at=ONE),
    row("GET", WL, 404, 404, 404, 403, 401, 403, at=GHOST),
    row("GET", WL + "/explain", 200, 200, 200, 403, 401, 403, at=ONE),
    row("GET", "/api/v1/decisions", 200, 200, 200, 403, 401, 403, query="?namespace=team-a"),
    row("GET", "/api/v1/decisions", 200, 403, 403, 403, 401, 403),
    row("GET", "/api/v1/report", 200, 200, 200, 403, 401, 403, query="?namespace=team-a"),
    row("GET", "/api/v1/report", 200, 403, 403, 403, 401, 403),
    row("GET", KEDA, 200, 200, 200, 403, 401, 403, query=f"?namespace=team-a&workload={W}"),
    row("GET", KEDA, 404, 404, 404, 403, 401, 403, query="?namespace=team-a&workload=ghost"),
    # Any valid token: the service's pause and the breaker; a namespace's pause, and the
    # breaker's workload names, only for those who may read them (test_pauses.py,
    # tests/guards/test_guard_api.py; here: no name reaches a caller without rights).
    row("GET", "/api/v1/pauses", 200, 200, 200, 200, 401, 200),
    row("GET", "/api/v1/breaker", 200, 200, 200, 200, 401, 200),
    # Changes on one workload: `patch` on its owner (or its Workload).
    row("PUT", WL + "/exemption", 200, 200, 403, 403, 401, 403, at=ONE, body=FOR_AN_HOUR),
    row("DELETE", WL + "/exemption", 200, 200, 403, 403, 401, 403, at=KEPT),
    row("POST", WL + "/snooze", 200, 200, 403, 403, 401, 403, at=ONE, body=FOR_AN_HOUR),
    row("DELETE", WL + "/snooze", 200, 200, 403, 403, 401, 403, at=KEPT),
    row("POST", WL + "/reactivate", 200, 200, 403, 403, 401, 403, at=OFF, body=WHY),
    row("PUT", WL + "/exemption", 404, 404, 404, 403, 401, 403, at=GHOST, body=FOR_AN_HOUR),
    # ... and on an owner name shared by two Workloads: the 409 that names them comes after
    # the right is granted on both, so a caller without it never learns them.
    row("PUT", WL + "/exemption", 409, 409, 403, 403, 401, 403, at=SHARED, body=FOR_AN_HOUR),
    row("DELETE", WL + "/exemption", 409, 409, 403, 403, 401, 403, at=SHARED),
    row("POST", WL + "/snooze", 409, 409, 403, 403, 401, 403, at=SHARED, body=FOR_AN_HOUR),
    row("DELETE", WL + "/snooze", 409, 409, 403, 403, 401, 403, at=SHARED),
    row("POST", WL + "/reactivate", 409, 409, 403, 403, 401, 403, at=SHARED, body=WHY),
    row("POST", WL + "/deactivate", 409, 403, 403, 403, 401, 403, at=SHARED, body=WHY),
    # A namespace's pause: `patch` on Workloads there.
    row("POST", NS + "/pause", 200, 200, 403, 403, 401, 403, at=TEAM_A, body=WHY),
    row("POST", NS + "/resume", 200, 200, 403, 403, 401, 403, at=TEAM_A, body=WHY),
    # The admin permission.
    row("POST", WL + "/deactivate", 200, 403, 403, 403, 401, 403, at=ONE, body=WHY),
    row("POST", "/api/v1/pause", 200, 403, 403, 403, 401, 403, body=WHY),
    row("POST", "/api/v1/resume", 200, 403, 403, 403, 401, 403, body=WHY),
    row("POST", "/api/v1/breaker/reset", 200, 403, 403, 403, 401, 403, body=WHY),
    row("DELETE", WL + "/contested", 200, 403, 403, 403, 401, 403, at=ONE),
    # Keep-it links: the signed token in the path is the credential, whoever holds a bearer.
    row("GET", "/v1/links/snooze/{token}", 403, 403, 403, 403, 403, 403, at=A_LINK),
    row("POST", "/v1/links/snooze/{token}", 403, 403, 403, 403, 403, 403, at=A_LINK),
)  # fmt: skip

WAITER = WorkloadRef("team-b", "bob-train")  # a waiter alice-rc is freed for
WAITER_QUEUE = "team-b-cq"
UNNAMED = f"a Workload in ClusterQueue {WAITER_QUEUE}"
# Where a route shows the waiter a stop is for, whether each identity reads its name (True)
# or UNNAMED (False); "other" (bob) and the rest get no answer from team-a's routes.
NAMED_TO = {ADMIN: True, EDITOR: False, VIEWER: False}
WAITER_TOLD = (
    row("GET", WL, 200, 200, 200, 403, 401, 403, at=ONE),  # the decision's reason
    row("GET", WL + "/explain", 200, 200, 200, 403, 401, 403, at=ONE),  # and the judgement
    row("GET", "/api/v1/workloads", 200, 200, 200, 403, 401, 403, query="?namespace=team-a"),
    row("GET", "/api/v1/workloads", 200, 403, 403, 403, 401, 403),
    row("GET", "/api/v1/decisions", 200, 200, 200, 403, 401, 403, query="?namespace=team-a"),
    row("GET", "/api/v1/decisions", 200, 403, 403, 403, 401, 403),
)  # fmt: skip

STATIC_TOKENS = {
    ADMIN: "admin-static-token-0123456789",
    EDITOR: "alice-static-token-0123456789",
    VIEWER: "carol-static-token-0123456789",
    OTHER: "bob-static-token-0123456789",
    TWIN: "admin-second-token-0123456789",
}
REVIEWED_TOKENS = {
    ADMIN: TOKENS["admin"],
    EDITOR: TOKENS["alice"],
    VIEWER: "carol-token",
    OTHER: TOKENS["bob"],
}


def static_tokens() -> Auth:
    admin = admin_target(
        AdminVerbSettings(), config_map=STATE_CONFIG_MAP, namespace=SERVICE_NAMESPACE
    )
    entries = (
        StaticToken(token=STATIC_TOKENS[ADMIN], username="admin", namespaces=["*"], admin=True),
        StaticToken(token=STATIC_TOKENS[EDITOR], username="alice", namespaces=["team-a"]),
        StaticToken(token=STATIC_TOKENS[VIEWER], username="carol", readNamespaces=["team-a"]),
        StaticToken(token=STATIC_TOKENS[OTHER], username="bob", namespaces=["team-b"]),
        StaticToken(token=STATIC_TOKENS[TWIN], username="admin"),
    )
    tokens = StaticTokens(entries, admin_target=admin)
    return tokens, tokens


def grant_the_viewer(rig: ApiRig) -> None:
    rig.kube.reviews.add_token(REVIEWED_TOKENS[VIEWER], username="carol")
    rig.kube.reviews.allow(
        user="carol", verb="list", group="kueue.x-k8s.io", resource="workloads", namespace="team-a"
    )


@dataclass
class Scene:
    """One running API in one auth mode, and the state every cell starts from."""

    rig: ApiRig
    tokens: dict[str, str]
    workload: str = ""  # alice-rc's Workload name
    hidden: frozenset[str] = frozenset()  # every Workload name in team-a
    objects: list[dict[str, Any]] = field(default_factory=list)

    def populate(self) -> None:
        """Team-a's and team-b's workloads, seen by one cycle."""
        rig = self.rig
        self.workload = rig.add_raycluster("team-a", "alice-rc")
        until = time_text(rig.now + timedelta(days=1))
        kept = rig.add_raycluster("team-a", "alice-kept", annotations={keys.EXEMPT_UNTIL: until})
        snoozed = rig.workload("team-a", kept)
        snoozed["metadata"].setdefault("annotations", {})[keys.SNOOZED_UNTIL] = until
        rig.kube.store.put(snoozed)
        off = rig.add_raycluster("team-a", "alice-off", active=False)
        shared = rig.add_raycluster("team-a", "shared")
        again = rig.workload("team-a", shared)
        again["metadata"] = {"name": f"{shared}-again", **_kept_meta(again["metadata"])}
        rig.kube.store.put(again)
        rig.add_raycluster("team-b", "bob-rc")
        snapshot = rig.cycle()
        names = [self.workload, kept, off, shared, f"{shared}-again"]
        rig.store.publish(replace(self.freed_for_the_waiter(snapshot), guards=self.guards()))
        self.hidden = frozenset(names)
        owners = ("alice-rc", "alice-kept", "alice-off", "shared")
        self.objects = [rig.workload("team-a", name) for name in names]
        self.objects += [rig.owner("team-a", name) for name in owners]

    def freed_for_the_waiter(self, snapshot: Snapshot) -> Snapshot:
        """Alice-rc freed for WAITER, as the reclaim step leaves it: its reason names it."""
        ref = WorkloadRef("team-a", self.workload)
        rows = []
        for each in snapshot.workloads:
            reason = f"{each.decision.reason}; frees quota for {WAITER}, which waits"
            freed = replace(
                each.decision, reason=reason, beneficiary=WAITER, beneficiary_queue=WAITER_QUEUE
            )
            rows.append(replace(each, decision=freed) if each.ref == ref else each)
        judged = ServedFor(Named(WAITER, WAITER_QUEUE), "served", "fits: flavor default")
        seen = WaitersSeen(source="workloads", outcomes={"served": 1}, served={ref: judged})
        return replace(snapshot, workloads=tuple(rows), waiters=seen)

    def follow_up(self) -> AuditRecord:
        """Team-a's trail: the waiter alice-rc was deactivated for, admitted."""
        target = WorkloadRef("team-a", self.workload)
        return AuditRecord(
            at=self.rig.now,
            actor=LOOP_ACTOR,
            action="waiter-admitted",
            target=str(target),
            reason=f"{WAITER} admitted 0:05:00 after {target} was deactivated for it",
            outcome="noted",
            namespace="team-a",
            subject=Subject(beneficiary=str(WAITER), beneficiary_queue=WAITER_QUEUE),
        )

    def guards(self) -> GuardReport:
        """An open breaker and a contested mark, both naming alice-rc's Workload."""
        return GuardReport(
            breaker=self.breaker(),
            breaker_close_after=3,
            hourly_limit=20,
            deactivations_last_hour=0,
            deferred=0,
            contested=(WorkloadRef("team-a", self.workload),),
        )

    def breaker(self) -> BreakerState:
        counts = "4 of 5 workloads busy last cycle turned idle"
        reason = f"{counts}: team-a/{self.workload}"
        return BreakerState(open=True, since=self.rig.now, reason=reason, summary=counts)

    def reset(self) -> None:
        for obj in self.objects:
            self.rig.kube.store.put(obj)
        mark = {WorkloadRef("team-a", self.workload): Contest(self.rig.now, "undone 3 times")}
        state = RuntimeState(breaker=self.breaker(), contested=mark, audit=(self.follow_up(),))
        self.rig.api.context.state.change(lambda _: state)

    def call(self, who: str, cell: Row) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.tokens[who]}"} if who in self.tokens else {}
        path = cell.path(self.workload)
        return self.rig.http.request(cell.method, path, json=cell.body, headers=headers)


def _kept_meta(meta: dict[str, Any]) -> dict[str, Any]:
    """A second Workload of the same owner: its metadata but a name and uid of its own."""
    return {k: v for k, v in meta.items() if k not in ("name", "uid", "resourceVersion")}


def links() -> SnoozeNotifications:
    """Keep-it links on, so a forged one is refused as a tampered link (403)."""
    signer = LinkSigner(
        key=b"a-matrix-signing-key-of-32-bytes",
        base_url="https://idle.example.com",
        ttl=timedelta(days=1),
        choices=[timedelta(hours=4)],
    )
    return SnoozeNotifications(links=signer)


@pytest.fixture(scope="module", params=["tokenReview", "static"])
def scene(request: pytest.FixtureRequest) -> Iterator[Scene]:
    static = request.param == "static"
    auth = static_tokens() if static else None
    with ApiRig(auth=auth, keda=KedaSettings(enabled=True), notices=links()) as rig:
        if not static:
            grant_the_viewer(rig)
        running = Scene(rig, STATIC_TOKENS if static else REVIEWED_TOKENS)
        running.populate()
        rig.kube.requests.clear()
        yield running
        if static:  # the table alone decided: no review was asked of the API server
            assert rig.kube.requests.matching("POST", "/apis/authentication.k8s.io") == []
            assert rig.kube.requests.matching("POST", "/apis/authorization.k8s.io") == []
    assert rig.kube.errors == []


def test_the_matrix_has_a_row_for_every_route(scene: Scene) -> None:
    """A new route fails here until the matrix says who may call it."""
    served = {
        (method, context.path)
        for context in iter_route_contexts(scene.rig.api.app.routes)
        for method in context.methods or ()
        if method != "HEAD"  # answered as its GET
    }
    tabled = {(cell.method, cell.route) for cell in MATRIX}
    assert served - tabled == set(), "routes without a row"
    assert tabled - served == set(), "rows of no route"


@pytest.mark.parametrize("cell", MATRIX, ids=[cell.id for cell in MATRIX])
def test_each_identity_gets_the_status_its_cell_says(scene: Scene, cell: Row) -> None:
    columns = [c for c in COLUMNS if c != TWIN or scene.tokens is STATIC_TOKENS]
    got: dict[str, int] = {}
    for who in columns:
        scene.reset()
        response = scene.call(who, cell)
        got[who] = response.status_code
        if who in WITHOUT_RIGHTS_IN_TEAM_A:
            path = cell.path(scene.workload)
            leaked = [n for n in scene.hidden if n not in path and n in response.text]
            assert leaked == [], f"{who} learned {leaked} from {cell.id}"
    assert got == {who: cell.expect[who] for who in columns}


@pytest.mark.parametrize("cell", WAITER_TOLD, ids=[cell.id for cell in WAITER_TOLD])
def test_another_namespaces_waiter_is_named_only_to_who_may_read_its_namespace(
    scene: Scene, cell: Row
) -> None:
    """Issue 33's rule for the waiter a stop is for: shown by name to a reader of its
    namespace, to anyone else as a Workload in its ClusterQueue (the decision's reason, the
    explain judgement, a record of team-a's trail)."""
    for who, named in NAMED_TO.items():
        scene.reset()
        response = scene.call(who, cell)
        assert response.status_code == cell.expect[who], response.text
        if response.status_code != 200:
            continue
        assert (str(WAITER) in response.text) is named, f"{who} on {cell.id}"
        assert (UNNAMED in response.text) is not named, f"{who} on {cell.id}"


def test_with_metrics_api_readers_only_those_usernames_read_keda_s_endpoint() -> None:
    """keda.metricsApiReaders: KEDA's own identity alone, in every namespace, whatever the
    others' rights (the admin's included)."""
    keda = KedaSettings(enabled=True, metrics_api_readers=["system:serviceaccount:keda:scaler"])
    with ApiRig(keda=keda) as rig:
        rig.kube.reviews.add_token("keda-token", username="system:serviceaccount:keda:scaler")
        name = rig.add_raycluster("team-a", "alice-rc")
        rig.cycle()
        rig.kube.requests.clear()

        def status(token: str, namespace: str = "team-a") -> int:
            query = {"namespace": namespace, "workload": name}
            headers = {"Authorization": f"Bearer {token}"}
            return rig.http.get(KEDA, params=query, headers=headers).status_code

        assert status("keda-token") == 200
        assert status("keda-token", "team-b") == 404  # may read there too: nothing to tell
        assert [status(TOKENS[user]) for user in ("admin", "alice", "bob")] == [403, 403, 403]
        assert rig.kube.requests.matching("POST", "/apis/authorization.k8s.io") == []
    assert rig.kube.errors == []


# Every change on one workload that a namespace's editor may make, aimed at a name no cycle saw.
CHANGES_AT_GHOST = [
    replace(cell, at=GHOST)
    for cell in MATRIX
    if cell.method != "GET" and cell.at in (ONE, KEPT, OFF) and cell.expect[EDITOR] == 200
]


@pytest.mark.parametrize("cell", CHANGES_AT_GHOST, ids=[cell.id for cell in CHANGES_AT_GHOST])
def test_a_name_the_snapshot_lacks_is_read_from_the_cluster_only_for_a_caller_with_rights_there(
    scene: Scene, cell: Row
) -> None:
    """A change naming what the latest cycle did not see reads the cluster afresh (the
    Workload, its owner, its pods): for a caller with no right in the namespace that would
    be requests the caller makes the service send, and a timing oracle on the name. Their
    refusal comes first, from their rights alone."""
    for who in WITHOUT_RIGHTS_IN_TEAM_A:
        if who not in scene.tokens:
            continue
        scene.reset()
        scene.rig.kube.requests.clear()

        response = scene.call(who, cell)

        assert response.status_code == 403
        reads = [r.path for r in scene.rig.kube.requests.all() if r.method == "GET"]
        assert reads == [], f"{who} made the service read {reads}"
