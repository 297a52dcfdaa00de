"""Range queries for the backtest: `/api/v1/query_range` over plain requests.

The session is built like the live metric source's (`prometheus_http.build_session`: CA
bundle, rotating bearer token, Thanos tenancy, retries of 502/503/504), so a backtest reaches
whatever `serve` reaches with the same settings. Range replies are large, so the body is
parsed once, here, instead of also in the live source's reply hook. Every outside error
becomes `MetricsUnavailable` in `_translated`, the one place that maps them. Whether the
server's ranges are left-open is asked once, as the live source asks it (`range_semantics`),
unless `prometheus.rangeSemantics` says it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import requests
from requests.adapters import HTTPAdapter

from autoscaler.adapters.prometheus.http import (
    ExchangeError,
    ReplyInspector,
    build_retry,
    build_session,
)
from autoscaler.adapters.prometheus.promql import duration
from autoscaler.adapters.prometheus.range_semantics import ProbedOnce
from autoscaler.core.errors import MetricsUnavailable
from autoscaler.settings.tree import PrometheusSettings

_EXCERPT = 200
# What can go wrong in one exchange (requests' errors are OSErrors, so they come first below).
_EXCHANGE_ERRORS = (ExchangeError, OSError, KeyError, TypeError, ValueError, AttributeError)
_NOT_A_MATRIX = "Prometheus replied with something other than a matrix"
_REASONS: tuple[tuple[type[Exception], str], ...] = (  # first match wins: subclasses first
    (requests.Timeout, "Prometheus did not answer in time"),
    (requests.exceptions.SSLError, "TLS failed (check caFile)"),
    (requests.ConnectionError, "cannot connect to Prometheus"),
    (requests.RequestException, "Prometheus request failed"),
    (OSError, "cannot read the bearer token"),
)


@dataclass(frozen=True)
class RangeSeries:
    """One series of a matrix result: its labels and its `[unix time, "value"]` pairs."""

    labels: Mapping[str, str]
    values: Sequence[Sequence[Any]]


@dataclass(frozen=True)
class RangeReply:
    series: tuple[RangeSeries, ...]
    warnings: tuple[str, ...]  # partial data: the answer may leave series out


class PrometheusRange:
    """`query_range` against Prometheus or Thanos Querier; `queries_issued` counts requests."""

    def __init__(self, *, prometheus: PrometheusSettings, timeout: timedelta | None = None) -> None:
        self._url = prometheus.url.rstrip("/") + "/api/v1/query_range"
        self._instant_url = prometheus.url.rstrip("/") + "/api/v1/query"
        self._ranges = ProbedOnce(prometheus.range_semantics, ask=self._instant)
        self._timeout = timeout or prometheus.timeout
        self._session = build_session(prometheus, inspector=ReplyInspector())
        self._session.hooks["response"].clear()  # we read (and check) the one parse below
        adapter = HTTPAdapter(max_retries=build_retry(prometheus.retries))
        self._session.mount("http://", adapter)
        self._session.mount("https://", adapter)
        self.queries_issued = 0

    def query_range(
        self, promql: str, *, start: datetime, end: datetime, step: timedelta
    ) -> RangeReply:
        """Evaluate `promql` at start, start + step, ... <= end. Raises MetricsUnavailable."""
        params = {
            "query": promql,
            "start": f"{start.timestamp():.3f}",
            "end": f"{end.timestamp():.3f}",
            "step": duration(step),
        }
        return _matrix(self._get(self._url, params))

    def closed_ranges(self, *, at: datetime) -> bool:
        """Whether the server keeps a sample at a range's start (Prometheus 2.x), asked at a
        whole second at or before `at`, once. Raises MetricsUnavailable when it cannot tell."""
        try:
            return self._ranges.semantics(now=at).closed
        except (ExchangeError, KeyError, TypeError) as exc:
            raise _translated(exc) from exc

    def _instant(self, promql: str, at: datetime) -> Sequence[Mapping[str, Any]]:
        """`data.result` of an instant query evaluated at `at`."""
        params = {"query": promql, "time": f"{at.timestamp():.3f}"}
        result: Sequence[Mapping[str, Any]] = self._get(self._instant_url, params)["data"]["result"]
        return result

    def _get(self, url: str, params: dict[str, str]) -> dict[str, Any]:
        self.queries_issued += 1
        try:
            response = self._session.get(
                url,
                params=params | {"timeout": duration(self._timeout)},
                timeout=self._timeout.total_seconds(),
                verify=self._session.verify,  # else REQUESTS_CA_BUNDLE would override the CA
            )
            return _checked(response)
        except _EXCHANGE_ERRORS as exc:
            raise _translated(exc) from exc

    def close(self) -> None:
        self._session.close()


def _checked(response: requests.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        kind = response.headers.get("Content-Type", "no content type")
        raise ExchangeError(
            f"HTTP {response.status_code} {response.reason} ({kind}): {_excerpt(response.text)}"
        ) from None
    if not isinstance(body, dict):
        raise ExchangeError(f"HTTP {response.status_code}: not a Prometheus reply")
    if body.get("status") != "success" or response.status_code != 200:
        error = body.get("error") or _excerpt(response.text)
        kind = body.get("errorType") or "error"
        raise ExchangeError(f"HTTP {response.status_code} {response.reason}: {kind}: {error}")
    return body


def _matrix(body: Mapping[str, Any]) -> RangeReply:
    try:
        data = body["data"]
        if data.get("resultType") != "matrix":
            kind = data.get("resultType")
            raise ExchangeError(f"expected a matrix, Prometheus returned {kind}")
        result = data["result"]
        series = tuple(RangeSeries(dict(item["metric"]), item["values"]) for item in result)
    except _EXCHANGE_ERRORS as exc:
        raise _translated(exc) from exc
    return RangeReply(series, tuple(map(str, body.get("warnings") or ())))


def _translated(exc: Exception) -> MetricsUnavailable:
    """The one place where outside errors become ours, with a reason an admin can act on."""
    if isinstance(exc, ExchangeError):
        return MetricsUnavailable(str(exc))
    prefix = next((text for kind, text in _REASONS if isinstance(exc, kind)), _NOT_A_MATRIX)
    return MetricsUnavailable(f"{prefix}: {exc}")


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _EXCERPT else flat[:_EXCERPT] + "…"
