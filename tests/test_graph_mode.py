"""Graph mode: recorded operator calls stitched into one graph, checked against eager calls."""

from __future__ import annotations

import threading

import numpy as np
import pyasc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st


@pyasc.operator
def scale_shift(x):
    return x * 2.0 + 1.0


@pyasc.operator
def root(x):
    return np.sqrt(np.abs(x)) - 0.5


@pyasc.operator
def square_plus(x):
    return x * x + 3.0


@pyasc.operator
def add_mul(x, y):
    return x + y, x * y


@pyasc.operator
def add(x, y):
    return x + y


@pyasc.operator
def row_softmax(x):
    return pyasc.softmax(x, -1)


@pyasc.operator
def col_sum(x):
    return x.sum(axis=0)


@pyasc.operator
def project(x, w):
    return x @ w


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_chain_runs_as_one_kernel_and_matches_eager():
    a = rand(4096)
    with pyasc.graph_mode() as g:
        z = square_plus(root(scale_shift(a)))
        assert isinstance(z, pyasc.LazyArray) and g.runs == 0
    np.testing.assert_array_equal(np.asarray(z), square_plus(root(scale_shift(a))))
    plan = g.get_compiled_op()
    assert len(plan.kernels()) == 1
    assert len(plan.outputs) == 1  # the two intermediates are never stored
    expect = (np.sqrt(np.abs(a.astype(np.float64) * 2 + 1)) - 0.5) ** 2 + 3
    np.testing.assert_allclose(np.asarray(z), expect, rtol=1e-6)


def test_named_intermediates_are_computed_too():
    a = rand(1000)
    with pyasc.graph_mode() as g:
        x = scale_shift(a)
        y = root(x)
        z = square_plus(y)
    assert g.runs == 1 and len(g.get_compiled_op().kernels()) == 1
    assert len(g.get_compiled_op().outputs) == 3
    np.testing.assert_array_equal(x.numpy(), scale_shift(a))
    np.testing.assert_array_equal(y.numpy(), root(scale_shift(a)))
    np.testing.assert_array_equal(z.numpy(), square_plus(root(scale_shift(a))))


def test_metadata_does_not_run_the_graph():
    a = rand(7, 5)
    with pyasc.graph_mode() as g:
        p, q = add_mul(a, scale_shift(a))
        s = col_sum(q)
        assert (p.shape, p.dtype, p.ndim, p.size, p.nbytes) == ((7, 5), np.float32, 2, 35, 140)
        assert s.shape == (5,) and len(p) == 7
        assert g.runs == 0 and not p.is_computed
    assert p.is_computed


def test_reading_mid_block_runs_what_was_recorded_and_continues():
    a = rand(64, 8)
    with pyasc.graph_mode() as g:
        x = scale_shift(a)
        first = float(x[3, 2])  # a host read: the graph so far runs
        assert g.runs == 1
        y = row_softmax(x)
        z = square_plus(y)
    assert g.runs == 2
    assert first == pytest.approx(float(a[3, 2]) * 2 + 1)
    np.testing.assert_allclose(np.asarray(z), square_plus(row_softmax(scale_shift(a))), rtol=1e-6)


def test_loop_records_the_same_calls_and_compiles_once():
    a = rand(256)
    mode = pyasc.graph_mode()
    for i in range(5):
        b = a + i
        with mode:
            z = square_plus(root(scale_shift(b)))
        np.testing.assert_array_equal(np.asarray(z), square_plus(root(scale_shift(b))))
    assert mode.runs == 5 and mode.compiles <= 1  # the stitched graph may be cached already
    new_mode = pyasc.graph_mode()
    with new_mode:
        z = square_plus(root(scale_shift(rand(999))))  # a new shape: a new plan, same graph
    z.numpy()
    assert new_mode.compiles == 0


def test_errors_name_the_operator_line_at_the_call():
    a = rand(10, 3)
    with pytest.raises(pyasc.ShapeError) as info:
        with pyasc.graph_mode():
            add(a, rand(4))
    assert info.value.filename == __file__
    assert info.value.lineno == add.__wrapped__.__code__.co_firstlineno + 2


def test_exception_in_block_still_computes_recorded_values():
    a = rand(100)
    with pytest.raises(KeyError):
        with pyasc.graph_mode():
            x = scale_shift(a)
            raise KeyError("user error")
    np.testing.assert_array_equal(x.numpy(), scale_shift(a))


def test_nested_blocks_join_the_outer_graph():
    a = rand(50)
    with pyasc.graph_mode() as outer:
        x = scale_shift(a)
        with pyasc.graph_mode():
            y = root(x)
        assert outer.runs == 0 and not y.is_computed
        z = square_plus(y)
    np.testing.assert_array_equal(z.numpy(), square_plus(root(scale_shift(a))))


def test_threads_record_their_own_graphs():
    results = {}

    def work(i):
        b = rand(300, seed=i)
        for _ in range(3):
            with pyasc.graph_mode():
                v = square_plus(scale_shift(b))
            results.setdefault(i, []).append(np.array_equal(np.asarray(v), square_plus(scale_shift(b))))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {i: [True] * 3 for i in range(4)}


def test_lazy_value_read_from_another_thread():
    a = rand(100)
    with pyasc.graph_mode():
        x = scale_shift(a)
        out = {}
        t = threading.Thread(target=lambda: out.setdefault("v", np.asarray(x)))
        t.start()
        t.join()
        y = root(x)  # recorded after the other thread ran this thread's graph
    np.testing.assert_array_equal(out["v"], scale_shift(a))
    np.testing.assert_array_equal(np.asarray(y), root(scale_shift(a)))


