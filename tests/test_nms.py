"""Detection ops (``pyasc.ops.box_iou``, ``nms``, ``batched_nms``, ``nms_mask``) against plain
NumPy references: the IoU formula in float64 (and in the boxes' own dtype for bitwise checks),
and a greedy NMS loop that visits boxes one by one."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pyasc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ops = pyasc.ops


def iou_ref(a, b, dtype=np.float64):
    """IoU of every pair, computed in ``dtype`` with torchvision's formula; 0 where union is 0."""
    a, b = np.asarray(a, dtype), np.asarray(b, dtype)
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    w = np.maximum(np.minimum(a[:, None, 2], b[None, :, 2]) - np.maximum(a[:, None, 0], b[None, :, 0]), dtype(0))
    h = np.maximum(np.minimum(a[:, None, 3], b[None, :, 3]) - np.maximum(a[:, None, 1], b[None, :, 1]), dtype(0))
    inter = w * h
    union = area_a[:, None] + area_b[None, :] - inter
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(union == 0, dtype(0), inter / union).astype(dtype)


def nms_ref(boxes, scores, thr, idxs=None):
    """Greedy NMS, one box at a time in stable descending score order; IoU in the boxes' dtype
    (NaN for a zero union, which suppresses nothing), compared with the float64 threshold."""
    boxes = np.asarray(boxes)
    dt = boxes.dtype.type
    order = sorted(range(len(scores)), key=lambda i: -float(scores[i]))
    kept = []
    for i in order:
        others = [k for k in kept if idxs is None or idxs[k] == idxs[i]]
        if others:
            a, b = boxes[i:i + 1], boxes[others]
            area = lambda v: (v[:, 2] - v[:, 0]) * (v[:, 3] - v[:, 1])  # noqa: E731
            w = np.maximum(dt(0), np.minimum(a[:, 2], b[:, 2]) - np.maximum(a[:, 0], b[:, 0]))
            h = np.maximum(dt(0), np.minimum(a[:, 3], b[:, 3]) - np.maximum(a[:, 1], b[:, 1]))
            inter = w * h
            with np.errstate(invalid="ignore", divide="ignore"):
                iou = inter / (area(b) + area(a) - inter)
            if (iou.astype(np.float64) > thr).any():
                continue
        kept.append(i)
    return np.array(kept, dtype=np.int64)


def clustered(rng, n, dtype=np.float32, grid=True):
    """Boxes around a few centres (many overlaps); integer corners give identical boxes,
    zero-area boxes and equal IoUs; scores from a few levels give ties."""
    centres = rng.integers(0, 200, (max(n // 30, 1), 2))
    c = centres[rng.integers(0, len(centres), n)] + rng.integers(0, 20, (n, 2))
    wh = rng.integers(0, 40, (n, 2))
    b = np.concatenate([c, c + wh], axis=1).astype(dtype)
    if not grid:
        b = b + rng.random((n, 4)).astype(dtype)
        b[:, 2:] = np.maximum(b[:, 2:], b[:, :2])
    s = (rng.integers(0, 8, n) / 8).astype(np.float32)
    return b, s


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_box_iou_matches_float64_numpy(dtype):
    rng = np.random.default_rng(0)
    a, _ = clustered(rng, 70, dtype, grid=False)
    b, _ = clustered(rng, 300, dtype, grid=False)
    a[0] = b[0] = [3, 3, 3, 8]  # two zero-area boxes: union 0 gives 0
    got = ops.box_iou(a, b)
    assert got.dtype == dtype and got.shape == (70, 300)
    assert got[0, 0] == 0
    np.testing.assert_allclose(got, iou_ref(a, b), rtol=4 * np.finfo(dtype).eps, atol=4 * np.finfo(dtype).eps)
    # The same operations in the boxes' dtype: bitwise equal.
    np.testing.assert_array_equal(got, iou_ref(a, b, dtype))


def test_box_iou_of_integers_is_float64_and_empty_shapes_work():
    a = np.array([[0, 0, 2, 2], [1, 1, 3, 3]])
    got = ops.box_iou(a, a)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, [[1, 1 / 7], [1 / 7, 1]])
    assert ops.box_iou(np.zeros((0, 4)), a).shape == (0, 2)
    assert ops.box_iou(a, np.zeros((0, 4))).shape == (2, 0)


def test_box_iou_inside_an_operator_fuses_elementwise():
    rng = np.random.default_rng(1)
    a, _ = clustered(rng, 40, np.float64, grid=False)
    b, _ = clustered(rng, 50, np.float64, grid=False)
    a[3] = b[7] = [1, 1, 1, 1]
    op = pyasc.operator(lambda x, y: ops.box_iou(x, y))
    np.testing.assert_allclose(op(a, b), iou_ref(a, b), rtol=1e-15, atol=1e-15)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("thr", [0.0, 0.3, 0.5, 0.7, 1.0])
def test_nms_matches_greedy_reference(dtype, thr):
    rng = np.random.default_rng(int(thr * 10))
    b, s = clustered(rng, 400, dtype)
    got = ops.nms(b, s, thr)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, nms_ref(b, s, thr))


def test_nms_edge_cases():
    empty = ops.nms(np.zeros((0, 4), np.float32), np.zeros(0, np.float32), 0.5)
    assert empty.dtype == np.int64 and empty.shape == (0,)
    np.testing.assert_array_equal(ops.nms(np.array([[0, 0, 1, 1.0]]), [0.3], 0.5), [0])
    same = np.tile(np.array([[2, 2, 6, 5]], np.float32), (6, 1))
    scores = np.array([0.1, 0.9, 0.9, 0.5, 0.9, 0.2])
    np.testing.assert_array_equal(ops.nms(same, scores, 0.5), [1])
    # IoU 1 is not strictly above 1: nothing is suppressed; ties keep the lower index first.
    np.testing.assert_array_equal(ops.nms(same, scores, 1.0), [1, 2, 4, 3, 5, 0])
    # Zero-area boxes overlap nothing (0/0 suppresses nothing, as in torchvision).
    flat = np.array([[1, 1, 1, 5], [1, 1, 1, 5], [0, 0, 4, 4]], np.float64)
    np.testing.assert_array_equal(ops.nms(flat, [0.9, 0.8, 0.7], 0.0), [0, 1, 2])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(0, 90), seed=st.integers(0, 2**31), dtype=st.sampled_from([np.float32, np.float64]),
       thr=st.one_of(st.sampled_from([0.0, 0.25, 0.5, 1.0, -0.5]), st.floats(0, 1)))
