"""Kernel-language copies out that the block VM replaces by writing global memory directly.

An instruction whose result only a copy out reads writes the copy's global elements itself;
a local tensor read again after its copy out, or written twice, keeps its copy. Every form
must give NumPy's bits, including tails, several blocks and output views at an offset.
"""

from __future__ import annotations

import numpy as np
import pyasc
from hypothesis import given, settings
from hypothesis import strategies as st
from pyasc import lang as asc

TILE = 512


@pyasc.kernel
def _twice_then_plus_one(x, y, z, n):
    """y = x * 2, then z = y + 1 read back from the local copy of y (tile by tile)."""
    block_len = (n + asc.block_num() - 1) // asc.block_num()
    start = asc.min(asc.block_idx() * block_len, n)
    length = asc.min(block_len, n - start)
    pipe = asc.TPipe()
    buf = asc.TBuf()
    pipe.init_buffer(buf, 3 * TILE * 4)
    t = buf.get(np.float32)
    xl, yl, zl = t[:TILE], t[TILE:2 * TILE], t[2 * TILE:]
    for i in range((length + TILE - 1) // TILE):
        count = asc.min(TILE, length - i * TILE)
        asc.data_copy_pad(xl, x[start + i * TILE:], count)
        asc.muls(yl, xl, 2.0, count)
        asc.data_copy_pad(y[start + i * TILE:], yl, count)
        asc.adds(zl, yl, 1.0, count)
        asc.mul(zl, zl, xl, count)
        asc.data_copy_pad(z[start + i * TILE:], zl, count)


@pyasc.kernel
def _scale(x, y, n, k):
    """y = x * 3 into an output view, with ``k`` the view's first element."""
    block_len = (n + asc.block_num() - 1) // asc.block_num()
    start = asc.min(asc.block_idx() * block_len, n)
    length = asc.min(block_len, n - start)
    pipe = asc.TPipe()
    q_in = asc.TQue(asc.QuePosition.VECIN, 2)
    q_out = asc.TQue(asc.QuePosition.VECOUT, 2)
    pipe.init_buffer(q_in, 2, TILE * 4)
    pipe.init_buffer(q_out, 2, TILE * 4)
    for i in range((length + TILE - 1) // TILE):
        count = asc.min(TILE, length - i * TILE)
        a = q_in.alloc_tensor(np.float32)
        asc.data_copy_pad(a, x[start + i * TILE:], count)
        q_in.enque(a)
        xa = q_in.deque(np.float32)
        b = q_out.alloc_tensor(np.float32)
        asc.muls(b, xa, 3.0, count)
        q_in.free_tensor(xa)
        q_out.enque(b)
        yb = q_out.deque(np.float32)
        asc.data_copy_pad(y[k + start + i * TILE:], yb, count)
        q_out.free_tensor(yb)


@settings(max_examples=20, deadline=None)
@given(n=st.integers(0, 5000), blocks=st.integers(1, 7), seed=st.integers(0, 2**31))
def test_a_local_read_after_its_copy_out_and_one_written_twice(n, blocks, seed):
    x = np.random.default_rng(seed).standard_normal(n, dtype=np.float32)
    y = np.full(n, np.nan, dtype=np.float32)
    z = np.full(n, np.nan, dtype=np.float32)
    saved = x.copy()
    _twice_then_plus_one[blocks](x, y, z, n)
    two = x * np.float32(2)
    np.testing.assert_array_equal(y, two)
    np.testing.assert_array_equal(z, (two + np.float32(1)) * x)
    np.testing.assert_array_equal(x, saved)


@settings(max_examples=20, deadline=None)
@given(n=st.integers(0, 4000), blocks=st.integers(1, 7), k=st.integers(0, 9), seed=st.integers(0, 2**31))
def test_queued_results_written_straight_into_an_output_view(n, blocks, k, seed):
    x = np.random.default_rng(seed).standard_normal(n, dtype=np.float32)
    y = np.full(n + 16, np.nan, dtype=np.float32)
    _scale[blocks](x, y, n, k)
    np.testing.assert_array_equal(y[k:k + n], x * np.float32(3))
    assert np.isnan(y[:k]).all() and np.isnan(y[k + n:]).all(), "nothing outside the copied elements"
