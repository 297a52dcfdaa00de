"""The API's settings: camelCase keys, documented fields, and what they refuse."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from autoscaler.settings.api import AdminVerbSettings, ApiSettings, AuthSettings
from autoscaler.settings.rules import build_policy
from autoscaler.settings.tree import Settings


def test_the_defaults_are_closed_reads_token_review_a_body_cap_and_a_week_of_exemption() -> None:
    settings = ApiSettings()
    assert (settings.host, settings.port, settings.reads_open) == ("0.0.0.0", 8080, False)
    assert settings.max_request_bytes == 64 * 1024
    assert settings.auth.mode == "tokenReview"
    assert build_policy(Settings()).default_rule.exemptions.max_duration == timedelta(days=7)
    assert settings.allow_indefinite_exemption is True


def test_yaml_keys_are_camel_case_like_the_rest_of_the_settings() -> None:
    settings = ApiSettings.model_validate(
        {
            "readsOpen": False,
            "auditRecordLimit": 50,
            "admin": {"verb": "delete", "name": "kill-switch"},
        }
    )
    assert (settings.reads_open, settings.audit_record_limit) == (False, 50)
    assert settings.admin.name == "kill-switch"


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param({"readsopen": True}, id="misspelt-key"),
        pytest.param({"maxExemption": "7d"}, id="removed-longest-exemption"),
        pytest.param({"auth": {"mode": "static"}}, id="static-without-a-token-file"),
        pytest.param({"auth": {"mode": "basic"}}, id="unknown-auth-mode"),
        pytest.param({"auditRecordLimit": 100000}, id="audit-beyond-a-config-map"),
        pytest.param({"port": 70000}, id="port-out-of-range"),
    ],
)
def test_bad_settings_are_refused(raw: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        ApiSettings.model_validate(raw)


@pytest.mark.parametrize("model", [ApiSettings, AuthSettings, AdminVerbSettings])
def test_every_field_says_what_it_is_for(model: type[BaseModel]) -> None:
    undocumented = [name for name, field in model.model_fields.items() if not field.description]
    assert undocumented == []
