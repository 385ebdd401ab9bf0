"""Convolution, pooling and pixel shuffle with PyTorch's conventions.

``conv1d conv2d conv3d max_pool2d avg_pool2d pixel_shuffle``. Inputs are channels-first
(``NCW``, ``NCHW``, ``NCDHW``) and weights ``(O, C / groups, *kernel)``. A convolution is one
library kernel (an implicit GEMM); its bias and any elementwise ops applied to its result
(``np.maximum(conv2d(x, w, b), 0)``) run in that kernel as epilogues. Pooling is a library
routine (integer max pooling: strided views of the padded input combined by one elementwise
kernel), and so is ``pixel_shuffle`` (each output row interleaves ``r`` input rows). Every
function works on NumPy arrays (a cached one-op operator) and on traced tensors inside
operators. 16-bit floats compute in float32 and are rounded once where stored.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple, Union

import numpy as np

from .. import _pyasc
from ..api import movement
from ..core import _eager
from ..core._axes import err, is_int
from ..errors import DTypeError, InvalidArgumentError, ShapeError

__all__ = ["conv1d", "conv2d", "conv3d", "max_pool2d", "avg_pool2d", "pixel_shuffle"]

IntOrTuple = Union[int, Sequence[int]]


def _tuple(name: str, what: str, v: Any, n: int, least: int) -> Tuple[int, ...]:
    """``v`` (an int or ``n`` ints, each at least ``least``) as a tuple of ``n`` ints."""
    items = tuple(v) if isinstance(v, (tuple, list)) else (v,) * n
    if len(items) != n or not all(is_int(i) for i in items):
        raise err(InvalidArgumentError, f"{name}: {what} must be an int or {n} ints, not {v!r}")
    if any(int(i) < least for i in items):
        raise err(InvalidArgumentError, f"{name}: {what} must be at least {least}, not {v!r}")
    return tuple(int(i) for i in items)


def _is_float(dtype: Any) -> bool:
    return np.dtype(dtype).kind == "f" or str(np.dtype(dtype)) == "bfloat16"


def _geometry(name: str, sd: int, x: Any, w: Any, bias: Any, stride: Any, padding: Any, dilation: Any,
              groups: Any) -> Tuple[Tuple[int, ...], List[Tuple[int, int]], Tuple[int, ...], int]:
    """Check a convolution's arguments; return its strides, padding, dilation and groups."""
    xs, ws = tuple(x.shape), tuple(w.shape)
    if len(xs) != sd + 2:
        raise err(ShapeError, f"{name}: the input must have rank {sd + 2} (N, C, {sd} spatial dims), not shape {xs}")
    if len(ws) != sd + 2:
        raise err(ShapeError, f"{name}: the weight must have rank {sd + 2} (O, C/groups, {sd} kernel dims), "
                              f"not shape {ws}")
    for a, role in ((x, "input"), (w, "weight")):
        if not _is_float(a.dtype):
            raise err(DTypeError, f"{name}: the {role} has dtype {a.dtype}; convolutions take float dtypes")
    if not is_int(groups) or int(groups) < 1:
        raise err(InvalidArgumentError, f"{name}: groups must be a positive int, not {groups!r}")
    g = int(groups)
    c, o = xs[1], ws[0]
    if c % g or o % g:
        raise err(ShapeError, f"{name}: groups={g} must divide the input channels ({c}) and the output "
                              f"channels ({o})")
    if ws[1] * g != c:
        raise err(ShapeError, f"{name}: the input has {c} channels but the weight of shape {ws} expects "
                              f"{ws[1] * g} ({ws[1]} per group x groups={g})")
    if bias is not None and tuple(bias.shape) != (o,):
        raise err(ShapeError, f"{name}: the bias must have shape ({o},), not {tuple(bias.shape)}")
    st = _tuple(name, "stride", stride, sd, 1)
    dil = _tuple(name, "dilation", dilation, sd, 1)
    kernel = ws[2:]
    if isinstance(padding, str):
        if padding == "valid":
            pads = [(0, 0)] * sd
        elif padding == "same":
            if any(s != 1 for s in st):
                raise err(InvalidArgumentError, f"{name}: padding='same' is not supported for strided convolutions")
            pads = []
            for k, d in zip(kernel, dil):
                total = d * (k - 1)
                pads.append((total // 2, total - total // 2))
        else:
            raise err(InvalidArgumentError, f"{name}: padding must be 'valid', 'same', an int or {sd} ints, "
                                            f"not {padding!r}")
    else:
        pads = [(p, p) for p in _tuple(name, "padding", padding, sd, 0)]
    for i in range(sd):
        padded = xs[2 + i] + pads[i][0] + pads[i][1]
        span = dil[i] * (kernel[i] - 1) + 1
        if kernel[i] < 1 or span > padded:
            raise err(ShapeError, f"{name}: the kernel (extent {span} along spatial dim {i}, dilation "
                                  f"included) is larger than the padded input ({padded}); input {xs}, weight {ws}")
    return st, pads, dil, g


def _conv(name: str, sd: int, x: Any, w: Any, bias: Any, stride: Any, padding: Any, dilation: Any,
          groups: Any) -> Any:
    x, w, bias = _array(x), _array(w), _array(bias)
    st, pads, dil, g = _geometry(name, sd, x, w, bias, stride, padding, dilation, groups)
    params = dict(st=st, pads=tuple(pads), dil=dil, g=g)
    arrays = [x, w] if bias is None else [x, w, bias]
    return _eager.run(name, _traced_conv, arrays, **params)


def _traced_conv(x: Any, w: Any, b: Any = None, *, st: Tuple[int, ...], pads: Tuple[Tuple[int, int], ...],
                 dil: Tuple[int, ...], g: int) -> Any:
    ref = x if _eager.traced(x) else w
    y = _pyasc.apply_conv(_eager.lift(ref, x), _eager.lift(ref, w), list(st), list(pads), list(dil), g)
    if b is None:
        return y
    b = _eager.lift(y, b)
    return y + movement.reshape(b, (b.shape[0],) + (1,) * len(st))


def conv1d(x: Any, w: Any, bias: Optional[Any] = None, stride: IntOrTuple = 1, padding: Any = 0,
           dilation: IntOrTuple = 1, groups: int = 1) -> Any:
    """1-D convolution of ``x`` ``(N, C, W)`` with ``w`` ``(O, C/groups, K)`` (``torch.nn.functional.conv1d``).

    ``padding`` is an int, a 1-tuple, ``"valid"`` or ``"same"``; ``bias`` has shape ``(O,)``.
    """
    return _conv("conv1d", 1, x, w, bias, stride, padding, dilation, groups)


def conv2d(x: Any, w: Any, bias: Optional[Any] = None, stride: IntOrTuple = 1, padding: Any = 0,
           dilation: IntOrTuple = 1, groups: int = 1) -> Any:
    """2-D convolution of ``x`` ``(N, C, H, W)`` with ``w`` ``(O, C/groups, KH, KW)`` (``torch.nn.functional.conv2d``).

    ``stride``, ``padding`` and ``dilation`` are an int or one per spatial dim; ``padding`` may
    also be ``"valid"`` or ``"same"`` (stride 1). ``groups=C`` with ``O = C*m`` is depthwise.
    The bias and elementwise ops applied to the result run in the convolution's kernel.
    """
    return _conv("conv2d", 2, x, w, bias, stride, padding, dilation, groups)


def conv3d(x: Any, w: Any, bias: Optional[Any] = None, stride: IntOrTuple = 1, padding: Any = 0,
           dilation: IntOrTuple = 1, groups: int = 1) -> Any:
    """3-D convolution of ``x`` ``(N, C, D, H, W)`` with ``w`` ``(O, C/groups, KD, KH, KW)`` (``torch`` conventions)."""
    return _conv("conv3d", 3, x, w, bias, stride, padding, dilation, groups)


def _pool_geometry(name: str, x: Any, kernel_size: Any, stride: Any, padding: Any
                   ) -> Tuple[Tuple[int, int], Tuple[int, int], Tuple[int, int], Tuple[int, int]]:
    if x.ndim not in (3, 4):
        raise err(ShapeError, f"{name}: the input must have rank 3 (C, H, W) or 4 (N, C, H, W), not shape "
                              f"{tuple(x.shape)}")
    k = _tuple(name, "kernel_size", kernel_size, 2, 1)
    s = k if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0) else \
        _tuple(name, "stride", stride, 2, 1)
    p = _tuple(name, "padding", padding, 2, 0)
    if any(pi > ki // 2 for pi, ki in zip(p, k)):
        raise err(InvalidArgumentError, f"{name}: padding {p} must be at most half the kernel size {k}")
    hw = tuple(x.shape[-2:])
    out = []
    for i in range(2):
        if hw[i] + 2 * p[i] < k[i]:
            raise err(ShapeError, f"{name}: the kernel {k} is larger than the padded input "
                                  f"({hw[i] + 2 * p[i]} along spatial dim {i}); input {tuple(x.shape)}")
        out.append((hw[i] + 2 * p[i] - k[i]) // s[i] + 1)
    return k, s, p, (out[0], out[1])


def _traced_pool(x: Any, *, kind: str, k: Tuple[int, int], s: Tuple[int, int], p: Tuple[int, int],
                 out: Tuple[int, int]) -> Any:
    if _is_float(x.dtype):
        return _pyasc.apply_pool(x, kind, k, s, p)
    # Integer max pooling: the taps as strided views of the padded input, one elementwise max.
    if any(p):
        dt = np.dtype(x.dtype)
        fill = False if dt == np.bool_ else np.iinfo(dt).min
        widths = [(0, 0)] * (x.ndim - 2) + [(p[0], p[0]), (p[1], p[1])]
        x = movement.pad(x, widths, "constant", fill)
    acc = None
    for i in range(k[0]):
        for j in range(k[1]):
            tap = x[..., i:i + s[0] * (out[0] - 1) + 1:s[0], j:j + s[1] * (out[1] - 1) + 1:s[1]]
            acc = tap if acc is None else np.maximum(acc, tap)
    return acc


def _array(x: Any) -> Any:
    """``x`` itself when it is traced, a NumPy array or a DeviceArray, else ``np.asarray(x)``."""
    if x is None or _eager.traced(x) or isinstance(x, (np.ndarray, _pyasc.DeviceArray)):
        return x
    return np.asarray(x)


def _pool(name: str, kind: str, x: Any, kernel_size: Any, stride: Any, padding: Any) -> Any:
    x = _array(x)
    k, s, p, out = _pool_geometry(name, x, kernel_size, stride, padding)
    if kind == "avg" and not _is_float(x.dtype):
        raise err(DTypeError, f"{name}: the input has dtype {x.dtype}; average pooling takes float dtypes")
    return _eager.run(name, _traced_pool, [x], kind=kind, k=k, s=s, p=p, out=out)


def max_pool2d(x: Any, kernel_size: IntOrTuple, stride: Optional[IntOrTuple] = None,
               padding: IntOrTuple = 0) -> Any:
    """Maximum over ``kernel_size`` windows of the last two axes (``torch.nn.functional.max_pool2d``).

    ``stride`` defaults to ``kernel_size``; ``padding`` (at most half the kernel) adds ``-inf``.
    """
    return _pool("max_pool2d", "max", x, kernel_size, stride, padding)


def avg_pool2d(x: Any, kernel_size: IntOrTuple, stride: Optional[IntOrTuple] = None,
               padding: IntOrTuple = 0) -> Any:
    """Mean over ``kernel_size`` windows of the last two axes (``torch.nn.functional.avg_pool2d``).

    ``stride`` defaults to ``kernel_size``; padding zeros count in the mean (torch's default
    ``count_include_pad=True``), so every window divides by ``kh * kw``.
    """
    return _pool("avg_pool2d", "avg", x, kernel_size, stride, padding)


def _traced_shuffle(x: Any, *, r: int) -> Any:
    if isinstance(x, _pyasc.Tensor):
        return _pyasc.apply_pixel_shuffle(x, r)
    # A complex value: its real and imaginary parts shuffled alike.
    from ..core._complex import ComplexTensor

    return ComplexTensor(_traced_shuffle(x.real, r=r), _traced_shuffle(x.imag, r=r))


def pixel_shuffle(x: Any, upscale_factor: int) -> Any:
    """``(*, C*r*r, H, W)`` to ``(*, C, H*r, W*r)`` (``torch.nn.functional.pixel_shuffle``)."""
    x = _array(x)
    if not is_int(upscale_factor) or int(upscale_factor) < 1:
        raise err(InvalidArgumentError, f"pixel_shuffle: upscale_factor must be a positive int, not "
                                        f"{upscale_factor!r}")
    r = int(upscale_factor)
    if x.ndim < 3:
        raise err(ShapeError, f"pixel_shuffle: the input must have rank 3 or more, not shape {tuple(x.shape)}")
    if x.shape[-3] % (r * r):
        raise err(ShapeError, f"pixel_shuffle: channels ({x.shape[-3]}) must be divisible by "
                              f"upscale_factor**2 ({r * r})")
    return _eager.run("pixel_shuffle", _traced_shuffle, [x], r=r)
