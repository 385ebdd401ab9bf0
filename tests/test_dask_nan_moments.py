"""NaN-skipping reductions of pointwise expressions over Dask arrays, combined in Dask's reduction tree.

``nanmean``/``nanvar``/``nanstd``/``nanmax``/``nanmin`` (and ``nansum``) are checked against NumPy
in float64 on the same values (the pointwise expression evaluated by NumPy in the input's dtype),
and against pyasc's own operator on the NumPy array; the graphs are checked not to rechunk the
reduced axes and to run one partial task per chunk.
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

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
KINDS = ["nanmean", "nanvar", "nanstd", "nanmax", "nanmin"]


@pytest.fixture(autouse=True)
def _threads():
    with dask.config.set(scheduler="threads"):
        yield


def _quiet(fn, *args, **kw):
    """NumPy's result with its empty-slice and degrees-of-freedom warnings silenced."""
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return fn(*args, **kw)


def _reference(kind, v, axis, ddof, keepdims):
    """NumPy's NaN-skipping reduction of ``v`` in float64 (extremes in v's own dtype: they are exact)."""
    kw = {"ddof": ddof} if kind in ("nanvar", "nanstd") else {}
    if kind not in ("nanmax", "nanmin"):
        v = v.astype(np.float64)
    return _quiet(getattr(np, kind), v, axis=axis, keepdims=keepdims, **kw)


