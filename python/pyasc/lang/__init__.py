"""The kernel language: kernels written per block, in the style of Ascend C.

``@pyasc.kernel`` functions use these names (``from pyasc import lang as asc``): the block's
index and count (:func:`block_idx`, :func:`block_num`), typed views of the array arguments
(:class:`GlobalTensor`), tensors in the block's 192 KiB Unified Buffer (:class:`LocalTensor`)
handed between stages by queues (:class:`TPipe`, :class:`TQue`, :class:`TBuf`), transfers
(:func:`data_copy`, :func:`data_copy_pad`), vector instructions (``add`` ... ``select``), row
reductions, broadcasts and per-row arithmetic, and loops (``range`` inside a kernel, or :func:`range`).

The body is traced once per signature into a block program of tile IR instructions, which
the Rust VM runs for every block index on the worker threads.
"""

from __future__ import annotations

from typing import Any

from . import _trace
from ._kernel import Kernel, Launcher, kernel
from ._ops import (
    CMPMODE,
    abs,
    add,
    add_rows,
    adds,
    broadcast,
    cast,
    compare,
    data_copy,
    data_copy_pad,
    data_move,
    div,
    div_rows,
    duplicate,
    erf,
    exp,
    ln,
    max,
    maxs,
    min,
    mins,
    mul,
    mul_rows,
    muls,
    reciprocal,
    reduce_max,
    reduce_min,
    reduce_sum,
    relu,
    rsqrt,
    select,
    sqrt,
    sub,
    sub_rows,
    tanh,
)
from ._tensors import GlobalTensor, LocalTensor, QuePosition, TBuf, TPipe, TQue
from ._trace import UB_BYTES, Sym

range = _trace.kernel_range


def block_idx() -> Any:
    """Return the running block's index, from 0 to ``block_dim - 1`` (``GetBlockIdx``)."""
    _trace.state()
    return Sym(("block",))


def block_num() -> Any:
    """Return the launch's block count, ``block_dim`` (``GetBlockNum``)."""
    _trace.state()
    return Sym(("block_num",))


__all__ = [
    "CMPMODE", "GlobalTensor", "Kernel", "Launcher", "LocalTensor", "QuePosition", "Sym", "TBuf", "TPipe",
    "TQue", "UB_BYTES", "abs", "add", "add_rows", "adds", "block_idx", "block_num", "broadcast", "cast",
    "compare", "data_copy", "data_copy_pad", "data_move", "div", "div_rows", "duplicate", "erf", "exp",
    "kernel", "ln", "max", "maxs", "min", "mins", "mul", "mul_rows", "muls", "range", "reciprocal",
    "reduce_max", "reduce_min", "reduce_sum", "relu", "rsqrt", "select", "sqrt", "sub", "sub_rows", "tanh",
]
