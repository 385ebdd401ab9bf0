"""Border cells of a stencil: the thin boxes around the interior and their padded inputs.

The interior (every cell whose whole neighbourhood lies inside the grid) is one kernel over
shifted views of the unpadded input. The cells within the halo of an edge are split into at
most ``2 * ndim`` boxes; each box's input is gathered with the boundary mode's index map
(only ``box + halo`` cells, never a padded copy of the whole grid).

Index maps, for a position ``i`` outside ``[0, n)``: ``nearest`` clamps (NumPy ``edge``),
``wrap`` is periodic (NumPy ``wrap``), ``reflect`` mirrors with the edge cell repeated
(``d c b a | a b c d``: scipy.ndimage ``reflect``, NumPy ``symmetric``), ``constant`` reads
``cval``.
"""

from __future__ import annotations

from typing import Iterator, List, Sequence, Tuple

import numpy as np

Box = Tuple[Tuple[int, int], ...]


def border_boxes(shape: Sequence[int], lo: Sequence[int], hi: Sequence[int]) -> Iterator[Box]:
    """Yield disjoint boxes covering every cell of ``shape`` outside the interior."""
    full: List[Tuple[int, int]] = [(0, n) for n in shape]
    for axis, n in enumerate(shape):
        a = min(lo[axis], n)
        b = max(a, n - hi[axis])
        if a > 0:
            yield tuple(full[:axis] + [(0, a)] + full[axis + 1:])
        if b < n:
            yield tuple(full[:axis] + [(b, n)] + full[axis + 1:])
        full[axis] = (a, b)
        if a >= b:
            return


def index_map(start: int, stop: int, n: int, mode: str) -> Tuple[np.ndarray, np.ndarray]:
    """Source indices for positions ``start..stop`` of an axis of length ``n`` and their validity."""
    i = np.arange(start, stop)
    every = np.ones(i.shape, dtype=bool)
    if mode == "wrap":
        return i % n, every
    if mode == "reflect":
        j = i % (2 * n)
        return np.where(j >= n, 2 * n - 1 - j, j), every
    inside = (i >= 0) & (i < n)
    return np.clip(i, 0, n - 1), inside if mode == "constant" else every


def gather(array: np.ndarray, box: Box, lo: Sequence[int], hi: Sequence[int], mode: str, cval: object) -> np.ndarray:
    """Gather the input cells of ``box`` widened by the halo; outside cells follow the boundary mode."""
    maps = [index_map(a - before, b + after, n, mode) for (a, b), before, after, n in zip(box, lo, hi, array.shape)]
    out = array[np.ix_(*[m[0] for m in maps])]
    if mode == "constant":
        valid = np.ones(out.shape, dtype=bool)
        for axis, (_, ok) in enumerate(maps):
            shape = [1] * out.ndim
            shape[axis] = ok.size
            valid &= ok.reshape(shape)
        out[~valid] = np.asarray(cval).astype(array.dtype)
    return out


def box_slices(box: Box) -> Tuple[slice, ...]:
    """Return the box as a tuple of slices."""
    return tuple(slice(a, b) for a, b in box)
