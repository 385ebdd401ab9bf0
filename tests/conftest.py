"""Shared numerics helpers: one tolerance helper, one reference convention (NumPy float64)."""

from __future__ import annotations

import inspect

import numpy as np


def ulp_distance(got: np.ndarray, ref64: np.ndarray, dtype) -> np.ndarray:
    """Distance in units of the last place of `dtype` between `got` and a float64 reference."""
    dtype = np.dtype(dtype)
    ref = np.asarray(ref64, dtype=np.float64)
    got = np.asarray(got, dtype=np.float64)
    with np.errstate(all="ignore"):
        rounded = ref.astype(dtype)
        spacing = np.abs(np.spacing(rounded.astype(dtype))).astype(np.float64)
        tiny = np.finfo(dtype).smallest_subnormal
        dist = np.abs(got - ref) / np.maximum(spacing, tiny)
    # A reference beyond the dtype's range must round to the same infinity.
    overflow = np.isinf(rounded) & ~np.isinf(ref)
    dist = np.where(overflow, np.where(got == rounded, 0.0, np.inf), dist)
    both_nan = np.isnan(got) & np.isnan(ref)
    same_inf = np.isinf(got) & np.isinf(ref) & (np.sign(got) == np.sign(ref))
    dist = np.where(both_nan | same_inf, 0.0, dist)
    dist = np.where(np.isnan(got) != np.isnan(ref), np.inf, dist)
    return np.where(np.isnan(dist), np.inf, dist)


def assert_ulp(got: np.ndarray, ref64: np.ndarray, max_ulp: float, dtype=None) -> None:
    """Assert `got` is within `max_ulp` units in the last place of the float64 reference."""
    dtype = dtype or got.dtype
    dist = ulp_distance(got, ref64, dtype)
    worst = int(np.argmax(dist)) if dist.size else 0
    assert dist.size == 0 or dist.max() <= max_ulp, (
        f"{dist.max()} ulp > {max_ulp} at index {worst}: got {np.ravel(got)[worst]!r}, "
        f"want {np.ravel(ref64)[worst]!r}"
    )


def assert_matches(got: np.ndarray, want: np.ndarray, rtol: float = 0.0, atol: float = 0.0) -> None:
    """Assert dtype and shape are identical and values agree (NaN matches NaN)."""
    assert isinstance(got, np.ndarray), type(got)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    if got.dtype.kind in "biu" or (rtol == 0 and atol == 0):
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)


def line_of(fn, text: str) -> int:
    """The line number of the first source line of ``fn`` containing ``text``."""
    src, start = inspect.getsourcelines(fn)
    for i, line in enumerate(src):
        if text in line:
            return start + i
    raise AssertionError(f"{text!r} not in the source of {fn.__name__}")


def supported_isas() -> list:
    """The SIMD levels this CPU runs, lowest first (``PYASC_ISA`` values), up to the detected one.

    The detected level may carry a suffix (``avx2+fma``); the forced levels are named without it.
    """
    import pyasc

    order = ["scalar", "sse2", "avx2", "avx512"]
    detected = pyasc.device_info("cpu")["detected_isa"].split("+")[0]
    return order[: order.index(detected) + 1] if detected in order else ["scalar", detected]
