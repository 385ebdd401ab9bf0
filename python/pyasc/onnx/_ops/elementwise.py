"""Elementwise ONNX operators: arithmetic, comparisons, logic, activations, casts."""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, List

import numpy as np

from ...errors import UnsupportedError
from ._base import OPS, Op, _binary, _dims, _rank, _same, _unary, op, traced

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


for _n, _f in _UNARY.items():
    OPS[_n] = _unary(_f)


for _n, _f in _BINARY.items():
    OPS[_n] = _binary(_f)


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
