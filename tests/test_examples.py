"""The scripts in ``examples/`` run as documented (small sizes) and compute the right values."""

from __future__ import annotations

import importlib.util
import pathlib

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
