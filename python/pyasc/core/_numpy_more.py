"""NumPy functions on traced tensors from the statistics, contraction, matrix and norm modules.

Merged into the ``__array_function__`` table of ``_numpy_api``, keyed by NumPy's function name.
"""

from __future__ import annotations

from typing import Any, Callable, Dict

from ..api import contractions, linalg, matrices, statistics

#: NumPy function name -> implementation taking NumPy's arguments.
FUNCTIONS: Dict[str, Callable[..., Any]] = {
    **{name: getattr(statistics, name) for name in statistics.__all__},
    "clip": statistics.clip,
    **{name: getattr(contractions, name) for name in contractions.__all__},
    **{name: getattr(matrices, name) for name in matrices.__all__},
    **{name: getattr(linalg, name) for name in linalg.__all__},
}
