"""``pyasc onnx MODEL.onnx [--bench] [--estimate] [--profile]``: a model's summary, checked and timed.

Prints the graph (inputs, outputs, node counts by operator, parameters), runs it on random
inputs (symbolic dimensions as 1) and compares with onnxruntime when it is installed; with
``--bench`` times both (same thread count), with ``--estimate`` prints the NPU twin's
per-kernel estimate, with ``--profile`` the kernel time per ONNX node.
"""

from __future__ import annotations

import collections
import os
from typing import Any, Dict, List

import numpy as np


def _inputs(model: Any, seed: int = 0) -> Dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    feeds = {}
    for v in model.inputs:
        shape = [d if isinstance(d, int) and d > 0 else 1 for d in (v.shape or ())]
        dt = np.dtype(v.dtype or np.float32)
        if dt.kind == "f":
            feeds[v.name] = rng.standard_normal(shape).astype(dt)
        elif dt.kind == "b":
            feeds[v.name] = rng.random(shape) < 0.5
        else:
            feeds[v.name] = rng.integers(0, 4, shape).astype(dt)
    return feeds


def run(path: str, bench: bool = False, estimate: bool = False, profile: bool = False) -> int:
    """Load, summarise, check and optionally time, estimate and profile the model at ``path``."""
    import pyasc
    import pyasc.onnx as po

    from ..tools._timing import best_time, fmt_time

    model = po.load(path)
    g = model.graph
    counts = collections.Counter(n.op_type for n in g.nodes)
    params = sum(int(a.size) for a in g.consts.values())
    print(f"{os.path.basename(path)}: graph {g.name!r}, opset {g.opset}, {len(g.nodes)} nodes after folding, "
          f"{params:,} parameters")
    for v in model.inputs:
        print(f"  input  {v.name}: {v.shape} {v.dtype}")
    for v in model.outputs:
        print(f"  output {v.name}: {v.shape} {v.dtype}")
    print("  nodes: " + ", ".join(f"{k} {c}" for k, c in counts.most_common()))
    feeds = _inputs(model)
    got = model.run(None, feeds)
    sess = None
    try:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = int(pyasc.device_info("cpu").get("cores", 1))
        sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    except ImportError:
        print("onnxruntime is not installed: no reference check")
    except Exception as e:  # noqa: BLE001 (onnxruntime may reject what pyasc runs)
        print(f"onnxruntime cannot run the model: {e}")
    worst: List[float] = []
    if sess is not None:
        want = sess.run(None, feeds)
        for v, a, b in zip(model.outputs, got, want):
            a64, b64 = np.asarray(a, np.float64), np.asarray(b, np.float64)
            scale = float(np.abs(b64).max()) if b64.size else 0.0
            err = float(np.abs(a64 - b64).max()) if b64.size else 0.0
            worst.append(err / scale if scale else err)
            print(f"  {v.name}: max |pyasc - onnxruntime| {err:.3g} (largest |value| {scale:.3g})")
    if bench:
        t = best_time(lambda: model.run(None, feeds), 7)
        line = f"pyasc {fmt_time(t)}"
        if sess is not None:
            t_ort = best_time(lambda: sess.run(None, feeds), 7)
            line += f", onnxruntime {fmt_time(t_ort)}: {t_ort / t:.2f}x onnxruntime's speed"
        print(line)
    if estimate:
        print(model.estimate(*(feeds[v.name] for v in model.inputs)))
    if profile:
        with pyasc.profile() as p:
            model.run(None, feeds)
        print(p.summary(row_limit=30, group_by="source"))
    return 0 if all(w <= 1e-3 for w in worst) else 1
