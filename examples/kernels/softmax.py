"""Row softmax written per block in the kernel language.

Each block takes a run of rows and walks it ``rows_per_tile`` rows at a time: row maxima
(``reduce_max``) subtracted from their rows (``sub_rows``), ``exp``, row sums, division of each
row by its sum (``div_rows``). The row length is a constant of the kernel (like a tiling constant in Ascend C),
so ``make_softmax(cols)`` builds one kernel per row length. Run as a script to check it.
"""

import numpy as np
import pyasc
from pyasc import lang as asc

TILE_BYTES = 32 * 1024
MAX_ROWS = 256  # rows per tile at most: bounds the per-row statistics buffer


def make_softmax(cols: int, device_type: str = "cpu"):
    """Build the float32 row softmax kernel for rows of ``cols`` elements."""
    rpt = max(1, min(MAX_ROWS, TILE_BYTES // (4 * cols)))
    tile = rpt * cols

    @pyasc.kernel(device_type=device_type)
    def softmax(x, y, rows):
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
        pipe.init_buffer(stats, rpt * 4)
        for i in range((nrows + rpt - 1) // rpt):
            r = asc.min(rpt, nrows - i * rpt)
            count = r * cols
            xl = q_in.alloc_tensor(np.float32)
            asc.data_copy_pad(xl, x[(r0 + i * rpt) * cols:], count)
            q_in.enque(xl)
            xv = q_in.deque(np.float32)
            w = work.get(np.float32)
            m = stats.get(np.float32)
            yl = q_out.alloc_tensor(np.float32)
            asc.reduce_max(m, xv, r, cols)
            asc.sub_rows(yl, xv, m, r, cols)
            asc.exp(w, yl, count)
            asc.reduce_sum(m, w, r, cols)
            asc.div_rows(yl, w, m, r, cols)
            q_in.free_tensor(xv)
            q_out.enque(yl)
            yv = q_out.deque(np.float32)
            asc.data_copy_pad(y[(r0 + i * rpt) * cols:], yv, count)
            q_out.free_tensor(yv)

    return softmax


def reference(x: np.ndarray) -> np.ndarray:
    """Row softmax in float64."""
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def main() -> None:
    """Run row softmax on 8 blocks and compare with a float64 reference."""
    rng = np.random.default_rng(0)
    rows, cols = 1001, 384
    x = rng.standard_normal((rows, cols), dtype=np.float32) * 4
    y = np.empty_like(x)
    make_softmax(cols)[8](x, y, rows)
    err = float(np.max(np.abs(y - reference(x))))
    print(f"softmax on 8 blocks, {rows} x {cols}: max |error| vs float64 {err:.2e} ({'ok' if err < 1e-6 else 'FAIL'})")


if __name__ == "__main__":
    main()
