"""Every way of running work goes through one door: each front end's run is a launch event in
``pyasc.profile()``, naming the front end, whose kernels carry the launch's id."""

from __future__ import annotations

import math

import numpy as np
import pyasc
import pytest
from pyasc import lang as asc
from pyasc import ops


@pyasc.operator
def _scale(x):
    return x * 2.0 + 1.0


@pyasc.operator
def _shift(x):
    return x - 3.0


@pyasc.vectorized_operator
def _halvings(v):
    n = 0
    while v > 1.0:
        v = v * 0.5
        n += 1
    return n


@pyasc.stencil_operator(boundary="constant", cval=0.0)
def _blur(u):
    return (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1]) * 0.25


@pyasc.kernel
def _double(x, y, n):
    pipe = asc.TPipe()
    buf = asc.TBuf()
    pipe.init_buffer(buf, 1024 * 4)
    t = buf.get(np.float32)
    asc.data_copy_pad(t, x[0:], n)
    asc.muls(t, t, 2.0, n)
    asc.data_copy_pad(y[0:], t, n)


def _launches(p, front_end):
    return [e for e in p.launches() if e["labels"].get("front_end") == front_end]


def _kernels_of(p, launch):
    return [k for k in p.kernels() if k["counters"].get("launch") == launch["counters"]["id"]]


def test_an_operator_call_is_one_launch_with_its_kernels():
    x = np.linspace(-1, 1, 1000, dtype=np.float32)
    with pyasc.profile() as p:
        y = _scale(x)
    np.testing.assert_array_equal(y, x * np.float32(2) + np.float32(1))
    (launch,) = _launches(p, "operator")
    assert launch["labels"]["operator"] == "_scale" and launch["labels"]["device"] == "cpu"
    assert _kernels_of(p, launch)


def test_pipeline_stages_launch_through_the_door():
    x = np.arange(4096 * 4, dtype=np.float32).reshape(4096, 4)
    with pyasc.profile() as p:
        with pyasc.pipeline(stages=2, micro_batch=1024) as pipe:
            y = _shift(_scale(x))
        y = np.asarray(y)
    assert pipe.last_schedule["runner"] == "workers"
    np.testing.assert_array_equal(y, x * np.float32(2) + np.float32(1) - np.float32(3))
    launches = _launches(p, "pipeline")
    # One launch per stage and micro-batch, each with its kernels.
    names = [e["labels"]["operator"] for e in launches]
    assert len(names) == 8 and sum("_scale" in n for n in names) == 4 and sum("_shift" in n for n in names) == 4
    assert all(_kernels_of(p, e) for e in launches)


def test_a_looping_vectorized_operator_launches_through_the_door():
    x = np.linspace(-2, 300, 4001)
    with pyasc.profile() as p:
        y = _halvings(x)
    want = [0 if v <= 1 else math.ceil(math.log2(v)) for v in x.tolist()]
    np.testing.assert_array_equal(y, want)
    (launch,) = _launches(p, "vectorized")
    assert _kernels_of(p, launch)


def test_a_stencil_sweep_launches_through_the_door():
    u = np.random.default_rng(0).random((64, 80))
    with pyasc.profile() as p:
        v = _blur(u)
    pad = np.pad(u, 1)  # boundary="constant": reads outside the grid are cval
    want = (pad[:-2, 1:-1] + pad[2:, 1:-1] + pad[1:-1, :-2] + pad[1:-1, 2:]) * 0.25
    np.testing.assert_array_equal(v, want)
    (launch,) = _launches(p, "stencil")
    (k,) = _kernels_of(p, launch)
    assert launch["labels"]["operator"] == "stencil_sweep" == k["name"]


def test_detection_routines_launch_through_the_door():
    rng = np.random.default_rng(1)
    xy = rng.random((200, 2)).astype(np.float32) * 50
    boxes = np.concatenate([xy, xy + 5 + rng.random((200, 2)).astype(np.float32) * 10], axis=1)
    scores = rng.random(200).astype(np.float32)
    pred = np.concatenate([boxes, scores[:, None]], axis=1)
    with pyasc.profile() as p:
        iou = ops.box_iou(boxes, boxes)
        kept = ops.nms(boxes, scores, 0.5)
        rows = ops.filter_rows(pred, 4, 0.5)
        mask = ops.nms_mask(iou, 0.5)
    assert iou.shape == (200, 200) and np.allclose(np.diag(iou), 1.0)
    np.testing.assert_array_equal(rows, pred[pred[:, 4] > 0.5])
    assert kept.dtype == np.int64 and mask.dtype == np.bool_ and mask.shape == (200,)
    names = [e["labels"]["operator"] for e in _launches(p, "detection")]
    # filter_rows is two launches: the selection, then the gather of the selected rows.
    assert names == ["box_iou", "nms", "select_rows", "gather_rows", "nms_mask"]
    assert all(_kernels_of(p, e) for e in _launches(p, "detection"))


@pytest.mark.parametrize("queued", [False, True])
def test_kernel_language_launches_through_the_door(queued):
    x = np.arange(100, dtype=np.float32)
    y = np.zeros_like(x)
    with pyasc.profile() as p:
        if queued:
            s = pyasc.Stream()
            _double[1, s](x, y, 100)
            s.synchronize()
        else:
            _double[1](x, y, 100)
    np.testing.assert_array_equal(y, x * 2)
    (launch,) = _launches(p, "kernel")
    assert launch["labels"]["operator"] == "_double"
    assert ("to_stream" in launch["counters"]) == queued
    (k,) = _kernels_of(p, launch)
    assert k["name"] == "_double"
