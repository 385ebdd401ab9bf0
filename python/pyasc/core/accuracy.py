"""The accuracy checker: an operator's results against the same function computed in float64.

``pyasc.check_accuracy(op, *args)`` (also ``op.check_accuracy(*args)``) runs the operator on the
arguments as given, runs it again with every floating-point argument promoted to float64
(complex to complex128; the function is traced again, so its ops compute in float64 wherever
the arguments decide the dtype), and reports per output: the largest absolute and relative
error, the largest error in ULPs of the output dtype, the fraction of elements beyond the
dtype's default tolerance, and the worst element with its index, the arguments' values there
and both results. The report prints as a table and says whether every output passed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

__all__ = ["AccuracyReport", "OutputAccuracy", "check_accuracy", "default_tolerance"]

# (relative, absolute) tolerance per output dtype: a few ulps of the dtype.
_TOLERANCE: Dict[str, Tuple[float, float]] = {
    "float16": (2e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "float32": (1e-5, 1e-7),
    "float64": (1e-12, 1e-14),
    "complex64": (1e-5, 1e-7),
    "complex128": (1e-12, 1e-14),
}


def default_tolerance(dtype: Any) -> Tuple[float, float]:
    """Return the (relative, absolute) tolerance an output of ``dtype`` is checked against."""
    return _TOLERANCE.get(np.dtype(dtype).name, (0.0, 0.0))


def _finfo(dtype: np.dtype) -> Any:
    if dtype.name == "bfloat16":
        import ml_dtypes

        return ml_dtypes.finfo(dtype)
    return np.finfo(dtype)


def _ulps(got: np.ndarray, ref: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """|got - ref| in units in the last place of ``dtype`` at ``ref`` (real dtypes)."""
    fi = _finfo(dtype)
    mag = np.abs(ref)
    tiny = float(fi.smallest_subnormal)
    with np.errstate(divide="ignore", invalid="ignore"):
        exp = np.floor(np.log2(np.where(mag > 0, mag, 1.0)))
        ulp = np.maximum(np.exp2(exp - int(fi.nmant)), tiny)
        return np.abs(got - ref) / ulp


@dataclass
class OutputAccuracy:
    """How one output compares with its float64 evaluation."""

    index: int
    dtype: str
    shape: Tuple[int, ...]
    max_abs: float
    max_rel: float
    max_ulp: float
    beyond: float
    rtol: float
    atol: float
    worst_index: Optional[Tuple[int, ...]]
    worst_inputs: List[Any] = field(default_factory=list)
    worst_got: Any = None
    worst_ref: Any = None

    @property
    def passed(self) -> bool:
        """True when no element is beyond the dtype's tolerance."""
        return self.beyond == 0.0


@dataclass
class AccuracyReport:
    """Per-output accuracy of one call; ``str(report)`` is a table."""

    operator: str
    outputs: List[OutputAccuracy]

    @property
    def passed(self) -> bool:
        """True when every output passed."""
        return all(o.passed for o in self.outputs)

    def __str__(self) -> str:
        head = f"accuracy of {self.operator} against float64: {'PASS' if self.passed else 'FAIL'}"
        cols = ("output", "dtype", "shape", "max abs", "max rel", "max ulp", "beyond tol", "worst at", "got", "float64")
        rows = [cols]
        for o in self.outputs:
            rows.append((str(o.index), o.dtype, str(o.shape), f"{o.max_abs:.3g}", f"{o.max_rel:.3g}",
                         f"{o.max_ulp:.3g}", f"{o.beyond:.2%}", str(o.worst_index), str(o.worst_got),
                         str(o.worst_ref)))
        widths = [max(len(r[i]) for r in rows) for i in range(len(cols))]
        lines = [head] + ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
        return "\n".join(lines)


def _host(a: Any) -> Any:
    """Return a DeviceArray's host copy (results are compared on the host); anything else as is."""
    return a.numpy() if hasattr(a, "numpy") and not isinstance(a, np.ndarray) else a


def _promote(a: Any) -> Any:
    """Return the argument with floats as float64 and complex numbers as complex128."""
    a = _host(a)
    if isinstance(a, (np.ndarray, np.generic)):
        kind = a.dtype.kind
        if kind == "c":
            return a.astype(np.complex128)
        if kind == "f" or a.dtype.name == "bfloat16":
            return a.astype(np.float64)
    return a


def _outputs(r: Any) -> List[np.ndarray]:
    items = r if isinstance(r, (tuple, list)) else (r,)
    return [np.asarray(_host(x)) for x in items]


def _value_at(a: Any, idx: Tuple[int, ...], shape: Tuple[int, ...]) -> Any:
    """Argument ``a``'s value at output position ``idx`` when it broadcasts to the output."""
    arr = np.asarray(_host(a))
    try:
        return np.broadcast_to(arr, shape)[idx].item()
    except (ValueError, IndexError):
        return None


def check_accuracy(op: Any, *args: Any) -> AccuracyReport:
    """Run ``op(*args)`` and the same function in float64; report the error of each output.

    A model from :func:`pyasc.onnx.load` is compared with the same model in float32 instead
    (top-1 agreement and the largest relative error per output).
    """
    from ..onnx import Model

    if isinstance(op, Model):
        return op.check_accuracy(*args)
    got = _outputs(op(*args))
    ref = _outputs(op(*(_promote(a) for a in args)))
    if len(got) != len(ref):
        raise ValueError(f"the float64 run returned {len(ref)} outputs, the operator {len(got)}")
    outs = []
    for i, (g, r) in enumerate(zip(got, ref)):
        dt = g.dtype
        rtol, atol = default_tolerance(dt)
        exact = dt.kind not in "fc" and dt.name != "bfloat16"
        gw = g.astype(np.complex128 if dt.kind == "c" else np.float64)
        rw = r.astype(gw.dtype)
        with np.errstate(all="ignore"):
            err = np.abs(gw - rw)
            same = (gw == rw) | (np.isnan(gw) & np.isnan(rw))
            err = np.where(same, 0.0, err)
            rel = np.where(same, 0.0, err / np.maximum(np.abs(rw), np.finfo(np.float64).tiny))
            if exact or dt.kind == "c":
                ulp = np.where(same, 0.0, err)
            else:
                ulp = np.where(same, 0.0, _ulps(gw, rw, dt))
            bad = ~same & ~(err <= atol + rtol * np.abs(rw))
        worst = None
        if g.size:
            flat = int(np.nanargmax(np.where(np.isnan(ulp), np.inf, ulp))) if ulp.size else 0
            worst = tuple(int(v) for v in np.unravel_index(flat, g.shape))
        outs.append(OutputAccuracy(
            index=i, dtype=dt.name, shape=tuple(g.shape),
            max_abs=float(np.max(err)) if g.size else 0.0,
            max_rel=float(np.max(rel)) if g.size else 0.0,
            max_ulp=float(np.max(ulp)) if g.size else 0.0,
            beyond=float(np.mean(bad)) if g.size else 0.0,
            rtol=rtol, atol=atol, worst_index=worst,
            worst_inputs=[_value_at(a, worst, g.shape) for a in args] if worst is not None else [],
            worst_got=g[worst].item() if worst is not None else None,
            worst_ref=r[worst].item() if worst is not None else None,
        ))
    return AccuracyReport(getattr(op, "__name__", None) or getattr(op, "name", "operator"), outs)
