"""YOLOv5-style post-processing of one image's raw predictions, with pyasc and with NumPy.

The network's output is ``(1, 25200, 85)``: per anchor ``cx, cy, w, h``, the objectness and
80 class probabilities. Post-processing keeps anchors whose objectness is above
``conf_thres``, scores each class as ``obj_conf * cls_conf``, takes the best class, keeps
rows whose best score is above ``conf_thres``, converts ``xywh`` to ``x1y1x2y2``, shifts each
box by ``class * max_wh`` so boxes of different classes never overlap (YOLOv5's per-class NMS
trick), runs NMS and keeps at most ``max_det`` detections.

The pyasc version runs the per-anchor arithmetic (scores, best class, box corners and class
offsets) as one fused operator (``dynamic_shape=True``, so any number of candidates reuses one
compiled plan) and the suppression with ``pyasc.ops.nms``. The NumPy version is the same
pipeline with a greedy NMS loop vectorised per kept box. The script checks that both keep the
same detections and prints their times.

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
    """Per candidate anchor: best class score, best class, corners, corners shifted by class.

    Every result has one value per row, so the arithmetic runs as few fused kernels.
    """
    conf_all = x[:, 5:] * x[:, 4:5]
    cls = conf_all.argmax(axis=1)
    hw, hh = x[:, 2] / 2, x[:, 3] / 2
    x1, y1, x2, y2 = x[:, 0] - hw, x[:, 1] - hh, x[:, 0] + hw, x[:, 1] + hh
    shift = (cls * MAX_WH).astype(x.dtype)
    return conf_all.max(axis=1), cls, (x1, y1, x2, y2), (x1 + shift, y1 + shift, x2 + shift, y2 + shift)


def postprocess_pyasc(pred: np.ndarray, conf_thres: float = 0.25, iou_thres: float = 0.45,
                      max_det: int = 300) -> np.ndarray:
    """Run the same post-processing with one fused pyasc operator and ``pyasc.ops.nms``."""
    x = pred[0]
    x = x[x[:, 4] > conf_thres]
    conf, cls, box, shifted = candidates(x)
    sel = np.flatnonzero(conf > conf_thres)
    keep = sel[pyasc.ops.nms(np.stack([c[sel] for c in shifted], 1), conf[sel], iou_thres)[:max_det]]
    return np.stack([c[keep] for c in box] + [conf[keep], cls[keep].astype(x.dtype)], 1)


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
