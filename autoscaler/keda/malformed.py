"""A request that is not the message its method takes, answered in gRPC's own words.

grpc decodes a request before the servicer sees it, and a decoding failure would end the call
as UNKNOWN carrying the decoder's exception class (`DecodeError`). The interceptor here gives
each method a decoder that hands the servicer a marker instead, and the method answers
INVALID_ARGUMENT saying, in words, that the request was not its message.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Final

import grpc
from google.protobuf.message import DecodeError


class _Undecodable:
    """What a request that does not decode is handed on as."""


UNDECODABLE: Final = _Undecodable()


def malformed(method: str) -> str:
    """The INVALID_ARGUMENT details of an undecodable request to `method` (its full name)."""
    return f"malformed request: not a valid protobuf message for {method.rsplit('/', 1)[-1]}"


class MalformedRequests(grpc.aio.ServerInterceptor):  # type: ignore[misc]  # grpc is untyped
    """Undecodable requests to unary-request methods become INVALID_ARGUMENT (the scaler has no
    streaming-request method)."""

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler: Any = await continuation(handler_call_details)
        if handler is None or handler.request_streaming or handler.request_deserializer is None:
            return handler
        details = malformed(handler_call_details.method)
        decode = handler.request_deserializer

        def tolerant(raw: bytes) -> object:
            try:
                return decode(raw)
            except DecodeError:
                return UNDECODABLE

        if handler.response_streaming:
            stream = handler.unary_stream

            async def streaming(request: object, context: Any) -> AsyncIterator[object]:
                if request is UNDECODABLE:
                    await context.abort(grpc.StatusCode.INVALID_ARGUMENT, details)
                async for answer in stream(request, context):
                    yield answer

            return handler._replace(request_deserializer=tolerant, unary_stream=streaming)
        unary = handler.unary_unary

        async def answering(request: object, context: Any) -> object:
            if request is UNDECODABLE:
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, details)
            return await unary(request, context)

        return handler._replace(request_deserializer=tolerant, unary_unary=answering)