def _runtime_warnings(fn):
    """Return fn()'s result and the RuntimeWarning messages it gave."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = fn()
    return out, sorted(str(w.message) for w in seen if issubclass(w.category, RuntimeWarning))


def _chunks(draw, n):
    """Random chunk sizes adding up to n (sizes of 1 and one uneven tail are common)."""
    sizes = []
    left = n
    while left:
        c = draw(st.integers(1, max(1, min(left, n // 2 + 1))))
        sizes.append(c)
        left -= c
    return tuple(sizes)


def _chunk_slices(chunks, which):
    """The index of chunk ``which`` (one block index per axis) of a chunk grid."""
    out = []
    for sizes, b in zip(chunks, which):
        start = int(sum(sizes[:b]))
        out.append(slice(start, start + sizes[b]))
    return tuple(out)


@st.composite
def _nan_cases(draw):
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 9)) for _ in range(ndim))
    chunks = tuple(_chunks(draw, n) for n in shape)
    axis = draw(st.one_of(st.none(), st.integers(-ndim, ndim - 1),
                          st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True).map(tuple)))
    count = int(np.prod(shape if axis is None else [shape[a] for a in np.atleast_1d(axis)]))
    ddof = draw(st.sampled_from([0, 1, 2, count, count + 3]))
    keepdims = draw(st.booleans())
    kind = draw(st.sampled_from(KINDS))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    share = draw(st.sampled_from([0.0, 0.2, 0.6, 1.0]))  # the share of values set to NaN
    nan_column = draw(st.booleans())  # one index of the last axis all NaN
    nan_chunk = draw(st.none() | st.tuples(*[st.integers(0, len(c) - 1) for c in chunks]))
    seed = draw(st.integers(0, 2 ** 16))
    return shape, chunks, axis, ddof, keepdims, kind, dtype, share, nan_column, nan_chunk, seed


def _with_nans(shape, chunks, dtype, share, nan_column, nan_chunk, rng):
    x = rng.standard_normal(shape).astype(dtype)
    x[rng.random(shape) < share] = np.nan
    if nan_column:
        x[..., rng.integers(0, shape[-1])] = np.nan
    if nan_chunk is not None:
        x[_chunk_slices(chunks, nan_chunk)] = np.nan
    return x


def _operator(kind, axis, ddof, keepdims):
    fn = getattr(np, kind)
    kw = {"ddof": ddof} if kind in ("nanvar", "nanstd") else {}

    @pyasc.operator
    def op(a):
        return fn(a * 2 + 1, axis=axis, keepdims=keepdims, **kw)

    return op


def _check(op, kind, x, dx, axis, ddof, keepdims, tol):
    r = op(dx)
    got, dask_warned = _runtime_warnings(r.compute)
    local, local_warned = _runtime_warnings(lambda: op(x))
    want = _reference(kind, x * x.dtype.type(2) + x.dtype.type(1), axis, ddof, keepdims)
    assert got.dtype == local.dtype == x.dtype
    assert got.shape == want.shape == local.shape
    if kind in ("nanmax", "nanmin"):
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(local))
    assert dask_warned == local_warned  # as pyasc's operator on the NumPy array
    assert not _rechunks(r)
    assert _partial_tasks(r) == int(np.prod([len(c) for c in dx.chunks]))


@SETTINGS
@given(_nan_cases())
def test_nan_reductions_over_random_chunkings_match_numpy(case):
    shape, chunks, axis, ddof, keepdims, kind, dtype, share, nan_column, nan_chunk, seed = case
    x = _with_nans(shape, chunks, dtype, share, nan_column, nan_chunk, np.random.default_rng(seed))
    tol = 1e-5 if dtype == np.float32 else 1e-12
    _check(_operator(kind, axis, ddof, keepdims), kind, x, da.from_array(x, chunks=chunks), axis, ddof, keepdims,
           tol)


def _boundary_matrix(dtype):
    """23 x 7 values with NaN runs across row-chunk boundaries, an all-NaN column and an all-NaN chunk."""
    rng = np.random.default_rng(17)
    x = (3 + rng.standard_normal((23, 7))).astype(dtype)
    chunks = ((1, 5, 1, 9, 7), (3, 1, 3))
    x[4:8, 0] = np.nan  # runs through the chunks of 5 and 1 rows into the chunk of 9
    x[15:17, 4] = np.nan  # the last row of one chunk and the first of the next
    x[:, 2] = np.nan  # a whole column
    x[1:6, 3] = np.nan  # the chunk of rows 1..5, column 3 (its own column chunk): all NaN
    x[22, 6] = np.nan  # the last value
    x[0, 5] = np.nan  # the chunk of one row
    return x, chunks


#: Each kind with the ddof values it takes (n is 23 along axis 0, 7 along axis 1, 161 over both).
KIND_DDOF = [(k, 0) for k in KINDS] + [(k, d) for k in ("nanvar", "nanstd") for d in (1, 19, 40, 200)]


@pytest.mark.parametrize("kind,ddof", KIND_DDOF)
@pytest.mark.parametrize("axis", [0, 1, None, (0, 1)])
def test_nan_runs_across_chunk_boundaries(kind, ddof, axis):
    x, chunks = _boundary_matrix(np.float32)
    _check(_operator(kind, axis, ddof, False), kind, x, da.from_array(x, chunks=chunks), axis, ddof, False, 2e-6)


@pytest.mark.parametrize("kind", KINDS)
def test_keepdims_and_float64_match_numpy_closely(kind):
    x, chunks = _boundary_matrix(np.float64)
    _check(_operator(kind, 0, 1, True), kind, x, da.from_array(x, chunks=chunks), 0, 1, True, 1e-13)


@pytest.mark.parametrize("axis", [0, None])
def test_float32_nanvar_with_a_large_mean_keeps_float32_precision(axis):
    # 1e4 + N(0, 1) with a tenth of the values NaN: a one-pass float32 variance loses most digits.
    rng = np.random.default_rng(11)
    x = (1e4 + rng.standard_normal((6000, 6))).astype(np.float32)
    x[rng.random(x.shape) < 0.1] = np.nan

    @pyasc.operator
    def op(a):
        return np.nanvar(a, axis=axis, ddof=1)

    r = op(da.from_array(x, chunks=(77, 4)))
    np.testing.assert_allclose(r.compute(), np.nanvar(x.astype(np.float64), axis=axis, ddof=1), rtol=2e-6)
    assert not _rechunks(r)


def test_broadcast_expression_and_float64_dtype():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((50, 12)).astype(np.float32)
    y = rng.standard_normal(12).astype(np.float32)
    x[rng.random(x.shape) < 0.3] = np.nan
    y[4] = np.nan  # a whole column of the product is NaN

    @pyasc.operator
    def op(a, b):
        return np.nanstd(a * b + 1, axis=0, ddof=1)

    dx = da.from_array(x, chunks=((1, 9, 13, 27), (5, 7)))
    r = op(dx, da.from_array(y, chunks=((5, 7),)))
    want = _reference("nanstd", x * y + np.float32(1), 0, 1, False)
    np.testing.assert_allclose(r.compute(), want, rtol=1e-5)
    assert not _rechunks(r) and _partial_tasks(r) == 8

    @pyasc.operator
    def mean64(a, b):
        return np.nanmean(a - b, axis=(0, 1), dtype=np.float64, keepdims=True)

    want = np.nanmean((x - y).astype(np.float64), axis=(0, 1), keepdims=True)
    r = mean64(dx, da.from_array(y, chunks=((5, 7),)))
    assert r.dtype == np.float64
    np.testing.assert_allclose(r.compute(), want, rtol=1e-12)
    assert not _rechunks(r) and _partial_tasks(r) == 8
    # A NumPy second argument broadcasts too (as one chunk that Dask cuts to the first's chunks).
    r = mean64(dx, y)
    np.testing.assert_allclose(r.compute(), want, rtol=1e-12)
    assert _partial_tasks(r) == 8


def test_chunks_of_sizes_dask_learns_when_computing():
    # Boolean indexing gives chunks of unknown size: the counts come from the values themselves.
    rng = np.random.default_rng(6)
    x = rng.standard_normal(40)
    x[[3, 9, 10, 11, 30]] = np.nan
    dx = da.from_array(x, chunks=7)
    picked = dx[dx != 0.5]  # keeps every value (NaN too), sizes unknown until computed
    assert np.isnan(picked.shape[0])
    for kind in ("nanmean", "nanvar", "nanmax"):
        r = _operator(kind, 0, 1, False)(picked)
        assert not _rechunks(r)
        np.testing.assert_allclose(r.compute(), _reference(kind, x * 2 + 1, 0, 1, False), rtol=1e-12)


def test_nansum_combines_in_the_tree_too():
    x, chunks = _boundary_matrix(np.float32)

    @pyasc.operator
    def op(a):
        return np.nansum(a * 2 + 1, axis=0)

    r = op(da.from_array(x, chunks=chunks))
    assert not _rechunks(r)
    np.testing.assert_allclose(r.compute(), np.nansum((x * np.float32(2) + np.float32(1)).astype(np.float64), axis=0),
                               rtol=1e-6)


def test_integer_operands_reduce_as_their_plain_forms():
    # Integers hold no NaN: nanvar is var (inf where ddof >= n, as NumPy), nanmean is mean.
    x = np.random.default_rng(4).integers(-50, 50, (17, 5)).astype(np.int32)
    dx = da.from_array(x, chunks=((4, 1, 12), (2, 3)))
    for kind, ddof in (("nanvar", 1), ("nanstd", 17), ("nanmean", 0), ("nanmax", 0)):
        r = _operator(kind, 0, ddof, False)(dx)
        assert not _rechunks(r)
        kw = {"ddof": ddof} if kind in ("nanvar", "nanstd") else {}
        want = _quiet(getattr(np, kind), x * 2 + 1, axis=0, **kw)
        np.testing.assert_allclose(r.compute(), want, rtol=1e-12)


def test_nanargmax_is_refused_as_pyasc_refuses_it_on_numpy_arrays():
    @pyasc.operator
    def op(a):
        return np.nanargmax(a, axis=0)

    x = np.ones((6, 3), np.float32)
    with pytest.raises(pyasc.UnsupportedError, match="nanargmax"):
        op(x)
    with pytest.raises(pyasc.UnsupportedError, match="nanargmax"):
        op(da.from_array(x, chunks=(2, 3)))


def _nanmean_plus_one(x):
    return np.nanmean(x, axis=0) + 1


def _nan_range(x):
    return np.nanmax(x, axis=0) - np.nanmin(x, axis=0)


def _nanvar_of_centred(x):
    return np.nanvar(x - np.nanmean(x, axis=0, keepdims=True), axis=0)


COL = np.linspace(1, 2, 6).astype(np.float32)


def _nanstd_of_captured(x):
    return np.nanstd(x * COL, axis=0)


@pytest.mark.parametrize("fn", [_nanmean_plus_one, _nan_range, _nanvar_of_centred, _nanstd_of_captured])
def test_other_uses_keep_the_exact_coupled_path(fn):
    rng = np.random.default_rng(1)
    x = (100 + rng.standard_normal((30, 6))).astype(np.float32)
    x[rng.random(x.shape) < 0.2] = np.nan
    x[:, 1] = np.nan
    op = pyasc.operator(fn)
    r = op(da.from_array(x, chunks=(7, 6)))
    assert _rechunks(r)  # the reduced axis is rechunked to one chunk, as before
    got = r.compute()
    np.testing.assert_allclose(got, op(x), rtol=1e-6)
    np.testing.assert_allclose(got, _quiet(fn, x.astype(np.float64)), rtol=1e-4)


def test_geared_operator_nanvar_runs_in_the_tree():
    @pyasc.operator(dynamic_shape=True, gears={0: [8, 16, 32]})
    def op(a):
        return np.nanvar(a * 2, axis=0, ddof=1)

    x = np.random.default_rng(4).standard_normal((29, 3)).astype(np.float32)
    x[5:14, 1] = np.nan
    r = op(da.from_array(x, chunks=(6, 3)))
    assert not _rechunks(r)
    np.testing.assert_allclose(r.compute(), _reference("nanvar", x * np.float32(2), 0, 1, False), rtol=1e-5)


def test_partials_pickle_with_the_operator_by_source():
    import pickle

    @pyasc.operator
    def local_nanmean(a):
        return np.nanmean(a + 1, axis=1)

    x = np.arange(24, dtype=np.float64).reshape(4, 6)
    x[1, 2:] = np.nan
    r = local_nanmean(da.from_array(x, chunks=(2, 4)))
    for layer in r.dask.layers.values():
        for key in layer:
            pickle.loads(pickle.dumps(layer[key]))
    np.testing.assert_allclose(r.compute(), np.nanmean(x + 1, axis=1), rtol=1e-12)


@pytest.mark.parametrize("kind", KINDS)
def test_a_chunk_of_size_zero_adds_nothing(kind):
    x = np.arange(12, dtype=np.float32) - 4
    x[[3, 4]] = np.nan  # across the boundary that the empty chunk sits on
    dx = da.from_array(x, chunks=((4, 0, 8),))
    _check(_operator(kind, 0, 1, False), kind, x, dx, 0, 1, False, 1e-6)


def test_an_empty_reduced_axis_is_what_pyasc_gives_on_numpy_arrays():
    x = np.zeros((0, 3), np.float32)
    dx = da.from_array(x, chunks=(1, 2))
    for kind in ("nanmean", "nanvar", "nanstd"):  # NaN, as NumPy (which warns), pyasc without a warning
        op = _operator(kind, 0, 0, False)
        got, warned = _runtime_warnings(op(dx).compute)
        np.testing.assert_array_equal(got, _reference(kind, x, 0, 0, False))
        np.testing.assert_array_equal(got, op(x))
        assert not warned
    for kind in ("nanmax", "nanmin"):  # no identity: pyasc's error, as NumPy raises
        op = _operator(kind, 0, 0, False)
        with pytest.raises(pyasc.ShapeError, match="empty axis"):
            op(x)
        with pytest.raises(pyasc.ShapeError, match="empty axis"):
            op(dx).compute()
