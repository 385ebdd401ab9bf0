"""ONNX operators as pyasc ops: one function per operator type.

Each function takes the node's inputs (NumPy arrays for constants, traced tensors inside the
model's operator; ``None`` for an omitted optional input), its attributes as a dict and the
model's opset for the default domain, and returns the node's outputs as a list. The bodies use
NumPy functions and pyasc's NN ops, which work on both: so the same table folds constant
subgraphs at load time (on arrays) and builds the model's trace (on traced tensors), where
NumPy calls dispatch to pyasc and fuse.
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

from .. import _pyasc
from ..errors import UnsupportedError
from ..nn import convolution as _conv

Op = Callable[[List[Any], Dict[str, Any], int], List[Any]]
OPS: Dict[str, Op] = {}


def op(*names: str) -> Callable[[Op], Op]:
    """Register a function for the operator types ``names``."""

    def put(f: Op) -> Op:
        for n in names:
            OPS[n] = f
        return f

    return put


def traced(x: Any) -> bool:
    """Return whether ``x`` is a traced tensor (a value of the model's trace)."""
    return type(x) is _pyasc.Tensor


def ints(x: Any) -> List[int]:
    """Return a constant integer input (shapes, axes, pads) as a list; it must be known at load time."""
    if traced(x):
        raise UnsupportedError("a shape, axes or pads input computed from the model's inputs is not supported; "
                               "it must be a constant or come from static shapes")
    return [int(v) for v in np.asarray(x).reshape(-1)]


def join(const: Any, value: Any) -> Any:
    """Return the array ``const`` as a value of ``value``'s trace (through an empty read of it)."""
    a = np.asarray(const)
    empty = value.reshape(-1)[:0].sum()
    if a.dtype.kind == "b":
        return (a.astype(np.int8) + empty.astype(np.int8)) != 0
    return a + empty.astype(a.dtype)


def _dims(x: Any) -> tuple:
    """Return the shape of an array or a traced tensor."""
    return tuple(x.shape) if traced(x) else tuple(np.shape(x))


def _rank(x: Any) -> int:
    return len(_dims(x))


def _count(x: Any) -> int:
    return int(np.prod(_dims(x), dtype=np.int64))


def _axis(a: int, rank: int) -> int:
    return a + rank if a < 0 else a


# ---- elementwise -------------------------------------------------------------------------

_UNARY = {
    "Abs": np.abs, "Neg": np.negative, "Exp": np.exp, "Log": np.log, "Sqrt": np.sqrt, "Reciprocal": np.reciprocal,
    "Floor": np.floor, "Ceil": np.ceil, "Sin": np.sin, "Cos": np.cos, "Tan": np.tan, "Asin": np.arcsin,
    "Acos": np.arccos, "Atan": np.arctan, "Sinh": np.sinh, "Cosh": np.cosh, "Tanh": np.tanh, "Asinh": np.arcsinh,
    "Acosh": np.arccosh, "Atanh": np.arctanh, "Sign": np.sign, "Not": np.logical_not, "IsNaN": np.isnan,
    "BitwiseNot": np.invert,
}
_BINARY = {
    "Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Equal": np.equal, "Less": np.less,
    "LessOrEqual": np.less_equal, "Greater": np.greater, "GreaterOrEqual": np.greater_equal, "And": np.logical_and,
    "Or": np.logical_or, "Xor": np.logical_xor, "BitwiseAnd": np.bitwise_and, "BitwiseOr": np.bitwise_or,
    "BitwiseXor": np.bitwise_xor,
}


def _unary(f: Callable[[Any], Any]) -> Op:
    return lambda x, a, v: [f(x[0])]


def _binary(f: Callable[[Any, Any], Any]) -> Op:
    return lambda x, a, v: [f(x[0], x[1])]


for _n, _f in _UNARY.items():
    OPS[_n] = _unary(_f)
for _n, _f in _BINARY.items():
    OPS[_n] = _binary(_f)


def _same(x: Any, like: Any) -> Any:
    """``x`` in ``like``'s dtype (ONNX ops keep their input's type)."""
    dt = np.dtype(like.dtype)
    return x if np.dtype(x.dtype) == dt else x.astype(dt)


@op("Div")
def _div(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    p, q = x
    if np.dtype(p.dtype).kind in "iu":
        # Integer division truncates toward zero (C), as onnxruntime does.
        r = np.trunc(np.true_divide(p, q))
        return [r.astype(np.dtype(p.dtype))]
    return [np.true_divide(p, q)]


@op("Mod")
def _mod(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    p, q = x
    return [np.fmod(p, q) if a.get("fmod", 0) else np.mod(p, q)]


@op("Pow")
def _pow(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    return [_same(np.power(x[0], x[1]), x[0])]




def _fold(f: Callable[[Any, Any], Any], mean: bool = False) -> Op:
    def run(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
        acc = x[0]
        for y in x[1:]:
            acc = f(acc, y)
        return [acc / len(x) if mean else acc]

    return run


OPS["Max"], OPS["Min"] = _fold(np.maximum), _fold(np.minimum)
OPS["Sum"], OPS["Mean"] = _fold(np.add), _fold(np.add, mean=True)


@op("Relu")
def _relu(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    return [np.maximum(x[0], np.zeros((), np.dtype(x[0].dtype)))]


@op("LeakyRelu")
def _leaky(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    alpha = a.get("alpha", 0.01)
    return [np.where(x[0] < 0, x[0] * alpha, x[0])]


@op("PRelu")
def _prelu(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t, slope = x
    try:
        np.broadcast_shapes(_dims(t), _dims(slope))
    except ValueError:
        # A slope per channel (axis 1), as converters write it.
        slope = np.reshape(slope, (-1,) + (1,) * (_rank(t) - 2))
    return [np.where(t < 0, t * slope, t)]


@op("Elu")
def _elu(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    alpha = a.get("alpha", 1.0)
    return [np.where(x[0] < 0, (np.exp(x[0]) - 1) * alpha, x[0])]


@op("Selu")
def _selu(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    alpha, gamma = a.get("alpha", 1.67326319217681884765625), a.get("gamma", 1.05070102214813232421875)
    return [np.where(x[0] <= 0, (np.exp(x[0]) - 1) * alpha, x[0]) * gamma]


@op("Sigmoid")
def _sigmoid(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    return [1 / (1 + np.exp(-x[0]))]


@op("HardSigmoid")
def _hard_sigmoid(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    alpha, beta = a.get("alpha", 0.2), a.get("beta", 0.5)
    return [np.clip(x[0] * alpha + beta, 0, 1)]


@op("HardSwish")
def _hard_swish(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    return [x[0] * np.clip(x[0] * (1 / 6) + 0.5, 0, 1)]


@op("Softplus")
def _softplus(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    return [np.logaddexp(x[0], np.zeros((), np.dtype(x[0].dtype)))]


@op("Softsign")
def _softsign(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    return [x[0] / (1 + np.abs(x[0]))]


@op("Mish")
def _mish(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    return [x[0] * np.tanh(np.logaddexp(x[0], np.zeros((), np.dtype(x[0].dtype))))]


@op("Erf")
def _erf(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    import pyasc

    return [pyasc.erf(x[0])]


@op("Gelu")
def _gelu(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    import pyasc

    t = x[0]
    if a.get("approximate", "none") in ("tanh", b"tanh"):
        return [0.5 * t * (1 + np.tanh(math.sqrt(2 / math.pi) * (t + 0.044715 * t * t * t)))]
    return [pyasc.gelu(t)]


@op("Clip")
def _clip(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t = x[0]
    lo = a.get("min") if v < 11 else (x[1] if len(x) > 1 else None)
    hi = a.get("max") if v < 11 else (x[2] if len(x) > 2 else None)
    if lo is not None:
        t = np.maximum(t, lo if not hasattr(lo, "dtype") else _same(lo, t))
    if hi is not None:
        t = np.minimum(t, hi if not hasattr(hi, "dtype") else _same(hi, t))
    return [t]


@op("Where")
def _where(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    return [np.where(x[0], x[1], x[2])]


@op("Identity")
def _identity(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    return [x[0]]


@op("Dropout")
def _dropout(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    training = x[2] if len(x) > 2 and x[2] is not None else None
    if training is not None and not traced(training) and bool(np.asarray(training)):
        ratio = float(np.asarray(x[1])) if len(x) > 1 and x[1] is not None else 0.5
        if ratio != 0.0:
            raise UnsupportedError("Dropout in training mode (random masks) is not supported; run inference")
    return [x[0], np.ones(_dims(x[0]), bool)]


@op("Cast")
def _cast(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    from onnx.helper import tensor_dtype_to_np_dtype

    return [x[0].astype(tensor_dtype_to_np_dtype(a["to"]))]


@op("CastLike")
def _cast_like(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    return [x[0].astype(np.dtype(x[1].dtype))]


# ---- reductions and normalisations -------------------------------------------------------

def _reduce_axes(x: List[Any], a: Dict[str, Any], v: int, since: int) -> Optional[tuple]:
    if v >= since and len(x) > 1 and x[1] is not None:
        axes = ints(x[1])
    else:
        axes = a.get("axes")
    if not axes:
        return None if not a.get("noop_with_empty_axes", 0) else ()
    return tuple(_axis(int(i), _rank(x[0])) for i in axes)


def _reducer(f: Callable[..., Any], since: int, post: Optional[Callable[[Any], Any]] = None,
             pre: Optional[Callable[[Any], Any]] = None) -> Op:
    def run(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
        axes = _reduce_axes(x, a, v, since)
        t = x[0] if pre is None else pre(x[0])
        shape = _dims(t)
        empty = any(shape[i] == 0 for i in (axes if axes is not None else range(len(shape))))
        if axes == ():
            r = t
        elif empty:
            # Over nothing: the reduction's identity (NumPy raises for max and min).
            keep = bool(a.get("keepdims", 1))
            out = [1 if (axes is None or i in axes) and keep else n for i, n in enumerate(shape)
                   if keep or not (axes is None or i in axes)]
            r = np.full(out, _empty_identity(f, np.dtype(t.dtype)), np.dtype(t.dtype))
        else:
            r = f(t, axis=axes, keepdims=bool(a.get("keepdims", 1)))
        return [_same(post(r) if post is not None else r, x[0])]

    return run


def _empty_identity(f: Callable[..., Any], dt: np.dtype) -> Any:
    if f is np.max:
        return False if dt.kind == "b" else -np.inf if dt.kind == "f" else np.iinfo(dt).min
    if f is np.min:
        return True if dt.kind == "b" else np.inf if dt.kind == "f" else np.iinfo(dt).max
    if f is np.prod:
        return 1
    return 0


OPS["ReduceSum"] = _reducer(np.sum, 13)
OPS["ReduceMean"] = _reducer(np.mean, 18)
OPS["ReduceMax"] = _reducer(np.max, 18)
OPS["ReduceMin"] = _reducer(np.min, 18)
OPS["ReduceProd"] = _reducer(np.prod, 18)
OPS["ReduceL1"] = _reducer(np.sum, 18, pre=np.abs)
OPS["ReduceL2"] = _reducer(np.sum, 18, pre=lambda t: t * t, post=np.sqrt)
OPS["ReduceSumSquare"] = _reducer(np.sum, 18, pre=lambda t: t * t)
OPS["ReduceLogSum"] = _reducer(np.sum, 18, post=np.log)
OPS["ReduceLogSumExp"] = _reducer(np.sum, 18, pre=np.exp, post=np.log)




def _argop(f: Callable[..., Any], flip: Callable[..., Any]) -> Op:
    def run(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
        t, axis = x[0], _axis(a.get("axis", 0), _rank(x[0]))
        if a.get("select_last_index", 0):
            n = _dims(t)[axis]
            r = (n - 1) - f(np.flip(t, axis), axis=axis)
        else:
            r = f(t, axis=axis)
        r = r.astype(np.int64)
        return [np.expand_dims(r, axis) if a.get("keepdims", 1) else r]

    return run


OPS["ArgMax"], OPS["ArgMin"] = _argop(np.argmax, np.flip), _argop(np.argmin, np.flip)




def _softmax_op(log: bool) -> Op:
    def run(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
        t = x[0]
        axis = a.get("axis", -1 if v >= 13 else 1)
        shape = _dims(t)
        if v < 13:
            # Before opset 13 the input is coerced to 2-D at `axis`.
            axis = _axis(axis, len(shape))
            t = t.reshape(int(np.prod(shape[:axis], dtype=np.int64)), -1)
            axis = 1
        m = np.max(t, axis=axis, keepdims=True)
        e = np.exp(t - m)
        s = np.sum(e, axis=axis, keepdims=True)
        r = (t - m) - np.log(s) if log else e / s
        return [r.reshape(shape)]

    return run


OPS["Softmax"], OPS["LogSoftmax"] = _softmax_op(False), _softmax_op(True)


@op("BatchNormalization")
def _batch_norm(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t, scale, bias, mean, var = x[:5]
    eps = a.get("epsilon", 1e-5)
    shape = (1, -1) + (1,) * (_rank(t) - 2)
    if a.get("training_mode", 0):
        # The batch's statistics normalise; the running ones are updated with momentum.
        axes = (0,) + tuple(range(2, _rank(t)))
        bm = np.mean(t, axis=axes)
        dev = t - bm.reshape(shape)
        bv = np.mean(dev * dev, axis=axes)
        mom = a.get("momentum", 0.9)
        y = dev / np.sqrt(bv.reshape(shape) + eps) * scale.reshape(shape) + bias.reshape(shape)
        return [_same(y, t), _same(mean * mom + bm * (1 - mom), mean), _same(var * mom + bv * (1 - mom), var)]
    k = (scale / np.sqrt(var + eps)).reshape(shape)
    return [_same(t * k + (bias - mean * k.reshape(-1)).reshape(shape), t)]


@op("InstanceNormalization")
def _instance_norm(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t, scale, bias = x
    eps = a.get("epsilon", 1e-5)
    axes = tuple(range(2, _rank(t)))
    mu = np.mean(t, axis=axes, keepdims=True)
    d = t - mu
    var = np.mean(d * d, axis=axes, keepdims=True)
    shape = (1, -1) + (1,) * (_rank(t) - 2)
    return [d / np.sqrt(var + eps) * scale.reshape(shape) + bias.reshape(shape)]


@op("LayerNormalization")
def _layer_norm(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t, scale = x[0], x[1]
    bias = x[2] if len(x) > 2 else None
    axis = _axis(a.get("axis", -1), _rank(t))
    eps = a.get("epsilon", 1e-5)
    axes = tuple(range(axis, _rank(t)))
    mu = np.mean(t, axis=axes, keepdims=True)
    d = t - mu
    var = np.mean(d * d, axis=axes, keepdims=True)
    rstd = 1 / np.sqrt(var + eps)
    y = d * rstd * scale
    if bias is not None:
        y = y + bias
    return [y, mu, rstd]


@op("LRN")
def _lrn(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t = x[0]
    size = a["size"]
    alpha, beta, bias = a.get("alpha", 1e-4), a.get("beta", 0.75), a.get("bias", 1.0)
    c = _dims(t)[1]
    sq = t * t
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    widths = [(0, 0), (lo, hi)] + [(0, 0)] * (_rank(t) - 2)
    padded = np.pad(sq, widths)
    acc = None
    for i in range(size):
        s = padded[:, i:i + c]
        acc = s if acc is None else acc + s
    return [t / (bias + (alpha / size) * acc) ** beta]


# ---- matrix products and convolutions ----------------------------------------------------

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


# ---- pooling ------------------------------------------------------------------------------

def _pool_geometry(a: Dict[str, Any], shape: Sequence[int]) -> tuple:
    n = len(shape) - 2
    kernel = list(a["kernel_shape"])
    strides = list(a.get("strides", [1] * n))
    dil = list(a.get("dilations", [1] * n))
    pads = _conv_pads(a, shape[2:], kernel, strides, dil)
    begin, end = pads[:n], list(pads[n:])
    outs = []
    for i in range(n):
        span = shape[2 + i] + begin[i] + end[i] - ((kernel[i] - 1) * dil[i] + 1)
        o = (-(-span // strides[i]) if a.get("ceil_mode", 0) else span // strides[i]) + 1
        if a.get("ceil_mode", 0) and (o - 1) * strides[i] >= shape[2 + i] + begin[i]:
            o -= 1  # the last window must start inside the input or its left padding
        # Pad the end so that every window lies inside.
        need = (o - 1) * strides[i] + (kernel[i] - 1) * dil[i] + 1 - (shape[2 + i] + begin[i])
        end[i] = max(end[i], need)
        outs.append(o)
    return kernel, strides, dil, begin, end, outs


def _windows(t: Any, kernel: Sequence[int], strides: Sequence[int], dil: Sequence[int],
             outs: Sequence[int]) -> List[Any]:
    """Every window tap of a padded input as a strided slice of shape ``(N, C, *outs)``."""
    taps = []
    for off in itertools.product(*(range(k) for k in kernel)):
        idx = [slice(None), slice(None)]
        for i, o in enumerate(off):
            start = o * dil[i]
            idx.append(slice(start, start + strides[i] * (outs[i] - 1) + 1, strides[i]))
        taps.append(t[tuple(idx)])
    return taps


@op("MaxPool")
def _max_pool(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t = x[0]
    kernel, strides, dil, begin, end, outs = _pool_geometry(a, _dims(t))
    n = len(kernel)
    simple = n == 2 and dil == [1, 1] and begin == end[:2] and all(b <= k // 2 for b, k in zip(begin, kernel))
    if simple and a.get("_outputs", 1) < 2 and np.dtype(t.dtype).kind == "f" and all(
            (_dims(t)[2 + i] + 2 * begin[i] - kernel[i]) // strides[i] + 1 == outs[i] for i in range(2)):
        return [_conv.max_pool2d(t, tuple(kernel), tuple(strides), tuple(begin))]
    dt = np.dtype(t.dtype)
    low = -np.inf if dt.kind == "f" else np.iinfo(dt).min
    padded = np.pad(t, [(0, 0), (0, 0)] + list(zip(begin, end)), constant_values=low)
    acc = None
    for tap in _windows(padded, kernel, strides, dil, outs):
        acc = tap if acc is None else np.maximum(acc, tap)
    if a.get("_outputs", 1) < 2:
        return [acc]
    # Indices: the first maximum's flat position in the (unpadded) input, row-major per
    # image (storage_order 0) or column-major over the spatial dims (1).
    shape = _dims(t)
    spatial = shape[2:]
    if a.get("storage_order", 0):
        flat = np.arange(int(np.prod(spatial))).reshape(spatial[::-1]).T
    else:
        flat = np.arange(int(np.prod(spatial))).reshape(spatial)
    per_image = (np.arange(shape[0] * shape[1]) * int(np.prod(spatial))).reshape(shape[0], shape[1], *([1] * n))
    pos = np.pad(flat, list(zip(begin, end)), constant_values=-1)[None, None]
    best, where = None, None
    for tap, at in zip(_windows(padded, kernel, strides, dil, outs), _windows(pos, kernel, strides, dil, outs)):
        if best is None:
            best, where = tap, np.broadcast_to(at, _dims(tap))
        else:
            better = tap > best
            best, where = np.where(better, tap, best), np.where(better, at, where)
    return [acc, (where + per_image).astype(np.int64)]


@op("AveragePool")
def _avg_pool(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t = x[0]
    shape = _dims(t)
    explicit = list(a.get("pads", [0] * (2 * (len(shape) - 2))))
    kernel, strides, dil, begin, end, outs = _pool_geometry(a, shape)
    n = len(kernel)
    padded = np.pad(t, [(0, 0), (0, 0)] + list(zip(begin, end)))
    acc = None
    for tap in _windows(padded, kernel, strides, dil, outs):
        acc = tap if acc is None else acc + tap
    # Each window's divisor: the input elements it covers, and the explicit pads with
    # count_include_pad (never the end padding ceil_mode adds).
    covered = np.zeros([shape[2 + i] + begin[i] + end[i] for i in range(n)])
    if a.get("count_include_pad", 0):
        covered[tuple(slice(0, shape[2 + i] + begin[i] + explicit[n + i]) for i in range(n))] = 1.0
    else:
        covered[tuple(slice(begin[i], begin[i] + shape[2 + i]) for i in range(n))] = 1.0
    cnt = np.zeros(outs)
    for off in itertools.product(*(range(k) for k in kernel)):
        idx = tuple(slice(o * d, o * d + s * (m - 1) + 1, s) for o, d, s, m in zip(off, dil, strides, outs))
        cnt = cnt + covered[idx]
    return [acc * (1.0 / cnt).astype(np.dtype(t.dtype))]




OPS["GlobalAveragePool"] = lambda x, a, v: [np.mean(x[0], axis=tuple(range(2, _rank(x[0]))), keepdims=True)]
OPS["GlobalMaxPool"] = lambda x, a, v: [np.max(x[0], axis=tuple(range(2, _rank(x[0]))), keepdims=True)]


# ---- movement -----------------------------------------------------------------------------

@op("Reshape")
def _reshape(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    shape = ints(x[1]) if v >= 5 else list(a["shape"])
    cur = _dims(x[0])
    if not a.get("allowzero", 0):
        shape = [cur[i] if s == 0 else s for i, s in enumerate(shape)]
    return [np.reshape(x[0], shape)]


@op("Flatten")
def _flatten(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    shape = _dims(x[0])
    axis = _axis(a.get("axis", 1), len(shape))
    lead = int(np.prod(shape[:axis], dtype=np.int64))
    return [np.reshape(x[0], (lead, int(np.prod(shape[axis:], dtype=np.int64))))]


@op("Transpose")
def _transpose(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    perm = a.get("perm")
    return [np.transpose(x[0], perm if perm is not None else None)]


@op("Squeeze")
def _squeeze(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    axes = (ints(x[1]) if len(x) > 1 and x[1] is not None else None) if v >= 13 else a.get("axes")
    if axes is None:
        return [np.squeeze(x[0])]
    return [np.squeeze(x[0], tuple(_axis(i, _rank(x[0])) for i in axes))]


@op("Unsqueeze")
def _unsqueeze(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    axes = ints(x[1]) if v >= 13 else list(a["axes"])
    rank = _rank(x[0]) + len(axes)
    return [np.expand_dims(x[0], tuple(sorted(_axis(i, rank) for i in axes)))]


@op("Concat")
def _concat(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    parts = [t for t in x if t is not None]
    return [np.concatenate(parts, axis=a["axis"])]


@op("Split")
def _split(x: List[Any], a: Dict[str, Any], v: int, outputs: int = 0) -> List[Any]:
    t = x[0]
    axis = _axis(a.get("axis", 0), _rank(t))
    sizes = (ints(x[1]) if len(x) > 1 and x[1] is not None else None) if v >= 13 else a.get("split")
    n = _dims(t)[axis]
    if sizes is None:
        parts = a.get("num_outputs") or a["_outputs"]
        step = -(-n // parts)
        sizes = [min(step, n - i * step) for i in range(parts)]
    bounds = np.cumsum([0] + list(sizes))
    idx = [slice(None)] * _rank(t)
    out = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        idx[axis] = slice(int(lo), int(hi))
        out.append(t[tuple(idx)])
    return out


@op("Slice")
def _slice(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t = x[0]
    if v < 10:
        starts, ends, axes, steps = list(a["starts"]), list(a["ends"]), a.get("axes"), None
    else:
        starts, ends = ints(x[1]), ints(x[2])
        axes = ints(x[3]) if len(x) > 3 and x[3] is not None else None
        steps = ints(x[4]) if len(x) > 4 and x[4] is not None else None
    rank = _rank(t)
    axes = [_axis(i, rank) for i in axes] if axes is not None else list(range(len(starts)))
    steps = steps or [1] * len(starts)
    idx = [slice(None)] * rank
    shape = _dims(t)
    for s, e, ax, st in zip(starts, ends, axes, steps):
        n = shape[ax]
        # Clamp as ONNX does (INT_MAX/INT_MIN ends included).
        s = max(-n - 1, min(n, s))
        e = max(-n - 1, min(n, e))
        if st > 0:
            s, e = (s + n if s < 0 else s), (e + n if e < 0 else e)
            idx[ax] = slice(max(0, s), max(0, e), st)
        else:
            s = s + n if s < 0 else s
            s = min(s, n - 1)
            e = e + n if e < 0 else e
            idx[ax] = slice(s, e if e >= 0 else None, st)
    return [t[tuple(idx)]]


@op("Gather")
def _gather(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t, i = x
    axis = _axis(a.get("axis", 0), _rank(t))
    n = _dims(t)[axis]
    if not traced(i):
        i = np.where(np.asarray(i) < 0, np.asarray(i) + n, np.asarray(i)).astype(np.int64)
        if not traced(t):
            return [np.take(t, i, axis=axis)]
    else:
        i = np.where(i < 0, i + n, i)
        if not traced(t):
            t = join(t, i)
    return [t[(slice(None),) * axis + (i,)]]


@op("GatherElements")
def _gather_elements(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t, i = x
    axis = _axis(a.get("axis", 0), _rank(t))
    n = _dims(t)[axis]
    i = np.where(i < 0, i + n, i)
    return [np.take_along_axis(t, i, axis=axis)]


@op("Expand")
def _expand(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    shape = np.broadcast_shapes(tuple(_dims(x[0])), tuple(ints(x[1])))
    return [np.broadcast_to(x[0], shape) * np.ones((), np.dtype(x[0].dtype)) if traced(x[0])
            else np.broadcast_to(x[0], shape).copy()]


@op("Tile")
def _tile(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t, reps = x[0], ints(x[1])
    if not traced(t):
        return [np.tile(t, reps)]
    # Each axis d becomes (reps[d], d) broadcast, then merged: the copies one after another.
    d = _dims(t)
    inter = tuple(v for n in d for v in (1, n))
    full = tuple(v for r, n in zip(reps, d) for v in (r, n))
    return [np.reshape(np.broadcast_to(np.reshape(t, inter), full), tuple(r * n for r, n in zip(reps, d)))]


@op("Pad")
def _pad(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t = x[0]
    rank = _rank(t)
    if v < 11:
        pads, value = list(a["pads"]), a.get("value", 0.0)
    else:
        pads = ints(x[1])
        value = x[2] if len(x) > 2 and x[2] is not None else 0
        if hasattr(value, "reshape") and not traced(value):
            value = np.asarray(value).reshape(()).item()
    mode = a.get("mode", "constant")
    if isinstance(mode, bytes):
        mode = mode.decode()
    axes = ints(x[3]) if v >= 18 and len(x) > 3 and x[3] is not None else list(range(rank))
    axes = [_axis(i, rank) for i in axes]
    k = len(axes)
    widths = [(0, 0)] * rank
    for j, ax in enumerate(axes):
        widths[ax] = (pads[j], pads[j + k])
    # Negative pads crop.
    crop = [slice(None)] * rank
    pos = []
    for ax, (lo, hi) in enumerate(widths):
        crop[ax] = slice(-lo if lo < 0 else 0, hi if hi < 0 else None)
        pos.append((max(lo, 0), max(hi, 0)))
    t = t[tuple(crop)]
    np_mode = {"constant": "constant", "reflect": "reflect", "edge": "edge", "wrap": "wrap"}[mode]
    if np_mode == "constant":
        return [np.pad(t, pos, mode="constant", constant_values=value)]
    return [np.pad(t, pos, mode=np_mode)]


@op("Shape")
def _shape(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    shape = np.array(_dims(x[0]), np.int64)
    start, end = a.get("start", 0), a.get("end")
    return [shape[start:end]]


@op("Size")
def _size(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    return [np.array(int(np.prod(_dims(x[0]), dtype=np.int64)), np.int64)]


@op("Constant")
def _constant(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    for key in ("value", "value_float", "value_floats", "value_int", "value_ints"):
        if key in a:
            val = a[key]
            if key == "value_float" or key == "value_floats":
                return [np.asarray(val, np.float32)]
            if key == "value_int" or key == "value_ints":
                return [np.asarray(val, np.int64)]
            return [val]
    raise UnsupportedError("Constant without a numeric value (sparse or string) is not supported")


@op("ConstantOfShape")
def _constant_of_shape(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    value = a.get("value", np.zeros(1, np.float32))
    return [np.full(ints(x[0]), value.reshape(-1)[0], value.dtype)]


@op("Range")
def _range(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    start, limit, delta = (np.asarray(t).reshape(()) for t in x)
    return [np.arange(start, limit, delta, dtype=np.asarray(x[0]).dtype)]


@op("TopK")
def _topk(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t = x[0]
    k = ints(x[1])[0] if v >= 10 else a["k"]
    axis = _axis(a.get("axis", -1), _rank(t))
    largest = a.get("largest", 1)
    # A stable sort keeps the lower index first among equal values, as ONNX specifies.
    keyed = (np.invert(t) if np.dtype(t.dtype).kind == "u" else -t) if largest else t
    order = np.argsort(keyed, axis=axis, kind="stable")
    idx = [slice(None)] * _rank(t)
    idx[axis] = slice(0, k)
    order = order[tuple(idx)]
    return [np.take_along_axis(t, order, axis=axis), order.astype(np.int64)]


@op("Einsum")
def _einsum(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    eq = a["equation"]
    return [np.einsum(eq.decode() if isinstance(eq, bytes) else eq, *x)]




def _depth_to_space(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t = x[0]
    b = a["blocksize"]
    n, c, h, w = _dims(t)
    mode = a.get("mode", "DCR")
    if isinstance(mode, bytes):
        mode = mode.decode()
    if mode == "DCR":
        y = np.reshape(t, (n, b, b, c // (b * b), h, w)).transpose(0, 3, 4, 1, 5, 2)
    else:
        y = np.reshape(t, (n, c // (b * b), b, b, h, w)).transpose(0, 1, 4, 2, 5, 3)
    return [np.reshape(y, (n, c // (b * b), h * b, w * b))]


def _space_to_depth(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t = x[0]
    b = a["blocksize"]
    n, c, h, w = _dims(t)
    y = np.reshape(t, (n, c, h // b, b, w // b, b)).transpose(0, 3, 5, 1, 2, 4)
    return [np.reshape(y, (n, c * b * b, h // b, w // b))]


OPS["DepthToSpace"], OPS["SpaceToDepth"] = _depth_to_space, _space_to_depth


def _cubic_axis(t: Any, ax: int, src: np.ndarray, n: int, o: int, a: Dict[str, Any]) -> Any:
    """Interpolate ``t`` cubically along ``ax`` at source positions ``src``.

    Four taps each, Keys' kernel with coefficient ``cubic_coeff_a``; taps outside the input are
    clamped, or dropped with the rest reweighted under ``exclude_outside``.
    """
    ca = a.get("cubic_coeff_a", -0.75)
    base = np.floor(src).astype(np.int64)
    frac = src - base

    def kernel(d: np.ndarray) -> np.ndarray:
        d = np.abs(d)
        return np.where(d <= 1, ((ca + 2) * d - (ca + 3)) * d * d + 1,
                        np.where(d < 2, ((ca * d - 5 * ca) * d + 8 * ca) * d - 4 * ca, 0.0))

    taps = [base + k for k in (-1, 0, 1, 2)]
    weights = [kernel(frac - k) for k in (-1, 0, 1, 2)]
    if a.get("exclude_outside", 0):
        weights = [np.where((i >= 0) & (i < n), w, 0.0) for i, w in zip(taps, weights)]
        total = sum(weights)
        weights = [w / total for w in weights]
    rank = _rank(t)
    fshape = [1] * rank
    fshape[ax] = o
    dt = np.dtype(t.dtype)
    acc = None
    for i, w in zip(taps, weights):
        part = np.take(t, np.clip(i, 0, n - 1), axis=ax) * w.astype(dt).reshape(fshape)
        acc = part if acc is None else acc + part
    return acc


@op("Resize", "Upsample")
def _resize(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t = x[0]
    shape = _dims(t)
    rank = len(shape)
    mode = a.get("mode", "nearest")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if v < 10 or len(x) == 2:  # Upsample: (X, scales)
        scales = [float(s) for s in np.asarray(x[1]).reshape(-1)] if len(x) > 1 else list(a["scales"])
        sizes = [int(math.floor(n * s)) for n, s in zip(shape, scales)]
        ct = "asymmetric"
        a = dict(a, nearest_mode="floor")  # Upsample's nearest neighbour is the one at or before
    else:
        roi = x[1] if len(x) > 1 else None
        scales_in = x[2] if len(x) > 2 else None
        sizes_in = x[3] if len(x) > 3 else None
        if roi is not None and _count(roi) and a.get("coordinate_transformation_mode", "half_pixel") in (
                "tf_crop_and_resize", b"tf_crop_and_resize"):
            raise UnsupportedError("Resize with tf_crop_and_resize is not supported")
        axes = [_axis(i, rank) for i in a.get("axes", range(rank))]
        if sizes_in is not None and _count(sizes_in):
            want = dict(zip(axes, ints(sizes_in)))
            policy = a.get("keep_aspect_ratio_policy", "stretch")
            if policy != "stretch":
                pick = min if policy == "not_larger" else max
                r = pick(want[i] / shape[i] for i in axes)
                want = {i: int(math.floor(r * shape[i] + 0.5)) for i in axes}
                scales = [r if i in want else 1.0 for i in range(rank)]
            else:
                scales = [want[i] / shape[i] if i in want else 1.0 for i in range(rank)]
            sizes = [want.get(i, shape[i]) for i in range(rank)]
        else:
            given = dict(zip(axes, (float(v) for v in np.asarray(scales_in).reshape(-1))))
            scales = [given.get(i, 1.0) for i in range(rank)]
            sizes = [int(math.floor(n * sc)) for n, sc in zip(shape, scales)]
        ct = a.get("coordinate_transformation_mode", "half_pixel")
        ct = ct.decode() if isinstance(ct, bytes) else ct
    nearest_mode = a.get("nearest_mode", "round_prefer_floor")
    nearest_mode = nearest_mode.decode() if isinstance(nearest_mode, bytes) else nearest_mode
    for ax in range(rank):
        n, o, s = shape[ax], sizes[ax], scales[ax]
        if n == o:
            continue
        out = np.arange(o, dtype=np.float64)
        if ct == "half_pixel":
            src = (out + 0.5) / s - 0.5
        elif ct == "pytorch_half_pixel":
            src = (out + 0.5) / s - 0.5 if o > 1 else np.zeros(o)
        elif ct == "align_corners":
            # The unrounded output length n * s, as ONNX's reference scales it.
            span = n * s - 1
            src = out * (n - 1) / span if span > 0 else np.zeros(o)
        elif ct == "asymmetric":
            src = out / s
        elif ct == "half_pixel_symmetric":
            adj = o / (s * n)
            center = n / 2
            src = center * (1 - adj) + (out + 0.5) / s - 0.5
        else:
            raise UnsupportedError(f"Resize with coordinate_transformation_mode {ct!r} is not supported")
        if mode == "nearest":
            if nearest_mode == "round_prefer_floor":
                i = np.where(src - np.floor(src) == 0.5, np.floor(src), np.round(src))
            elif nearest_mode == "round_prefer_ceil":
                i = np.where(src - np.floor(src) == 0.5, np.ceil(src), np.round(src))
            elif nearest_mode == "floor":
                i = np.floor(src)
            else:
                i = np.ceil(src)
            i = np.clip(i, 0, n - 1).astype(np.int64)
            t = np.take(t, i, axis=ax)
        elif mode == "cubic":
            t = _cubic_axis(t, ax, src, n, o, a)
        elif mode == "linear":
            src = np.clip(src, 0, n - 1)
            lo = np.floor(src).astype(np.int64)
            hi = np.minimum(lo + 1, n - 1)
            f = (src - lo).astype(np.dtype(t.dtype))
            fshape = [1] * rank
            fshape[ax] = o
            f = f.reshape(fshape)
            t = np.take(t, lo, axis=ax) * (1 - f) + np.take(t, hi, axis=ax) * f
        else:
            raise UnsupportedError(f"Resize mode {mode!r} is not supported")
    return [t]


# ---- more elementwise and activations ------------------------------------------------------

OPS["Round"] = _unary(np.round)
OPS["IsInf"] = lambda x, a, v: [(x[0] == np.inf if a.get("detect_negative", 1) == 0 else
                                  x[0] == -np.inf if a.get("detect_positive", 1) == 0 else np.isinf(x[0]))]


@op("BitShift")
def _bit_shift(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    f = np.left_shift if a["direction"] == "LEFT" else np.right_shift
    return [f(x[0], x[1])]


@op("Celu")
def _celu(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    alpha = a.get("alpha", 1.0)
    t = x[0]
    return [np.maximum(t, 0) + np.minimum(0, (np.exp(t / alpha) - 1) * alpha)]


@op("ThresholdedRelu")
def _thresholded_relu(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    return [np.where(x[0] > a.get("alpha", 1.0), x[0], np.zeros((), np.dtype(x[0].dtype)))]


@op("Shrink")
def _shrink(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t, lambd, bias = x[0], a.get("lambd", 0.5), a.get("bias", 0.0)
    dt = np.dtype(t.dtype)
    zero = np.zeros((), dt)
    return [np.where(t < -lambd, (t + bias).astype(dt), np.where(t > lambd, (t - bias).astype(dt), zero))]


@op("Hardmax")
def _hardmax(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t = x[0]
    shape = _dims(t)
    axis = _axis(a.get("axis", -1 if v >= 13 else 1), len(shape))
    if v < 13:
        t = t.reshape(int(np.prod(shape[:axis], dtype=np.int64)), -1)
        axis = 1
    first = np.argmax(t, axis=axis)
    pos = np.arange(_dims(t)[axis]).reshape([-1 if i == axis else 1 for i in range(len(_dims(t)))])
    hot = np.expand_dims(first, axis) == pos
    return [np.where(hot, np.ones((), np.dtype(t.dtype)), np.zeros((), np.dtype(t.dtype))).reshape(shape)]


@op("OneHot")
def _one_hot(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    idx, depth, values = x
    d = int(np.asarray(depth).reshape(-1)[0])
    rank = _rank(idx) + 1
    axis = _axis(a.get("axis", -1), rank)
    idx = np.where(idx < 0, idx + d, idx)
    pos = np.arange(d).reshape([-1 if i == axis else 1 for i in range(rank)])
    hot = np.expand_dims(idx, axis) == pos
    return [np.where(hot, values[1], values[0])]


@op("LpNormalization")
def _lp_norm(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t, p = x[0], a.get("p", 2)
    axis = a.get("axis", -1)
    n = np.sum(np.abs(t), axis=axis, keepdims=True) if p == 1 else np.sqrt(np.sum(t * t, axis=axis, keepdims=True))
    zero = np.zeros((), np.dtype(t.dtype))
    return [np.where(n == 0, zero, t / np.where(n == 0, np.ones((), np.dtype(t.dtype)), n))]


@op("RMSNormalization")
def _rms_norm(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t, scale = x[0], x[1]
    axis = _axis(a.get("axis", -1), _rank(t))
    eps = a.get("epsilon", 1e-5)
    dt = np.dtype(t.dtype)
    w = t.astype(np.float32) if dt.itemsize < 4 else t
    ms = np.mean(w * w, axis=tuple(range(axis, _rank(t))), keepdims=True)
    return [(w / np.sqrt(ms + eps)).astype(dt) * scale]


@op("Trilu")
def _trilu(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t = x[0]
    k = ints(x[1])[0] if len(x) > 1 and x[1] is not None else 0
    rows, cols = _dims(t)[-2:]
    keep = np.triu(np.ones((rows, cols), bool), k) if a.get("upper", 1) else np.tril(np.ones((rows, cols), bool), k)
    return [np.where(keep, t, np.zeros((), np.dtype(t.dtype)))]


def _scan_op(f: Callable[..., Any], identity: float) -> Op:
    def run(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
        t = x[0]
        axis = _axis(ints(x[1])[0], _rank(t))
        if a.get("reverse", 0):
            t = np.flip(t, axis)
        r = f(t, axis=axis)
        if a.get("exclusive", 0):
            n = _dims(t)[axis]
            idx = [slice(None)] * _rank(t)
            idx[axis] = slice(0, n - 1)
            widths = [(0, 0)] * _rank(t)
            widths[axis] = (1, 0)
            r = np.pad(r[tuple(idx)], widths, constant_values=identity)
        if a.get("reverse", 0):
            r = np.flip(r, axis)
        return [_same(r, x[0])]

    return run


OPS["CumSum"], OPS["CumProd"] = _scan_op(np.cumsum, 0), _scan_op(np.cumprod, 1)


@op("LpPool")
def _lp_pool(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t = x[0]
    p = a.get("p", 2)
    kernel, strides, dil, begin, end, outs = _pool_geometry(a, _dims(t))
    padded = np.pad(np.abs(t), [(0, 0), (0, 0)] + list(zip(begin, end)))
    acc = None
    for tap in _windows(padded, kernel, strides, dil, outs):
        tp = tap ** p
        acc = tp if acc is None else acc + tp
    return [acc ** (1.0 / p)]


# ---- losses --------------------------------------------------------------------------------

def _nll(logp: Any, target: Any, weight: Optional[Any], a: Dict[str, Any]) -> Any:
    ignore = a.get("ignore_index")
    tgt = target if ignore is None else np.where(target == ignore, np.zeros((), np.dtype(target.dtype)), target)
    picked = np.take_along_axis(logp, np.expand_dims(tgt, 1), axis=1)
    picked = np.squeeze(picked, 1)
    dt = np.dtype(logp.dtype)
    w = None
    if weight is not None:
        w = np.take(weight, tgt)
    if ignore is not None:
        keep = (target != ignore).astype(dt)
        w = keep if w is None else w * keep
    loss = -picked if w is None else -picked * w
    red = a.get("reduction", "mean")
    if red == "none":
        return loss
    if red == "sum":
        return np.sum(loss)
    if w is None:
        return np.mean(loss)
    return np.sum(loss) / np.sum(w)


@op("NegativeLogLikelihoodLoss")
def _nll_loss(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    return [_same(_nll(x[0], x[1], x[2] if len(x) > 2 else None, a), x[0])]


@op("SoftmaxCrossEntropyLoss")
def _sce_loss(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t = x[0]
    m = np.max(t, axis=1, keepdims=True)
    logp = (t - m) - np.log(np.sum(np.exp(t - m), axis=1, keepdims=True))
    return [_same(_nll(logp, x[1], x[2] if len(x) > 2 else None, a), t), logp]


# ---- transposed convolution ----------------------------------------------------------------

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


# ---- quantization --------------------------------------------------------------------------

def _per_axis(p: Any, like: Any, axis: int, block: int) -> Any:
    """Return a scale or zero point shaped to broadcast against ``like``.

    One value for the whole tensor, one per index of ``axis``, or (with ``block``) one per
    block of ``block`` indices along it.
    """
    rank = _rank(like)
    if _rank(p) == 0 or _count(p) == 1 and _rank(p) <= 1 or rank == 0:
        return np.reshape(p, ())
    axis = _axis(axis, rank)
    if block:
        dims = _dims(p)
        e = np.expand_dims(p, axis + 1)
        full = dims[:axis + 1] + (block,) + dims[axis + 1:]
        p = np.reshape(np.broadcast_to(e, full), dims[:axis] + (dims[axis] * block,) + dims[axis + 1:])
        idx = [slice(None)] * rank
        idx[axis] = slice(0, _dims(like)[axis])
        return p[tuple(idx)]
    shape = [1] * rank
    shape[axis] = -1
    return np.reshape(p, shape)


@op("DequantizeLinear")
def _dequantize(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t, scale = x[0], x[1]
    zp = x[2] if len(x) > 2 and x[2] is not None else None
    axis, block = a.get("axis", 1), a.get("block_size", 0)
    q = t.astype(np.float32)
    if zp is not None:
        q = q - _per_axis(zp, t, axis, block).astype(np.float32)
    out_dt = np.dtype(scale.dtype) if a.get("output_dtype", 0) == 0 else _np_dtype(a["output_dtype"])
    return [(q * _per_axis(scale, t, axis, block).astype(np.float32)).astype(out_dt)]


def _np_dtype(code: int) -> np.dtype:
    from onnx.helper import tensor_dtype_to_np_dtype

    return np.dtype(tensor_dtype_to_np_dtype(code))


@op("QuantizeLinear")
def _quantize(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t, scale = x[0], x[1]
    zp = x[2] if len(x) > 2 and x[2] is not None else None
    axis, block = a.get("axis", 1), a.get("block_size", 0)
    out_dt = np.dtype(zp.dtype) if zp is not None else (
        _np_dtype(a["output_dtype"]) if a.get("output_dtype", 0) else np.dtype(np.uint8))
    if out_dt.kind not in "iu":
        raise UnsupportedError(f"QuantizeLinear to {out_dt} is not supported")
    q = np.round(t.astype(np.float32) / _per_axis(scale, t, axis, block).astype(np.float32))
    if zp is not None:
        q = q + _per_axis(zp, t, axis, block).astype(np.float32)
    info = np.iinfo(out_dt)
    return [np.clip(q, float(info.min), float(info.max)).astype(out_dt)]


# ---- attention -----------------------------------------------------------------------------

def _heads(t: Any, n: int) -> Any:
    """``(B, S, H * D)`` as ``(B, H, S, D)``."""
    b, s, _ = _dims(t)
    return np.transpose(np.reshape(t, (b, s, n, -1)), (0, 2, 1, 3))


def _bias_of(mask: Any, dt: np.dtype) -> Any:
    """Return an attention mask as an additive bias: ``0``/``-inf`` for a boolean one, else itself."""
    if np.dtype(mask.dtype) == np.bool_:
        return np.where(mask, np.zeros((), dt), np.full((), -np.inf, dt))
    return mask.astype(dt)


@op("Attention")
def _attention(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    q, k, val = x[0], x[1], x[2]
    get = lambda i: x[i] if len(x) > i else None  # noqa: E731
    mask, past_k, past_v, nonpad = get(3), get(4), get(5), get(6)
    three = _rank(q) == 3
    if three:
        batch, sq = _dims(q)[:2]
        q, k, val = _heads(q, a["q_num_heads"]), _heads(k, a["kv_num_heads"]), _heads(val, a["kv_num_heads"])
    dt = np.dtype(q.dtype)
    scale = a.get("scale")
    root = dt.type(math.sqrt(scale if scale is not None else 1 / math.sqrt(_dims(q)[3])))
    k = np.concatenate([past_k, k], axis=2) if past_k is not None else k
    val = np.concatenate([past_v, val], axis=2) if past_v is not None else val
    present_k, present_v = k, val
    lq, lk = _dims(q)[2], _dims(k)[2]
    neg = np.full((), -np.inf, dt)
    bias: Any = None
    if mask is not None:
        short = lk - _dims(mask)[-1]
        if short > 0:
            fill = False if np.dtype(mask.dtype) == np.bool_ else -np.inf
            mask = np.pad(mask, [(0, 0)] * (_rank(mask) - 1) + [(0, short)], constant_values=fill)
        bias = _bias_of(mask, dt)
    i = np.arange(lq).reshape(lq, 1)
    j = np.arange(lk).reshape(1, lk)
    batch_n = _dims(q)[0]
    if nonpad is not None and past_k is None:
        offset: Any = (np.asarray(nonpad).reshape(-1) - lq).reshape(-1, 1, 1, 1)
    else:
        offset = _dims(past_k)[2] if past_k is not None else 0
    frontier = i + offset  # (q, 1) or (batch, 1, q, 1)
    allowed = None
    if a.get("is_causal", 0):
        allowed = j <= frontier
    left, right = a.get("left_window_size", -1), a.get("right_window_size", -1)
    if left >= 0 or right >= 0:
        diff = frontier - j
        win = np.ones(np.shape(diff), bool)
        if left >= 0:
            win = win & (diff <= left)
        if right >= 0:
            win = win & (-diff <= right)
        allowed = win if allowed is None else allowed & win
    if nonpad is not None:
        pad_ok = (np.arange(lk) < np.asarray(nonpad).reshape(-1, 1)).reshape(batch_n, 1, 1, lk)
        allowed = pad_ok if allowed is None else allowed & pad_ok
    if allowed is not None:
        extra = np.where(allowed, dt.type(0), dt.type(-np.inf)).astype(dt)
        bias = extra if bias is None else bias + extra
    hq, hk = _dims(q)[1], _dims(k)[1]
    if hq != hk and hq % hk == 0:
        reps = hq // hk
        b_, _, n_, d_ = _dims(k)
        k = np.reshape(np.broadcast_to(np.expand_dims(k, 2), (b_, hk, reps, n_, d_)), (b_, hq, n_, d_))
        dv = _dims(val)[3]
        val = np.reshape(np.broadcast_to(np.expand_dims(val, 2), (b_, hk, reps, n_, dv)), (b_, hq, n_, dv))
    scores = np.matmul(q * root, np.swapaxes(k * root, -1, -2))
    softcap = a.get("softcap", 0.0)
    if softcap and softcap > 0:
        scores = np.tanh(scores / dt.type(softcap)) * dt.type(softcap)
    mode = a.get("qk_matmul_output_mode", 0)
    qk_out = scores
    biased = scores + bias if bias is not None else scores
    if mode == 2:
        qk_out = biased
    if a.get("softmax_precision"):
        biased = biased.astype(_np_dtype(a["softmax_precision"]))
    m = np.max(biased, axis=-1, keepdims=True)
    m = np.where(m == -np.inf, np.zeros((), np.dtype(biased.dtype)), m)
    e = np.exp(biased - m)
    total = np.sum(e, axis=-1, keepdims=True)
    total = np.where(total == 0, np.ones((), np.dtype(total.dtype)), total)
    p = e / total
    if bias is not None:
        masked_row = np.max(bias, axis=-1, keepdims=True) == neg
        p = np.where(masked_row, np.zeros((), np.dtype(p.dtype)), p)
    if mode == 3:
        qk_out = p
    out = np.matmul(p.astype(dt), val)
    if three:
        out = np.reshape(np.transpose(out, (0, 2, 1, 3)), (batch, sq, -1))
    return [out, present_k, present_v, qk_out.astype(dt)]


# ---- scatter and gather by index -----------------------------------------------------------

_AT = {"none": "set", "add": "add", "mul": "multiply", "max": "max", "min": "min"}


def _update(data: Any, index: tuple, updates: Any, reduction: str) -> Any:
    import pyasc

    base = data if traced(data) else pyasc.asarray(data) if hasattr(pyasc, "asarray") else data
    if not traced(base):
        out = np.array(data, copy=True)
        f = {"none": None, "add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}[reduction]
        if f is None:
            out[index] = updates
        else:
            f.at(out, index, updates)
        return out
    return getattr(base.at[index], _AT[reduction])(updates)


@op("ScatterND")
def _scatter_nd(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    data, idx, upd = x
    k = _dims(idx)[-1]
    index = tuple(idx[..., i] for i in range(k))
    return [_update(data, index, upd, a.get("reduction", "none"))]


@op("ScatterElements", "Scatter")
def _scatter_elements(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    data, idx, upd = x
    axis = _axis(a.get("axis", 0), _rank(data))
    n = _dims(data)[axis]
    idx = np.where(idx < 0, idx + n, idx)
    shape = _dims(idx)
    index = tuple(idx if d == axis else np.arange(shape[d]).reshape([-1 if e == d else 1 for e in range(len(shape))])
                  for d in range(len(shape)))
    index = tuple(np.broadcast_to(i, shape) if not traced(i) else i for i in index)
    return [_update(data, index, upd, a.get("reduction", "none"))]


@op("GatherND")
def _gather_nd(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    data, idx = x
    b = a.get("batch_dims", 0)
    if b:
        raise UnsupportedError("GatherND with batch_dims is not supported")
    k = _dims(idx)[-1]
    return [data[tuple(idx[..., i] for i in range(k))]]


# ---- more activations and normalisations ---------------------------------------------------

@op("Swish")
def _swish(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t = x[0]
    return [t / (1 + np.exp(-t * a.get("alpha", 1.0)))]


@op("SwiGLU")
def _swiglu(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    gate, up = x[0], x[1]
    alpha = a.get("alpha", 1.0)
    dt = np.dtype(gate.dtype)
    return [(gate * (1 / (1 + np.exp(-gate * alpha))).astype(dt) * up).astype(dt)]


@op("GroupNormalization")
def _group_norm(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t, scale, bias = x
    g = a["num_groups"]
    eps = a.get("epsilon", 1e-5)
    d = _dims(t)
    grouped = np.reshape(t, (d[0], g, -1))
    mu = np.mean(grouped, axis=2, keepdims=True)
    dev = grouped - mu
    var = np.mean(dev * dev, axis=2, keepdims=True)
    y = np.reshape(dev / np.sqrt(var + eps), d)
    shape = (1, -1) + (1,) * (len(d) - 2)
    return [y * np.reshape(scale, shape) + np.reshape(bias, shape)]


@op("EyeLike")
def _eye_like(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    rows, cols = _dims(x[0])
    dt = _np_dtype(a["dtype"]) if "dtype" in a else np.dtype(x[0].dtype)
    return [np.eye(rows, cols, a.get("k", 0), dtype=dt)]


def _window(kind: str) -> Op:
    def run(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
        n = ints(x[0])[0]
        m = n if a.get("periodic", 1) else n - 1
        i = np.arange(n, dtype=np.float64)
        if kind == "hann":
            w = 0.5 - 0.5 * np.cos(2 * np.pi * i / m)
        elif kind == "hamming":
            w = 25 / 46 - (1 - 25 / 46) * np.cos(2 * np.pi * i / m)
        else:
            w = 0.42 - 0.5 * np.cos(2 * np.pi * i / m) + 0.08 * np.cos(4 * np.pi * i / m)
        return [w.astype(_np_dtype(a.get("output_datatype", 1)))]

    return run


OPS["HannWindow"], OPS["HammingWindow"], OPS["BlackmanWindow"] = _window("hann"), _window("hamming"), _window("b")


@op("CenterCropPad")
def _center_crop_pad(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
    t = x[0]
    shape = _dims(t)
    axes = [_axis(i, len(shape)) for i in a.get("axes", range(len(shape)))]
    want = dict(zip(axes, ints(x[1])))
    idx, widths = [], []
    for d, n in enumerate(shape):
        w = want.get(d, n)
        if w < n:
            lo = (n - w) // 2
            idx.append(slice(lo, lo + w))
            widths.append((0, 0))
        else:
            idx.append(slice(None))
            lo = (w - n) // 2
            widths.append((lo, w - n - lo))
    return [np.pad(t[tuple(idx)], widths)]


# ---- recurrent layers ----------------------------------------------------------------------

def _activation(name: str, alpha: Optional[float], beta: Optional[float]) -> Callable[[Any], Any]:
    name = name.lower()
    if name == "sigmoid":
        return lambda t: 1 / (1 + np.exp(-t))
    if name == "tanh":
        return np.tanh
    if name == "relu":
        return lambda t: np.maximum(t, 0)
    if name == "leakyrelu":
        return lambda t: np.where(t < 0, t * (0.01 if alpha is None else alpha), t)
    if name == "hardsigmoid":
        return lambda t: np.clip(t * (0.2 if alpha is None else alpha) + (0.5 if beta is None else beta), 0, 1)
    if name == "affine":
        return lambda t: t * (1.0 if alpha is None else alpha) + (0.0 if beta is None else beta)
    if name == "scaledtanh":
        return lambda t: np.tanh(t * (1.0 if beta is None else beta)) * (1.0 if alpha is None else alpha)
    if name == "softsign":
        return lambda t: t / (1 + np.abs(t))
    if name == "softplus":
        return lambda t: np.logaddexp(t, 0)
    if name == "elu":
        return lambda t: np.where(t < 0, (np.exp(t) - 1) * (1.0 if alpha is None else alpha), t)
    raise UnsupportedError(f"recurrent activation {name!r} is not supported")


def _recurrent(kind: str) -> Op:
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[kind]
    defaults = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}[kind]

    def run(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
        get = lambda i: x[i] if len(x) > i and x[i] is not None else None  # noqa: E731
        xs, w, r = x[0], x[1], x[2]
        bias, lens, h0 = get(3), get(4), get(5)
        c0, peep = (get(6), get(7)) if kind == "LSTM" else (None, None)
        layout = a.get("layout", 0)
        if layout:
            xs = np.swapaxes(xs, 0, 1)
        steps, batch, _ = _dims(xs)
        hidden = a.get("hidden_size") or _dims(r)[-1]
        direction = a.get("direction", "forward")
        dirs = 2 if direction == "bidirectional" else 1
        names = list(a.get("activations", [])) or defaults * dirs
        alphas, betas = list(a.get("activation_alpha", [])), list(a.get("activation_beta", []))
        per = len(defaults)
        acts = [_activation(n, alphas[i] if i < len(alphas) else None, betas[i] if i < len(betas) else None)
                for i, n in enumerate(names)]
        clip = a.get("clip")
        dt = np.dtype(xs.dtype)
        if lens is not None and direction != "forward" and (traced(lens) or np.any(np.asarray(lens) != steps)):
            raise UnsupportedError(f"{kind} running backwards over sequences shorter than the input is not supported")
        zeros = np.zeros((batch, hidden), dt)
        ys, hs, cs = [], [], []
        for d in range(dirs):
            f = acts[d * per:(d + 1) * per]
            wd, rd = w[d], r[d]
            bd = bias[d] if bias is not None else np.zeros(2 * gates * hidden, dt)
            wb, rb = bd[:gates * hidden], bd[gates * hidden:]
            h = h0[d] if h0 is not None else zeros
            c = c0[d] if c0 is not None else zeros
            reverse = direction == "reverse" or d == 1
            out: List[Any] = [None] * steps
            for step in range(steps):
                t = steps - 1 - step if reverse else step
                xt = xs[t]
                gx = np.matmul(xt, np.swapaxes(wd, 0, 1)) + wb
                gh = np.matmul(h, np.swapaxes(rd, 0, 1)) + rb
                if kind == "RNN":
                    pre = gx + gh
                    if clip:
                        pre = np.clip(pre, -clip, clip)
                    h_new, c_new = f[0](pre), c
                elif kind == "GRU":
                    zx, rx, hx = gx[:, :hidden], gx[:, hidden:2 * hidden], gx[:, 2 * hidden:]
                    zh, rh, hh = gh[:, :hidden], gh[:, hidden:2 * hidden], gh[:, 2 * hidden:]
                    cl = (lambda q: np.clip(q, -clip, clip)) if clip else (lambda q: q)
                    z, rr = f[0](cl(zx + zh)), f[0](cl(rx + rh))
                    if a.get("linear_before_reset", 0):
                        cand = f[1](cl(hx + rr * hh))
                    else:
                        cand = f[1](cl(hx + np.matmul(rr * h, np.swapaxes(rd[2 * hidden:], 0, 1))
                                       + rb[2 * hidden:]))
                    h_new, c_new = (1 - z) * cand + z * h, c
                else:
                    pre = gx + gh
                    if clip:
                        pre = np.clip(pre, -clip, clip)
                    i_, o_, f_, g_ = (pre[:, k * hidden:(k + 1) * hidden] for k in range(4))
                    if peep is not None:
                        pi, po, pf = peep[d][:hidden], peep[d][hidden:2 * hidden], peep[d][2 * hidden:]
                        i_, f_ = i_ + pi * c, f_ + pf * c
                    it, ft = f[0](i_), f[0](f_)
                    if a.get("input_forget", 0):
                        ft = 1 - it
                    c_new = ft * c + it * f[1](g_)
                    if peep is not None:
                        o_ = o_ + po * c_new
                    h_new = f[0](o_) * f[2](c_new)
                if lens is not None:
                    live = (np.asarray(lens) > t if not traced(lens) else lens > t).reshape(-1, 1)
                    h_out = np.where(live, h_new, np.zeros((), dt))
                    h = np.where(live, h_new, h)
                    c = np.where(live, c_new, c)
                else:
                    h_out, h, c = h_new, h_new, c_new
                out[t] = h_out
            ys.append(np.stack(out, 0))
            hs.append(h)
            cs.append(c)
        y = np.stack(ys, 1)
        if layout:
            y = np.transpose(y, (2, 0, 1, 3))
            yh, yc = np.swapaxes(np.stack(hs, 0), 0, 1), np.swapaxes(np.stack(cs, 0), 0, 1)
        else:
            yh, yc = np.stack(hs, 0), np.stack(cs, 0)
        return [y, yh, yc]

    return run


OPS["RNN"], OPS["GRU"], OPS["LSTM"] = _recurrent("RNN"), _recurrent("GRU"), _recurrent("LSTM")
