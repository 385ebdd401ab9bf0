"""``pyasc bench`` workloads of fused attention.

``softmax(q @ k.T / sqrt(d)) @ v`` in float32: pyasc's fused kernel (called directly, and the
formula written out inside an operator, which the compiler rewrites into the same kernel)
against NumPy and ``jax.jit`` of the unfused formula, measured in the same run; the causal
variant against the full one; and the pool's peak bytes for a long sequence, measured in a
fresh process. Returns rows of (who, how, best time) for ``bench._report``.
"""

from __future__ import annotations

import subprocess
import sys
from typing import List, Tuple

import numpy as np

import pyasc

from ..tools._timing import best_time
from ..tools._timing import peer as _peer

Row = Tuple[str, str, float]


def _inputs(heads: int, length: int, dim: int) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(11)
    return tuple(rng.standard_normal((heads, length, dim)).astype(np.float32) for _ in range(3))  # type: ignore


def _np_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    s = q @ np.swapaxes(k, -1, -2) / np.float32(np.sqrt(q.shape[-1]))
    e = np.exp(s - s.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)) @ v


def bench_attention(heads: int, length: int, dim: int, repeat: int, peers: bool = True) -> List[Row]:
    """Attention of ``heads`` heads of ``length`` queries and keys of width ``dim``."""
    q, k, v = _inputs(heads, length, dim)
    fused = pyasc.operator(lambda q, k, v: pyasc.scaled_dot_product_attention(q, k, v))

    @pyasc.operator
    def written_out(q, k, v):
        s = q @ np.swapaxes(k, -1, -2) / np.float32(np.sqrt(q.shape[-1]))
        return pyasc.softmax(s) @ v

    rows: List[Row] = [("pyasc", "scaled_dot_product_attention", best_time(lambda: fused(q, k, v), repeat)),
                       ("pattern", "softmax(q@k.T/c)@v in an operator", best_time(lambda: written_out(q, k, v),
                                                                                  repeat))]
    if not peers:
        return rows
    rows.append(("numpy", "unfused formula", best_time(lambda: _np_attention(q, k, v), max(2, repeat // 2))))
    jax = _peer("jax")
    if jax is not None:
        import jax.numpy as jnp

        def jax_attention(q, k, v):
            s = q @ jnp.swapaxes(k, -1, -2) / jnp.sqrt(jnp.float32(q.shape[-1]))
            return jax.nn.softmax(s, axis=-1) @ v

        f = jax.jit(jax_attention)
        qj, kj, vj = (jnp.asarray(x) for x in (q, k, v))
        rows.append(("jax", "jax.jit(unfused formula)", best_time(lambda: f(qj, kj, vj).block_until_ready(),
                                                                  repeat)))
    return rows


def bench_causal(heads: int, length: int, dim: int, repeat: int) -> List[Row]:
    """Causal attention against the full attention of the same shape."""
    q, k, v = _inputs(heads, length, dim)
    causal = pyasc.operator(lambda q, k, v: pyasc.scaled_dot_product_attention(q, k, v, is_causal=True))
    full = pyasc.operator(lambda q, k, v: pyasc.scaled_dot_product_attention(q, k, v))
    return [("pyasc", "is_causal=True", best_time(lambda: causal(q, k, v), repeat)),
            ("full", "is_causal=False", best_time(lambda: full(q, k, v), repeat))]


_PEAK = """
import numpy as np, pyasc
rng = np.random.default_rng(0)
q, k, v = (pyasc.to_device(rng.standard_normal((1, {n}, {d})).astype(np.float32)) for _ in range(3))
op = pyasc.operator(lambda q, k, v: pyasc.scaled_dot_product_attention(q, k, v))
base = pyasc.memory_stats()["peak_bytes_in_use"]
op(q, k, v)
pyasc.synchronize()
print(base, pyasc.memory_stats()["peak_bytes_in_use"])
"""


def peak_pool_bytes(length: int, dim: int) -> Tuple[int, int]:
    """Pool bytes in use at the peak (inputs on the device, then after one call), fresh process."""
    out = subprocess.run([sys.executable, "-c", _PEAK.format(n=length, d=dim)], capture_output=True, text=True,
                         check=True).stdout.split()
    return int(out[0]), int(out[1])


def bytes_moved(heads: int, length: int, dim: int) -> Tuple[int, int]:
    """Model the memory traffic of the fused and the unfused forms, in bytes.

    Fused reads q, k, v and writes the output once; unfused also writes the scores, reads them
    for the softmax, writes the weights and reads them for the second product.
    """
    io = 4 * heads * length * dim * 4
    scores = 4 * heads * length * length
    return io, io + 4 * scores