def test_nms_hypothesis(n, seed, dtype, thr):
    rng = np.random.default_rng(seed)
    b, s = clustered(rng, n, dtype, grid=bool(seed % 2))
    np.testing.assert_array_equal(ops.nms(b, s, thr), nms_ref(b, s, thr))
    cats = rng.integers(0, 3, n)
    np.testing.assert_array_equal(ops.batched_nms(b, s, cats, thr), nms_ref(b, s, thr, cats))


def test_nms_on_thousands_of_boxes_runs_the_parallel_path():
    rng = np.random.default_rng(5)
    b, s = clustered(rng, 3000, np.float32, grid=False)
    s = rng.random(3000)
    np.testing.assert_array_equal(ops.nms(b, s, 0.45), nms_ref(b, s, 0.45))


def test_batched_nms_matches_per_category_reference():
    rng = np.random.default_rng(7)
    b, s = clustered(rng, 600, np.float64)
    cats = rng.integers(-2, 3, 600)
    got = ops.batched_nms(b, s, cats, 0.5)
    np.testing.assert_array_equal(got, nms_ref(b, s, 0.5, cats))
    # Each category alone: plain nms on its boxes.
    for c in np.unique(cats):
        sel = np.flatnonzero(cats == c)
        np.testing.assert_array_equal(np.sort(got[cats[got] == c]), np.sort(sel[ops.nms(b[sel], s[sel], 0.5)]))
    assert ops.batched_nms(np.zeros((0, 4)), [], np.zeros(0, np.int64), 0.5).shape == (0,)


def parallel_iou(boxes):
    return ops.box_iou(boxes, boxes)


def parallel_filter(iou_matrix, iou_thresh):
    return ops.nms_mask(iou_matrix, iou_thresh)


def nms_gpu(boxes, scores, iou_thresh):
    iou_matrix = parallel_iou(boxes)
    mask = parallel_filter(iou_matrix, iou_thresh)
    return mask


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_iou_matrix_and_mask_shape_keeps_what_nms_keeps(dtype):
    rng = np.random.default_rng(3)
    b, s = clustered(rng, 500, dtype)
    order = np.argsort(-s, kind="stable")
    mask = nms_gpu(b[order], s[order], 0.5)
    assert mask.dtype == np.bool_ and mask.shape == (500,)
    np.testing.assert_array_equal(order[mask], ops.nms(b, s, 0.5))
    np.testing.assert_array_equal(order[mask], nms_ref(b, s, 0.5))


def test_inputs_are_not_modified_and_read_only_inputs_work():
    rng = np.random.default_rng(4)
    b, s = clustered(rng, 200, np.float32)
    b = np.asfortranarray(b)
    cats = rng.integers(0, 4, 200)
    keep = (b.copy(), s.copy(), cats.copy())
    for x in (b, s, cats):
        x.flags.writeable = False
    ops.box_iou(b, b)
    ops.nms(b, s, 0.5)
    ops.batched_nms(b, s, cats, 0.5)
    ops.nms_mask(ops.box_iou(b, b), 0.5)
    for before, after in zip(keep, (b, s, cats)):
        np.testing.assert_array_equal(before, after)


