"""Score filters of the detection ops: ``pyasc.ops.filter_rows`` against NumPy's
``x[x[:, c] > t]`` and ``nms(..., score_threshold=)`` against filtering first and mapping the
kept indices back, with every kind of threshold NumPy compares differently."""

from __future__ import annotations

import numpy as np
import pyasc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_nms import nms_ref

ops = pyasc.ops


def _matrix(rng, n, cols, dtype):
    x = rng.uniform(-1, 1, (n, cols)).astype(dtype)
    # NaN, infinities, exact ties with the thresholds used below, and both zeros.
    specials = np.array([np.nan, np.inf, -np.inf, 0.25, 0.1, 0.0, -0.0], dtype)
    mask = rng.random((n, cols)) < 0.15
    x[mask] = rng.choice(specials, mask.sum())
    return x


def _same(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [0, 1, 7, 2047, 2048, 2049, 9000])
def test_filter_rows_matches_numpy_boolean_indexing(dtype, n):
    rng = np.random.default_rng(n)
    x = _matrix(rng, n, 9, dtype)
    for col in (0, 4, 8, -1):
        for t in (0.25, 0.1, -2.0, 0.0, float("inf"), float("-inf"), 1):
            _same(ops.filter_rows(x, col, t), x[x[:, col] > t])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(0, 5000), cols=st.integers(1, 90), seed=st.integers(0, 2**31),
       dtype=st.sampled_from([np.float32, np.float64]), t=st.floats(allow_nan=False, width=64))
def test_filter_rows_hypothesis(n, cols, seed, dtype, t):
    rng = np.random.default_rng(seed)
    x = _matrix(rng, n, cols, dtype)
    col = int(rng.integers(0, cols))
    with np.errstate(over="ignore"):
        want = x[x[:, col] > t]
    _same(ops.filter_rows(x, col, t), want)


def test_filter_rows_thresholds_compare_as_numpy_compares_them():
    # float32 values against a Python float compare in float32; against a float64 scalar or a
    # 0-d float64 array, in float64 (0.1 is not a float32, so the answers differ).
    x = np.array([[np.float32(0.1)], [np.nextafter(np.float32(0.1), np.float32(1))], [1e-45]], np.float32)
    for t in (0.1, np.float64(0.1), np.array(0.1), np.float32(0.1), np.float16(0.1), np.int64(0), True, 1e39,
              -1e39, np.float64(1e39), np.float64(np.nan), float("nan")):
        with np.errstate(over="ignore"):
            want = x[x[:, 0] > t]
        _same(ops.filter_rows(x, 0, t), want)


def test_filter_rows_other_layouts_and_dtypes_fall_back_to_numpy():
    rng = np.random.default_rng(3)
    x = _matrix(rng, 500, 6, np.float32)
    ints = rng.integers(-50, 50, (500, 6)).astype(np.int32)
    for a in (np.asfortranarray(x), x[::2], x[:, ::2], x.astype(np.float16), ints, x.astype(np.float64).tolist()):
        arr = np.asarray(a)
        _same(ops.filter_rows(a, 1, 0.25), arr[arr[:, 1] > 0.25])


def test_filter_rows_leaves_its_input_alone_and_returns_a_new_array():
    x = _matrix(np.random.default_rng(5), 3000, 5, np.float32)
    before = x.copy()
    x.flags.writeable = False
    got = ops.filter_rows(x, 2, 0.0)
    _same(x, before)
    assert got.flags.writeable and got.flags.c_contiguous and not np.shares_memory(got, x)


