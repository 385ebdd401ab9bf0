"""Stencil operators on Dask arrays: every boundary mode against NumPy references and the whole-array call."""

import numpy as np
import pyasc
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

RNG = np.random.default_rng(11)
_PAD = {"constant": "constant", "nearest": "edge", "reflect": "symmetric", "wrap": "wrap"}


@pytest.fixture(autouse=True)
def _threads():
    with dask.config.set(scheduler="threads"):
        yield


def _make(boundary):
    @pyasc.stencil_operator(boundary=boundary, cval=0.5)
    def jacobi(u):
        return 0.25 * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1])

    return jacobi


def _step64(u, boundary, cval=0.5):
    """One Jacobi step in float64 with NumPy padding, the boundary modes' documented meaning."""
    inner = lambda p: 0.25 * (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:])  # noqa: E731
    if boundary in _PAD:
        kw = {"constant_values": cval} if boundary == "constant" else {}
        return inner(np.pad(u, 1, mode=_PAD[boundary], **kw))
    core = inner(u)
    if boundary == "valid":
        return core
    out = np.full(u.shape, cval) if boundary == "fill" else u.copy()
    out[1:-1, 1:-1] = core
    return out


@pytest.mark.parametrize("boundary", ["fill", "constant", "nearest", "reflect", "wrap", "skip", "valid"])
def test_one_step_every_boundary(boundary):
    op = _make(boundary)
    u = RNG.standard_normal((90, 70)).astype(np.float32)
    out = op(da.from_array(u, chunks=(25, 30)))
    assert isinstance(out, da.Array)
    got = out.compute()
    np.testing.assert_allclose(got, _step64(u.astype(np.float64), boundary), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got, op(u), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("boundary", ["fill", "nearest", "wrap", "reflect"])
def test_iterations_split_into_halo_exchanges(boundary):
    from pyasc.dask._stencil import call

    op = _make(boundary)
    u = RNG.standard_normal((64, 60)).astype(np.float32)
    ref = u.astype(np.float64)
    for _ in range(9):
        ref = _step64(ref, boundary)
    du = da.from_array(u, chunks=(16, 20))
    # 9 steps as exchanges of 4, 4 and 1 steps (depth 4, 4 and 1 cells).
    out = call(op, (du,), {}, 9, None, steps_per_exchange=4)
    np.testing.assert_allclose(out.compute(), ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(op(du, iterations=9).compute(), op(u, iterations=9), rtol=1e-6, atol=1e-6)


def test_fill_border_only_at_the_global_border():
    op = _make("fill")
    u = np.ones((40, 40), np.float32)
    out = op(da.from_array(u, chunks=10)).compute()
    assert np.all(out[0] == 0.5) and np.all(out[:, -1] == 0.5)
    assert np.all(out[1:-1, 1:-1] == 1.0)  # block edges inside the grid are computed, not filled


def test_wide_halo_and_second_field():
    @pyasc.stencil_operator(boundary="nearest")
    def blur(u, w):
        return (u[-2] + u[-1] + u[0] + u[1] + u[2]) * w[0] / 5

    u = RNG.standard_normal(1000).astype(np.float32)
    w = RNG.random(1000).astype(np.float32)
    out = blur(da.from_array(u, chunks=130), da.from_array(w, chunks=100)).compute()
    p = np.pad(u.astype(np.float64), 2, mode="edge")
    ref = sum(p[i:i + 1000] for i in range(5)) * w / 5
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)


def test_iterations_with_valid_is_an_error_and_out_is_refused():
    du = da.from_array(np.ones((10, 10), np.float32), chunks=5)
    with pytest.raises(pyasc.InvalidArgumentError, match="valid"):
        _make("valid")(du, iterations=2)
    with pytest.raises(pyasc.InvalidArgumentError, match="out="):
        _make("fill")(du, out=np.empty((10, 10), np.float32))
