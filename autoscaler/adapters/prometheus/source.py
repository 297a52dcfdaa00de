"""The metric source backed by Prometheus or Thanos Querier: the one module that imports
`prometheus_api_client`.

A read sends the three fleet-wide queries of `promql` per signal (SLOTS from the recorded
series when they can be trusted: `slot_reader`), over one GET each, for every usage view at
once: their number depends neither on the fleet nor on the views, each
view being judged in Python from the shared answers (`views`). Then each evidence reader
sends its own (one per signal, the learned power baseline one more); a reader that fails
makes only its signal failed (`FleetEvidence.failures`), and the merged evidence goes with
every view. The fresh check before acting sends the one query of `latest`, the evidence
probes included. The first read (and, after a failed one, the next) first asks the server
whether its ranges are left-open (`range_semantics`): one query per process, not per cycle;
while it cannot tell, every read is a failure. `prometheus.rangeSemantics` set to left-open or
left-closed says it instead: no probe. Every body is parsed once, by the session's
`ReplyInspector`. A read never raises: a failed request (after one quick retry), an error
envelope, a refused token or an unreadable reply makes every view's usage a
`FleetUsage(failure=...)`; warnings (partial data) make every namespace doubtful in every
view, because a warning does not say which series it left out.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import requests
import urllib3
from prometheus_api_client import PrometheusConnect
from prometheus_api_client.exceptions import PrometheusApiClientException

from autoscaler.adapters.prometheus.busy_history import BusyHistory
from autoscaler.adapters.prometheus.device_evidence import FreshProbe
from autoscaler.adapters.prometheus.evidence_base import EvidenceReader, merged
from autoscaler.adapters.prometheus.evidence_readers import evidence_readers
from autoscaler.adapters.prometheus.http import (
    ExchangeError,
    ReplyInspector,
    build_retry,
    build_session,
)
from autoscaler.adapters.prometheus.latest import latest_evidence, latest_query, latest_samples
from autoscaler.adapters.prometheus.promql import (
    QueryTemplates,
    QueryWindow,
    build_queries,
    duration,
    parse_vector,
)
from autoscaler.adapters.prometheus.range_semantics import ProbedOnce
from autoscaler.adapters.prometheus.slot_reader import SlotReader
from autoscaler.adapters.prometheus.utilization import read_utilization
from autoscaler.adapters.prometheus.views import FleetAnswers, usage_of_view
from autoscaler.core.errors import ConfigError, MetricsUnavailable
from autoscaler.domain.models import FleetUsage, UsageView
from autoscaler.domain.usage.evidence import FleetEvidence
from autoscaler.domain.usage.fresh import LatestUsage
from autoscaler.settings.tree import PolicySettings, PrometheusSettings

EVERY_NAMESPACE = frozenset({"*"})

_TIMED_OUT = "Prometheus did not answer in time"
_UNREADABLE = "cannot build the queries or read their answers"
_EMPTY_WINDOW = f"{_UNREADABLE}: a usage view's window must be positive"
_NO_SCALE = (
    " (since issue 18 a template returns the signal in its own unit and the service divides"
    " by prometheus.signals[].scale: drop the division by {scale})"
)
# First match wins: subclasses before their bases.
_REASONS: tuple[tuple[type[Exception] | tuple[type[Exception], ...], str], ...] = (
    (ExchangeError, ""),  # already says what happened
    (requests.Timeout, _TIMED_OUT),
    (requests.exceptions.SSLError, "TLS failed (check caFile)"),
    (requests.ConnectionError, "cannot connect to Prometheus"),
    ((requests.RequestException, PrometheusApiClientException), "Prometheus request failed"),
    (OSError, "cannot read the bearer token"),
    ((LookupError, TypeError), "Prometheus replied with something other than the expected result"),
)

# What can go wrong in one exchange; `_translated` turns each into MetricsUnavailable.
_EXCHANGE_ERRORS = (
    requests.RequestException,  # connection refused, TLS, timeout, retries exhausted
    PrometheusApiClientException,  # a status the inspector let through (should not happen)
    ExchangeError,  # error envelope, 401/403, not JSON, empty token
    OSError,  # the token file cannot be read
    LookupError,  # a result that is not the instant vector or matrix asked for
    TypeError,
    ValueError,  # ... or a span that cannot be written as a PromQL duration
)


@dataclass(frozen=True)
class QueryRules:
    """The policy spans the queries need: coverage resolution and how far back to look
    for the last busy sample."""

    slot: timedelta
    lookback: timedelta
    loading: timedelta  # the longest maxLoading: how far back evidence is read

    @classmethod
    def from_policy(cls, policy: PolicySettings, *, loading: timedelta | None) -> QueryRules:
        longest = max(policy.max_loading, loading or timedelta(0))
        return cls(slot=policy.slot, lookback=policy.idle_since_lookback, loading=longest)


class PrometheusMetricSource:
    """`MetricSource` over the Prometheus HTTP API; `queries_issued` counts every query sent."""

    def __init__(
        self,
        *,
        prometheus: PrometheusSettings,
        policy: PolicySettings,
        templates: QueryTemplates | None = None,
        readers: Sequence[EvidenceReader] | None = None,
        longest_loading: timedelta | None = None,
        logger: logging.Logger | None = None,
    ) -> None:
        """`longest_loading`: the longest maxLoading of the rules (policy.maxLoading when
        unset), how far back the evidence reads reach."""
        self._settings = prometheus
        self._readers = (
            list(readers)
            if readers is not None
            else evidence_readers(prometheus.evidence, compute=prometheus.signals)
        )
        self._rules = QueryRules.from_policy(policy, loading=longest_loading)
        self._templates = _checked(templates or QueryTemplates(), prometheus, self._rules)
        self._log = logger or logging.getLogger(__name__)
        self.slots = SlotReader(settings=prometheus, templates=self._templates, logger=self._log)
        self._inspector = ReplyInspector()
        self._client = PrometheusConnect(
            url=prometheus.url.rstrip("/"),
            session=build_session(prometheus, inspector=self._inspector),
            retry=build_retry(prometheus.retries),
            timeout=prometheus.timeout.total_seconds(),
            method="GET",
        )
        self._busy = BusyHistory()
        self.queries_issued = 0
        self._ranges = ProbedOnce(
            prometheus.range_semantics, ask=self._ask, logger=self._log, worded=_translated
        )

    def read_views(
        self, views: Collection[UsageView], *, now: datetime
    ) -> dict[UsageView, FleetUsage]:
        """One fleet read, the same queries (three per signal) for any number of views."""
        wanted = sorted(set(views))
        unreadable = [view for view in wanted if view.window <= timedelta(0)]
        readable = [view for view in wanted if view.window > timedelta(0)]
        usage = {view: _failed(view, now, _EMPTY_WINDOW) for view in unreadable}
        if not readable:
            return usage
        rules = self._rules
        self._inspector.forget()
        try:
            span = QueryWindow.for_views(
                readable,
                slot=rules.slot,
                lookback=rules.lookback,
                loading=rules.loading,
                closed_ranges=self._ranges.semantics(now=now).closed,
            )
            answers = self._read(span, now=now)
        except _EXCHANGE_ERRORS as exc:
            failure = str(_translated(exc))
            return usage | {view: _failed(view, now, failure) for view in readable}
        warnings = self._inspector.warnings()
        if warnings:
            self._busy.forget()  # partial data is never kept as clean
            self._log.warning("Prometheus returned partial data: %s", "; ".join(warnings))
        doubtful = EVERY_NAMESPACE if warnings else frozenset()
        evidence = self._evidence(span, now=now)
        for view in readable:
            gpus = usage_of_view(answers, view, span=span, now=now)
            usage[view] = FleetUsage(
                view.window,
                view.threshold,
                now,
                gpus=gpus,
                doubtful_namespaces=doubtful,
                evidence=evidence,
            )
        return usage

    def read_latest(self, pods: Sequence[tuple[str, str]], *, now: datetime) -> LatestUsage:
        if not pods:
            return LatestUsage(evaluated_at=now)
        probes = [reader for reader in self._readers if isinstance(reader, FreshProbe)]
        slot = self._rules.slot
        self._inspector.forget()
        try:
            closed = self._ranges.semantics(now=now).closed
            query = latest_query(
                self._settings.signals, pods, probes=probes, slot=slot, closed_ranges=closed
            )
            rows = parse_vector(self._query(query, at=now))
        except _EXCHANGE_ERRORS as exc:
            return LatestUsage(evaluated_at=now, failure=str(_translated(exc)))
        warnings = self._inspector.warnings()
        if warnings:  # a warning does not say which series it left out: trust none
            return LatestUsage(now, failure=f"partial data: {'; '.join(warnings)}")
        evidence = latest_evidence(rows, wanted=pods, probes=probes, slot=slot, now=now)
        return LatestUsage(now, samples=latest_samples(rows, wanted=pods), evidence=evidence)

    def close(self) -> None:
        self._client.close()

    def _read(self, span: QueryWindow, *, now: datetime) -> FleetAnswers:
        signals, templates = self._settings.signals, self._templates
        return read_utilization(
            self._ask,
            signals=signals,
            span=span,
            templates=templates,
            slots=self.slots,
            history=self._busy,
            now=now,
        )

    def _evidence(self, span: QueryWindow, *, now: datetime) -> FleetEvidence:
        """Every reader in turn; one that fails (or answers with partial data, which does
        not say which GPUs it left out) makes its own signal failed, the others still count."""
        parts = []
        for reader in self._readers:
            seen = len(self._inspector.warnings())
            try:
                parts.append(reader.read(self._ask, span=span, now=now))
            except _EXCHANGE_ERRORS as exc:
                parts.append(self._failed_signal(reader, str(_translated(exc))))
                continue
            partial = self._inspector.warnings()[seen:]
            if partial:
                parts[-1] = self._failed_signal(reader, f"partial data: {'; '.join(partial)}")
        return merged(parts)

    def _failed_signal(self, reader: EvidenceReader, why: str) -> FleetEvidence:
        self._log.warning("evidence signal %s unreadable: %s", reader.signal.value, why)
        return FleetEvidence(failures={reader.signal: why})

    def _ask(self, promql: str, at: datetime) -> Sequence[Mapping[str, Any]]:
        return self._query(promql, at=at)

    def _query(self, promql: str, *, at: datetime) -> Sequence[Mapping[str, Any]]:
        self.queries_issued += 1
        params = {"time": f"{at.timestamp():.3f}", "timeout": duration(self._settings.timeout)}
        result: Sequence[Mapping[str, Any]] = self._client.custom_query(promql, params=params)
        return result


def _checked(
    templates: QueryTemplates, settings: PrometheusSettings, rules: QueryRules
) -> QueryTemplates:
    """Templates that build (known placeholders only), or ConfigError at startup."""
    span = QueryWindow(rules.slot, rules.slot, rules.lookback, threshold=0.0)
    try:
        build_queries(settings.signals, span=span, templates=templates)
    except KeyError as exc:
        hint = _NO_SCALE if exc.args == ("scale",) else ""
        raise ConfigError([f"prometheus query templates: {exc!r}{hint}"]) from exc
    except (IndexError, ValueError) as exc:
        raise ConfigError([f"prometheus query templates: {exc!r}"]) from exc
    return templates


def _failed(view: UsageView, now: datetime, failure: str) -> FleetUsage:
    return FleetUsage(view.window, view.threshold, evaluated_at=now, failure=failure)


def _translated(exc: Exception) -> MetricsUnavailable:
    """The one place where outside errors become ours, with a reason an admin can act on."""
    if _timed_out_after_retries(exc):
        return MetricsUnavailable(f"{_TIMED_OUT}: {_innermost(exc)}")
    prefix = next((text for kinds, text in _REASONS if isinstance(exc, kinds)), _UNREADABLE)
    return MetricsUnavailable(f"{prefix}: {_innermost(exc)}" if prefix else str(exc))


def _timed_out_after_retries(exc: Exception) -> bool:
    """requests reports a read timeout that outlived the retries as a ConnectionError."""
    return isinstance(_retry_reason(exc), urllib3.exceptions.ReadTimeoutError)


def _innermost(exc: Exception) -> str:
    """What urllib3 says went wrong, without the URL (and its whole query) around it."""
    reason = _retry_reason(exc)
    return str(reason if reason is not None else exc)


def _retry_reason(exc: Exception) -> object:
    cause = exc.args[0] if exc.args else None
    return getattr(cause, "reason", None)
