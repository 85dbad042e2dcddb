"""Coordinate spaces: conversions, ranges, quantization and Qwen2.5-VL smart_resize."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from synth.coords import CoordinateOutOfRange, CoordSpace, smart_resize
from synth.schema import Screen

SCREEN = Screen(width=1920, height=1080)

screens = st.builds(Screen, width=st.integers(200, 4000), height=st.integers(200, 3000))


@st.composite
def screen_and_pixel(draw, integral: bool = False):
    screen = draw(screens)
    if integral:
        x = float(draw(st.integers(0, screen.width)))
        y = float(draw(st.integers(0, screen.height)))
    else:
        x = draw(st.floats(0, screen.width, allow_nan=False))
        y = draw(st.floats(0, screen.height, allow_nan=False))
    return screen, x, y


# ---------------------------------------------------------------- fixed points


def test_absolute_is_identity():
    assert CoordSpace.absolute().to_pixels(12.5, 7, SCREEN) == (12.5, 7.0)
    assert CoordSpace.absolute().from_pixels(12.5, 7, SCREEN) == (12.5, 7.0)


def test_normalized_scales_by_screen():
    assert CoordSpace.normalized().to_pixels(0.5, 0.25, SCREEN) == (960.0, 270.0)
    assert CoordSpace.normalized().from_pixels(960, 270, SCREEN) == (0.5, 0.25)


def test_grid_999_treats_screen_as_1000_cells():
    grid = CoordSpace.grid(999)
    assert grid.to_pixels(500, 500, SCREEN) == (960.0, 540.0)
    assert grid.to_pixels(0, 0, SCREEN) == (0.0, 0.0)
    assert grid.from_pixels(960, 540, SCREEN) == (500.0, 500.0)
    # the far edge has no cell 1000; it joins the last one
    assert grid.from_pixels(1920, 1080, SCREEN) == (999.0, 999.0)


def test_grid_with_explicit_scale():
    grid = CoordSpace.grid(1000, scale=1000)
    assert grid.to_pixels(1000, 1000, SCREEN) == (1920.0, 1080.0)


def test_resized_space_scales_per_axis():
    space = CoordSpace.resized(1932, 1092)
    x, y = space.to_pixels(1932, 1092, SCREEN)
    assert (x, y) == (1920.0, 1080.0)
    assert space.from_pixels(960, 540, SCREEN) == (966.0, 546.0)


def test_qwen25_for_uses_smart_resize():
    space = CoordSpace.qwen25_for(SCREEN)
    assert (space.width, space.height) == (1932, 1092)


def test_space_is_frozen():
    space = CoordSpace.grid(999)
    with pytest.raises(ValidationError):
        space.grid_max = 5  # type: ignore[misc]


# ---------------------------------------------------------------- ranges


@pytest.mark.parametrize(
    ("space", "x", "y", "needle"),
    [
        (CoordSpace.normalized(), 1.2, 0.5, "x=1.2"),
        (CoordSpace.normalized(), 0.5, -0.1, "y=-0.1"),
        (CoordSpace.grid(999), 1000, 5, "x=1000"),
        (CoordSpace.absolute(), 5, 1081, "y=1081"),
        (CoordSpace.resized(1932, 1092), 1933, 0, "x=1933"),
        (CoordSpace.normalized(), math.nan, 0.5, "x=nan"),
    ],
)
def test_out_of_range_names_value_and_space(space, x, y, needle):
    with pytest.raises(CoordinateOutOfRange) as err:
        space.to_pixels(x, y, SCREEN)
    assert needle in str(err.value)
    assert space.describe() in str(err.value)
    assert isinstance(err.value, ValueError)


def test_from_pixels_rejects_off_screen_pixels():
    with pytest.raises(CoordinateOutOfRange, match="x=1921"):
        CoordSpace.normalized().from_pixels(1921, 0, SCREEN)


def test_edges_are_inside():
    assert CoordSpace.normalized().to_pixels(1.0, 1.0, SCREEN) == (1920.0, 1080.0)
    assert CoordSpace.grid(999).to_pixels(999, 999, SCREEN) == (1918.08, 1078.92)


# ---------------------------------------------------------------- round trips


@given(screen_and_pixel(integral=True))
def test_normalized_round_trip_is_exact_on_integer_pixels(args):
    screen, x, y = args
    space = CoordSpace.normalized()
    assert space.to_pixels(*space.from_pixels(x, y, screen), screen) == (x, y)


@given(screen_and_pixel())
def test_normalized_round_trip_float_pixels(args):
    screen, x, y = args
    space = CoordSpace.normalized()
    bx, by = space.to_pixels(*space.from_pixels(x, y, screen), screen)
    assert math.isclose(bx, x, abs_tol=1e-9) and math.isclose(by, y, abs_tol=1e-9)


@given(screen_and_pixel())
def test_absolute_round_trip_is_exact(args):
    screen, x, y = args
    space = CoordSpace.absolute()
    assert space.to_pixels(*space.from_pixels(x, y, screen), screen) == (x, y)


@pytest.mark.parametrize("space_factory", [lambda s: CoordSpace.grid(999), lambda s: CoordSpace.grid(99)])
@given(args=screen_and_pixel())
def test_grid_round_trip_within_quantization(space_factory, args):
    screen, x, y = args
    space = space_factory(screen)
    gx, gy = space.from_pixels(x, y, screen)
    assert gx.is_integer() and gy.is_integer()
    bx, by = space.to_pixels(gx, gy, screen)
    ex, ey = space.quantization_error(screen)
    assert abs(bx - x) <= ex + 1e-9 and abs(by - y) <= ey + 1e-9
    # away from the clamped far edge the error is half a cell
    cell_x = screen.width / (space.grid_max + 1)
    if x <= space.grid_max * cell_x:
        assert abs(bx - x) <= cell_x / 2 + 1e-9


@given(screen_and_pixel())
def test_resized_round_trip_within_quantization(args):
    screen, x, y = args
    space = CoordSpace.qwen25_for(screen)
    bx, by = space.to_pixels(*space.from_pixels(x, y, screen), screen)
    ex, ey = space.quantization_error(screen)
    assert abs(bx - x) <= ex + 1e-9 and abs(by - y) <= ey + 1e-9
    assert ex == pytest.approx(screen.width / space.width / 2)


@given(screens, st.integers(0, 999), st.integers(0, 999))
def test_grid_values_survive_space_pixel_space(screen, gx, gy):
    space = CoordSpace.grid(999)
    assert space.from_pixels(*space.to_pixels(gx, gy, screen), screen) == (gx, gy)


# ---------------------------------------------------------------- smart_resize


def test_smart_resize_known_values():
    assert smart_resize(1080, 1920) == (1092, 1932)
    # capped at 1280 visual tokens of 28x28: the area shrinks and the sides floor to multiples of 28
    assert smart_resize(1080, 1920, max_pixels=1280 * 28 * 28) == (728, 1316)
    # below min_pixels the sides grow (ceil)
    assert smart_resize(20, 20, min_pixels=56 * 56) == (56, 56)


@given(st.integers(28, 5000), st.integers(28, 5000))
def test_smart_resize_properties(height, width):
    if max(height, width) / min(height, width) > 200:
        return
    h, w = smart_resize(height, width, max_pixels=1280 * 28 * 28)
    assert h % 28 == 0 and w % 28 == 0
    assert 56 * 56 <= h * w <= 1280 * 28 * 28
    # aspect ratio kept to within rounding to the 28 px grid
    assert abs(h / w - height / width) <= (28 / min(h, w)) * (1 + height / width)


def test_smart_resize_rejects_extreme_aspect_ratio():
    with pytest.raises(ValueError, match="aspect ratio"):
        smart_resize(10, 5000)
