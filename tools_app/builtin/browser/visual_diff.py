"""PURE: how far two screenshots differ, and where.

The score is scikit-image's structural similarity (SSIM) of the two pictures, the mean
over the colour channels; the regions are the bounding boxes of the areas whose
pixels differ by more than ``PIXEL_TOLERANCE`` in any colour channel (near pixels
joined first, so one changed element gives one box). Pictures of different sizes
are compared on the larger canvas, the missing part black, and are always changed.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Final

import numpy as np
from PIL import Image, ImageDraw, UnidentifiedImageError
from scipy import ndimage
from skimage.measure import label, regionprops
from skimage.metrics import structural_similarity

# Larger pictures are refused before they are decoded: SSIM holds several float
# copies of the picture at once.
MAX_PIXELS: Final = 1280 * 8192
# Channel differences up to this are compression and anti-aliasing, not a change.
PIXEL_TOLERANCE: Final = 16
# Changed pixels this close to each other belong to the same region.
JOIN_PIXELS: Final = 8
MIN_REGION_PIXELS: Final = 4
MAX_REGIONS: Final = 50
MARK: Final = (220, 0, 0)


class PictureError(ValueError):
    """A file that is not a PNG this module compares; the message says why."""


@dataclass(frozen=True, slots=True)
class Region:
    x: int
    y: int
    width: int
    height: int


@dataclass(frozen=True, slots=True)
class Comparison:
    ssim: float
    changed: bool
    regions: tuple[Region, ...]
    diff_png: bytes
    size: tuple[int, int]


def decode_png(data: bytes, name: str) -> np.ndarray:
    """An RGB array of a PNG; anything else, or a picture too large, is refused."""
    if not data.startswith(b"\x89PNG\r\n\x1a\n"):
        raise PictureError(f"{name} is not a PNG file")
    try:
        with Image.open(io.BytesIO(data), formats=["PNG"]) as picture:
            width, height = picture.size
            if width * height > MAX_PIXELS:
                raise PictureError(
                    f"{name} is {width}x{height}; at most {MAX_PIXELS} pixels are compared"
                )
            return np.asarray(picture.convert("RGB"), dtype=np.uint8)
    except (UnidentifiedImageError, OSError, Image.DecompressionBombError) as exc:
        raise PictureError(f"{name} cannot be read as a PNG: {exc}") from None


def _on_canvas(picture: np.ndarray, height: int, width: int) -> np.ndarray:
    if picture.shape[:2] == (height, width):
        return picture
    canvas = np.zeros((height, width, 3), dtype=np.uint8)
    canvas[: picture.shape[0], : picture.shape[1]] = picture
    return canvas


def compare(baseline: np.ndarray, candidate: np.ndarray, *, threshold: float) -> Comparison:
    """SSIM of ``candidate`` against ``baseline``, changed when below ``threshold``, the
    changed regions and a picture of them (the candidate, changes tinted and boxed)."""
    height = max(baseline.shape[0], candidate.shape[0])
    width = max(baseline.shape[1], candidate.shape[1])
    same_size = baseline.shape == candidate.shape
    before = _on_canvas(baseline, height, width)
    after = _on_canvas(candidate, height, width)
    if min(height, width) < 7:  # below SSIM's window: only equal or not
        score = 1.0 if np.array_equal(before, after) else 0.0
    else:
        # Per colour channel, averaged: in grey a red and a green of the same
        # lightness would look alike.
        score = float(structural_similarity(before, after, data_range=255, channel_axis=2))
    delta = np.abs(before.astype(np.int16) - after.astype(np.int16))
    differs: np.ndarray = np.asarray((delta > PIXEL_TOLERANCE).any(axis=2))
    joined = ndimage.binary_dilation(differs, iterations=JOIN_PIXELS) if differs.any() else differs
    found: list[Region] = []
    for area in regionprops(label(joined)):
        top, left, bottom, right = area.bbox
        # The box of the pixels that really differ, not of the joined area around them.
        inside = differs[top:bottom, left:right]
        if int(inside.sum()) < MIN_REGION_PIXELS:
            continue
        rows = np.flatnonzero(inside.any(axis=1))
        cols = np.flatnonzero(inside.any(axis=0))
        found.append(
            Region(
                x=left + int(cols[0]),
                y=top + int(rows[0]),
                width=int(cols[-1] - cols[0]) + 1,
                height=int(rows[-1] - rows[0]) + 1,
            )
        )
    found.sort(key=lambda r: (-r.width * r.height, r.y, r.x))
    regions = tuple(found[:MAX_REGIONS])
    return Comparison(
        ssim=round(score, 6),
        changed=score < threshold or not same_size,
        regions=regions,
        diff_png=_diff_picture(after, differs, regions),
        size=(width, height),
    )


def _diff_picture(after: np.ndarray, differs: np.ndarray, regions: tuple[Region, ...]) -> bytes:
    shown = after.copy()
    shown[differs] = (shown[differs] // 2 + np.array(MARK, dtype=np.uint8) // 2).astype(np.uint8)
    picture = Image.fromarray(shown)
    draw = ImageDraw.Draw(picture)
    for r in regions:
        draw.rectangle((r.x - 2, r.y - 2, r.x + r.width + 1, r.y + r.height + 1), outline=MARK)
    out = io.BytesIO()
    picture.save(out, format="PNG", optimize=False)
    return out.getvalue()
