"""PURE: what a picture's bytes are, read from their headers alone.

Only PNG, JPEG and WebP are kept. The worker never decodes a picture a provider
sent: the headers give the kind and the size, which are checked against the
section's ceilings before anything is written.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final

PNG_SIGNATURE: Final = b"\x89PNG\r\n\x1a\n"
EXTENSIONS: Final = {"image/png": "png", "image/jpeg": "jpg", "image/webp": "webp"}
# JPEG start-of-frame markers (baseline, progressive, lossless...), which carry the size.
_SOF: Final = frozenset({0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE})


class PictureFormatError(ValueError):
    """The bytes are not a picture this console keeps; the message says why."""


@dataclass(frozen=True, slots=True)
class PictureFormat:
    """A picture's media type and size in pixels."""

    media_type: str
    width: int
    height: int

    @property
    def extension(self) -> str:
        return EXTENSIONS[self.media_type]


def picture_format(data: bytes) -> PictureFormat:
    """The kind and size of ``data``; PictureFormatError for anything else."""
    if data.startswith(PNG_SIGNATURE):
        if len(data) < 24 or data[12:16] != b"IHDR":
            raise PictureFormatError("a PNG without its header")
        width, height = struct.unpack(">II", data[16:24])
        return _sized("image/png", width, height)
    if data.startswith(b"\xff\xd8\xff"):
        return _jpeg(data)
    if len(data) >= 16 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return _webp(data)
    raise PictureFormatError("not a PNG, JPEG or WebP picture")


def _sized(media_type: str, width: int, height: int) -> PictureFormat:
    if width < 1 or height < 1:
        raise PictureFormatError(f"a {media_type} of {width}x{height} pixels")
    return PictureFormat(media_type, width, height)


def _jpeg(data: bytes) -> PictureFormat:
    index = 2
    while index + 4 <= len(data):
        if data[index] != 0xFF:
            raise PictureFormatError("a JPEG with a broken marker")
        marker = data[index + 1]
        if marker == 0xFF:  # fill byte
            index += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            index += 2
            continue
        (length,) = struct.unpack(">H", data[index + 2 : index + 4])
        if length < 2:
            raise PictureFormatError("a JPEG with a broken segment")
        if marker in _SOF:
            if index + 9 > len(data):
                break
            height, width = struct.unpack(">HH", data[index + 5 : index + 9])
            return _sized("image/jpeg", width, height)
        if marker == 0xD9:
            break
        index += 2 + length
    raise PictureFormatError("a JPEG without a frame header")


def _webp(data: bytes) -> PictureFormat:
    chunk = data[12:16]
    if chunk == b"VP8X" and len(data) >= 30:
        width = 1 + int.from_bytes(data[24:27], "little")
        height = 1 + int.from_bytes(data[27:30], "little")
        return _sized("image/webp", width, height)
    if chunk == b"VP8 " and len(data) >= 30 and data[23:26] == b"\x9d\x01\x2a":
        width, height = struct.unpack("<HH", data[26:30])
        return _sized("image/webp", width & 0x3FFF, height & 0x3FFF)
    if chunk == b"VP8L" and len(data) >= 25 and data[20] == 0x2F:
        bits = int.from_bytes(data[21:25], "little")
        return _sized("image/webp", (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1)
    raise PictureFormatError("a WebP without a readable header")
