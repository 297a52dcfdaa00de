"""`prometheus.queries`: the PromQL templates of a fleet read, for exporters that differ from
dcgm-exporter's defaults. One template for each of the read's three queries, filled in once
per signal (adapters/prometheus/promql.py lists the placeholders); unset keeps the built-in
one. Since issue 18 a template returns the signal in its own unit (the service divides by
the signal's `scale`), so one written with {scale} is refused at startup.

Before issue 14 a read had one query per measure (peak, coverage, lastBusy). Those keys are
still accepted when null, as the example configuration wrote them; a template set there
cannot be carried over (the queries changed shape) and is refused with the new keys' names.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from autoscaler.settings.base import Section

_REPLACED = ("peak", "coverage", "lastBusy", "last_busy")


class QuerySettings(Section):
    slots: str | None = Field(
        None,
        description="Per raw series and slot, the signal's highest value in that slot, "
        "in its own unit (the service divides by the signal's scale and merges a GPU's "
        "series; each view's peak, coverage and exact last busy time are read from it).",
    )
    busy: str | None = Field(
        None,
        description="Per raw series and coarse step over the idle-since lookback, the "
        "highest value above {threshold}, the lowest threshold in the signal's unit (the last "
        "busy time further back).",
    )
    newest: str | None = Field(
        None,
        description="Time of the newest real (non-NaN) sample per series, keeping the "
        "labels that name the GPU.",
    )

    @model_validator(mode="before")
    @classmethod
    def _replaced_keys(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        set_ones = [key for key in _REPLACED if data.get(key) is not None]
        if set_ones:
            raise ValueError(
                f"{', '.join(set_ones)}: replaced by slots, busy and newest (one read serves "
                "every rule); rewrite the template from adapters/prometheus/promql.py"
            )
        return {key: value for key, value in data.items() if key not in _REPLACED}
