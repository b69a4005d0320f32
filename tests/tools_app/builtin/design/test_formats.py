"""A picture's kind and size come from its headers; anything else is refused."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from tools_app.builtin.design.formats import PictureFormatError, picture_format


def _encoded(kind: str, size: tuple[int, int], **options: object) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, (200, 40, 40)).save(buffer, kind, **options)
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("kind", "options", "media_type"),
    [
        ("PNG", {}, "image/png"),
        ("JPEG", {}, "image/jpeg"),
        ("JPEG", {"progressive": True}, "image/jpeg"),
        ("WEBP", {}, "image/webp"),
        ("WEBP", {"lossless": True}, "image/webp"),
    ],
)
def test_pictures_are_read_from_their_headers(
    kind: str, options: dict[str, object], media_type: str
) -> None:
    found = picture_format(_encoded(kind, (321, 123), **options))
    assert (found.media_type, found.width, found.height) == (media_type, 321, 123)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"<svg xmlns='http://www.w3.org/2000/svg'/>",
        b'{"data": []}',
        b"GIF89a" + b"\x00" * 32,
        b"\x89PNG\r\n\x1a\n" + b"\x00" * 8,
        b"\xff\xd8\xff\xe0\x00\x10JFIF" + b"\x00" * 8,
    ],
)
def test_anything_else_is_refused(data: bytes) -> None:
    with pytest.raises(PictureFormatError):
        picture_format(data)
    # Control: a real PNG of the same length class is read.
    assert picture_format(_encoded("PNG", (2, 2))).media_type == "image/png"
