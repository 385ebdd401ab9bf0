"""``pyasc bench`` entry of whole ONNX models: pyasc against onnxruntime in the same run.

``onnx``: the light zoo models that ship with the ``onnx`` wheel (ResNet-50, SqueezeNet,
DenseNet-121, Inception v1) at batch 1 on random inputs, onnxruntime with as many threads as
pyasc uses; each model's time, its convolutions' GFLOP/s against the machine's FMA peak
(``pyasc info --peaks``), and the time to load, compile and first run ResNet-50.

``conv_layers``: the convolution shapes those models spend their time in, each as a one-node
ONNX model, so a model's ratio can be traced to its layers: GFLOP/s of pyasc and onnxruntime
and their ratio per layer.
"""

from __future__ import annotations

import os
import time
from typing import Any, Dict, List, Tuple

import numpy as np

from ..tools._timing import best_time, fmt_time

Row = Tuple[str, str, float]

MODELS = ("resnet50", "squeezenet", "densenet121", "inception_v1")

#: (input channels, output channels, image size, kernel, stride) of ResNet-50's layers.
CONV_LAYERS = ((3, 64, 224, 7, 2), (64, 64, 56, 3, 1), (64, 256, 56, 1, 1), (128, 128, 56, 3, 2),
               (128, 128, 28, 3, 1), (256, 512, 56, 1, 2), (256, 256, 14, 3, 1), (512, 512, 7, 3, 1),
               (1024, 2048, 14, 1, 2), (512, 2048, 7, 1, 1))


def _path(name: str) -> str:
    import onnx

    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light", f"light_{name}.onnx")


def _ort_session(ort: Any, model: Any) -> Any:
    """Return an onnxruntime session of ``model`` (a path or bytes) on as many threads as pyasc uses."""
    import pyasc

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = pyasc.device_info("cpu").get("cores", os.cpu_count() or 1)
    opts.inter_op_num_threads = 1
    return ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])


def _speed_line(head: str, gflops: float, peak: Any, t: Dict[str, float], ratios: List[float]) -> str:
    """Return ``head`` with the GFLOP/s, its share of the FMA peak and the ratio to onnxruntime.

    The ratio (when onnxruntime was timed) is appended to ``ratios``.
    """
    line = f"{head} {gflops:.0f} GFLOP/s"
    if peak:
        line += f" ({gflops / peak:.0%} of the {peak:.0f} GFLOP/s FMA peak)"
    if "onnxruntime" in t:
        ratios.append(t["onnxruntime"] / t["pyasc"])
        line += f", {ratios[-1]:.2f}x onnxruntime's speed"
    return line


def conv_flops(model: Any) -> float:
    """Return the FLOPs of a loaded model's convolutions (two per multiply-add, from the inferred shapes)."""
    g = model.graph
    total = 0.0
    for n in g.nodes:
        if n.op_type != "Conv" or n.outputs[0] not in g.shapes or n.inputs[1] not in g.consts:
            continue
        w = g.consts[n.inputs[1]]
        total += 2.0 * np.prod(g.shapes[n.outputs[0]]) * np.prod(w.shape[1:])
    return total


def bench_model(name: str, repeat: int) -> Tuple[List[Row], Dict[str, float]]:
    """Time one model with pyasc and onnxruntime; also its load-to-first-result time and conv FLOPs."""
    import pyasc.onnx as po

    start = time.perf_counter()
    model = po.load(_path(name))
    (inp,) = model.inputs
    x = np.random.default_rng(0).standard_normal([d if isinstance(d, int) else 1 for d in inp.shape])
    x = x.astype(np.float32)
    model(x)
    first = time.perf_counter() - start
    rows: List[Row] = [("pyasc", "pyasc.onnx.load(...).run", best_time(lambda: model(x), repeat))]
    try:
        import onnxruntime as ort
    except ImportError:
        ort = None
    if ort is not None:
        sess = _ort_session(ort, _path(name))
        feeds = {inp.name: x}
        rows.append(("onnxruntime", "InferenceSession.run", best_time(lambda: sess.run(None, feeds), repeat)))
    return rows, {"first": first, "flops": conv_flops(model)}


