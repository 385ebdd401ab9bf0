"""Matrix products (MatMul, Gemm, Einsum) and convolutions (Conv, ConvTranspose)."""

from __future__ import annotations

from typing import Any, Dict, List, Sequence

import numpy as np

from ...errors import UnsupportedError
from ...nn import convolution as _conv
from ._base import _dims, _rank, _same, op, traced


@op("MatMul")
def _matmul(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    return [np.matmul(x[0], x[1])]


@op("Gemm")
def _gemm(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    p, q = x[0], x[1]
    if a.get("transA", 0):
        p = p.T
    if a.get("transB", 0):
        q = q.T
    y = np.matmul(p, q)
    alpha, beta = a.get("alpha", 1.0), a.get("beta", 1.0)
    if alpha != 1.0:
        y = y * alpha
    if len(x) > 2 and x[2] is not None:
        y = y + (x[2] * beta if beta != 1.0 else x[2])
    return [_same(y, x[0])]


def _conv_pads(a: Dict[str, Any], spatial: Sequence[int], kernel: Sequence[int], strides: Sequence[int],
               dil: Sequence[int]) -> List[int]:
    n = len(spatial)
    auto = a.get("auto_pad", "NOTSET")
    if isinstance(auto, bytes):
        auto = auto.decode()
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        pads = [0] * (2 * n)
        for i in range(n):
            out = -(-spatial[i] // strides[i])
            total = max(0, (out - 1) * strides[i] + (kernel[i] - 1) * dil[i] + 1 - spatial[i])
            small, big = total // 2, total - total // 2
            pads[i], pads[i + n] = (small, big) if auto == "SAME_UPPER" else (big, small)
        return pads
    if auto == "VALID":
        return [0] * (2 * n)
    return list(a.get("pads", [0] * (2 * n)))


@op("Conv")
def _conv_op(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t, w = x[0], x[1]
    b = x[2] if len(x) > 2 else None
    n = _rank(t) - 2
    kernel = list(a.get("kernel_shape", _dims(w)[2:]))
    strides = list(a.get("strides", [1] * n))
    dil = list(a.get("dilations", [1] * n))
    pads = _conv_pads(a, _dims(t)[2:], kernel, strides, dil)
    begin, end = pads[:n], pads[n:]
    if begin == end:
        padding: Any = tuple(begin)
    else:
        t = np.pad(t, [(0, 0), (0, 0)] + list(zip(begin, end)))
        padding = 0
    if n not in (1, 2, 3):
        raise UnsupportedError(f"Conv over {n} spatial dimensions is not supported")
    f = (_conv.conv1d, _conv.conv2d, _conv.conv3d)[n - 1]
    return [f(t, w, b, stride=tuple(strides), padding=padding, dilation=tuple(dil), groups=a.get("group", 1))]


@op("Einsum")
def _einsum(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    eq = a["equation"]
    return [np.einsum(eq.decode() if isinstance(eq, bytes) else eq, *x)]


@op("ConvTranspose")
def _conv_transpose(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t, w = x[0], x[1]
    b = x[2] if len(x) > 2 else None
    shape = _dims(t)
    n = len(shape) - 2
    groups = a.get("group", 1)
    kernel = list(a.get("kernel_shape", _dims(w)[2:]))
    strides = list(a.get("strides", [1] * n))
    dil = list(a.get("dilations", [1] * n))
    out_pad = list(a.get("output_padding", [0] * n))
    eff = [(k - 1) * d + 1 for k, d in zip(kernel, dil)]
    full = [(shape[2 + i] - 1) * strides[i] + eff[i] + out_pad[i] for i in range(n)]
    if "output_shape" in a:
        want = list(a["output_shape"])[-n:]
        total = [full[i] - want[i] for i in range(n)]
        auto = a.get("auto_pad", "NOTSET")
        pads = [0] * (2 * n)
        for i in range(n):
            if auto == "SAME_UPPER":
                pads[i], pads[n + i] = total[i] // 2, total[i] - total[i] // 2
            else:
                pads[i], pads[n + i] = total[i] - total[i] // 2, total[i] // 2
    elif a.get("auto_pad", "NOTSET") in ("SAME_UPPER", "SAME_LOWER"):
        pads = [0] * (2 * n)
        for i in range(n):
            total = max(0, full[i] - shape[2 + i] * strides[i])
            lo = total // 2 if a["auto_pad"] == "SAME_UPPER" else total - total // 2
            pads[i], pads[n + i] = lo, total - lo
    else:
        pads = list(a.get("pads", [0] * (2 * n)))
    # Zeros between the input's elements (stride), then a convolution with the flipped
    # kernel, its in and out channels swapped per group, over the input padded by eff - 1.
    for i, st in enumerate(strides):
        if st > 1:
            # Each element followed by st - 1 zeros along the axis, the trailing zeros cut.
            ax = 2 + i
            d = _dims(t)
            t = np.expand_dims(t, ax + 1)
            t = np.pad(t, [(0, 0)] * (ax + 1) + [(0, st - 1)] + [(0, 0)] * (len(d) - ax - 1))
            t = np.reshape(t, d[:ax] + (d[ax] * st,) + d[ax + 1:])
            idx = [slice(None)] * len(d)
            idx[ax] = slice(0, (d[ax] - 1) * st + 1)
            t = t[tuple(idx)]
    widths = [(0, 0), (0, 0)] + [(eff[i] - 1 - pads[i], eff[i] - 1 - pads[n + i] + out_pad[i]) for i in range(n)]
    crop = [slice(None)] * (n + 2)
    pos = []
    for i, (lo, hi) in enumerate(widths):
        crop[i] = slice(-lo if lo < 0 else 0, hi if hi < 0 else None)
        pos.append((max(lo, 0), max(hi, 0)))
    t = np.pad(t[tuple(crop)], pos)
    cin, cout_g = _dims(w)[0], _dims(w)[1]
    wg = np.reshape(w, (groups, cin // groups, cout_g) + tuple(kernel))
    wg = np.swapaxes(wg, 1, 2)
    wf = np.flip(np.reshape(wg, (groups * cout_g, cin // groups) + tuple(kernel)), tuple(range(2, n + 2)))
    if traced(wf):
        wf = wf * np.ones((), np.dtype(wf.dtype))
    else:
        wf = np.ascontiguousarray(wf)
    f = (_conv.conv1d, _conv.conv2d, _conv.conv3d)[n - 1]
    return [f(t, wf, b, stride=1, padding=0, dilation=tuple(dil), groups=groups)]
