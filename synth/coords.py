"""Coordinate spaces: conversion between absolute screen pixels and the spaces models and datasets use.

Records store absolute screen pixels (DESIGN §3); every other space is converted here, at the edges:

- `CoordSpace.absolute()`   — screen pixels, x in [0, W], y in [0, H] (what `GuiAction` ops hold).
- `CoordSpace.normalized()` — fractions of the screen in [0, 1] (AgentNet / OpenCUA `code` strings).
- `CoordSpace.grid(n)`      — integers 0..n on a screen treated as (n+1) x (n+1) cells:
                              x_px = g * W / (n + 1), g = min(n, round(x_px * (n + 1) / W)).
                              `grid(999)` is HybridCUA's space: its system prompt says "coordinates are
                              0-999 (the screen is a 1000x1000 grid)" and its VM shim scales them to pixels
                              (HybridCUA training agent `agents/hybrid_prompt.py`, ported from OSWorld
                              `mm_agents/c_gui/prompts.py`). Qwen3-VL's `computer_use` cookbook tells the
                              model the screen is 1000x1000 and decodes with x / 1000 * W: the same space.
- `CoordSpace.resized(w, h)` — pixels of the image the model saw after Qwen2.5-VL's `smart_resize`
                              (x_px = x / w * W); see `smart_resize` and `CoordSpace.qwen25_for`.

Ranges are closed intervals ([0, W], [0, 1], [0, n], [0, w]) so that the right/bottom edge, which data
sets do emit (a normalized 1.0), stays representable; anything outside raises `CoordinateOutOfRange`.
Quantized spaces (grid, resized) round to integers in `from_pixels` because models emit integers there;
the round-trip error pixel→space→pixel is at most half a step (a full step at a grid's clamped far edge):
`CoordSpace.quantization_error(screen)`.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from synth.schema import Screen

__all__ = [
    "CoordSpace",
    "CoordinateOutOfRange",
    "smart_resize",
    "QWEN25_FACTOR",
    "QWEN25_MIN_PIXELS",
    "QWEN25_MAX_PIXELS",
]

# Qwen2.5-VL's image processor (preprocessor_config.json of the released checkpoints): patch 14, merge 2.
QWEN25_FACTOR = 28
QWEN25_MIN_PIXELS = 56 * 56
QWEN25_MAX_PIXELS = 28 * 28 * 16384
_MAX_ASPECT_RATIO = 200


class CoordinateOutOfRange(ValueError):
    """A coordinate lies outside the closed range of its space."""


SpaceKind = Literal["absolute", "normalized", "grid", "resized"]


class CoordSpace(BaseModel):
    """A coordinate space that can be converted to and from absolute pixels of a `Screen`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: SpaceKind = Field(
        description="Which space: absolute pixels, [0,1] fractions, 0..n grid, resized image."
    )
    grid_max: int | None = Field(
        default=None,
        gt=0,
        description="Largest grid value n for kind='grid' (999 for HybridCUA and Qwen3-VL).",
    )
    grid_scale: int | None = Field(
        default=None,
        gt=0,
        description="Grid cells per screen side for kind='grid': pixel = g * W / grid_scale (default n + 1).",
    )
    width: int | None = Field(default=None, gt=0, description="Resized image width for kind='resized'.")
    height: int | None = Field(default=None, gt=0, description="Resized image height for kind='resized'.")

    # ------------------------------------------------------------ constructors

    @classmethod
    def absolute(cls) -> CoordSpace:
        return cls(kind="absolute")

    @classmethod
    def normalized(cls) -> CoordSpace:
        return cls(kind="normalized")

    @classmethod
    def grid(cls, n: int = 999, *, scale: int | None = None) -> CoordSpace:
        """Integers 0..n; a pixel is g * W / scale with scale = n + 1 unless given."""
        return cls(kind="grid", grid_max=n, grid_scale=scale if scale is not None else n + 1)

    @classmethod
    def resized(cls, width: int, height: int) -> CoordSpace:
        return cls(kind="resized", width=width, height=height)

    @classmethod
    def qwen25_for(
        cls, screen: Screen, *, min_pixels: int = QWEN25_MIN_PIXELS, max_pixels: int = QWEN25_MAX_PIXELS
    ) -> CoordSpace:
        """The resized-pixel space Qwen2.5-VL answers in for a screenshot of `screen`."""
        h, w = smart_resize(screen.height, screen.width, min_pixels=min_pixels, max_pixels=max_pixels)
        return cls.resized(w, h)

    # ------------------------------------------------------------ conversion

    def extent(self, screen: Screen) -> tuple[float, float]:
        """Upper bounds (x_max, y_max) of this space's closed range for `screen`."""
        match self.kind:
            case "absolute":
                return float(screen.width), float(screen.height)
            case "normalized":
                return 1.0, 1.0
            case "grid":
                return float(self._grid_max), float(self._grid_max)
            case "resized":
                return float(self._width), float(self._height)

    def to_pixels(self, x: float, y: float, screen: Screen) -> tuple[float, float]:
        """Convert a point of this space to absolute pixels of `screen`; raise if it is out of range."""
        self._check(x, y, screen)
        if self.kind == "absolute":
            return float(x), float(y)
        ux, uy = self._units(screen)
        # multiply before dividing: 15 * 1080 / 1000 is 16.2, 15 * (1080 / 1000) is not
        return _snap(x * screen.width / ux), _snap(y * screen.height / uy)

    def from_pixels(self, x: float, y: float, screen: Screen) -> tuple[float, float]:
        """Convert absolute pixels of `screen` to this space (integers for grid and resized spaces)."""
        CoordSpace.absolute()._check(x, y, screen)
        if self.kind == "absolute":
            return float(x), float(y)
        ux, uy = self._units(screen)
        u, v = x * ux / screen.width, y * uy / screen.height
        if self.kind in ("grid", "resized"):
            # models read and write integers in these spaces; the far screen edge (x = W) has no cell of
            # its own on a 0..n grid, so it joins the last one
            xmax, ymax = self.extent(screen)
            return float(min(round(u), xmax)), float(min(round(v), ymax))
        return u, v

    def quantization_error(self, screen: Screen) -> tuple[float, float]:
        """Largest |pixel - to_pixels(from_pixels(pixel))| per axis (0 for continuous spaces)."""
        if self.kind in ("grid", "resized"):
            ux, uy = self._units(screen)
            sx, sy = screen.width / ux, screen.height / uy
            xmax, ymax = self.extent(screen)
            # half a step, except beyond the last grid value where the clamp can cost up to a full step
            return (
                max(sx / 2, screen.width - xmax * sx),
                max(sy / 2, screen.height - ymax * sy),
            )
        return 0.0, 0.0

    def describe(self) -> str:
        """Short human-readable name, used in error messages."""
        match self.kind:
            case "grid":
                return f"grid(0..{self.grid_max} of {self.grid_scale})"
            case "resized":
                return f"resized({self.width}x{self.height})"
            case _:
                return self.kind

    # ------------------------------------------------------------ internals

    @property
    def _grid_max(self) -> int:
        if self.grid_max is None:
            raise ValueError("a grid CoordSpace needs grid_max")
        return self.grid_max

    @property
    def _width(self) -> int:
        if self.width is None:
            raise ValueError("a resized CoordSpace needs width and height")
        return self.width

    @property
    def _height(self) -> int:
        if self.height is None:
            raise ValueError("a resized CoordSpace needs width and height")
        return self.height

    def _units(self, screen: Screen) -> tuple[float, float]:
        """How many units of this space span the screen's width and height."""
        if self.kind == "grid":
            cells = float(self.grid_scale if self.grid_scale is not None else self._grid_max + 1)
            return cells, cells
        return self.extent(screen)

    def _check(self, x: float, y: float, screen: Screen) -> None:
        xmax, ymax = self.extent(screen)
        for axis, value, hi in (("x", x, xmax), ("y", y, ymax)):
            if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
                raise CoordinateOutOfRange(
                    f"{axis}={value!r} is not a finite number in space {self.describe()}"
                )
            if value < 0 or value > hi:
                raise CoordinateOutOfRange(
                    f"{axis}={value!r} is outside [0, {_fmt(hi)}] of space {self.describe()}"
                    f" (screen {screen.width}x{screen.height})"
                )


