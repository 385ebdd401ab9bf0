"""var/std/argmax/argmin of pointwise expressions over Dask arrays, combined in Dask's reduction tree.

Every result is checked against NumPy in float64 on the same values (the pointwise expression
evaluated by NumPy in the input's dtype, which pyasc's elementwise kernels match exactly for the
expressions used here); the graphs are checked not to rechunk the reduced axes.
"""

import warnings

import numpy as np
import pyasc
import pytest
from dask_graph_support import partial_tasks as _partial_tasks
from dask_graph_support import rechunks as _rechunks
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(autouse=True)
def _threads():
    with dask.config.set(scheduler="threads"):
        yield


def _np_var(v, kind, axis, ddof, keepdims):
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return getattr(np, kind)(v.astype(np.float64), axis=axis, ddof=ddof, keepdims=keepdims)


def _chunks(draw, n):
    """Random chunk sizes adding up to n (sizes of 1 and one uneven tail are common)."""
    sizes = []
    left = n
    while left:
        c = draw(st.integers(1, max(1, min(left, n // 2 + 1))))
        sizes.append(c)
        left -= c
    return tuple(sizes)


@st.composite
def _var_cases(draw):
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 9)) for _ in range(ndim))
    chunks = tuple(_chunks(draw, n) for n in shape)
    axis = draw(st.one_of(st.none(), st.integers(-ndim, ndim - 1),
                          st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True).map(tuple)))
    count = int(np.prod(shape if axis is None else [shape[a] for a in np.atleast_1d(axis)]))
    ddof = draw(st.sampled_from([0, 1, count, count + 2]))
    keepdims = draw(st.booleans())
    kind = draw(st.sampled_from(["var", "std"]))
    dtype = draw(st.sampled_from([np.float32, np.float64, np.int32]))
    seed = draw(st.integers(0, 2 ** 16))
    return shape, chunks, axis, ddof, keepdims, kind, dtype, seed


def _values(shape, dtype, rng, mean=0.0):
    if np.dtype(dtype).kind == "i":
        return rng.integers(-50, 50, shape).astype(dtype)
    return (mean + rng.standard_normal(shape)).astype(dtype)


@SETTINGS
@given(_var_cases())
def test_var_and_std_over_random_chunkings_match_numpy(case):
    shape, chunks, axis, ddof, keepdims, kind, dtype, seed = case
    fn = getattr(np, kind)

    @pyasc.operator
    def op(x):
        return fn(x * 2 + 1, axis=axis, ddof=ddof, keepdims=keepdims)

    x = _values(shape, dtype, np.random.default_rng(seed))
    r = op(da.from_array(x, chunks=chunks))
    got = r.compute()
    want = _np_var(x * dtype(2) + dtype(1), kind, axis, ddof, keepdims)
    assert got.dtype == op(x).dtype
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    assert not _rechunks(r)
    assert _partial_tasks(r) == int(np.prod([len(c) for c in chunks]))


def test_var_of_a_broadcast_expression_with_uneven_chunks():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((50, 12)).astype(np.float32)
    y = rng.standard_normal(12).astype(np.float32)

    @pyasc.operator
    def op(a, b):
        return np.var(a * 2 + b, axis=0, ddof=1)

    dx = da.from_array(x, chunks=((1, 9, 13, 27), (5, 7)))
    r = op(dx, da.from_array(y, chunks=((5, 7),)))
    np.testing.assert_allclose(r.compute(), _np_var(x * np.float32(2) + y, "var", 0, 1, False), rtol=1e-5)
    assert not _rechunks(r)
    assert _partial_tasks(r) == 8
    # A NumPy second argument broadcasts too; a float64 variance of float32 data keeps float64.

    @pyasc.operator
    def op64(a, b):
        return np.std(a + b, axis=(0, 1), dtype=np.float64, keepdims=True)

    r = op64(dx, y)
    assert r.dtype == np.float64
    np.testing.assert_allclose(r.compute(), _np_var(x + y, "std", (0, 1), 0, True), rtol=1e-12)


@pytest.mark.parametrize("axis", [0, None])
def test_float32_with_a_large_mean_keeps_float32_precision(axis):
    # 1e4 + N(0, 1): a one-pass or naive float32 variance loses most digits here.
    rng = np.random.default_rng(11)
    x = (1e4 + rng.standard_normal((6000, 6))).astype(np.float32)

    @pyasc.operator
    def op(a):
        return np.var(a, axis=axis)

    got = op(da.from_array(x, chunks=(77, 4))).compute()
    want = np.var(x.astype(np.float64), axis=axis)
    np.testing.assert_allclose(got, want, rtol=2e-6)


