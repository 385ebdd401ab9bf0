"""Row kernels that read per-row operands from memory: values with one element per row (a
column ``x[:, j]`` of the reduced array, another argument of the rows' shape, another kernel's
result) computed beside the rows' reductions in the same kernel, checked against NumPy."""

from __future__ import annotations

import warnings

import numpy as np
import pyasc
from conftest import assert_matches
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

MAX_WH = 7680.0


def _boxes(x):
    conf_all = x[:, 5:] * x[:, 4:5]
    cls = conf_all.argmax(axis=1).astype(x.dtype)
    conf = conf_all.max(axis=1)
    hw, hh = x[:, 2] / 2, x[:, 3] / 2
    x1, y1, x2, y2 = x[:, 0] - hw, x[:, 1] - hh, x[:, 0] + hw, x[:, 1] + hh
    shift = cls * MAX_WH
    return x1, y1, x2, y2, conf, cls, x1 + shift, y1 + shift, x2 + shift, y2 + shift


def test_box_corners_beside_the_best_class_are_one_kernel_and_match_numpy():
    # A detector's rows: best class and score from the class columns, box corners and their
    # class offsets from the first four columns, all in the rows' kernel.
    rng = np.random.default_rng(3)
    x = rng.random((1153, 85), dtype=np.float32) * 100
    op = pyasc.operator(dynamic_shape=True)(_boxes)
    got, want = op(x), _boxes(x)
    for g, w in zip(got, want):
        assert_matches(g, w)
        assert np.array_equal(g, w)
    assert len(op.get_compiled_op(x).kernels()) == 1
    # Another row count reuses the trace; one row cannot tell a column from a row, so it
    # takes more kernels, with the same values.
    for rows in (7, 1):
        y = x[:rows]
        for g, w in zip(op(y), _boxes(y)):
            assert np.array_equal(g, w)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_per_row_values_read_from_memory_match_numpy(data):
    # Columns of the reduced array, a separate per-row argument (contiguous, strided, or
    # broadcast with stride 0) and a value computed from them, beside sums, maxima and means;
    # square arrays (where a column could also broadcast along the rows) included.
    dtype = data.draw(st.sampled_from([np.float32, np.float64]))
    rows = data.draw(st.integers(1, 200))
    cols = data.draw(st.sampled_from([2, 5, 17, 80, rows]))
    j = data.draw(st.integers(0, cols - 1))
    layout = data.draw(st.sampled_from(["contiguous", "strided", "broadcast"]))
    red = data.draw(st.sampled_from(["sum", "max", "mean"]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31 - 1)))
    pool = np.array([0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan], dtype)
    x = np.where(rng.random((rows, cols)) < 0.2, pool[rng.integers(0, len(pool), (rows, cols))],
                 rng.standard_normal((rows, cols)).astype(dtype))
    if layout == "contiguous":
        v = rng.standard_normal(rows).astype(dtype)
    elif layout == "strided":
        v = rng.standard_normal(2 * rows).astype(dtype)[::-2]
    else:
        v = np.broadcast_to(dtype(0.75), (rows,))

    def f(t, u):
        r = getattr(t, red)(axis=1)
        d = t[:, j] * 3 - u
        return r + d, d / 2, r * 2

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        want = f(x, v)
        got = pyasc.operator(f)(x, v)
    # The per-row arithmetic and maxima are exact; sums add in another order than NumPy's,
    # so what depends on them is held to NumPy's within a few roundings of the row's size.
    assert_matches(got[1], want[1])
    if red == "max":
        for g, w in zip(got, want):
            assert_matches(g, w)
        return
    eps = float(np.finfo(dtype).eps)
    with np.errstate(all="ignore"):
        size = np.abs(x.astype(np.float64)).sum(axis=1) + 4 * np.abs(v.astype(np.float64)) + 1
    for g, w in (got[0], want[0]), (got[2], want[2]):
        assert g.dtype == w.dtype and g.shape == w.shape
        assert np.array_equal(np.isnan(g), np.isnan(w)) and np.array_equal(np.isposinf(g), np.isposinf(w))
        finite = np.isfinite(w)
        err = np.abs(g[finite].astype(np.float64) - w[finite])
        assert np.all(err <= 4 * cols * eps * size[finite]), (g, w)


