"""GELU, ``x * 0.5 * (1 + erf(x / 1.41421))``, written per block in the kernel language.

Each block walks its run of the input in tiles: copy a tile in, five vector instructions on
scratch tensors of a ``TBuf``, copy the result out (``data_copy_pad`` for the last tile).
Run as a script to check it against NumPy (float64 reference).
"""

import math

import numpy as np
import pyasc
from pyasc import lang as asc

TILE = 4096
INV_SQRT2 = 1.0 / 1.41421


def make_gelu(tile: int = TILE, device_type: str = "cpu"):
    """Build the GELU kernel for float32 with ``tile`` elements per tile."""

    @pyasc.kernel(device_type=device_type)
    def gelu(x, y, n):
        block_len = (n + asc.block_num() - 1) // asc.block_num()
        start = asc.min(asc.block_idx() * block_len, n)
        length = asc.min(block_len, n - start)
        pipe = asc.TPipe()
        q_in = asc.TQue(asc.QuePosition.VECIN, 2)
        q_out = asc.TQue(asc.QuePosition.VECOUT, 2)
        scratch = asc.TBuf(asc.QuePosition.VECCALC)
        pipe.init_buffer(q_in, 2, tile * 4)
        pipe.init_buffer(q_out, 2, tile * 4)
        pipe.init_buffer(scratch, 2 * tile * 4)
        for i in range((length + tile - 1) // tile):
            count = asc.min(tile, length - i * tile)
            xl = q_in.alloc_tensor(np.float32)
            asc.data_copy_pad(xl, x[start + i * tile:], count)
            q_in.enque(xl)
            xv = q_in.deque(np.float32)
            t = scratch.get(np.float32)
            a, b = t[:tile], t[tile:]
            yl = q_out.alloc_tensor(np.float32)
            asc.muls(a, xv, INV_SQRT2, count)
            asc.erf(b, a, count)
            asc.adds(a, b, 1.0, count)
            asc.muls(b, a, 0.5, count)
            asc.mul(yl, xv, b, count)
            q_in.free_tensor(xv)
            q_out.enque(yl)
            yv = q_out.deque(np.float32)
            asc.data_copy_pad(y[start + i * tile:], yv, count)
            q_out.free_tensor(yv)

    return gelu


gelu = make_gelu()


def reference(x: np.ndarray) -> np.ndarray:
    """GELU in float64."""
    x64 = x.astype(np.float64)
    erf = np.vectorize(math.erf)
    return x64 * 0.5 * (1.0 + erf(x64 / 1.41421))


def main() -> None:
    """Run GELU on 8 blocks and compare with a float64 reference."""
    rng = np.random.default_rng(0)
    n = 100_003
    x = rng.standard_normal(n, dtype=np.float32) * 3
    y = np.empty_like(x)
    gelu[8](x, y, n)
    err = float(np.max(np.abs(y - reference(x))))
    print(f"gelu on 8 blocks, {n} elements: max |error| vs float64 {err:.2e} ({'ok' if err < 1e-5 else 'FAIL'})")


if __name__ == "__main__":
    main()
