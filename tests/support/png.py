"""Reading a PNG's pixels with the standard library (zlib): enough for the screenshots a
headless browser writes (8 bits per channel, RGB or RGBA, not interlaced).

The row filters follow the PNG specification, section 9 ("Filtering"):
https://www.w3.org/TR/png-3/#9Filters
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

SIGNATURE = b"\x89PNG\r\n\x1a\n"
CHANNELS = {2: 3, 6: 4}  # colour type: truecolour, truecolour with alpha

Pixel = tuple[int, ...]


@dataclass(frozen=True)
class Image:
    width: int
    height: int
    channels: int
    rows: tuple[bytes, ...]  # unfiltered, `width * channels` bytes each

    def pixel(self, x: int, y: int) -> Pixel:
        start = x * self.channels
        return tuple(self.rows[y][start : start + 3])  # RGB; alpha left out


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height, from the header alone."""
    if not data.startswith(SIGNATURE) or data[12:16] != b"IHDR":
        raise ValueError("not a PNG")
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def read_png(data: bytes) -> Image:
    if not data.startswith(SIGNATURE):
        raise ValueError("not a PNG")
    chunks, at = {}, len(SIGNATURE)
    compressed = b""
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        kind, body = data[at + 4 : at + 8], data[at + 8 : at + 8 + length]
        at += 12 + length
        if kind == b"IDAT":
            compressed += body
        else:
            chunks[kind] = body
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunks[b"IHDR"])
    if depth != 8 or colour not in CHANNELS or interlace:
        raise ValueError(f"unsupported PNG: depth {depth}, colour {colour}, interlace {interlace}")
    channels = CHANNELS[colour]
    raw = zlib.decompress(compressed)
    stride = width * channels
    rows: list[bytes] = []
    previous = bytes(stride)
    for y in range(height):
        start = y * (stride + 1)
        row = _unfilter(raw[start], raw[start + 1 : start + 1 + stride], previous, channels)
        rows.append(row)
        previous = row
    return Image(width, height, channels, tuple(rows))


def _unfilter(kind: int, line: bytes, above: bytes, bpp: int) -> bytes:
    out = bytearray(line)
    for i, value in enumerate(line):
        left = out[i - bpp] if i >= bpp else 0
        up = above[i]
        corner = above[i - bpp] if i >= bpp else 0
        if kind == 1:
            out[i] = (value + left) & 0xFF
        elif kind == 2:
            out[i] = (value + up) & 0xFF
        elif kind == 3:
            out[i] = (value + (left + up) // 2) & 0xFF
        elif kind == 4:
            out[i] = (value + _paeth(left, up, corner)) & 0xFF
        elif kind != 0:
            raise ValueError(f"unknown PNG filter {kind}")
    return bytes(out)


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c