def test_lazy_values_flow_into_eager_calls_and_numpy():
    a = rand(20, 6)
    with pyasc.graph_mode():
        x = scale_shift(a)
    y = root(x)  # outside the block: computed, then an ordinary call
    assert type(y) is np.ndarray
    np.testing.assert_array_equal(y, root(scale_shift(a)))
    np.testing.assert_allclose(np.exp(x), np.exp(scale_shift(a)))
    assert str(x) == str(scale_shift(a))


def test_library_functions_and_matmul_are_recorded():
    a, w = rand(32, 16), rand(16, 8, seed=1)
    with pyasc.graph_mode() as g:
        z = pyasc.softmax(project(scale_shift(a), w))
        assert isinstance(z, pyasc.LazyArray)
    ref = (a.astype(np.float64) * 2 + 1) @ w
    ref = np.exp(ref - ref.max(-1, keepdims=True))
    np.testing.assert_allclose(np.asarray(z), ref / ref.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7)
    assert g.runs == 1


def test_different_options_break_the_graph():
    @pyasc.operator(precision_mode="force_fp16")
    def half_scale(x):
        return x * 3.0

    a = rand(100)
    with pyasc.graph_mode() as g:
        z = scale_shift(half_scale(scale_shift(a)))
    np.testing.assert_array_equal(np.asarray(z), scale_shift(half_scale(scale_shift(a))))
    assert g.runs == 3


def test_device_arrays_and_tuple_results():
    a = rand(40, 4)
    d = pyasc.to_device(a)
    with pyasc.graph_mode():
        p, q = add_mul(d, scale_shift(d))
    assert isinstance(p.value(), pyasc.DeviceArray)
    np.testing.assert_array_equal(p.numpy(), a + scale_shift(a))
    np.testing.assert_array_equal(q.numpy(), a * scale_shift(a))


def test_inputs_are_not_modified():
    a = rand(100)
    keep = a.copy()
    with pyasc.graph_mode():
        z = square_plus(scale_shift(a))
    z.numpy()
    np.testing.assert_array_equal(a, keep)


# Random chains of operators: graph mode equals eager execution.
_UNARY = [scale_shift, root, square_plus, row_softmax]


class _Stop(Exception):
    pass


def _run_chain(steps, vals, reads, *, lazy, raise_at=None, nest_at=None):
    """Apply the steps to ``vals[0]``, appending every value and the values read mid-block."""

    def step(kind, pick):
        i = pick % len(vals)
        j = (pick * 7 + 3) % len(vals)
        if kind < len(_UNARY):
            return _UNARY[kind](vals[i])
        if kind == 4:
            return add(vals[i], vals[j])
        return add_mul(vals[i], vals[j])[0]

    for n, (kind, pick, read) in enumerate(steps):
        if raise_at == n:
            raise _Stop()
        if lazy and nest_at == n:
            with pyasc.graph_mode():  # a nested block joins the outer graph
                vals.append(step(kind, pick))
        else:
            vals.append(step(kind, pick))
        if read and lazy:  # a host read in the middle of the block
            reads.append((len(vals) - 1, np.array(vals[-1])))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 10), st.booleans()), min_size=1, max_size=7),
       st.integers(1, 40), st.integers(1, 9), st.integers(0, 8), st.integers(0, 8), st.booleans())
def test_random_chains_equal_eager(steps, rows, cols, raise_at, nest_at, in_thread):
    a = rand(rows, cols, seed=rows * 31 + cols)
    eager_vals = [a]
    _run_chain(steps, eager_vals, [], lazy=False)
    vals, reads = [a], []
    stop = raise_at if raise_at < len(steps) else None

    def lazy_run():
        try:
            with pyasc.graph_mode():
                _run_chain(steps, vals, reads, lazy=True, raise_at=stop, nest_at=nest_at)
        except _Stop:
            pass

    if in_thread:  # a block used from another thread records its own graph
        t = threading.Thread(target=lazy_run)
        t.start()
        t.join()
    else:
        lazy_run()
    # With an exception in the block, the calls recorded before it still ran, as eagerly.
    assert len(vals) == (len(steps) if stop is None else stop) + 1
    for k, v in reads:
        np.testing.assert_allclose(v, eager_vals[k], rtol=2e-6, atol=1e-6)
    for e, v in zip(eager_vals, vals):
        np.testing.assert_allclose(np.asarray(v), e, rtol=2e-6, atol=1e-6)


def test_arithmetic_on_lazy_arrays_is_recorded_and_fused():
    a, b = rand(500), rand(500, seed=3)
    with pyasc.graph_mode() as g:
        x = scale_shift(a)
        z = square_plus((x * 2.0 - b) / 4.0 + 1.0)
        w = b + x  # a NumPy array on the left stays lazy too
        assert isinstance(z, pyasc.LazyArray) and isinstance(w, pyasc.LazyArray) and g.runs == 0
    x64 = a.astype(np.float64) * 2 + 1
    np.testing.assert_allclose(np.asarray(z), ((x64 * 2 - b) / 4 + 1) ** 2 + 3, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(w), b + x64, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.exp(-x), np.exp(-x64), rtol=1e-5)  # other ufuncs compute first
    assert g.runs == 1


def test_device_array_methods_on_lazy_values():
    a = rand(6, 4)
    with pyasc.graph_mode():
        x = scale_shift(a)
    assert x.strides == (16, 4) and x.c_contiguous and x.device == "cpu"
    dst = np.empty((6, 4), np.float32)
    x.copy_to(dst)
    np.testing.assert_array_equal(dst, scale_shift(a))
    x.copy_from(np.ones((6, 4), np.float32))
    np.testing.assert_array_equal(x.numpy(), np.ones((6, 4)))
    with pytest.raises(pyasc.ShapeError):
        x.copy_from(np.ones(3, np.float32))
