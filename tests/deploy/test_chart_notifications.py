"""The chart's warning stage (ISSUE 15): the notice knobs and `notifications:` reach the
settings, every secret file the settings name is a mounted Secret's key, the links' signing key
is generated when none is named, their Ingress exposes the links only, and `delete` on
RayClusters is granted only when a rule deletes."""

from __future__ import annotations

import base64
import json
from datetime import timedelta
from pathlib import Path

import pytest

from tests.deploy.tooling import (
    CHART,
    RELEASE,
    Manifest,
    deployment_pod,
    find,
    mounted_source,
    notes,
    one,
    render,
    settings_from,
    template_result,
    values_args,
)

NOTIFY = CHART / "ci" / "notifications-values.yaml"
DELETE_RAY_CLUSTERS = ("ray.io", "rayclusters", "delete")
SANDBOX = {"namespaces": ["sandbox"], "ownerKinds": ["RayCluster"]}


def rules(*rule: dict[str, object]) -> tuple[str, ...]:
    return ("--set-json", "config.rules=" + json.dumps(list(rule)))


def grants_delete(roles: list[Manifest]) -> bool:
    return any(
        (group, resource, verb) == DELETE_RAY_CLUSTERS
        for role in roles
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    )


@pytest.mark.real
@pytest.mark.parametrize(
    ("args", "granted"),
    [
        pytest.param((), False, id="defaults-grant-no-delete"),
        pytest.param(
            rules(
                {"name": "a", "match": SANDBOX, "action": "deactivate"},
                {"name": "b", "match": {"namespaces": ["x"]}, "action": "warn"},
            ),
            False,
            id="deactivate-and-warn-rules-grant-no-delete",
        ),
        pytest.param(
            rules({"name": "a", "match": SANDBOX, "action": "delete", "deleteAfter": "3d"}),
            True,
            id="a-delete-rule-grants-delete-on-rayclusters",
        ),
    ],
)
def test_delete_on_rayclusters_is_granted_only_with_a_delete_rule(
    args: tuple[str, ...], granted: bool, tmp_path: Path
) -> None:
    manifests = render(*args)
    settings_from(manifests, tmp_path)  # the service accepts what the chart renders
    assert grants_delete(find(manifests, "ClusterRole") + find(manifests, "Role")) is granted


@pytest.mark.real
def test_with_named_namespaces_the_delete_is_granted_in_their_roles_only() -> None:
    delete = rules({"name": "a", "match": SANDBOX, "action": "delete", "deleteAfter": "3d"})
    manifests = render(*delete, "--set", "config.policy.namespaces.include={sandbox}")
    (cluster_role,) = find(manifests, "ClusterRole")
    workload_roles = [r for r in find(manifests, "Role") if r["metadata"]["namespace"] == "sandbox"]
    assert not grants_delete([cluster_role])
    assert grants_delete(workload_roles)


@pytest.mark.real
def test_notice_values_reach_the_service_settings(tmp_path: Path) -> None:
    settings = settings_from(render(*values_args(NOTIFY)), tmp_path)
    policy, notifications = settings.policy, settings.notifications
    assert (policy.warn_before, policy.snooze.max_duration) == (
        timedelta(minutes=30),
        timedelta(hours=12),
    )
    assert [(rule.name, rule.action, rule.notify) for rule in settings.rules] == [
        ("sandbox", None, ["ml-slack"]),
        ("research", "warn", None),
    ]
    assert notifications.default_targets == ["team-hook"]
    assert notifications.targets["team-hook"].url == "https://hooks.example.com/gpu"
    assert notifications.retry.attempts == 4
    assert notifications.links.choices == [timedelta(hours=2), timedelta(hours=12)]


@pytest.mark.real
def test_every_secret_file_in_the_settings_is_a_mounted_secret_key(tmp_path: Path) -> None:
    manifests = render(*values_args(NOTIFY))
    notifications = settings_from(manifests, tmp_path).notifications
    slack, hook = notifications.targets["ml-slack"], notifications.targets["team-hook"]
    assert mounted_source(manifests, slack.url_file) == (
        "idle-gpu-autoscaler-notify",
        "ml-slack-url",
    )
    assert mounted_source(manifests, hook.secret_file) == (
        "idle-gpu-autoscaler-notify",
        "team-hook-key",
    )
    assert mounted_source(manifests, notifications.links.signing_key_file) == (
        f"{RELEASE}-link-signing-key",
        "signing-key",
    )


@pytest.mark.real
def test_defaults_mount_no_notification_secret_and_render_no_link_parts(tmp_path: Path) -> None:
    manifests = render()
    links = settings_from(manifests, tmp_path).notifications.links
    assert (links.base_url, links.signing_key_file) == (None, None)
    volumes = {volume["name"] for volume in deployment_pod(manifests)["volumes"]}
    assert not volumes & {"notify-secrets", "link-signing-key"}
    assert find(manifests, "Secret") == [] and find(manifests, "Ingress") == []


