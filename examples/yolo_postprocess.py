"""YOLOv5-style post-processing of one image's raw predictions, with pyasc and with NumPy.

The network's output is ``(1, 25200, 85)``: per anchor ``cx, cy, w, h``, the objectness and
80 class probabilities. Post-processing keeps anchors whose objectness is above
``conf_thres``, scores each class as ``obj_conf * cls_conf``, takes the best class, keeps
rows whose best score is above ``conf_thres``, converts ``xywh`` to ``x1y1x2y2``, shifts each
box by ``class * max_wh`` so boxes of different classes never overlap (YOLOv5's per-class NMS
trick), runs NMS and keeps at most ``max_det`` detections.

The pyasc version keeps the anchors above the confidence with ``pyasc.ops.filter_rows`` (one
parallel pass that reads one value per anchor and copies only the kept rows), runs the
per-anchor arithmetic (scores, best class, box corners and class offsets) as one fused operator
(``dynamic_shape=True``, so any number of candidates reuses one compiled plan) and the
suppression with ``pyasc.ops.nms``, whose ``score_threshold`` applies the second confidence
test. The NumPy version is the same pipeline with a greedy NMS loop vectorised per kept box.
The script checks that both keep the same detections and prints their times. With
``--stages`` it also times each pyasc stage (``filter_rows``, the fused operator, NMS, the final
gather) per call, once with every call right after a NumPy run (as ``pyasc bench`` alternates
them: the prediction is no longer in the caches) and once back to back, and prints the minimum
and median of each. With ``--kernels`` it also times each kernel of the fused operator
(``pyasc.profile``), the same two ways.

    python examples/yolo_postprocess.py [--objects 40] [--repeat 20] [--conf-thres 0.25] [--iou-thres 0.45]
                                        [--stages] [--kernels]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pyasc

# The synthetic prediction and the NumPy pipeline (YOLOv5's ``non_max_suppression`` with a
# greedy NMS vectorised per kept box) are shared with ``pyasc bench --only yolo_postprocess``.
from pyasc.bench.detection import MAX_WH, make_prediction, nms_numpy, postprocess_numpy
from pyasc.tools._timing import best_time, fmt_time

__all__ = ["candidates", "kernel_times", "make_prediction", "nms_numpy", "postprocess_numpy",
           "postprocess_pyasc", "stage_times"]


@pyasc.operator(dynamic_shape=True, kernel_name="yolo_candidates")
def candidates(x):
    """Per candidate anchor: its detection row and its box shifted by class.

    ``det`` rows are ``x1, y1, x2, y2, best class score, best class``; ``shifted`` holds the
    corners moved by ``class * MAX_WH``. Every value is one per row, so the whole operator is
    one row kernel: one pass over each row finds the best class score and its class while it
    multiplies, computes the corners from the row's first columns, and stores every value
    straight into its column of the two stacks.
    """
    conf_all = x[:, 5:] * x[:, 4:5]
    cls = conf_all.argmax(axis=1).astype(x.dtype)
    conf = conf_all.max(axis=1)
    hw, hh = x[:, 2] / 2, x[:, 3] / 2
    x1, y1, x2, y2 = x[:, 0] - hw, x[:, 1] - hh, x[:, 0] + hw, x[:, 1] + hh
    shift = cls * MAX_WH
    det = pyasc.stack([x1, y1, x2, y2, conf, cls], axis=1)
    return det, pyasc.stack([x1 + shift, y1 + shift, x2 + shift, y2 + shift], axis=1)


def postprocess_pyasc(pred: np.ndarray, conf_thres: float = 0.25, iou_thres: float = 0.45,
                      max_det: int = 300) -> np.ndarray:
    """Run the same post-processing with ``filter_rows``, one fused operator and ``nms``.

    ``nms``'s ``score_threshold`` drops the rows whose best class score is too low.
    """
    det, shifted = candidates(pyasc.ops.filter_rows(pred[0], 4, conf_thres))
    return det[pyasc.ops.nms(shifted, det[:, 4], iou_thres, score_threshold=conf_thres)[:max_det]]


STAGES = ("filter_rows", "candidates", "nms", "gather")


def stage_times(pred: np.ndarray, rounds: int, after_numpy: bool, conf_thres: float = 0.25,
                iou_thres: float = 0.45) -> tuple:
    """Time each stage of :func:`postprocess_pyasc` per call.

    Returns the seconds of each stage in each of ``rounds`` calls (each call after a NumPy run
    when ``after_numpy``) and the last call's detections.
    """
    times = {name: [] for name in STAGES}
    clock = time.perf_counter
    for _ in range(rounds):
        if after_numpy:
            postprocess_numpy(pred, conf_thres, iou_thres)
        t0 = clock()
        x = pyasc.ops.filter_rows(pred[0], 4, conf_thres)
        t1 = clock()
        det, shifted = candidates(x)
        t2 = clock()
        keep = pyasc.ops.nms(shifted, det[:, 4], iou_thres, score_threshold=conf_thres)
        t3 = clock()
        got = det[keep[:300]]
        t4 = clock()
        for name, (a, b) in zip(STAGES, ((t0, t1), (t1, t2), (t2, t3), (t3, t4))):
            times[name].append(b - a)
    return times, got


def kernel_times(pred: np.ndarray, rounds: int, after_numpy: bool, conf_thres: float = 0.25,
                 iou_thres: float = 0.45) -> dict:
    """Time each kernel of :func:`candidates` per call with ``pyasc.profile``.

    Returns each kernel's seconds in each of ``rounds`` calls (each call after a NumPy run and
    a ``filter_rows`` when ``after_numpy``, else on one filtered input back to back).
    """
    times: dict = {}
    x = pyasc.ops.filter_rows(pred[0], 4, conf_thres)
    for _ in range(rounds):
        if after_numpy:
            postprocess_numpy(pred, conf_thres, iou_thres)
            x = pyasc.ops.filter_rows(pred[0], 4, conf_thres)
        with pyasc.profile() as prof:
            candidates(x)
        for r in prof.records():
            times.setdefault(r["kernel"], []).append(r["duration_us"] * 1e-6)
    return times


def main(argv=None) -> dict:
    """Run both versions on a synthetic prediction, check they agree and time them."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--objects", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--conf-thres", type=float, default=0.25, help="0.25: YOLOv5 detect.py; 0.001: val.py")
    ap.add_argument("--iou-thres", type=float, default=0.45, help="0.45: YOLOv5 detect.py; 0.6: val.py")
    ap.add_argument("--stages", action="store_true", help="also time each pyasc stage per call")
    ap.add_argument("--kernels", action="store_true", help="also time each kernel of the fused operator")
    args = ap.parse_args(argv)
    pred = make_prediction(args.objects)
    thres = (args.conf_thres, args.iou_thres)
    ref, got = postprocess_numpy(pred, *thres), postprocess_pyasc(pred, *thres)
    same = ref.shape == got.shape and bool(np.array_equal(ref, got))
    t_np = best_time(lambda: postprocess_numpy(pred, *thres), args.repeat)
    t_pa = best_time(lambda: postprocess_pyasc(pred, *thres), args.repeat)
    print(f"candidates above conf_thres: {int((pred[0, :, 4] > args.conf_thres).sum())}, detections kept: {len(got)}")
    print(f"numpy {fmt_time(t_np)}  pyasc {fmt_time(t_pa)}  speed-up {t_np / t_pa:.1f}x  same detections: {same}")
    stages = {}
    if args.stages:
        for label, after in (("after a NumPy run", True), ("back to back", False)):
            for _ in range(3):  # warm-up
                stage_times(pred, 1, after, *thres)
            times, staged = stage_times(pred, max(args.repeat, 1) * 5, after, *thres)
            stages[label] = (times, staged)
            print(f"{label}: " + ", ".join(
                f"{n} {fmt_time(min(t))} / {fmt_time(float(np.median(t)))}" for n, t in times.items())
                + " (minimum / median)")
    kernels = {}
    if args.kernels:
        for label, after in (("after a NumPy run", True), ("back to back", False)):
            kernel_times(pred, 3, after, *thres)  # warm-up
            kernels[label] = kernel_times(pred, max(args.repeat, 1) * 5, after, *thres)
            print(f"kernels, {label}: " + ", ".join(
                f"{n} {fmt_time(min(t))} / {fmt_time(float(np.median(t)))}" for n, t in kernels[label].items())
                + " (minimum / median)")
    return {"same": same, "detections": len(got), "t_numpy": t_np, "t_pyasc": t_pa, "ref": ref, "got": got,
            "stages": stages, "kernels": kernels}


if __name__ == "__main__":
    main()
