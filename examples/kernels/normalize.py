"""Row normalize (layer norm without weight and bias) written per block in the kernel language.

``y = (x - mean) / sqrt(var + eps)`` over each row: row sums give the mean, subtracted from
each row (``sub_rows``); the squares' row sums give the variance, and ``rsqrt`` of it plus
``eps`` scales each row (``mul_rows``). ``make_normalize(cols)`` builds one kernel per row length (a
tiling constant). Run as a script to check it against NumPy (float64 reference).
"""

import numpy as np
import pyasc
from pyasc import lang as asc

TILE_BYTES = 32 * 1024
MAX_ROWS = 256  # rows per tile at most: bounds the per-row statistics buffer
EPS = 1e-5


def make_normalize(cols: int, device_type: str = "cpu"):
    """Build the float32 row-normalize kernel for rows of ``cols`` elements."""
    rpt = max(1, min(MAX_ROWS, TILE_BYTES // (4 * cols)))
    tile = rpt * cols

    @pyasc.kernel(device_type=device_type)
    def normalize(x, y, rows):
        block_rows = (rows + asc.block_num() - 1) // asc.block_num()
        r0 = asc.min(asc.block_idx() * block_rows, rows)
        nrows = asc.min(block_rows, rows - r0)
        pipe = asc.TPipe()
        q_in = asc.TQue(asc.QuePosition.VECIN, 2)
        q_out = asc.TQue(asc.QuePosition.VECOUT, 2)
        work = asc.TBuf()
        stats = asc.TBuf()
        pipe.init_buffer(q_in, 2, tile * 4)
        pipe.init_buffer(q_out, 2, tile * 4)
        pipe.init_buffer(work, tile * 4)
        pipe.init_buffer(stats, 2 * rpt * 4)
        for i in range((nrows + rpt - 1) // rpt):
            r = asc.min(rpt, nrows - i * rpt)
            count = r * cols
            xl = q_in.alloc_tensor(np.float32)
            asc.data_copy_pad(xl, x[(r0 + i * rpt) * cols:], count)
            q_in.enque(xl)
            xv = q_in.deque(np.float32)
            w = work.get(np.float32)
            s = stats.get(np.float32)
            s1, s2 = s[:rpt], s[rpt:]
            yl = q_out.alloc_tensor(np.float32)
            asc.reduce_sum(s1, xv, r, cols)
            asc.muls(s2, s1, 1.0 / cols, r)
            asc.sub_rows(w, xv, s2, r, cols)
            asc.mul(xv, w, w, count)
            asc.reduce_sum(s1, xv, r, cols)
            asc.muls(s2, s1, 1.0 / cols, r)
            asc.adds(s1, s2, EPS, r)
            asc.rsqrt(s2, s1, r)
            asc.mul_rows(yl, w, s2, r, cols)
            q_in.free_tensor(xv)
            q_out.enque(yl)
            yv = q_out.deque(np.float32)
            asc.data_copy_pad(y[(r0 + i * rpt) * cols:], yv, count)
            q_out.free_tensor(yv)

    return normalize


def reference(x: np.ndarray) -> np.ndarray:
    """Row normalize in float64."""
    x64 = x.astype(np.float64)
    d = x64 - x64.mean(axis=-1, keepdims=True)
    return d / np.sqrt((d * d).mean(axis=-1, keepdims=True) + EPS)


def main() -> None:
    """Run row normalize on 8 blocks and compare with a float64 reference."""
    rng = np.random.default_rng(0)
    rows, cols = 1001, 768
    x = rng.standard_normal((rows, cols), dtype=np.float32) * 3 + 1
    y = np.empty_like(x)
    make_normalize(cols)[8](x, y, rows)
    err = float(np.max(np.abs(y - reference(x))))
    print(f"normalize on 8 blocks, {rows} x {cols}: max |error| vs float64 {err:.2e} "
          f"({'ok' if err < 1e-5 else 'FAIL'})")


if __name__ == "__main__":
    main()