def test_rows_of_a_three_dimensional_array_read_a_matrix_per_row():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((6, 9, 33)).astype(np.float32)
    w = rng.standard_normal((6, 9)).astype(np.float32)

    @pyasc.operator
    def f(t, u):
        return t.max(axis=-1) - u * 2, u + 1

    got, want = f(x, w), (x.max(axis=-1) - w * 2, w + 1)
    for g, e in zip(got, want):
        assert np.array_equal(g, e)
    assert len(f.get_compiled_op(x, w).kernels()) == 1


def test_a_per_row_value_broadcast_back_over_the_rows_matches_numpy():
    # The per-row value meets the rows' elements again (through a new axis): a kernel after.
    rng = np.random.default_rng(8)
    x = rng.standard_normal((50, 12)).astype(np.float32)

    @pyasc.operator
    def f(t):
        d = t[:, 0] * 2 + t.max(axis=1)
        return t - d[:, None], d

    got, want = f(x), (x - (x[:, 0] * 2 + x.max(axis=1))[:, None], x[:, 0] * 2 + x.max(axis=1))
    for g, e in zip(got, want):
        assert np.array_equal(g, e)


def _stacked(x):
    got = _boxes(x)
    return pyasc.stack(list(got[:6]), axis=1), pyasc.stack(list(got[6:]), axis=1)


def _stacked_numpy(x):
    got = _boxes(x)
    return np.stack(got[:6], axis=1), np.stack(got[6:], axis=1)


def test_stacks_of_per_row_results_are_written_in_place_and_match_numpy():
    # The row kernel stores each column into its stack: the copying kernels are skipped.
    rng = np.random.default_rng(11)
    x = rng.random((501, 85), dtype=np.float32) * 50
    op = pyasc.operator(dynamic_shape=True)(_stacked)
    with pyasc.profile() as prof:
        got = op(x)
    for g, w in zip(got, _stacked_numpy(x)):
        assert g.flags.c_contiguous and np.array_equal(g, w)
    assert len(op.get_compiled_op(x).kernels()) == 3
    assert len(prof.records()) == 1
    for rows in (1, 2, 40):  # other row counts, one row included (no in-place stack there)
        for g, w in zip(op(x[:rows]), _stacked_numpy(x[:rows])):
            assert np.array_equal(g, w)


def test_a_stacked_column_read_elsewhere_is_copied_as_planned():
    # A column also returned (or read by another kernel) keeps its own buffer.
    rng = np.random.default_rng(12)
    x = rng.random((300, 85), dtype=np.float32)

    @pyasc.operator
    def f(t):
        conf = (t[:, 5:] * t[:, 4:5]).max(axis=1)
        lo = t[:, 0] - t[:, 2] / 2
        return pyasc.stack([lo, conf], axis=1), conf

    s, conf = f(x)
    want = (x[:, 5:] * x[:, 4:5]).max(axis=1)
    assert np.array_equal(conf, want)
    assert np.array_equal(s, np.stack([x[:, 0] - x[:, 2] / 2, want], axis=1))


def test_debug_capture_sees_the_stacks_of_per_row_results():
    # A captured launch keeps every kernel's output, the stacks' copies included.
    rng = np.random.default_rng(13)
    x = rng.random((64, 85), dtype=np.float32)
    op = pyasc.operator(debug=True)(_stacked)
    with pyasc.debug.capture() as cap:
        got = op(x)
    for g, w in zip(got, _stacked_numpy(x)):
        assert np.array_equal(g, w)
    (run,) = cap.runs
    assert run.error is None
    stacks = [it for it in run.intermediates if it.op.startswith("concatenate")]
    assert len(stacks) == 2
    for it, w in zip(stacks, _stacked_numpy(x)):
        assert np.array_equal(it.array, w)
