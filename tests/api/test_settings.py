"""The API's settings: camelCase keys, documented fields, and what they refuse."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from autoscaler.settings.api import AdminVerbSettings, ApiSettings, AuthSettings


def test_the_defaults_are_closed_reads_token_review_a_body_cap_and_a_week_of_exemption() -> None:
    settings = ApiSettings()
    assert (settings.host, settings.port, settings.reads_open) == ("0.0.0.0", 8080, False)
    assert settings.max_request_bytes == 64 * 1024
    assert settings.auth.mode == "tokenReview"
    assert settings.max_exemption == timedelta(days=7)
    assert settings.allow_indefinite_exemption is True
    assert settings.model_dump(mode="json", by_alias=True)["maxExemption"] == "7d"


def test_yaml_keys_are_camel_case_like_the_rest_of_the_settings() -> None:
    settings = ApiSettings.model_validate(
        {
            "readsOpen": False,
            "maxExemption": "36h",
            "auditRecordLimit": 50,
            "admin": {"verb": "delete", "name": "kill-switch"},
        }
    )
    assert (settings.reads_open, settings.max_exemption) == (False, timedelta(hours=36))
    assert settings.admin.name == "kill-switch"


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param({"readsopen": True}, id="misspelt-key"),
        pytest.param({"maxExemption": "0s"}, id="zero-maximum"),
        pytest.param({"maxExemption": "a week"}, id="not-a-duration"),
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
