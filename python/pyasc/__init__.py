"""pyasc: custom numerical operators as plain Python functions, compiled by a Rust core.

Decorate a function with :func:`pyasc.operator`; pyasc traces it, fuses its elementwise
ops into tile kernels and runs them on all cores with run-time selected SIMD.
"""

from __future__ import annotations

from . import _pyasc
from ._log import _init_from_env, set_log_level
from ._types import CacheInfo
from .classes import AscendOperatorBase
from .creation import arange, full, ones, zeros
from .decorators import OPTION_STATUS, operator
from .dynamic import get_context
from .errors import (
    AlignmentError,
    DeviceError,
    DTypeError,
    FusionError,
    InternalError,
    InvalidArgumentError,
    NumericalError,
    OutOfMemoryError,
    PyAscError,
    ShapeError,
    TraceError,
    UnsupportedError,
)
from .monitor import NpuTemperature, NpuUtilization
from .movement import (
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
from .ops import (
    abs,
    add,
    cast,
    ceil,
    clip,
    cos,
    divide,
    erf,
    erfc,
    exp,
    exp2,
    expm1,
    fast_gelu,
    floor,
    gelu,
    isfinite,
    isinf,
    isnan,
    log,
    log1p,
    log2,
    matmul,
    maximum,
    minimum,
    multiply,
    negative,
    pow,
    reciprocal,
    relu,
    round,
    rsqrt,
    sigmoid,
    sign,
    silu,
    sin,
    softplus,
    sqrt,
    square,
    subtract,
    tan,
    tanh,
    where,
)
from .reductions import (
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
from .streams import (
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

Tensor = _pyasc.Tensor
CompiledOp = _pyasc.CompiledOp
__version__ = _pyasc.__version__


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
    "OPTION_STATUS",
    "OutOfMemoryError",
    "PyAscError",
    "ShapeError",
    "Stream",
    "Tensor",
    "TraceError",
    "UnsupportedError",
    "abs",
    "add",
    "all",
    "any",
    "arange",
    "argmax",
    "argmin",
    "broadcast_to",
    "cast",
    "ceil",
    "clip",
    "concatenate",
    "cos",
    "current_stream",
    "device_info",
    "divide",
    "empty",
    "empty_cache",
    "erf",
    "erfc",
    "exp",
    "exp2",
    "expand_dims",
    "expm1",
    "fast_gelu",
    "flip",
    "floor",
    "from_dlpack",
    "full",
    "gelu",
    "get_context",
    "isfinite",
    "isinf",
    "isnan",
    "layer_norm",
    "log",
    "log1p",
    "log2",
    "log_softmax",
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
    "reciprocal",
    "relu",
    "reshape",
    "rms_norm",
    "round",
    "rsqrt",
    "set_log_level",
    "sigmoid",
    "sign",
    "silu",
    "sin",
    "softmax",
    "softplus",
    "sqrt",
    "square",
    "squeeze",
    "stack",
    "stream",
    "subtract",
    "sum",
    "swapaxes",
    "synchronize",
    "take",
    "tan",
    "tanh",
    "to_device",
    "transpose",
    "where",
    "zeros",
]

_init_from_env()
