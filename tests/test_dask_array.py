"""pyasc operators on Dask arrays (threaded scheduler), checked against NumPy in float64."""

import pickle
import sys

import numpy as np
import pyasc
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

RNG = np.random.default_rng(7)


@pytest.fixture(autouse=True)
def _threads():
    with dask.config.set(scheduler="threads"):
        yield


@pyasc.operator
def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


@pyasc.operator
def axpy(a, x, y):
    return a * x + y


@pyasc.operator
def sum_squares_rows(x):
    return (x * x).sum(axis=1)


@pyasc.operator
def total(x):
    return x.sum()


@pyasc.operator
def col_max(x):
    return x.max(axis=0, keepdims=True)


@pyasc.operator
def centered(x):
    return x - x.mean(axis=-1, keepdims=True)


@pyasc.operator
def row_mean(x):
    return x.mean(axis=1)


@pyasc.operator
def sorted_rows(x):
    return np.sort(x, axis=1)


@pyasc.operator
def mm(a, b):
    return a @ b


@pyasc.operator
def flipped(x):
    return x[::-1]


@pyasc.vectorized_operator
def clamp_sq(x, lo):
    if x < lo:
        return lo * lo
    return x * x


def _gelu64(x):
    x = x.astype(np.float64)
    return 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


def test_elementwise_is_lazy_and_blockwise():
    x = RNG.standard_normal((300, 170)).astype(np.float32)
    dx = da.from_array(x, chunks=(64, 50))
    before = gelu_tanh.cache_info().misses
    y = gelu_tanh(dx)
    assert isinstance(y, da.Array)
    assert y.chunks == dx.chunks and y.dtype == np.float32
    assert gelu_tanh.cache_info().misses - before <= 1  # only the tiny stand-in compiled so far
    np.testing.assert_allclose(y.compute(), _gelu64(x), rtol=1e-5, atol=1e-6)


def test_broadcast_and_mismatched_chunks_are_unified():
    x = RNG.standard_normal((120, 90)).astype(np.float32)
    y = RNG.standard_normal((90,)).astype(np.float32)
    dx = da.from_array(x, chunks=(50, 40))
    dy = da.from_array(y, chunks=25)
    out = axpy(2.5, dx, dy)
    assert out.shape == (120, 90)
    np.testing.assert_allclose(out.compute(), 2.5 * x.astype(np.float64) + y, rtol=1e-6, atol=1e-6)
    # A NumPy array argument is broadcast against the Dask blocks.
    out2 = axpy(np.float32(-1), dx, y)
    np.testing.assert_allclose(out2.compute(), y.astype(np.float64) - x, rtol=1e-6, atol=1e-6)


def test_row_reduction_runs_per_chunk_and_combines():
    x = RNG.standard_normal((100, 333)).astype(np.float32)
    dx = da.from_array(x, chunks=(30, 100))
    r = sum_squares_rows(dx)
    assert r.shape == (100,) and r.dtype == np.float32
    # Partials per chunk combined in Dask's reduction tree: the summed axis is not rechunked.
    assert dx.numblocks[1] == 4
    assert not any("rechunk" in name for name in r.dask.layers)
    np.testing.assert_allclose(r.compute(), (x.astype(np.float64) ** 2).sum(axis=1), rtol=1e-6)


def test_full_sum_is_accurate_across_many_chunks():
    x = (RNG.random(2_000_000) + 1000).astype(np.float32)
    r = total(da.from_array(x, chunks=100_000))
    exact = x.astype(np.float64).sum()
    assert r.shape == () and r.dtype == np.float32
    assert abs(float(r.compute()) - exact) <= abs(exact) * 1e-7


def test_keepdims_max():
    x = RNG.standard_normal((64, 48)).astype(np.float32)
    r = col_max(da.from_array(x, chunks=(10, 20)))
    assert r.shape == (1, 48)
    np.testing.assert_array_equal(r.compute(), x.max(axis=0, keepdims=True))


