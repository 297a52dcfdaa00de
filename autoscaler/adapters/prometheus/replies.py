"""Parsing a Prometheus reply body, fast where it is large.

A fleet's slot matrix is some 600,000 `[time, "value"]` pairs per 1,000 workloads. Parsed
with the standard library, every pair is a list holding a number and a string that Python
then converts, which took about a third of a read's time and most of its peak memory.
msgspec decodes the envelope against its schema instead, turning each value string into a
float as it goes (lax mode) and each pair into a tuple: the very numbers `float()` gives.

What the schema does not fit (a scalar or string result, a value msgspec's lax mode does not
take, such as "+Inf") is parsed again by the standard library, so the parse never changes
what a reply means, only how fast it is read.

The session's reply hook reads only the envelope (`parse_envelope`) and leaves `data.result`
unparsed (`Result`), so the slot matrices (10,000 workloads: 75 MB of JSON per signal) can be
read series by series into compact columns (`slot_columns.py`) instead of as 3 million
tuples; any other reader gets the whole result parsed as above on first use.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any, TypedDict, overload

import msgspec


class _Series(TypedDict, total=False):
    metric: dict[str, str]
    value: tuple[float, float]  # an instant vector's sample
    values: list[tuple[float, float]]  # a matrix's points


class _RawData(TypedDict, total=False):
    resultType: str
    result: msgspec.Raw


class _Envelope(TypedDict, total=False):
    status: str
    data: _RawData
    warnings: list[str]
    errorType: str
    error: str


_ENVELOPE = msgspec.json.Decoder(_Envelope, strict=False)
_RESULT = msgspec.json.Decoder(list[_Series], strict=False)


def parse_envelope(body: bytes | bytearray) -> Any:
    """The reply as `json.loads` reads it, except that `data.result`, when there is one, is
    a `Result`: read as a whole only when first used, its sample values floats and its points
    tuples. ValueError when the body is not JSON."""
    try:
        reply: Any = _ENVELOPE.decode(body)
    except msgspec.ValidationError:
        return json.loads(body)
    except msgspec.DecodeError as error:
        raise ValueError(f"not JSON: {error}") from error
    data = reply.get("data")
    if isinstance(data, dict) and "result" in data:
        data["result"] = Result(data["result"])
    return reply


class Result(Sequence[Any]):
    """A reply's `data.result`, kept as its JSON text (`raw`, a view of the body) until an
    item is asked for; then parsed once against the schema (the standard library's parse
    when the schema does not fit)."""

    def __init__(self, raw: msgspec.Raw) -> None:
        self.raw = raw
        self._parsed: list[Any] | None = None

    def is_list(self) -> bool:
        """Whether the text is a JSON array (the one shape a query's result has)."""
        return bytes(memoryview(self.raw)[:1]) == b"["

    def parsed(self) -> list[Any]:
        if self._parsed is None:
            try:
                self._parsed = _RESULT.decode(self.raw)
            except msgspec.ValidationError:
                self._parsed = json.loads(bytes(self.raw))
        return self._parsed

    @overload
    def __getitem__(self, index: int) -> Any: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Any]: ...
    def __getitem__(self, index: int | slice) -> Any:
        return self.parsed()[index]

    def __len__(self) -> int:
        return len(self.parsed())

    def __iter__(self) -> Iterator[Any]:
        return iter(self.parsed())

    def __eq__(self, other: object) -> bool:
        return self.parsed() == (other.parsed() if isinstance(other, Result) else other)

    __hash__ = None  # type: ignore[assignment]
