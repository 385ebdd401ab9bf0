"""Results in the caller's framework.

An operator given another framework's DLPack tensor (JAX, PyTorch, CuPy, ...) returns that
framework's arrays, sharing pyasc's memory.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Dict

from .. import _hooks

# Top-level module of a tensor type -> module whose ``from_dlpack`` makes that kind of tensor.
_IMPORTERS: Dict[str, str] = {"jaxlib": "jax.numpy", "jax": "jax.numpy", "torch": "torch", "cupy": "cupy"}


def _importer(proto: Any) -> Callable[[Any], Any]:
    top = type(proto).__module__.split(".")[0]
    module = importlib.import_module(_IMPORTERS.get(top, top))
    return module.from_dlpack


def like(proto: Any, result: Any) -> Any:
    """Return ``result`` (a NumPy array over pyasc memory) as a tensor of ``proto``'s framework."""
    if getattr(result, "dtype", None) is not None and result.dtype.kind == "V" and result.dtype.itemsize == 2:
        # bfloat16: NumPy cannot export ml_dtypes' bfloat16 through DLPack.
        return _bfloat16_like(proto, result)
    return _importer(proto)(result)


def _bfloat16_like(proto: Any, result: Any) -> Any:
    """Return a bfloat16 ``result`` in ``proto``'s framework: a view for torch, a copy elsewhere."""
    top = type(proto).__module__.split(".")[0]
    if top == "torch":
        import numpy as np
        import torch

        return torch.from_numpy(result.view(np.uint16)).view(torch.bfloat16)
    module = importlib.import_module(_IMPORTERS.get(top, top))
    return module.asarray(result)  # JAX arrays are immutable copies anyway


_hooks.register("like", like)
