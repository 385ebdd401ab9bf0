"""pyasc.debug.capture(): every op's result of a debug=True operator, against NumPy in float64."""

import gc
import inspect
import weakref

import numpy as np
import pyasc
import pytest
from pyasc import _pyasc


@pyasc.operator(debug=True)
def steps(x, w):
    a = x * 2.0
    b = np.exp(a - 1.0)
    c = b.sum(axis=1, keepdims=True)
    d = b / c
    return d @ w


def numpy_steps(x, w):
    """The same computation step by step in float64, one entry per kernel of the debug operator."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    a = x * 2.0
    s = a - 1.0
    b = np.exp(s)
    c = b.sum(axis=1, keepdims=True)
    d = b / c
    return [a, s, b, c, d, d @ w]


def line_of(func, text):
    src, first = inspect.getsourcelines(func)
    return first + next(i for i, line in enumerate(src) if text in line)


def test_captured_intermediates_equal_numpy_float64_steps():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((96, 128)).astype(np.float32)
    w = rng.standard_normal((128, 64)).astype(np.float32)
    x0, w0 = x.copy(), w.copy()
    with pyasc.debug.capture() as cap:
        y = steps(x, w)
    assert np.array_equal(x, x0) and np.array_equal(w, w0)
    assert len(cap.runs) == 1
    run = cap.runs[0]
    assert run.operator == "steps" and run.error is None
    assert run.inputs == [("float32", (96, 128)), ("float32", (128, 64))]
    expected = numpy_steps(x, w)
    got = run.intermediates
    assert [it.op for it in got] == ["mul", "sub", "exp", "reduce_sum", "div", "matmul"]
    assert len(got) == len(expected)
    for it, ref in zip(got, expected):
        assert it.shape == ref.shape and it.dtype == "float32", it
        np.testing.assert_allclose(it.array, ref, rtol=2e-5, atol=1e-5 * np.abs(ref).max(), err_msg=it.kernel)
    np.testing.assert_array_equal(got[-1].array, y)
    here = __file__
    lines = [line_of(steps, "a = x * 2.0"), line_of(steps, "np.exp"), line_of(steps, "np.exp"),
             line_of(steps, "b.sum"), line_of(steps, "d = b / c"), line_of(steps, "d @ w")]
    assert [it.locations[0] for it in got] == [(here, n) for n in lines]
    assert got[3].source == "c = b.sum(axis=1, keepdims=True)"


def test_summary_statistics_match_numpy():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((40, 30)).astype(np.float32)
    w = rng.standard_normal((30, 7)).astype(np.float32)
    with pyasc.debug.capture() as cap:
        steps(x, w)
    for it in cap.runs[0].intermediates:
        a = it.array.astype(np.float64)
        st = it.stats
        assert st["shape"] == list(a.shape) and st["size"] == a.size
        assert st["nan"] == 0 and st["inf"] == 0 and st["finite"] == a.size
        for key, ref in (("min", a.min()), ("max", a.max()), ("mean", a.mean()), ("std", a.std())):
            assert st[key] == pytest.approx(ref, rel=1e-12, abs=1e-12), key
        counts, edges = np.histogram(a, bins=len(st["histogram"]["counts"]))
        assert st["histogram"]["counts"] == counts.tolist()
        np.testing.assert_allclose(st["histogram"]["edges"], edges)
        hm = st["heatmap"]
        if a.ndim == 2:
            assert (hm["rows"], hm["cols"]) == a.shape  # small enough for one cell per element
            np.testing.assert_allclose(np.array(hm["cells"], dtype=float), a, rtol=1e-12)
        else:
            assert hm is None


def test_heatmap_cells_are_block_means_with_nonfinite_left_out():
    from pyasc.debug._stats import summarize

    a = np.arange(130 * 70, dtype=np.float64).reshape(130, 70)
    a[0, 0] = np.nan
    a[129, 69] = np.inf
    st = summarize(a.astype(np.float32), "float32")
    assert st["nan"] == 1 and st["inf"] == 1 and st["finite"] == a.size - 2
    hm = st["heatmap"]
    assert hm["block"] == [3, 2] and (hm["rows"], hm["cols"]) == (44, 35)
    block = a[0:3, 0:2]
    assert hm["cells"][0][0] == pytest.approx(np.nanmean(block))
    assert hm["cells"][43][34] == pytest.approx(a[129, 68])  # the last block holds one row; inf left out
    finite = a[np.isfinite(a)]
    assert st["min"] == finite.min() and st["max"] == finite.max()


def test_nan_run_is_kept_with_the_failing_op_and_raised_at_the_users_line():
    @pyasc.operator(debug=True)
    def log_shifted(x):
        y = x - 0.5
        return np.log(y)

    x = np.linspace(0.0, 1.0, 64, dtype=np.float32).reshape(8, 8)
    with pyasc.debug.capture() as cap:
        with pytest.raises(pyasc.NumericalError) as info:
            log_shifted(x)
    assert info.value.lineno == line_of(log_shifted, "np.log")
    (run,) = cap.runs
    assert "NaN" in run.error
    sub, log = run.intermediates
    np.testing.assert_allclose(sub.array, x.astype(np.float64) - 0.5, rtol=1e-6)
    with np.errstate(invalid="ignore", divide="ignore"):
        ref = np.log(x.astype(np.float64) - 0.5)
    assert log.stats["nan"] == int(np.isnan(ref).sum()) > 0
    assert log.stats["inf"] == int(np.isinf(ref).sum())
    ok = np.isfinite(ref)
    np.testing.assert_allclose(log.array[ok], ref[ok], rtol=1e-5, atol=1e-6)


def test_nothing_is_kept_without_capture_or_server():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((16, 8)).astype(np.float32)
    w = rng.standard_normal((8, 4)).astype(np.float32)
    assert not pyasc.debug.active() and not _pyasc._debug_capture_active()
    y = steps(x, w)
    assert pyasc.debug.runs() == []
    with pyasc.debug.capture() as cap:
        assert pyasc.debug.active()
        steps(x, w)
    assert not pyasc.debug.active() and not _pyasc._debug_capture_active()
    assert pyasc.debug.runs() == []  # a capture block keeps its runs itself, not the process
    refs = [weakref.ref(it.array) for it in cap.runs[0].intermediates]
    np.testing.assert_array_equal(cap.runs[0].intermediates[-1].array, y)
    del cap
    gc.collect()
    assert all(r() is None for r in refs)
    with pyasc.debug.capture() as cap2:
        pass
    steps(x, w)  # after the block: not recorded
    assert cap2.runs == []


def test_operators_without_debug_are_not_captured():
    @pyasc.operator
    def fused(x):
        return np.exp(x * 2.0) + 1.0

    x = np.ones(32, np.float32)
    with pyasc.debug.capture() as cap:
        np.testing.assert_allclose(fused(x), np.exp(2.0) + 1.0, rtol=1e-6)
    assert cap.runs == []


def test_nested_captures_each_see_the_runs_inside_them():
    x = np.ones((4, 4), np.float32)
    w = np.ones((4, 2), np.float32)
    with pyasc.debug.capture() as outer:
        steps(x, w)
        with pyasc.debug.capture() as inner:
            steps(x, w)
        assert pyasc.debug.active()
    assert len(outer.runs) == 2 and len(inner.runs) == 1
    assert inner.runs[0] is outer.runs[1]
    assert not pyasc.debug.active()


def test_every_dtype_and_rank_is_summarised():
    @pyasc.operator(debug=True)
    def mixed(x):
        total = x.sum()
        mask = x > 0.5
        scaled = x.astype(np.int32) * 3
        return total, mask, scaled

    x = (np.arange(15, dtype=np.float32).reshape(5, 3) / 7.0)
    with pyasc.debug.capture() as cap:
        total, mask, scaled = mixed(x)
    its = cap.runs[0].intermediates
    assert [(it.op, it.shape, it.dtype) for it in its] == [
        ("reduce_sum", (), "float32"), ("gt", (5, 3), "bool"), ("cast<int32>", (5, 3), "int32"),
        ("mul", (5, 3), "int32")]
    assert its[0].array == pytest.approx(x.astype(np.float64).sum(), rel=1e-6) and its[0].stats["heatmap"] is None
    np.testing.assert_array_equal(its[1].array, x > 0.5)
    assert its[1].stats["mean"] == pytest.approx((x > 0.5).mean())
    np.testing.assert_array_equal(its[3].array, x.astype(np.int32) * 3)
    assert its[3].stats["max"] == 6.0
    assert its[3].stats["heatmap"]["cells"] == (x.astype(np.int32) * 3).astype(float).tolist()
    with pyasc.debug.capture() as cap:
        mixed(np.zeros((0, 3), np.float32))
    empty = cap.runs[0].intermediates[1]
    assert empty.shape == (0, 3) and empty.stats["size"] == 0 and empty.stats["min"] is None
    assert empty.stats["histogram"] == {"counts": [], "edges": []}


def test_a_failure_to_keep_a_run_warns_and_leaves_the_result_alone(monkeypatch):
    from pyasc.debug import _store

    def broken(arr, dtype):
        raise RuntimeError("summary failed")

    monkeypatch.setattr(_store, "summarize", broken)
    x, w = np.ones((2, 3), np.float32), np.ones((3, 2), np.float32)
    with pyasc.debug.capture() as cap:
        with pytest.warns(pyasc.PyAscWarning, match="could not keep a run of steps: RuntimeError: summary failed"):
            y = steps(x, w)
    np.testing.assert_allclose(y, np.full((2, 2), 1.0), rtol=1e-6)
    assert cap.runs == []


def test_calls_queued_on_a_stream_run_but_are_not_captured():
    x = np.ones((4, 3), np.float32)
    w = np.ones((3, 2), np.float32)
    with pyasc.debug.capture() as cap:
        out = steps(pyasc.to_device(x), pyasc.to_device(w))
        np.testing.assert_allclose(out.numpy(), np.ones((4, 2)), rtol=1e-6)
    assert cap.runs == []


def test_the_runs_own_error_wins_over_a_failure_to_keep_it(monkeypatch):
    import warnings

    from pyasc.debug import _store

    def broken(arr, dtype):
        raise RuntimeError("summary failed")

    @pyasc.operator(debug=True)
    def log_of(x):
        return np.log(x)

    monkeypatch.setattr(_store, "summarize", broken)
    with pyasc.debug.capture(), warnings.catch_warnings():
        warnings.simplefilter("error")  # the warning becomes an exception inside the debugger
        with pytest.raises(pyasc.NumericalError, match="produced"):
            log_of(np.array([1.0, -1.0], np.float32))
