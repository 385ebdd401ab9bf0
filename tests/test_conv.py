"""pyasc.conv1d/conv2d/conv3d against ``jax.lax.conv_general_dilated`` in float64, eager and
traced, every float dtype, fused epilogues, and errors."""

from __future__ import annotations

import inspect

import ml_dtypes
import numpy as np
import pyasc
import pytest
from conftest import line_of

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
from jax import lax  # noqa: E402

DN = {1: ("NCH", "OIH", "NCH"), 2: ("NCHW", "OIHW", "NCHW"), 3: ("NCDHW", "OIDHW", "NCDHW")}


def _tuple(v, sd):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * sd


def reference(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """The convolution in float64 by JAX, with torch's padding conventions."""
    sd = x.ndim - 2
    dil = _tuple(dilation, sd)
    if padding == "valid":
        pads = [(0, 0)] * sd
    elif padding == "same":
        pads = [(d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2) for k, d in zip(w.shape[2:], dil)]
    else:
        pads = [(p, p) for p in _tuple(padding, sd)]
    out = lax.conv_general_dilated(
        np.asarray(x, np.float64), np.asarray(w, np.float64), _tuple(stride, sd), pads,
        rhs_dilation=dil, dimension_numbers=DN[sd], feature_group_count=groups)
    out = np.asarray(out)
    if b is not None:
        out = out + np.asarray(b, np.float64).reshape((-1,) + (1,) * sd)
    return out


CONV = {1: pyasc.conv1d, 2: pyasc.conv2d, 3: pyasc.conv3d}

# (input shape, weight shape, keyword arguments)
CASES = [
    ((2, 3, 17), (4, 3, 3), dict(stride=2, padding=1)),
    ((1, 4, 31), (6, 2, 5), dict(dilation=3, padding="same", groups=2)),
    ((3, 5, 9), (5, 1, 4), dict(groups=5, padding="valid")),
    ((1, 3, 8, 8), (4, 3, 3, 3), dict(padding=1)),
    ((2, 3, 13, 11), (8, 3, 3, 3), dict(stride=(2, 1), padding=(1, 0))),
    ((1, 4, 15, 9), (4, 4, 3, 2), dict(padding="same")),
    ((1, 4, 15, 9), (4, 4, 4, 4), dict(padding="same", dilation=2)),
    ((2, 6, 10, 10), (9, 2, 3, 3), dict(groups=3, dilation=(2, 1), padding=2)),
    ((1, 8, 12, 12), (8, 1, 3, 3), dict(groups=8, padding=1)),
    ((1, 8, 12, 12), (16, 1, 5, 5), dict(groups=8, stride=3, padding=2)),
    ((4, 16, 7, 7), (12, 16, 1, 1), dict()),
    ((1, 3, 5, 5), (2, 3, 5, 5), dict()),
    ((1, 2, 1, 9), (3, 2, 1, 3), dict(padding=(0, 4))),
    ((2, 2, 5, 6, 7), (3, 2, 3, 2, 3), dict(padding=1)),
    ((1, 4, 6, 7, 5), (4, 2, 2, 3, 2), dict(stride=2, groups=2, dilation=(1, 2, 1))),
]


@pytest.mark.parametrize("xshape,wshape,kw", CASES)
@pytest.mark.parametrize("bias", [False, True])
def test_conv_matches_jax_eagerly(xshape, wshape, kw, bias):
    rng = np.random.default_rng(abs(hash((xshape, wshape))) % 2**32)
    x, w = rng.standard_normal(xshape), rng.standard_normal(wshape)
    b = rng.standard_normal(wshape[0]) if bias else None
    want = reference(x, w, b, **kw)
    conv = CONV[len(xshape) - 2]
    got = conv(x, w, b, **kw)
    assert got.dtype == np.float64 and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    got32 = conv(x.astype(np.float32), w.astype(np.float32), None if b is None else b.astype(np.float32), **kw)
    assert got32.dtype == np.float32
    np.testing.assert_allclose(got32, want, rtol=1e-5, atol=1e-5 * np.sqrt(w[0].size))


def test_conv_inside_an_operator_with_views_and_epilogue_is_one_kernel():
    rng = np.random.default_rng(1)
    base = rng.standard_normal((2, 6, 20, 22)).astype(np.float32)
    x = base[:, ::2, 1:19, ::2]  # a non-contiguous view
    w = rng.standard_normal((5, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(5).astype(np.float32)
    before = (x.copy(), w.copy(), b.copy())

    @pyasc.operator
    def block(x, w, b):
        return np.maximum(pyasc.conv2d(x, w, b, padding=1), 0) * 2.0

    got = block(x, w, b)
    want = np.maximum(reference(x, w, b, padding=1), 0) * 2.0
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    kernels = block.get_compiled_op(x, w, b).kernels()
    assert len(kernels) == 1 and kernels[0]["fused_ops"] >= 4, kernels
    for a, a0 in zip((x, w, b), before):
        np.testing.assert_array_equal(a, a0)


def test_weights_captured_from_numpy_inside_an_operator():
    rng = np.random.default_rng(2)
    w = rng.standard_normal((4, 3, 3)).astype(np.float64)
    x = rng.standard_normal((2, 3, 40))
    op = pyasc.operator(lambda t: pyasc.conv1d(t, w, stride=2, padding="valid"))
    np.testing.assert_allclose(op(x), reference(x, w, stride=2), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_sixteen_bit_convolutions_compute_in_float32_and_round_once(dtype):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 4, 9, 9)).astype(dtype)
    w = rng.standard_normal((6, 2, 3, 3)).astype(dtype)
    b = rng.standard_normal(6).astype(dtype)
    got = pyasc.conv2d(x, w, b, padding=1, groups=2)
    assert got.dtype == np.dtype(dtype)
    # float32 arithmetic on the 16-bit values, one rounding to the 16-bit dtype.
    want = reference(x.astype(np.float64), w.astype(np.float64), b.astype(np.float64), padding=1, groups=2)
    want16 = want.astype(np.float32).astype(dtype).astype(np.float64)
    eps = float(np.finfo(dtype).eps)
    np.testing.assert_allclose(got.astype(np.float64), want16, rtol=eps, atol=1e-5 * np.abs(want).max())


def test_large_image_runs_in_blocks():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((1, 16, 96, 120)).astype(np.float32)
    w = rng.standard_normal((8, 16, 3, 3)).astype(np.float32)
    got = pyasc.conv2d(x, w, padding=1)
    np.testing.assert_allclose(got, reference(x, w, padding=1), rtol=1e-4, atol=1e-4)


def _raises(cls, fn, text):
    with pytest.raises(cls) as e:
        fn()
    assert e.value.lineno == line_of(fn, text), (e.value.lineno, str(e.value))
    return str(e.value)


def test_bad_arguments_are_typed_errors_naming_the_line():
    x, w = np.ones((1, 4, 8, 8)), np.ones((6, 4, 3, 3))

    def rank():
        return pyasc.conv2d(np.ones((4, 8, 8)), w)  # rank

    def channels():
        return pyasc.conv2d(x, np.ones((6, 3, 3, 3)))  # channels

    def groups():
        return pyasc.conv2d(x, np.ones((6, 2, 3, 3)), groups=3)  # groups

    def kernel():
        return pyasc.conv2d(x, np.ones((6, 4, 9, 3)))  # kernel

    def traced_kernel():
        return pyasc.operator(lambda t: pyasc.conv2d(t, np.ones((6, 4, 5, 5)), dilation=2))(x)  # traced

    assert "rank 4" in _raises(pyasc.ShapeError, rank, "# rank")
    assert "4 channels" in _raises(pyasc.ShapeError, channels, "# channels")
    assert "groups=3" in _raises(pyasc.ShapeError, groups, "# groups")
    assert "larger than the padded input" in _raises(pyasc.ShapeError, kernel, "# kernel")
    assert "larger" in _raises(pyasc.ShapeError, traced_kernel, "# traced")
    with pytest.raises(pyasc.InvalidArgumentError, match="strided"):
        pyasc.conv2d(x, w, stride=2, padding="same")
    with pytest.raises(pyasc.DTypeError):
        pyasc.conv2d(x.astype(np.int32), w)
    with pytest.raises(pyasc.ShapeError, match="bias"):
        pyasc.conv2d(x, w, np.ones(5))
    assert inspect.isfunction(pyasc.conv3d)


@pytest.mark.parametrize("wshape,kw", [((6, 4, 3, 3), dict(padding=1, stride=(1, 2))), ((6, 4, 1, 1), dict())])
def test_channels_last_and_reversed_views_are_read_in_place(wshape, kw):
    rng = np.random.default_rng(5)
    nhwc = rng.standard_normal((2, 9, 10, 4))
    w = rng.standard_normal(wshape)
    for x in (nhwc.transpose(0, 3, 1, 2), nhwc.transpose(0, 3, 1, 2)[:, ::-1, ::-1, ::-1]):
        before = x.copy()
        np.testing.assert_allclose(pyasc.conv2d(x, w, **kw), reference(x, w, **kw), rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(x, before)


def test_device_arrays_in_device_arrays_out():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((1, 2, 7, 7)).astype(np.float32)
    w = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    got = pyasc.conv2d(pyasc.to_device(x), pyasc.to_device(w), padding="same")
    assert isinstance(got, pyasc.DeviceArray)
    np.testing.assert_allclose(got.numpy(), reference(x, w, padding="same"), rtol=1e-5, atol=1e-5)


def test_conv_epilogue_with_a_large_output():
    rng = np.random.default_rng(22)
    x = rng.random((2, 3, 256, 256)).astype(np.float32)  # a 32 MiB output
    w = (rng.standard_normal((64, 3, 3, 3)) * 0.3).astype(np.float32)
    b = (rng.standard_normal(64) * 0.1).astype(np.float32)
    got = pyasc.operator(lambda x, w, b: np.maximum(pyasc.conv2d(x, w, b, padding=1), 0.0))(x, w, b)
    ref = pyasc.operator(lambda x, w: pyasc.conv2d(x, w, padding=1))(x.astype(np.float64), w.astype(np.float64))
    np.testing.assert_allclose(got, np.maximum(ref + b.reshape(64, 1, 1), 0.0), rtol=1e-5, atol=1e-5)
