"""``pyasc.precision_scope``: the compute type of the ops traced inside a block.

Inside an operator, ``with pyasc.precision_scope("fp32"):`` keeps the enclosed ops in float32
whatever the operator's ``precision_mode``; ``"fp16"`` and ``"bf16"`` put every float32 op
traced inside into float16 or bfloat16 storage (computed in float32 lanes, rounded where
stored; matrix products and convolutions read 16-bit operands and accumulate in float32).
Scopes nest; the innermost one wins. A scope applies to the traces that run inside it: an
operator called inside a scope but traced elsewhere keeps its own precision.

The policies of ``precision_mode`` (see ``pyasc.operator``):

* ``fp32``: the dtypes as traced.
* ``force_fp16`` / ``force_bf16``: every float32 op in the 16-bit type; reductions, matmul
  and convolution accumulate in float32; results keep the dtypes the fp32 program returns.
* ``mixed_fp16`` / ``mixed_bf16``: only the cube ops (``MIXED_LOW_PRECISION_OPS``) read
  16-bit operands with float32 accumulation; everything else (``MIXED_FP32_OPS``) stays
  float32.
"""

from __future__ import annotations

from types import TracebackType
from typing import Optional, Type

from .. import _pyasc

__all__ = ["precision_scope", "MIXED_LOW_PRECISION_OPS", "MIXED_FP32_OPS"]

#: Ops a ``mixed_*`` policy runs on 16-bit operands (float32 accumulation).
MIXED_LOW_PRECISION_OPS = ("matmul", "@", "dot", "einsum contractions", "conv1d", "conv2d", "conv3d")

#: Ops a ``mixed_*`` policy keeps in float32 (every op not in ``MIXED_LOW_PRECISION_OPS``),
#: named as in PyTorch's autocast float32 list.
MIXED_FP32_OPS = ("exp", "log", "pow", "division", "softmax", "log_softmax", "layer_norm", "rms_norm",
                  "sum", "mean", "var", "std", "cumsum", "erf", "gelu", "elementwise arithmetic")


class precision_scope:  # noqa: N801 - lower case like the API's other context managers
    """Context manager: ops traced inside compute in ``precision`` ("fp32", "fp16", "bf16")."""

    def __init__(self, precision: str) -> None:
        """Remember the scope's precision (checked when the block is entered)."""
        self.precision = precision

    def __enter__(self) -> precision_scope:
        """Open the scope on this thread."""
        _pyasc.precision_scope_push(self.precision)
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        """Close the scope."""
        _pyasc.precision_scope_pop()

    def __repr__(self) -> str:
        """Return ``precision_scope('fp32')`` and so on."""
        return f"precision_scope({self.precision!r})"
