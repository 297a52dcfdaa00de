"""KEDA's `externalscaler.ExternalScaler` served with grpc.aio, answered from the snapshot.

Status codes: bad metadata is INVALID_ARGUMENT (naming the keys), a Workload missing from the
snapshot is NOT_FOUND, and unknown data is UNAVAILABLE, never `false`: KEDA holds the replicas
on an error instead of scaling to zero. Streams push only known answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any, NoReturn

import grpc

from autoscaler.keda import externalscaler_pb2 as pb
from autoscaler.keda.answers import KedaAnswers
from autoscaler.keda.metadata import MetadataError
from autoscaler.keda.targets import FULL, Activity, Judgement, Target

_CODES = {
    Activity.UNKNOWN: grpc.StatusCode.UNAVAILABLE,
    Activity.NOT_FOUND: grpc.StatusCode.NOT_FOUND,
}


class SnapshotSignal:
    """Wakes every open stream after a publish. Lives on, and is used from, one event loop."""

    def __init__(self) -> None:
        self._waiters: set[asyncio.Event] = set()
        self.closed = False

    def notify(self) -> None:
        for waiter in self._waiters:
            waiter.set()

    def close(self) -> None:
        """End every stream (the server is stopping): KEDA reconnects to another replica."""
        self.closed = True
        self.notify()

    def add(self, waiter: asyncio.Event) -> None:
        self._waiters.add(waiter)

    def discard(self, waiter: asyncio.Event) -> None:
        self._waiters.discard(waiter)

    def __len__(self) -> int:
        return len(self._waiters)


class ExternalScalerServicer:
    """Method names are KEDA's; `context` is a grpc.aio.ServicerContext."""

    def __init__(
        self,
        *,
        answers: KedaAnswers,
        signal: SnapshotSignal,
        heartbeat: timedelta,
        logger: logging.Logger,
    ) -> None:
        self._answers = answers
        self._signal = signal
        self._heartbeat = heartbeat.total_seconds()
        self._log = logger

    async def IsActive(self, request: pb.ScaledObjectRef, context: Any) -> pb.IsActiveResponse:
        judgement = await self._known(request, context)
        return pb.IsActiveResponse(result=judgement.activity is Activity.ACTIVE)

    async def GetMetricSpec(
        self, request: pb.ScaledObjectRef, context: Any
    ) -> pb.GetMetricSpecResponse:
        target = await self._target(request, context)
        spec = pb.MetricSpec(
            metricName=target.metric_name, targetSize=int(FULL), targetSizeFloat=FULL
        )
        return pb.GetMetricSpecResponse(metricSpecs=[spec])

    async def GetMetrics(
        self, request: pb.GetMetricsRequest, context: Any
    ) -> pb.GetMetricsResponse:
        target = await self._target(request.scaledObjectRef, context)
        judgement = await self._known_for(target, context)
        value = pb.MetricValue(
            metricName=request.metricName or target.metric_name,
            metricValue=round(judgement.value),
            metricValueFloat=judgement.value,
        )
        return pb.GetMetricsResponse(metricValues=[value])

    async def StreamIsActive(
        self, request: pb.ScaledObjectRef, context: Any
    ) -> AsyncIterator[pb.IsActiveResponse]:
        """The current answer at once, then on every change, and again each heartbeat."""
        target = await self._target(request, context)
        waiter = asyncio.Event()
        self._signal.add(waiter)
        loop = asyncio.get_running_loop()
        try:
            last: bool | None = None
            sent_at = loop.time()
            while not self._signal.closed:
                waiter.clear()  # before judging: a publish from here on wakes the wait below
                judgement = self._answers.judge(target)
                due = loop.time() - sent_at >= self._heartbeat
                if judgement.known:
                    active = judgement.activity is Activity.ACTIVE
                    if active != last or due:
                        if active != last:
                            self._log_flip(target, judgement)
                        last, sent_at = active, loop.time()
                        yield pb.IsActiveResponse(result=active)
                elif due:
                    sent_at = loop.time()  # nothing known to repeat: wait another beat
                remaining = max(self._heartbeat - (loop.time() - sent_at), 0.0)
                await _wait(waiter, timeout=remaining)
        finally:
            self._signal.discard(waiter)

    async def _target(self, request: pb.ScaledObjectRef, context: Any) -> Target:
        caller = f"{request.namespace}/{request.name}"
        try:
            return self._answers.target(
                request.scalerMetadata, default_namespace=request.namespace or None, caller=caller
            )
        except MetadataError as exc:
            await _abort(context, grpc.StatusCode.INVALID_ARGUMENT, str(exc))

    async def _known(self, request: pb.ScaledObjectRef, context: Any) -> Judgement:
        return await self._known_for(await self._target(request, context), context)

    async def _known_for(self, target: Target, context: Any) -> Judgement:
        judgement = self._answers.judge(target)
        if not judgement.known:
            await _abort(context, _CODES[judgement.activity], f"{target}: {judgement.reason}")
        return judgement

    def _log_flip(self, target: Target, judgement: Judgement) -> None:
        self._log.info(
            "stream for %s now %s: %s",
            target,
            judgement.activity.value,
            judgement.reason,
            extra={"namespace": target.namespace, "target": str(target)},
        )


async def _abort(context: Any, code: grpc.StatusCode, details: str) -> NoReturn:
    await context.abort(code, details)
    raise AssertionError("context.abort returned")  # it always raises


async def _wait(waiter: asyncio.Event, *, timeout: float) -> None:
    with contextlib.suppress(TimeoutError):  # a heartbeat is due
        await asyncio.wait_for(waiter.wait(), timeout)