def test_std_over_many_row_chunks_runs_one_partial_per_chunk():
    x = da.random.default_rng(0).standard_normal((4096, 64), dtype=np.float32, chunks=(256, 64))

    @pyasc.operator
    def op(a):
        return np.std(a, axis=0)

    r = op(x)
    assert not _rechunks(r)
    assert _partial_tasks(r) == 16
    np.testing.assert_allclose(r.compute(), np.std(x.compute().astype(np.float64), axis=0), rtol=1e-5)


@st.composite
def _arg_cases(draw):
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 8)) for _ in range(ndim))
    chunks = tuple(_chunks(draw, n) for n in shape)
    axis = draw(st.one_of(st.none(), st.integers(-ndim, ndim - 1)))
    kind = draw(st.sampled_from(["argmax", "argmin"]))
    keepdims = draw(st.booleans())
    dtype = draw(st.sampled_from([np.float32, np.float64, np.int16]))
    nans = draw(st.integers(0, 3)) if np.dtype(dtype).kind == "f" else 0
    seed = draw(st.integers(0, 2 ** 16))
    return shape, chunks, axis, kind, keepdims, dtype, nans, seed


@SETTINGS
@given(_arg_cases())
def test_argmax_argmin_over_random_chunkings_with_ties_and_nans(case):
    shape, chunks, axis, kind, keepdims, dtype, nans, seed = case
    rng = np.random.default_rng(seed)
    x = rng.integers(-2, 3, shape).astype(dtype)  # few values: ties across chunk boundaries everywhere
    for _ in range(nans):
        x[tuple(rng.integers(0, n) for n in shape)] = np.nan
    fn = getattr(np, kind)

    @pyasc.operator
    def op(a):
        return fn(a * 3, axis=axis, keepdims=keepdims)

    r = op(da.from_array(x, chunks=chunks))
    want = fn(x * dtype(3), axis=axis, keepdims=keepdims)
    got = r.compute()
    np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype == np.int64
    assert not _rechunks(r)
    assert _partial_tasks(r) == int(np.prod([len(c) for c in chunks]))


def test_argmax_ties_and_nans_at_chunk_boundaries():
    x = np.zeros(40, np.float32)
    x[[9, 10, 30]] = 5  # the same maximum at the end of one chunk and the start of the next
    x[[12, 31]] = -5

    @pyasc.operator
    def amax(a):
        return np.argmax(a)

    @pyasc.operator
    def amin(a):
        return np.argmin(a - 1)

    dx = da.from_array(x, chunks=10)
    assert int(amax(dx).compute()) == 9
    assert int(amin(dx).compute()) == 12
    y = x.copy()
    y[[25, 33]] = np.nan  # NaN is the max and the min, its first index wins
    dy = da.from_array(y, chunks=10)
    assert int(amax(dy).compute()) == 25 == np.argmax(y)
    assert int(amin(dy).compute()) == 25 == np.argmin(y - 1)
    assert _partial_tasks(amax(dy)) == 4


def _argmax_of_difference(axis):
    @pyasc.operator
    def op(a, b):
        return np.argmax(a - b, axis=axis)

    return op


def test_argmax_of_a_3d_broadcast_expression_along_each_axis():
    rng = np.random.default_rng(5)
    x = rng.integers(0, 4, (9, 10, 11)).astype(np.float32)
    y = rng.integers(0, 4, (10, 1)).astype(np.float32)
    dx = da.from_array(x, chunks=(4, 3, 5))
    for axis in range(3):
        op = _argmax_of_difference(axis)
        r = op(dx, da.from_array(y, chunks=(3, 1)))
        np.testing.assert_array_equal(r.compute(), np.argmax(x - y, axis=axis))
        assert not _rechunks(r)
        assert _partial_tasks(r) == 3 * 4 * 3


