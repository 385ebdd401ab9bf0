"""pyasc: custom numerical operators as plain Python functions, compiled by a Rust core.

Decorate a function with :func:`pyasc.operator`; pyasc traces it, fuses its elementwise
ops into tile kernels and runs them on all cores with run-time selected SIMD.
"""

from __future__ import annotations

import os as _env_os
import sys as _env_sys
from typing import Any as _Any
from typing import List as _List

from . import _env, _pyasc
from . import ops as _ops
from ._log import _init_from_env, set_log_level
from .api import contractions as _contractions
from .api import linalg
from .api import matrices as _matrices
from .api import statistics as _statistics
from .api.creation import arange, full, ones, zeros
from .api.movement import (
    broadcast_to,
    concatenate,
    expand_dims,
    flip,
    moveaxis,
    pad,
    permute,
    reshape,
    squeeze,
    stack,
    swapaxes,
    take,
    transpose,
)
from .api.reductions import (
    all,
    any,
    argmax,
    argmin,
    layer_norm,
    log_softmax,
    logsumexp,
    max,
    mean,
    min,
    prod,
    rms_norm,
    softmax,
    sum,
)
from .api.scans import cumlogsumexp, cummax, cummin, cumprod, cumsum, logcumsumexp
from .api.sorting import (
    argpartition,
    argsort,
    median,
    nanmedian,
    nanpercentile,
    nanquantile,
    partition,
    percentile,
    quantile,
    searchsorted,
    sort,
    take_along_axis,
    topk,
    unique,
)
from .core import _complex, _inline, _interop, _operator_methods  # noqa: F401 (hooks)
from .core._types import CacheInfo
from .core.accuracy import check_accuracy
from .core.autodiff import check_grads, custom_vjp, grad, jvp, stop_gradient, value_and_grad, vjp
from .core.classes import AscendOperatorBase
from .core.decorators import OPTION_STATUS, fused_operator, operator
from .core.dynamic import get_context
from .core.precision import precision_scope
from .device.monitor import NpuTemperature, NpuUtilization
from .device.streams import (
    DeviceArray,
    Event,
    Stream,
    current_stream,
    empty,
    from_dlpack,
    stream,
    synchronize,
    to_device,
)
from .errors import (
    AlignmentError,
    DeviceError,
    DTypeError,
    FusionError,
    IntegerOverflowError,
    InternalError,
    InvalidArgumentError,
    NumericalError,
    OutOfMemoryError,
    PyAscError,
    PyAscWarning,
    ShapeError,
    TraceError,
    UnsupportedError,
)
from .nn import attention as _attention
from .nn import convolution as _convolution
from .ops import add, cast, clip, divide, matmul, maximum, minimum, multiply, negative, pow, round, subtract, where
from .stencil import StencilOperator, stencil_operator

# The unary elementwise functions (exp, log10, gelu, ...) come from the extension's op table.
globals().update({_name: getattr(_ops, _name) for _name in _ops.UNARY_API})

Tensor = _pyasc.Tensor
CompiledOp = _pyasc.CompiledOp
__version__ = _pyasc.__version__


def reset_peak_memory_stats() -> None:
    """Start ``memory_stats()["peak_bytes_in_use"]`` over from the bytes in use now."""
    _pyasc.reset_peak_memory_stats()


def memory_stats() -> dict:
    """Statistics of the caching memory pool: bytes in use, cached and peak; allocations and reuses."""
    return _pyasc.memory_stats()


def empty_cache() -> None:
    """Return every cached (free) block of the memory pool to the system."""
    _pyasc.empty_cache()


def device_info(device_type: str = "auto") -> dict:
    """Facts about a device kind: name, cores, SIMD ISA, local memory tiles are sized for."""
    return _pyasc.device_info(device_type)


