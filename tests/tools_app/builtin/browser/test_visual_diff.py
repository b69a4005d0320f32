"""The comparison of two pictures (``visual_diff``), on arrays made here."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from tools_app.builtin.browser.visual_diff import (
    MAX_PIXELS,
    PictureError,
    Region,
    compare,
    decode_png,
)

WHITE = (255, 255, 255)


def _page(banner: tuple[int, int, int], *, height: int = 320) -> np.ndarray:
    picture = np.full((height, 480, 3), WHITE, dtype=np.uint8)
    picture[60:180, 40:280] = banner
    picture[250:260, 300:420] = (30, 30, 30)  # a line of "text" that never changes
    return picture


def test_a_colour_change_of_the_same_lightness_is_a_change() -> None:
    green, red = (0x2A, 0x6F, 0x2A), (0xD0, 0x30, 0x30)
    changed = compare(_page(green), _page(red), threshold=0.99)
    assert changed.changed is True and changed.ssim < 0.99
    assert changed.regions == (Region(x=40, y=60, width=240, height=120),)
    # Control: the same picture is identical, with nothing to show.
    same = compare(_page(green), _page(green), threshold=0.99)
    assert same.ssim == 1.0 and same.changed is False and same.regions == ()


def test_differences_within_the_tolerance_are_not_regions() -> None:
    base = _page((40, 80, 160))
    noisy = base.copy()
    noisy[100:110, 100:110] = np.clip(noisy[100:110, 100:110].astype(int) + 8, 0, 255)
    assert compare(base, noisy, threshold=0.9).regions == ()
    # Control: the same patch changed beyond the tolerance is a region.
    moved = base.copy()
    moved[100:110, 100:110] = (250, 250, 0)
    assert compare(base, moved, threshold=0.9).regions == (Region(100, 100, 10, 10),)


def test_pictures_of_different_sizes_are_changed() -> None:
    result = compare(_page(WHITE), _page(WHITE, height=400), threshold=0.5)
    assert result.changed is True
    assert result.size == (480, 400)


def test_only_pngs_of_a_bounded_size_are_decoded() -> None:
    with pytest.raises(PictureError):
        decode_png(b"GIF89a....", "baseline")
    out = io.BytesIO()
    Image.new("RGB", (4096, MAX_PIXELS // 4096 + 1)).save(out, format="PNG")
    with pytest.raises(PictureError, match="pixels"):
        decode_png(out.getvalue(), "baseline")
    # Control: a picture within the bound is read.
    small = io.BytesIO()
    Image.new("RGB", (64, 32), WHITE).save(small, format="PNG")
    assert decode_png(small.getvalue(), "baseline").shape == (32, 64, 3)