def test_argmax_over_every_axis_of_a_3d_array_is_the_c_order_flat_index():
    # pyasc's operator needs an axis for an n-d argmax on NumPy arrays; on Dask arrays each chunk
    # gives its flat index and the tree makes it global.
    rng = np.random.default_rng(8)
    x = rng.integers(0, 3, (9, 10, 11)).astype(np.float32)
    y = rng.integers(0, 2, 11).astype(np.float32)

    @pyasc.operator
    def op(a, b):
        return np.argmax(a * 2 + b)

    dx = da.from_array(x, chunks=(4, 3, 5))
    r = op(dx, da.from_array(y, chunks=5))
    assert int(r.compute()) == np.argmax(x * 2 + y)
    assert not _rechunks(r) and _partial_tasks(r) == 3 * 4 * 3
    # The first NaN in C order wins: (0, 9, 0) lies in chunk (0, 3, 0), after chunk (0, 0, 1)
    # that holds the other NaN, (1, 0, 6), in the chunk grid's order.
    x[[0, 1], [9, 0], [0, 6]] = np.nan
    assert int(op(da.from_array(x, chunks=(4, 3, 5)), y).compute()) == np.argmax(x * 2 + y) == 9 * 11

    @pyasc.operator
    def plus_one(a):
        return np.argmax(a) + 1

    with pytest.raises(pyasc.UnsupportedError, match="argmax over all axes"):
        plus_one(dx)


def _var_plus_one(x):
    return np.var(x, axis=0) + 1


def _two_vars(x):
    return np.var(x, axis=0) - np.var(x * 2, axis=0)


def _var_of_centred(x):
    return np.var(x - x.mean(axis=0, keepdims=True), axis=0)


def _var_given_mean(x):
    return np.var(x, axis=0, mean=x.mean(axis=0, keepdims=True))


def _argmax_as_float(x):
    return np.argmax(x, axis=0) * 1.0


COL = np.linspace(1, 2, 6).astype(np.float32)


def _var_of_captured(x):
    return np.var(x * COL, axis=0)


@pytest.mark.parametrize("fn", [_var_plus_one, _two_vars, _var_of_centred, _var_given_mean, _argmax_as_float,
                                _var_of_captured])
def test_other_uses_keep_the_exact_coupled_path(fn):
    rng = np.random.default_rng(1)
    x = (100 + rng.standard_normal((30, 6))).astype(np.float32)
    op = pyasc.operator(fn)
    r = op(da.from_array(x, chunks=(7, 6)))
    assert _rechunks(r)  # the reduced axis is rechunked to one chunk, as before
    np.testing.assert_allclose(r.compute(), op(x), rtol=1e-6)
    np.testing.assert_allclose(r.compute(), fn(x.astype(np.float64)), rtol=1e-4)


def test_the_users_operator_is_unchanged():
    @pyasc.operator
    def op(a):
        return np.var(a * 2, axis=0)

    x = np.random.default_rng(2).standard_normal((20, 5)).astype(np.float32)
    before = op(x)
    compiles = op.cache_info().compiles
    r = op(da.from_array(x, chunks=(3, 5)))
    after_graph = op.cache_info().compiles
    np.testing.assert_allclose(r.compute(), _np_var(x * np.float32(2), "var", 0, 0, False), rtol=1e-5)
    assert op.cache_info().compiles == after_graph  # the chunks run a companion, not the user's operator
    assert after_graph <= compiles + 1  # at most the stand-in trace the Dask path always makes
    np.testing.assert_array_equal(op(x), before)


def test_geared_operator_variance_runs_in_the_tree():
    @pyasc.operator(dynamic_shape=True, gears={0: [8, 16, 32]})
    def op(a):
        return np.std(a * 2, axis=0, ddof=1)

    x = np.random.default_rng(4).standard_normal((29, 3)).astype(np.float32)
    r = op(da.from_array(x, chunks=(6, 3)))
    assert not _rechunks(r)
    np.testing.assert_allclose(r.compute(), _np_var(x * np.float32(2), "std", 0, 1, False), rtol=1e-5)


def test_partials_pickle_with_the_operator_by_source():
    import pickle

    @pyasc.operator
    def local_var(a):
        return np.var(a + 1, axis=1)

    x = np.arange(24, dtype=np.float64).reshape(4, 6)
    r = local_var(da.from_array(x, chunks=(2, 4)))
    # Every task's function survives a pickle round trip (as the distributed scheduler ships them).
    for layer in r.dask.layers.values():
        for key in layer:
            pickle.loads(pickle.dumps(layer[key]))
    np.testing.assert_allclose(r.compute(), np.var(x + 1, axis=1), rtol=1e-12)


def test_a_function_whose_form_depends_on_the_chunk_shape_is_a_clear_error():
    @pyasc.operator
    def op(a):
        if a.shape[0] > 3:
            return np.var(a, axis=0)
        return np.var(a, axis=0) + 1

    x = np.ones((20, 5), np.float32)
    with pytest.raises(pyasc.UnsupportedError, match="not one var/std/argmax/argmin call"):
        op(da.from_array(x, chunks=(9, 5))).compute()  # the last chunk has 2 rows