__all__ = [
    "AlignmentError",
    "AscendOperatorBase",
    "CacheInfo",
    "CompiledOp",
    "DTypeError",
    "DeviceArray",
    "DeviceError",
    "Event",
    "FusionError",
    "InternalError",
    "InvalidArgumentError",
    "NpuTemperature",
    "NpuUtilization",
    "NumericalError",
    "IntegerOverflowError",
    "OPTION_STATUS",
    "OutOfMemoryError",
    "PyAscError",
    "PyAscWarning",
    "ShapeError",
    "Stream",
    "Tensor",
    "TraceError",
    "UnsupportedError",
    "add",
    "all",
    "any",
    "arange",
    "argmax",
    "argmin",
    "broadcast_to",
    "cast",
    "clip",
    "concatenate",
    "cumlogsumexp",
    "cummax",
    "cummin",
    "cumprod",
    "cumsum",
    "current_stream",
    "device_info",
    "divide",
    "empty",
    "empty_cache",
    "expand_dims",
    "flip",
    "from_dlpack",
    "full",
    "get_context",
    "graph_mode",
    "reset_peak_memory_stats",
    "pipeline",
    "Pipeline",
    "PipelineError",
    "fused_operator",
    "stencil_operator",
    "StencilOperator",
    "vectorized_operator",
    "GraphMode",
    "LazyArray",
    "layer_norm",
    "log_softmax",
    "logcumsumexp",
    "logsumexp",
    "matmul",
    "max",
    "maximum",
    "mean",
    "memory_stats",
    "min",
    "minimum",
    "moveaxis",
    "multiply",
    "negative",
    "ones",
    "operator",
    "pad",
    "permute",
    "pow",
    "prod",
    "profile",
    "check_accuracy",
    "precision_scope",
    "reshape",
    "rms_norm",
    "round",
    "set_log_level",
    "softmax",
    "squeeze",
    "stack",
    "stream",
    "subtract",
    "sum",
    "swapaxes",
    "synchronize",
    "take",
    "to_device",
    "transpose",
    "where",
    "zeros",
]
__all__ += list(_ops.UNARY_API)
__all__ += ["argpartition", "argsort", "median", "nanmedian", "nanpercentile", "nanquantile", "partition",
            "percentile", "quantile", "searchsorted", "sort", "take_along_axis", "topk", "unique"]

# Statistics, contractions, convolution and pooling, attention, matrix parts and norms, one module each.
for _mod in (_statistics, _contractions, _convolution, _attention, _matrices, linalg):
    globals().update({_name: getattr(_mod, _name) for _name in _mod.__all__})
    __all__ += list(_mod.__all__)
__all__ += ["debug", "linalg"]
# `import pyasc.linalg` names the public module where it has always been.
_env_sys.modules[f"{__name__}.linalg"] = linalg

from . import lang  # noqa: E402
from .api.selection import argwhere, compress, flatnonzero, nonzero  # noqa: E402
from .core import _tensor_methods  # noqa: E402, F401 (_tensor_methods attaches the tracer's methods)
from .core.pytree import tree_flatten, tree_leaves, tree_unflatten  # noqa: E402
from .lang import Kernel, kernel  # noqa: E402
from .vectorize import VectorizedOperator, vectorized_operator  # noqa: E402

__all__ += ["VectorizedOperator", "Kernel", "kernel", "lang"]
__all__ += ["check_grads", "custom_vjp", "grad", "jvp", "stop_gradient", "value_and_grad", "vjp"]
__all__ += ["argwhere", "compress", "flatnonzero", "nonzero", "tree_flatten", "tree_leaves", "tree_unflatten"]

_init_from_env()
_env.warn_problems()

if _env_os.environ.get("PYASC_PROF_DIR"):
    # `pyasc prof`: profile the whole process (the profiler is imported only then).
    from .tools.profiler import start_from_environment as _start_profile

    _start_profile()

# Parts a plain `import pyasc` does not load: each is imported when one of its names is first
# used (PEP 562), so the debugger's server, graph mode, the pipeline and the profiler cost
# nothing until then.
_LAZY = {
    "debug": ("debug", None),
    "graph_mode": ("graph.record", "graph_mode"),
    "GraphMode": ("graph.record", "GraphMode"),
    "LazyArray": ("graph.record", "LazyArray"),
    "pipeline": ("graph.pipeline", "pipeline"),
    "Pipeline": ("graph.pipeline", "Pipeline"),
    "PipelineError": ("graph.pipeline", "PipelineError"),
    "profile": ("tools.profiler", "profile"),
}


def __getattr__(name: str) -> _Any:
    """Import a lazily loaded part of pyasc on first use of one of its names."""
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'pyasc' has no attribute {name!r}") from None
    import importlib

    mod = importlib.import_module(f".{module}", __name__)
    value = mod if attr is None else getattr(mod, attr)
    globals()[name] = value
    return value


def __dir__() -> _List[str]:
    """List pyasc's names, the lazily loaded ones included."""
    return sorted(set(globals()) | set(_LAZY))

from .dask._pickle import register as _register_pickling  # noqa: E402

_register_pickling()
# The binding's cached Python objects, made now on the importing thread: a thread that made one
# later could be cut off by another thread's os.fork() and leave the child waiting for it.
_pyasc._warm()
