"""``pyasc bench`` workload of convolution.

A 3x3 conv2d against ``jax.jit`` of ``jax.lax.conv_general_dilated`` (and torch when
installed), measured in the same run. Returns rows of (who, how, best time) for ``bench._report``.
"""

from __future__ import annotations

from typing import List, Tuple

import numpy as np

import pyasc

from ..tools._timing import best_time
from ..tools._timing import peer as _peer

Row = Tuple[str, str, float]


def bench_conv2d(shape: Tuple[int, int, int, int], out_channels: int, repeat: int) -> List[Row]:
    """3x3 convolution with padding 1 of a float32 ``NCHW`` image into ``out_channels`` channels."""
    rng = np.random.default_rng(9)
    x = rng.standard_normal(shape).astype(np.float32)
    w = (rng.standard_normal((out_channels, shape[1], 3, 3)) / np.sqrt(9 * shape[1])).astype(np.float32)
    op = pyasc.operator(lambda x, w: pyasc.conv2d(x, w, padding=1))
    rows: List[Row] = [("pyasc", "operator (pyasc.conv2d)", best_time(lambda: op(x, w), repeat))]
    jax = _peer("jax")
    if jax is not None:
        import jax.numpy as jnp

        f = jax.jit(lambda x, w: jax.lax.conv_general_dilated(x, w, (1, 1), [(1, 1), (1, 1)],
                                                              dimension_numbers=("NCHW", "OIHW", "NCHW")))
        xj, wj = jnp.asarray(x), jnp.asarray(w)
        rows.append(("jax", "jax.jit(lax.conv_general_dilated)", best_time(lambda: f(xj, wj).block_until_ready(),
                                                                          repeat)))
    torch = _peer("torch")
    if torch is not None:
        xt, wt = torch.from_numpy(x), torch.from_numpy(w)
        with torch.no_grad():
            rows.append(("torch", "torch.nn.functional.conv2d",
                         best_time(lambda: torch.nn.functional.conv2d(xt, wt, padding=1), repeat)))
    return rows
