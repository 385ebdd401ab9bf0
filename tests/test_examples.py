"""The scripts in ``examples/`` run as documented (small sizes) and compute the right values."""

from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
from test_nms import nms_ref

ROOT = pathlib.Path(__file__).resolve().parent.parent


def load(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_bert_gelu_runs_and_stays_within_float16_rounding():
    r = load("bert_gelu").main(["--batch", "2", "--seq", "16", "--hidden", "768", "--repeat", "2"])
    assert r["dtype"] == "float16"
    # One float16 rounding of values below 6 in magnitude: at most half an ulp of 4..8.
    assert r["max_abs_err"] <= 2.0 ** -9
    assert r["t16"] > 0 and r["t32"] > 0


def test_sr_inference_mixed_precision_keeps_the_image():
    r = load("sr_inference").main(["--size", "48", "--layers", "2", "--repeat", "1"])
    assert r["shape"] == (1, 3, 96, 96) and r["dtype"] == "float32"
    # bfloat16 operands with float32 sums: far above the 40 dB the network needs.
    assert r["psnr"] >= 40.0


def test_yolo_postprocess_keeps_the_numpy_detections():
    mod = load("yolo_postprocess")
    r = mod.main(["--objects", "12", "--repeat", "1"])
    assert r["same"] and r["detections"] > 0
    # Independently: a one-box-at-a-time greedy NMS of the class-shifted candidates keeps the same
    # boxes in the same order. (Per-class NMS without the shift can differ: shifting by
    # class * 7680 rounds float32 corners.)
    x = mod.make_prediction(12)[0]
    x = x[x[:, 4] > 0.25]
    conf_all = x[:, 5:] * x[:, 4:5]
    cls, conf = conf_all.argmax(1), conf_all.max(1)
    sel = conf > 0.25
    xy, wh = x[sel, 0:2], x[sel, 2:4]
    boxes = np.concatenate([xy - wh / 2, xy + wh / 2], 1)
    shifted = boxes + (cls[sel] * 7680.0).astype(np.float32)[:, None]
    keep = nms_ref(shifted, conf[sel], 0.45)[:300]
    np.testing.assert_array_equal(r["got"][:, :4], boxes[keep])
    np.testing.assert_array_equal(r["got"][:, 5], cls[sel][keep])


def test_yolo_postprocess_stage_timing_runs_the_same_pipeline():
    mod = load("yolo_postprocess")
    r = mod.main(["--objects", "12", "--repeat", "1", "--stages"])
    assert set(r["stages"]) == {"after a NumPy run", "back to back"}
    for times, staged in r["stages"].values():
        # Each stage timed in each of the 5 rounds, and the staged pipeline keeps NumPy's detections.
        assert {n: len(t) for n, t in times.items()} == {n: 5 for n in mod.STAGES}
        assert all(t > 0 for ts in times.values() for t in ts)
        np.testing.assert_array_equal(staged, r["ref"])


def test_yolo_postprocess_kernel_timing_covers_every_kernel_of_the_operator():
    mod = load("yolo_postprocess")
    r = mod.main(["--objects", "12", "--repeat", "1", "--kernels"])
    assert set(r["kernels"]) == {"after a NumPy run", "back to back"}
    op = mod.candidates.get_compiled_op(mod.pyasc.ops.filter_rows(mod.make_prediction(12)[0], 4, 0.25))
    n = 0
    while True:
        try:
            op.tile_program(n)
        except Exception:
            break
        n += 1
    kernels = op.kernels()
    assert n == len(kernels) >= 3
    # The two stacks are written in place by the row kernel: their copies do not run.
    running = {k["name"] for k in kernels if not k["in_place_stack"]}
    assert len(running) == n - 2
    for times in r["kernels"].values():
        # Every kernel that runs timed in each of the 5 rounds.
        assert set(times) == running and all(len(t) == 5 and min(t) > 0 for t in times.values())



def test_train_mlp_loss_falls_and_its_gradient_checks():
    import pyasc

    mod = load("train_mlp")
    r = mod.main(["--epochs", "6", "--samples", "1024"])
    losses = r["losses"]
    assert len(losses) == 6 and losses[-1] < 0.8 * losses[0]
    assert r["accuracy"] > 0.6
    rng = np.random.default_rng(1)
    x, labels = mod.make_data(rng, 8, 5, 3)
    params = {k: v.astype(np.float64) for k, v in mod.init_params(rng, 5, 7, 3).items()}
    params = {k: v + 0.1 * rng.standard_normal(v.shape) for k, v in params.items()}  # no ReLU kinks at 0
    onehot = np.eye(3)[labels]
    pyasc.check_grads(lambda p: mod.loss_fn(p, x.astype(np.float64), onehot), (params,), order=1)


def test_train_transformer_loss_falls_and_its_gradient_checks():
    import pyasc

    mod = load("train_transformer")
    r = mod.main(["--epochs", "3", "--samples", "1024", "--width", "32", "--batch", "32", "--lr", "1e-2"])
    assert r["losses"][-1] < 0.5 * r["losses"][0]
    rng = np.random.default_rng(2)
    x, y = mod.make_data(rng, 2, 5, 6, 1)
    params = {k: v.astype(np.float64) for k, v in mod.init_params(rng, 6, 5, 8, 1).items()}
    pyasc.check_grads(lambda p: mod.loss_fn(p, x.astype(np.float64), y.astype(np.float64), 2, 1), (params,),
                      order=1)


def test_onnx_custom_op_matches_onnxruntime_with_the_node_expanded():
    r = load("onnx_custom_op").main(["--batch", "16", "--width", "64"])
    assert r["shape"] == (16, 64)
    assert r["max_abs_err"] <= 1e-5 * max(1.0, r["scale"])
    # Three products, with the custom node and the residual add in their epilogues.
    assert r["kernels"] <= 3