def test_row_coupled_ops_rechunk_the_axis_to_one_chunk():
    x = RNG.standard_normal((40, 60)).astype(np.float32)
    dx = da.from_array(x, chunks=(10, 15))
    c = centered(dx)
    assert c.chunks[1] == (60,) and c.chunks[0] == dx.chunks[0]
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(c.compute(), x64 - x64.mean(axis=1, keepdims=True), atol=1e-5)
    m = row_mean(dx)
    assert m.shape == (40,)
    np.testing.assert_allclose(m.compute(), x64.mean(axis=1), rtol=1e-5)
    s = sorted_rows(dx)
    assert s.chunks[1] == (60,)
    np.testing.assert_array_equal(s.compute(), np.sort(x, axis=1))


def test_matmul_per_block_gemm():
    a = RNG.standard_normal((150, 130)).astype(np.float32)
    b = RNG.standard_normal((130, 70)).astype(np.float32)
    c = mm(da.from_array(a, chunks=(64, 40)), da.from_array(b, chunks=(50, 35)))
    assert c.shape == (150, 70) and c.dtype == np.float32
    np.testing.assert_allclose(c.compute(), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


def test_unsplittable_structure_raises_typed_error():
    dx = da.from_array(np.ones((20, 4), np.float32), chunks=5)
    with pytest.raises(pyasc.UnsupportedError, match="slice"):
        flipped(dx)


def test_vectorized_operator_on_dask():
    x = RNG.standard_normal((77, 31)).astype(np.float32)
    out = clamp_sq(da.from_array(x, chunks=(20, 16)), np.float32(0.25))
    ref = np.where(x < 0.25, 0.0625, x.astype(np.float64) ** 2)
    np.testing.assert_allclose(out.compute(), ref, rtol=1e-6)


def test_operators_pickle_by_name_and_by_source():
    assert pickle.loads(pickle.dumps(gelu_tanh)) is gelu_tanh

    scale = 3.0

    @pyasc.operator(kernel_name="scaled")
    def scaled(x):
        return np.exp(x) * scale

    back = pickle.loads(pickle.dumps(scaled))
    assert back is not scaled and back.options["kernel_name"] == "scaled"
    again = pickle.loads(pickle.dumps(scaled))
    assert again is back  # rebuilt once per process: one kernel cache
    x = RNG.standard_normal(1000).astype(np.float32)
    np.testing.assert_allclose(back(x), np.exp(x.astype(np.float64)) * 3.0, rtol=1e-6)

    @pyasc.stencil_operator(boundary="nearest")
    def avg(u):
        return (u[-1] + u[0] + u[1]) / 3

    s = pickle.loads(pickle.dumps(avg))
    assert s.boundary == "nearest"
    np.testing.assert_allclose(s(x), avg(x), rtol=0, atol=0)


def test_lambda_operator_pickling_is_a_clear_error():
    op = pyasc.operator(lambda x: x + 1)
    with pytest.raises(pyasc.InvalidArgumentError, match="lambda"):
        pickle.dumps(op)


@pyasc.operator
def running_total(x):
    return pyasc.cumsum(x, axis=0)


def test_scan_over_a_chunked_axis_rechunks_that_axis_only():
    x = RNG.standard_normal((90, 40)).astype(np.float32)
    dx = da.from_array(x, chunks=(20, 10))
    out = running_total(dx)
    assert out.chunks == ((90,), dx.chunks[1])
    np.testing.assert_allclose(out.compute(), np.cumsum(x.astype(np.float64), axis=0), rtol=1e-5, atol=1e-5)


@pyasc.operator(dynamic_shape=True, gears="pow2")
def geared_affine(x, y):
    return x * 2 + y


def test_geared_operator_on_dask_and_pickled():
    x = RNG.standard_normal((50, 70)).astype(np.float32)
    y = RNG.standard_normal(70).astype(np.float32)
    out = geared_affine(da.from_array(x, chunks=(20, 30)), y)
    assert out.chunks == ((20, 20, 10), (30, 30, 10))
    np.testing.assert_allclose(out.compute(), 2 * x.astype(np.float64) + y, rtol=1e-6, atol=1e-6)
    assert pickle.loads(pickle.dumps(geared_affine)) is geared_affine


@pyasc.operator(dynamic_shape=True, gears="pow2")
def geared_row_sums(x):
    return (x * 2).sum(axis=1)


def test_geared_reduction_results_are_cut_to_the_chunks():
    x = RNG.standard_normal((50, 70)).astype(np.float32)
    out = geared_row_sums(da.from_array(x, chunks=(20, 30)))
    assert not any("rechunk" in name for name in out.dask.layers)
    np.testing.assert_allclose(out.compute(), 2 * x.astype(np.float64).sum(axis=1), rtol=1e-5, atol=1e-5)


WEIGHTS = RNG.standard_normal(40).astype(np.float32)


@pyasc.operator
def weighted(x):
    return x * WEIGHTS


@pyasc.operator
def project(x):
    return x @ WEIGHTS.reshape(40, 1)


def test_captured_arrays_keep_their_axes_whole():
    x = RNG.standard_normal((30, 40)).astype(np.float32)
    out = weighted(da.from_array(x, chunks=(10, 40)))
    assert out.chunks == ((10, 10, 10), (40,))
    np.testing.assert_allclose(out.compute(), x.astype(np.float64) * WEIGHTS, rtol=1e-6)
    # Blocks that cut the captured array's axis cannot be traced: a typed error, not a wrong answer.
    with pytest.raises(pyasc.UnsupportedError, match="cannot trace"):
        weighted(da.from_array(x, chunks=(10, 15)))
    with pytest.raises(pyasc.UnsupportedError, match="matmul with an array the function captures"):
        project(da.from_array(x, chunks=(10, 40)))


def test_arguments_that_do_not_broadcast_are_a_shape_error_at_the_call():
    @pyasc.operator
    def axpy(x, y):
        return x * 2 + y

    with pytest.raises(pyasc.ShapeError, match="do not broadcast") as ei:
        axpy(da.arange(100, chunks=30, dtype=np.float32), da.ones(7, chunks=7))  # mismatch
    assert ei.value.lineno == sys._getframe().f_lineno - 1
    x = da.arange(100, chunks=30, dtype=np.float32)
    unknown = x[x > 10]  # extents Dask learns only when computing: not checked up front
    np.testing.assert_array_equal(axpy(unknown, 1.0).compute(), np.arange(11, 100, dtype=np.float32) * 2 + 1)


def test_means_combine_block_sums_in_the_reduction_tree():
    @pyasc.operator
    def col_mean(x):
        return (x * 2).mean(axis=0)

    @pyasc.operator
    def mean_all(x):
        return x.mean()

    @pyasc.operator
    def row_mean_keep(x):
        return x.mean(axis=1, keepdims=True)

    @pyasc.operator
    def half_sum(x):
        return x.sum(axis=0) / 10.0  # a constant that is not the count: not a mean

    x = RNG.standard_normal((1000, 37)).astype(np.float32)
    x64 = x.astype(np.float64)
    dx = da.from_array(x, chunks=(130, 10))
    for r, ref in ((col_mean(dx), 2 * x64.mean(axis=0)), (mean_all(dx), x64.mean()),
                   (row_mean_keep(dx), x64.mean(axis=1, keepdims=True))):
        assert not any("rechunk" in name for name in r.dask.layers)
        assert r.dtype == np.float32 and r.shape == ref.shape
        np.testing.assert_allclose(r.compute(), ref, rtol=2e-6, atol=1e-7)
    hs = half_sum(dx)
    np.testing.assert_allclose(hs.compute(), x64.sum(axis=0) / 10, rtol=1e-5, atol=1e-6)
    xi = RNG.integers(-1000, 1000, (500, 20)).astype(np.int32)
    ri = mean_all(da.from_array(xi, chunks=(77, 20)))
    assert ri.dtype == np.float64
    assert float(ri.compute()) == pytest.approx(xi.astype(np.float64).mean(), rel=1e-12, abs=1e-12)
    unknown = dx[dx[:, 0] > 0]  # rows Dask learns only when computing: the mean makes them whole
    np.testing.assert_allclose(col_mean(unknown).compute(), 2 * x64[x[:, 0] > 0].mean(axis=0), rtol=2e-6, atol=1e-7)
