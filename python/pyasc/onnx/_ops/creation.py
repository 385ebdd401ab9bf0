"""Values made from shapes and attributes: Shape, Size, Constant(OfShape), Range, EyeLike, windows."""

from __future__ import annotations

from typing import Any, Dict, List

import numpy as np

from ...errors import UnsupportedError
from ._base import OPS, Op, _dims, _np_dtype, ints, op


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