def test_bad_inputs_raise_typed_errors_at_the_callers_line():
    good = np.zeros((3, 4), np.float32)
    cases = [
        (pyasc.ShapeError, lambda: ops.nms(np.zeros((3, 5)), np.zeros(3), 0.5)),
        (pyasc.ShapeError, lambda: ops.nms(good, np.zeros(4), 0.5)),
        (pyasc.ShapeError, lambda: ops.box_iou(np.zeros(4), good)),
        (pyasc.ShapeError, lambda: ops.batched_nms(good, np.zeros(3), np.zeros(2, np.int64), 0.5)),
        (pyasc.ShapeError, lambda: ops.nms_mask(np.zeros((3, 4)), 0.5)),
        (pyasc.DTypeError, lambda: ops.nms(good.astype(np.complex64), np.zeros(3), 0.5)),
        (pyasc.DTypeError, lambda: ops.box_iou([["a", "b", "c", "d"]], good)),
        (pyasc.DTypeError, lambda: ops.batched_nms(good, np.zeros(3), np.zeros(3), 0.5)),
        (pyasc.InvalidArgumentError, lambda: ops.nms(np.full((3, 4), np.nan), np.zeros(3), 0.5)),
        (pyasc.InvalidArgumentError, lambda: ops.nms(good, [0.1, np.nan, 0.2], 0.5)),
        (pyasc.InvalidArgumentError, lambda: ops.nms(good, np.zeros(3), "0.5")),
        (pyasc.InvalidArgumentError, lambda: ops.nms(good, np.zeros(3), float("nan"))),
    ]
    for cls, call in cases:
        with pytest.raises(cls) as info:
            call()
        assert info.value.filename == __file__, info.value


def test_nms_inside_an_operator_is_a_trace_error():
    op = pyasc.operator(lambda b, s: ops.nms(b, s, 0.5))
    with pytest.raises(pyasc.TraceError, match="data-dependent"):
        op(np.zeros((3, 4), np.float32), np.zeros(3, np.float32))


_ISA_SCRIPT = r"""
import json, numpy as np, pyasc
rng = np.random.default_rng(2)
c = rng.integers(0, 300, (2000, 2)).astype(np.float32)
b = np.concatenate([c, c + rng.integers(1, 60, (2000, 2))], 1).astype(np.float32)
s = rng.integers(0, 50, 2000) / 50
iou = pyasc.ops.box_iou(b[:300], b)
print(json.dumps({"isa": pyasc.device_info("cpu")["isa"], "keep": pyasc.ops.nms(b, s, 0.4).tolist(),
                  "iou": float(np.float64(iou.astype(np.float64).sum()))}))
"""


def test_every_isa_gives_the_same_answer():
    runs = {}
    for isa in ("scalar", "sse2", "avx2", "avx512"):
        out = subprocess.run([sys.executable, "-c", _ISA_SCRIPT], capture_output=True, text=True, timeout=120,
                             env={**os.environ, "PYASC_ISA": isa})
        assert out.returncode == 0, out.stderr[-2000:]
        runs[isa] = json.loads(out.stdout.strip().splitlines()[-1])
    keeps = {r["keep"].__repr__() for r in runs.values()}
    assert len(keeps) == 1 and len({r["iou"] for r in runs.values()}) == 1
    rng = np.random.default_rng(2)
    c = rng.integers(0, 300, (2000, 2)).astype(np.float32)
    b = np.concatenate([c, c + rng.integers(1, 60, (2000, 2))], 1).astype(np.float32)
    s = rng.integers(0, 50, 2000) / 50
    assert runs["scalar"]["keep"] == nms_ref(b, s, 0.4).tolist()
    assert runs["scalar"]["isa"] == "scalar"


def test_float16_lists_and_device_arrays_are_accepted():
    rng = np.random.default_rng(8)
    b, s = clustered(rng, 50, np.float32)
    got16 = ops.box_iou(b.astype(np.float16), b.astype(np.float16))
    assert got16.dtype == np.float32
    np.testing.assert_array_equal(got16, iou_ref(b.astype(np.float16), b.astype(np.float16), np.float32))
    np.testing.assert_array_equal(ops.nms(b.tolist(), s.tolist(), 0.5), nms_ref(b.astype(np.float64), s, 0.5))
    dev = pyasc.to_device(b)
    np.testing.assert_array_equal(ops.box_iou(dev, b), iou_ref(b, b, np.float32))
    np.testing.assert_array_equal(ops.nms(dev, s, 0.5), nms_ref(b, s, 0.5))


def test_a_result_too_large_for_memory_is_a_typed_error():
    # 2**46 float32 results (256 TiB): more than any address space holds.
    big = np.zeros((1 << 23, 4), np.float32)
    with pytest.raises(pyasc.OutOfMemoryError):
        ops.box_iou(big, big)