def run_entries(want: set, quick: bool, repeat: int, summary: List[str]) -> None:
    """Run the ``onnx`` and ``conv_layers`` entries, adding summary lines."""
    from ..device.roofs import peaks
    from . import _report

    if "conv_layers" in want:
        run_conv_layers(quick, repeat, summary)
    if "onnx" not in want:
        return
    peak = peaks().get("fma_gflops")
    ratios = []
    for name in (("squeezenet",) if quick else MODELS):
        rows, extra = bench_model(name, 2 if quick else repeat)
        t = _report(f"onnx: light {name}, batch 1, float32", rows)
        gf = extra["flops"] / t["pyasc"] / 1e9
        line = _speed_line(f"onnx {name}: {fmt_time(t['pyasc'])}, convolutions", gf, peak, t, ratios)
        if name == "resnet50":
            line += f"; load, compile and first run {fmt_time(extra['first'])} (target <= 1 s)"
        summary.append(line)
    if ratios:
        geo = float(np.exp(np.mean(np.log(ratios))))
        summary.append(f"onnx: geometric mean {geo:.2f}x onnxruntime's speed, lowest {min(ratios):.2f}x "
                       "(target >= 1.0x, none below 0.8x)")


def conv_layer_model(c: int, o: int, size: int, k: int, stride: int) -> Any:
    """Return a one-node ONNX model: a ``k x k`` Conv of ``c -> o`` channels over ``size x size``."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(1)
    w = numpy_helper.from_array((rng.random((o, c, k, k)) - 0.5).astype(np.float32), "w")
    node = helper.make_node("Conv", ["x", "w"], ["y"], pads=[k // 2] * 4, strides=[stride, stride])
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, size, size])
    graph = helper.make_graph([node], "conv", [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def _time_layer(proto: Any, shape: Tuple[int, ...], repeat: int, ort: Any) -> List[Row]:
    """Time a one-node model with pyasc and (when given) onnxruntime on a random input."""
    import pyasc.onnx as po

    model = po.load(proto)
    x = np.random.default_rng(0).random(shape).astype(np.float32)
    model(x)
    rows: List[Row] = [("pyasc", "pyasc.onnx.load(conv).run", best_time(lambda: model(x), repeat))]
    if ort is not None:
        sess = _ort_session(ort, proto.SerializeToString())
        rows.append(("onnxruntime", "InferenceSession.run", best_time(lambda: sess.run(None, {"x": x}), repeat)))
    return rows


def run_conv_layers(quick: bool, repeat: int, summary: List[str]) -> None:
    """Run the ``conv_layers`` entry: each layer with pyasc and onnxruntime, GFLOP/s and ratio."""
    from ..device.roofs import peaks
    from . import _report

    try:
        import onnxruntime as ort
    except ImportError:
        ort = None
    peak = peaks().get("fma_gflops")
    ratios = []
    for c, o, size, k, s in (CONV_LAYERS[:3] if quick else CONV_LAYERS):
        rows = _time_layer(conv_layer_model(c, o, size, k, s), (1, c, size, size), repeat, ort)
        out = (size + 2 * (k // 2) - k) // s + 1
        flops = 2.0 * o * c * k * k * out * out
        name = f"{c}->{o} {size}x{size} {k}x{k} stride {s}"
        t = _report(f"conv_layers: {name}, float32", rows)
        line = _speed_line(f"conv_layers {name}: pyasc", flops / t["pyasc"] / 1e9, peak, t, ratios)
        if "onnxruntime" in t:
            line += f" (onnxruntime {flops / t['onnxruntime'] / 1e9:.0f} GFLOP/s)"
        summary.append(line)
    if ratios:
        geo = float(np.exp(np.mean(np.log(ratios))))
        summary.append(f"conv_layers: geometric mean {geo:.2f}x onnxruntime's speed, lowest {min(ratios):.2f}x")