def test_filter_rows_bad_inputs_raise_typed_errors_at_the_callers_line():
    x = np.zeros((4, 3), np.float32)
    cases = [
        (pyasc.ShapeError, lambda: ops.filter_rows(np.zeros(4), 0, 0.5)),
        (pyasc.ShapeError, lambda: ops.filter_rows(x, 3, 0.5)),
        (pyasc.ShapeError, lambda: ops.filter_rows(x, -4, 0.5)),
        (pyasc.InvalidArgumentError, lambda: ops.filter_rows(x, 1.0, 0.5)),
        (pyasc.InvalidArgumentError, lambda: ops.filter_rows(x, True, 0.5)),
        (pyasc.DTypeError, lambda: ops.filter_rows(x.astype(np.complex64), 0, 0.5)),
    ]
    for cls, call in cases:
        with pytest.raises(cls) as info:
            call()
        assert info.value.filename == __file__, info.value
    op = pyasc.operator(lambda a: ops.filter_rows(a, 0, 0.5))
    with pytest.raises(pyasc.TraceError, match="data-dependent"):
        op(x)


def _boxes(rng, n):
    c = rng.integers(0, 200, (n, 2)).astype(np.float32)
    b = np.concatenate([c, c + rng.integers(0, 60, (n, 2))], 1).astype(np.float32)
    s = (rng.integers(0, 20, n) / 20).astype(np.float32)
    return b, s


@pytest.mark.parametrize("score_dtype", [np.float32, np.float64])
def test_nms_score_threshold_equals_filtering_first(score_dtype):
    rng = np.random.default_rng(11)
    b, s = _boxes(rng, 1500)
    s = s.astype(score_dtype)
    cats = rng.integers(0, 5, len(s))
    for t in (0.5, 0.1, np.float64(0.1), s[3], -1.0, 2.0):
        sel = np.flatnonzero(s > t)
        want = sel[ops.nms(b[sel], s[sel], 0.45)]
        np.testing.assert_array_equal(ops.nms(b, s, 0.45, score_threshold=t), want)
        want = sel[ops.batched_nms(b[sel], s[sel], cats[sel], 0.45)]
        np.testing.assert_array_equal(ops.batched_nms(b, s, cats, 0.45, score_threshold=t), want)


def test_nms_takes_float32_scores_as_they_are_and_still_refuses_nan():
    rng = np.random.default_rng(12)
    b, s = _boxes(rng, 300)
    np.testing.assert_array_equal(ops.nms(b, s, 0.5), ops.nms(b, s.astype(np.float64), 0.5))
    # Strided views: boxes are copied first, scores read through their strides.
    np.testing.assert_array_equal(ops.nms(b[::2], s[::2], 0.5), ops.nms(b[::2].copy(), s[::2].copy(), 0.5))
    bad = s.copy()
    bad[7] = np.nan
    with pytest.raises(pyasc.InvalidArgumentError, match="scores contain NaN") as info:
        ops.nms(b, bad, 0.5)
    assert info.value.filename == __file__
    inf = b.copy()
    inf[3, 2] = np.inf
    with pytest.raises(pyasc.InvalidArgumentError, match="NaN or infinity"):
        ops.batched_nms(inf, s, np.zeros(len(s), np.int64), 0.5)
    with pytest.raises(pyasc.InvalidArgumentError, match="score_threshold"):
        ops.nms(b, s, 0.5, score_threshold="0.5")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nms_reads_scores_through_any_strides(dtype):
    # The YOLOv5 example's call: scores are a column of the detections, threshold a float.
    rng = np.random.default_rng(13)
    b, s = _boxes(rng, 700)
    det = np.zeros((700, 6), dtype)
    det[:, 4] = s
    for t in (None, 0.1, 0.35):
        sel = np.arange(700) if t is None else np.flatnonzero(det[:, 4] > t)
        want = sel[nms_ref(b[sel], det[sel, 4], 0.45)]
        np.testing.assert_array_equal(ops.nms(b, det[:, 4], 0.45, score_threshold=t), want)
    reverse = np.ascontiguousarray(det[::-1, 4])[::-1]
    assert reverse.strides[0] < 0
    sel = np.flatnonzero(reverse > 0.1)
    np.testing.assert_array_equal(ops.nms(b, reverse, 0.45, score_threshold=0.1),
                                  sel[nms_ref(b[sel], reverse[sel], 0.45)])
