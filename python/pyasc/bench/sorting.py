"""``pyasc bench`` workloads of sorting and selection: row sorts and row top-k.

Each returns rows of (who, how, best time) for ``bench._report``; the peers (NumPy, Numba,
JAX) are measured in the same run.
"""

from __future__ import annotations

from typing import List, Tuple

import numpy as np

import pyasc

from ..tools._timing import best_time

Row = Tuple[str, str, float]


def _peer(name: str):
    from . import _peer as peer

    return peer(name)


def bench_sort(shape: Tuple[int, int], repeat: int) -> List[Row]:
    """``np.sort(x, axis=-1)`` of a float32 matrix, row by row."""
    x = np.random.default_rng(7).standard_normal(shape).astype(np.float32)
    op = pyasc.operator(lambda v: np.sort(v, axis=-1))
    rows: List[Row] = [("pyasc", "operator(np.sort)", best_time(lambda: op(x), repeat)),
                       ("numpy", "np.sort(x, axis=-1)", best_time(lambda: np.sort(x, axis=-1), repeat))]
    numba = _peer("numba")
    if numba is not None:
        @numba.njit(parallel=True)
        def nb_sort(v):
            out = np.empty_like(v)
            for i in numba.prange(v.shape[0]):
                out[i] = np.sort(v[i])
            return out

        rows.append(("numba", "njit(parallel=True) np.sort", best_time(lambda: nb_sort(x), repeat)))
    jax = _peer("jax")
    if jax is not None:
        import jax.numpy as jnp

        f = jax.jit(lambda v: jnp.sort(v, axis=-1))
        xj = jnp.asarray(x)
        rows.append(("jax", "jax.jit(jnp.sort)", best_time(lambda: f(xj).block_until_ready(), repeat)))
    return rows


def _np_topk(x: np.ndarray, k: int) -> Tuple[np.ndarray, np.ndarray]:
    idx = np.argpartition(x, -k, axis=-1)[:, -k:]
    vals = np.take_along_axis(x, idx, -1)
    order = np.argsort(-vals, axis=-1, kind="stable")
    return np.take_along_axis(vals, order, -1), np.take_along_axis(idx, order, -1)


def bench_topk(shape: Tuple[int, int], k: int, repeat: int) -> List[Row]:
    """Time the ``k`` largest of each row of a float32 matrix, values and indices, largest first."""
    x = np.random.default_rng(8).standard_normal(shape).astype(np.float32)
    op = pyasc.operator(lambda v: pyasc.topk(v, k))
    rows: List[Row] = [("pyasc", "operator(pyasc.topk)", best_time(lambda: op(x), repeat)),
                       ("numpy", "argpartition + sort of k", best_time(lambda: _np_topk(x, k), repeat))]
    numba = _peer("numba")
    if numba is not None:
        @numba.njit(parallel=True)
        def nb_topk(v):
            idx = np.empty((v.shape[0], k), np.int64)
            for i in numba.prange(v.shape[0]):
                idx[i] = np.argsort(-v[i], kind="mergesort")[:k]
            return idx

        rows.append(("numba", "njit(parallel=True) argsort", best_time(lambda: nb_topk(x), repeat)))
    jax = _peer("jax")
    if jax is not None:
        import jax.numpy as jnp

        f = jax.jit(lambda v: jax.lax.top_k(v, k))
        xj = jnp.asarray(x)
        rows.append(("jax", "jax.jit(lax.top_k)", best_time(lambda: f(xj)[0].block_until_ready(), repeat)))
    return rows