def _snap(value: float) -> float:
    # x / W * W can land an ulp or two off an integer (1 / 49 * 49 < 1); integral pixels must survive a
    # round trip exactly, so values within a few ulps of an integer become that integer
    nearest = round(value)
    if nearest != 0 and abs(value - nearest) <= 4 * math.ulp(value):
        return float(nearest)
    return value


def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(value)


# ---------------------------------------------------------------- Qwen2.5-VL smart_resize


def smart_resize(
    height: int,
    width: int,
    factor: int = QWEN25_FACTOR,
    min_pixels: int = QWEN25_MIN_PIXELS,
    max_pixels: int = QWEN25_MAX_PIXELS,
) -> tuple[int, int]:
    """(height, width) of the image Qwen2.5-VL actually sees, as defined in qwen-vl-utils' `smart_resize`.

    Both sides become multiples of `factor`, the area lands in [min_pixels, max_pixels] and the aspect
    ratio is kept as closely as possible. Raises ValueError for aspect ratios above 200, as the original.
    """
    if height <= 0 or width <= 0:
        raise ValueError(f"image size must be positive, got {height}x{width}")
    if max(height, width) / min(height, width) > _MAX_ASPECT_RATIO:
        raise ValueError(
            f"absolute aspect ratio must be smaller than {_MAX_ASPECT_RATIO}, got "
            f"{max(height, width) / min(height, width)}"
        )
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar
