"""The ``@pyasc.operator`` decorator and the validation of its options."""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Union

from .. import _pyasc
from ..errors import InvalidArgumentError
from ._live import register

__all__ = ["operator", "fused_operator", "OPTION_STATUS"]

_DEVICE_TYPES = ("cpu", "npu", "auto")
_COMPUTE_TYPES = ("vector", "cube", "auto")
_PRECISION_MODES = ("fp32", "force_fp16", "force_bf16", "mixed_fp16", "mixed_bf16")
_PRECISION_ALIASES = {"fp32": "fp32", "fp16": "force_fp16", "bf16": "force_bf16"}

#: What each option does in this version: "active" options change behaviour now; "recorded"
#: options are validated and kept in ``op.options`` and take effect with the features they
#: belong to (see the README's option table).
OPTION_STATUS: Dict[str, str] = {
    "device_type": "active",
    "kernel_name": "active",
    "op_break_level": "active",
    "compute_type": "recorded (tiling hint for the cube unit, used once matmul exists)",
    "precision_mode": "active: force_* stores float32 values in 16 bits, mixed_* feeds matmul/convolution 16-bit "
                      "operands with float32 accumulation (see pyasc.core.precision)",
    "atomic_flag": "recorded (elementwise kernels are always bitwise deterministic)",
    "dynamic_shape": "active: one trace per rank/dtype signature, re-planned for new extents",
    "gears": "active with dynamic_shape: geared dims padded up to the next gear, one plan per gear",
    "fused": "active: the whole function must compile to one kernel, else FusionError naming the line "
             "whose op starts a second kernel (set by @pyasc.fused_operator)",
    "debug": "active: NaN/Inf checks after every op (one kernel per op), raised with the op's line; each op's "
             "result is kept while pyasc.debug.capture() or a debug server is active",
}


def _choice(name: str, value: Any, allowed: tuple) -> str:
    if not isinstance(value, str) or value.lower() not in allowed:
        raise InvalidArgumentError(f"{name} must be one of {', '.join(map(repr, allowed))}, not {value!r}")
    return value.lower()


def _flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise InvalidArgumentError(f"{name} must be True or False, not {value!r}")
    return value


def validate_options(options: Dict[str, Any]) -> Dict[str, Any]:
    """Check every operator option and return them normalised (unknown names are errors)."""
    opts = dict(options)
    if "device" in opts:  # the class form's spelling
        opts.setdefault("device_type", opts.pop("device"))
    if "precision" in opts:  # the article's shorthand
        p = opts.pop("precision")
        if not isinstance(p, str) or p.lower() not in _PRECISION_ALIASES:
            raise InvalidArgumentError(f"precision must be one of {sorted(_PRECISION_ALIASES)}, not {p!r}")
        opts.setdefault("precision_mode", _PRECISION_ALIASES[p.lower()])
    unknown = sorted(set(opts) - set(OPTION_STATUS))
    if unknown:
        raise InvalidArgumentError(f"unknown operator option(s) {unknown}; accepted: {sorted(OPTION_STATUS)}")
    out: Dict[str, Any] = {}
    out["device_type"] = _choice("device_type", opts.get("device_type", "auto"), _DEVICE_TYPES)
    out["compute_type"] = _choice("compute_type", opts.get("compute_type", "auto"), _COMPUTE_TYPES)
    out["precision_mode"] = _choice("precision_mode", opts.get("precision_mode", "fp32"), _PRECISION_MODES)
    level = opts.get("op_break_level", 3)
    if isinstance(level, bool) or not isinstance(level, int) or not 0 <= level <= 3:
        raise InvalidArgumentError(f"op_break_level must be an int from 0 to 3, not {level!r}")
    out["op_break_level"] = level
    name = opts.get("kernel_name")
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise InvalidArgumentError(f"kernel_name must be a non-empty string, not {name!r}")
    out["kernel_name"] = name
    out["atomic_flag"] = _flag("atomic_flag", opts.get("atomic_flag", True))
    out["dynamic_shape"] = _flag("dynamic_shape", opts.get("dynamic_shape", False))
    out["debug"] = _flag("debug", opts.get("debug", False))
    out["fused"] = _flag("fused", opts.get("fused", False))
    if out["fused"] and (out["debug"] or out["op_break_level"] < 3):
        raise InvalidArgumentError("a fused operator needs op_break_level=3 and debug=False (one kernel per op "
                                   "cannot be one kernel)")
    gears = opts.get("gears")
    if gears is not None:
        if not out["dynamic_shape"]:
            raise InvalidArgumentError("gears needs dynamic_shape=True")
        def sizes_ok(v: Any) -> bool:
            return isinstance(v, (list, tuple)) and bool(v) and all(isinstance(s, int) and s > 0 for s in v)

        ok = gears == "pow2" or (isinstance(gears, dict) and all(isinstance(k, int) and sizes_ok(v)
                                                                for k, v in gears.items()))
        if not ok:
            raise InvalidArgumentError(f"gears must be 'pow2' or {{dim: [sizes]}}, not {gears!r}")
    out["gears"] = gears
    return out


def operator(
    fn: Optional[Callable[..., Any]] = None, **options: Any
) -> Union[Any, Callable[[Callable[..., Any]], Any]]:
    """Turn a Python function into a compiled pyasc operator.

    Use as ``@pyasc.operator`` or ``@pyasc.operator(device_type="npu", ...)``. The function
    is traced on the first call for each argument signature (dtypes and shapes); its
    elementwise ops are fused into tile kernels that run on all cores. NumPy arrays in,
    NumPy arrays out; Python scalars are weakly typed inputs and never cause a recompile.

    Options (see ``OPTION_STATUS`` for what each does in this version): ``device_type``
    ("cpu", "npu", "auto"), ``compute_type``, ``kernel_name``, ``precision_mode``,
    ``op_break_level`` (0-3), ``atomic_flag``, ``dynamic_shape``, ``gears``, ``debug``.
    Unknown options or values raise :class:`pyasc.InvalidArgumentError`.
    """
    settings = validate_options(options)

    def wrap(func: Callable[..., Any]) -> Any:
        if not callable(func):
            raise InvalidArgumentError(f"@pyasc.operator decorates a function, not {type(func).__name__}")
        name = settings["kernel_name"] or getattr(func, "__name__", "operator")
        if settings["gears"] is not None:
            from .dynamic import GearedOperator

            def make(f: Callable[..., Any], geared: bool) -> Any:
                # The unpadded fallback is traced per shape (its get_max_dim() gives the gear).
                opts = dict(settings) if geared else {**settings, "gears": None, "dynamic_shape": False}
                return _pyasc.Operator(f, name, settings["device_type"], settings["op_break_level"], opts)

            return register(GearedOperator(func, make, settings["gears"]))
        return register(_pyasc.Operator(func, name, settings["device_type"], settings["op_break_level"],
                                        dict(settings)))

    if fn is not None:
        return wrap(fn)
    return wrap


def fused_operator(
    fn: Optional[Callable[..., Any]] = None, **options: Any
) -> Union[Any, Callable[[Callable[..., Any]], Any]]:
    """Like :func:`operator`, but the whole function must compile to exactly one kernel.

    Elementwise chains, broadcasts, row reductions and matmul epilogues fuse; the attention
    pattern ``softmax(Q @ K.T * scale) @ V`` becomes one flash-attention kernel. When the plan
    needs more than one kernel, the first call (or ``get_compiled_op``) raises
    :class:`pyasc.FusionError` naming the line whose op starts the second kernel.
    """
    options = {**options, "fused": True}
    return operator(fn, **options)