@pytest.mark.real
def test_the_generated_signing_key_is_long_enough_to_trust() -> None:
    secret = one(render(*values_args(NOTIFY)), "Secret", f"{RELEASE}-link-signing-key")
    key = base64.b64decode(secret["data"]["signing-key"])
    assert len(key) >= 32  # compose/notify.py refuses a shorter one


@pytest.mark.real
def test_an_existing_signing_key_secret_is_mounted_and_none_generated(tmp_path: Path) -> None:
    manifests = render(
        *values_args(NOTIFY),
        "--set",
        "notifications.links.signingKey.existingSecret=links-key",
        "--set",
        "notifications.links.signingKey.key=hmac",
    )
    key_file = settings_from(manifests, tmp_path).notifications.links.signing_key_file
    assert mounted_source(manifests, key_file) == ("links-key", "hmac")
    assert find(manifests, "Secret") == []


@pytest.mark.real
def test_the_links_ingress_routes_only_the_link_paths_to_the_http_port() -> None:
    ingress = one(render(*values_args(NOTIFY)), "Ingress")
    (rule,) = ingress["spec"]["rules"]
    assert rule["host"] == "idle-gpu.example.com"
    assert rule["http"]["paths"] == [
        {
            "path": "/v1/links/",
            "pathType": "Prefix",
            "backend": {"service": {"name": RELEASE, "port": {"name": "http"}}},
        }
    ]
    assert ingress["spec"]["tls"] == [
        {"hosts": ["idle-gpu.example.com"], "secretName": "idle-gpu-links-tls"}
    ]


BAD = [
    pytest.param(
        ("--set", "notifications.links.ingress.enabled=true"),
        "/notifications/links/ingress",
        id="ingress-without-a-host",
    ),
    pytest.param(
        (
            "--set",
            "notifications.links.ingress.enabled=true",
            "--set",
            "notifications.links.ingress.host=a.example.com",
        ),
        "needs notifications.links.baseUrl",
        id="ingress-without-links",
    ),
    pytest.param(
        (*values_args(NOTIFY), "--set", "notifications.links.ingress.host=other.example.com"),
        "is not the host of notifications.links.baseUrl",
        id="ingress-host-not-the-links-host",
    ),
    pytest.param(
        (*values_args(NOTIFY), "--set", "notifications.secretName="),
        "set notifications.secretName",
        id="secret-keys-without-the-secret",
    ),
    pytest.param(
        (
            "--set-json",
            'notifications.targets={"chat":{"type":"slack","urlKey":"u","secretKey":"k"}}',
        ),
        "/notifications/targets/chat",
        id="secret-key-on-a-slack-target",
    ),
    pytest.param(
        (
            "--set-json",
            'notifications.targets={"hook":{"type":"webhook","url":"https://a.example","urlKey":"u"}}',
        ),
        "/notifications/targets/hook",
        id="two-addresses-for-one-target",
    ),
    pytest.param(
        (
            "--set-json",
            'notifications.targets={"none":{"type":"webhook","url":"https://a.example"}}',
        ),
        "invalid propertyName 'none'",
        id="a-target-named-none",
    ),
    pytest.param(
        rules({"name": "a", "match": SANDBOX, "action": "delete"}),
        "deleteAfter",
        id="delete-rule-without-delete-after",
    ),
    pytest.param(
        ("--set", "notifications.links.baseUrl=idle-gpu.example.com"),
        "/notifications/links/baseUrl",
        id="links-address-without-a-scheme",
    ),
    pytest.param(
        ("--set", "config.policy.snooze.perDay=-1"),
        "/config/policy/snooze/perDay",
        id="negative-snoozes-per-day",
    ),
]


@pytest.mark.real
@pytest.mark.parametrize(("args", "complaint"), BAD)
def test_bad_notification_values_are_refused_naming_them(
    args: tuple[str, ...], complaint: str
) -> None:
    code, _, err = template_result(*args)
    assert code != 0
    assert complaint in err, err


@pytest.mark.real
@pytest.mark.parametrize(
    ("args", "said", "unsaid"),
    [
        pytest.param((), "Each stop is warned 15m ahead", "are DELETED", id="defaults-warn-ahead"),
        pytest.param(
            ("--set", "config.policy.warnBefore=0m"),
            "stops idle workloads WITHOUT a warning",
            "Each stop is warned",
            id="no-warning-is-said-out-loud",
        ),
        pytest.param(
            rules({"name": "a", "match": SANDBOX, "action": "delete", "deleteAfter": "3d"}),
            "RayClusters left deactivated for its deleteAfter are DELETED",
            "WITHOUT a warning",
            id="a-delete-rule-is-said-out-loud",
        ),
    ],
)
def test_notes_say_how_much_notice_is_given_and_whether_anything_is_deleted(
    args: tuple[str, ...], said: str, unsaid: str
) -> None:
    text = notes(*args)
    assert said in text
    assert unsaid not in text
