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
The script checks that both keep the same detections and prints their times.

    python examples/yolo_postprocess.py [--objects 40] [--repeat 20] [--conf-thres 0.25] [--iou-thres 0.45]
"""

from __future__ import annotations

import argparse

import numpy as np
import pyasc
from pyasc._timing import best_time, fmt_time

# The synthetic prediction and the NumPy pipeline (YOLOv5's ``non_max_suppression`` with a
# greedy NMS vectorised per kept box) are shared with ``pyasc bench --only yolo_postprocess``.
from pyasc.bench_detection import MAX_WH, make_prediction, nms_numpy, postprocess_numpy

__all__ = ["candidates", "make_prediction", "nms_numpy", "postprocess_numpy", "postprocess_pyasc"]


@pyasc.operator(dynamic_shape=True, kernel_name="yolo_candidates")
def candidates(x):
    """Per candidate anchor: its detection row and its box shifted by class.

    ``det`` rows are ``x1, y1, x2, y2, best class score, best class``; ``shifted`` holds the
    corners moved by ``class * MAX_WH``. Every value is one per row, so the arithmetic runs
    as a few fused kernels and the two stacks are written in place.
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


def main(argv=None) -> dict:
    """Run both versions on a synthetic prediction, check they agree and time them."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--objects", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--conf-thres", type=float, default=0.25, help="0.25: YOLOv5 detect.py; 0.001: val.py")
    ap.add_argument("--iou-thres", type=float, default=0.45, help="0.45: YOLOv5 detect.py; 0.6: val.py")
    args = ap.parse_args(argv)
    pred = make_prediction(args.objects)
    thres = (args.conf_thres, args.iou_thres)
    ref, got = postprocess_numpy(pred, *thres), postprocess_pyasc(pred, *thres)
    same = ref.shape == got.shape and bool(np.array_equal(ref, got))
    t_np = best_time(lambda: postprocess_numpy(pred, *thres), args.repeat)
    t_pa = best_time(lambda: postprocess_pyasc(pred, *thres), args.repeat)
    print(f"candidates above conf_thres: {int((pred[0, :, 4] > args.conf_thres).sum())}, detections kept: {len(got)}")
    print(f"numpy {fmt_time(t_np)}  pyasc {fmt_time(t_pa)}  speed-up {t_np / t_pa:.1f}x  same detections: {same}")
    return {"same": same, "detections": len(got), "t_numpy": t_np, "t_pyasc": t_pa, "ref": ref, "got": got}


if __name__ == "__main__":
    main()
