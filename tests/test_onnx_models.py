"""``pyasc.onnx``: whole models against onnxruntime, the loader's contract, custom operators.

The nine light zoo models of the ``onnx`` wheel build their weights with ``ConstantOfShape``
(constant values, so every class comes out equal); here each such weight becomes a random
initializer, so the comparison with onnxruntime sees real activations.
"""

import os

import numpy as np
import onnx
import onnxruntime as ort
import pyasc
import pyasc.onnx as po
import pytest
from onnx import TensorProto, helper, numpy_helper
from pyasc import lang as asc

LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
MODELS = ["squeezenet", "resnet50", "densenet121", "inception_v1", "inception_v2", "shufflenet", "bvlc_alexnet",
          "zfnet512", "vgg19"]


def randomized(name: str, seed: int = 0) -> onnx.ModelProto:
    """The light model ``name`` with each ConstantOfShape weight replaced by random values."""
    m = onnx.load(os.path.join(LIGHT, f"light_{name}.onnx"))
    rng = np.random.default_rng(seed)
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    keep = []
    for n in m.graph.node:
        if n.op_type == "ConstantOfShape" and n.input[0] in inits:
            shape = tuple(int(v) for v in inits[n.input[0]])
            if len(shape) > 1:
                w = rng.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))
            else:  # biases, scales and (positive) variances alike
                w = rng.uniform(0.5, 1.5, shape)
            m.graph.initializer.append(numpy_helper.from_array(w.astype(np.float32), n.output[0]))
        else:
            keep.append(n)
    del m.graph.node[:]
    m.graph.node.extend(keep)
    return m


@pytest.mark.parametrize("name", MODELS)
def test_light_zoo_model_matches_onnxruntime(name):
    m = randomized(name)
    model = po.load(m)
    (inp,) = model.inputs
    x = np.random.default_rng(1).standard_normal([d if isinstance(d, int) else 1 for d in inp.shape])
    x = x.astype(np.float32)
    got = model.run(None, {inp.name: x})
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {inp.name: x})
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-4 * np.abs(w).max())
        assert np.array_equal(g.argmax(-1), w.argmax(-1))


def _model(nodes, inputs, outputs, inits=(), opsets=(("", 17),)):
    g = helper.make_graph(nodes, "m", inputs, outputs, initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])


def _f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def test_loader_folds_batch_norm_and_constants_and_fuses_the_epilogue():
    rng = np.random.default_rng(2)
    w = rng.standard_normal((8, 3, 3, 3)).astype(np.float32)
    bn = [rng.uniform(0.5, 1.5, 8).astype(np.float32) for _ in range(4)]
    inits = [numpy_helper.from_array(w, "w")] + [numpy_helper.from_array(a, n) for a, n in zip(bn, "sbmv")]
    inits.append(numpy_helper.from_array(np.array([1, -1], np.int64), "shape"))
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["n"], epsilon=1e-3),
             helper.make_node("Relu", ["n"], ["r"]),
             helper.make_node("Conv", ["x", "w"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["r", "c2"], ["y0"]),
             helper.make_node("Shape", ["x"], ["xs"]),
             helper.make_node("Reshape", ["y0", "shape"], ["y"]),
             helper.make_node("Identity", ["xs"], ["shape_out"])]
    m = _model(nodes, [_f32("x", [1, 3, 10, 10])],
               [_f32("y", None), helper.make_tensor_value_info("shape_out", TensorProto.INT64, None)], inits)
    model = po.load(m)
    assert [n.op_type for n in model.graph.nodes].count("BatchNormalization") == 0
    assert "Shape" not in [n.op_type for n in model.graph.nodes]
    x = rng.standard_normal((1, 3, 10, 10)).astype(np.float32)
    y, shape = model(x)
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    np.testing.assert_allclose(y, want[0], rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(shape, [1, 3, 10, 10])
    # The folded bias, ReLU and the residual add run inside a convolution's kernel: two
    # convolutions, the reshaped output's copy and the shape output, nothing else.
    kernels = model.get_compiled_op(x).kernels()
    assert len(kernels) == 4 and max(k["fused_ops"] for k in kernels) >= 4, kernels


def test_inputs_outputs_run_by_name_and_errors():
    nodes = [helper.make_node("Add", ["a", "b"], ["s"]), helper.make_node("Mul", ["a", "b"], ["p"])]
    m = _model(nodes, [_f32("a", ["batch", 4]), _f32("b", ["batch", 4])], [_f32("s", ["batch", 4]), _f32("p", None)])
    model = po.load(m)
    assert [(v.name, v.shape, v.dtype) for v in model.inputs] == [("a", ("batch", 4), np.float32),
                                                                  ("b", ("batch", 4), np.float32)]
    a, b = np.ones((3, 4), np.float32), np.full((3, 4), 2, np.float32)
    (p,) = model.run(["p"], {"a": a, "b": b})
    np.testing.assert_array_equal(p, a * b)
    s, p = model(np.ones((5, 4), np.float32), b[:1].repeat(5, 0))  # another batch size
    assert s.shape == (5, 4)
    with pytest.raises(pyasc.InvalidArgumentError, match="missing model input"):
        model.run(None, {"a": a})
    with pytest.raises(pyasc.InvalidArgumentError, match="no output 'q'"):
        model.run(["q"], {"a": a, "b": b})
    with pytest.raises(pyasc.InvalidArgumentError, match="dtype float64"):
        model(a.astype(np.float64), b)


def test_every_unsupported_node_is_listed_at_load_time():
    nodes = [helper.make_node("Frobnicate", ["x"], ["y"], domain="acme"),
             helper.make_node("Relu", ["y"], ["z"]),
             helper.make_node("Twiddle", ["z"], ["w"], domain="acme", name="tw")]
    m = _model(nodes, [_f32("x", [2])], [_f32("w", [2])], opsets=(("", 17), ("acme", 1)))
    with pytest.raises(pyasc.UnsupportedError, match=r"2 ONNX node\(s\).*acme::Frobnicate.*'tw' \(acme::Twiddle\)"):
        po.load(m)


@pyasc.operator
def scaled_swish(x, alpha=1.0, beta=1.0):
    """``beta * x * sigmoid(alpha * x)``."""
    return x * beta / (1 + np.exp(-alpha * x))


@pyasc.vectorized_operator
def _swish(x):
    return x / (1 + np.exp(-x))


class ScaledSwish(pyasc.AscendOperatorBase):
    """The same as a class operator; the node's attributes arrive as instance attributes."""

    alpha = 1.0
    beta = 1.0

    def compute(self, inputs):
        (x,) = inputs
        return x * self.beta / (1 + np.exp(-self.alpha * x))


@pyasc.kernel
def _double(x, y, n):
    pipe = asc.TPipe()
    buf = asc.TBuf()
    pipe.init_buffer(buf, 256 * 4)
    t = buf.get(np.float32)
    asc.data_copy_pad(t, x, n)
    asc.muls(t, t, 2.0, n)
    asc.data_copy_pad(y, t, n)


def _double_launch(x, alpha, beta):
    """A kernel launch on the node's input array, then NumPy on its result."""
    flat = np.ascontiguousarray(x).reshape(-1)
    y = np.empty_like(flat)
    _double[1](flat, y, flat.size)
    y = y.reshape(x.shape) / 2.0
    return (y * beta / (1 + np.exp(-alpha * y))).astype(np.float32)


@pytest.mark.parametrize("kind", ["operator", "vectorized", "class", "kernel"])
def test_custom_operator_for_a_custom_domain_node(kind):
    op = {"operator": scaled_swish,
          "vectorized": lambda x, alpha, beta: _swish(x * alpha) * beta / alpha,
          "class": ScaledSwish(),
          "kernel": po.on_arrays(_double_launch)}[kind]
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("ScaledSwish", ["r"], ["s"], domain="my.ops", alpha=2.0, beta=0.5),
             helper.make_node("Add", ["s", "x"], ["y"])]
    m = _model(nodes, [_f32("x", [4, 8])], [_f32("y", [4, 8])], opsets=(("", 17), ("my.ops", 1)))
    model = po.load(m, custom_ops={("my.ops", "ScaledSwish"): op})
    x = np.random.default_rng(3).standard_normal((4, 8)).astype(np.float32)
    r = np.maximum(x, 0)
    want = r * 0.5 / (1 + np.exp(-2 * r)) + x
    np.testing.assert_allclose(model(x), want, rtol=1e-5, atol=1e-6)
    if kind == "operator":
        # The custom node fuses with the ReLU before it and the add after it.
        assert len(model.get_compiled_op(x).kernels()) == 1


def test_precision_modes_keep_the_top_class_and_check_accuracy_reports_it():
    m = randomized("squeezenet")
    x = np.random.default_rng(4).standard_normal((1, 3, 224, 224)).astype(np.float32)
    ref = po.load(m)(x)
    for mode in ("mixed_bf16", "force_fp16"):
        model = po.load(m, precision_mode=mode)
        report = pyasc.check_accuracy(model, x)
        (out,) = report.outputs
        assert out.max_rel == pytest.approx(np.abs(model(x) - ref).max() / np.abs(ref).max(), rel=1e-6)
        assert 0 < out.max_rel < 0.05  # 16-bit operands, float32 sums: close, not equal
        assert mode in str(report)


def test_profile_names_the_onnx_nodes_and_the_estimate_covers_every_kernel():
    model = po.load(os.path.join(LIGHT, "light_squeezenet.onnx"))
    x = np.random.default_rng(5).standard_normal((1, 3, 224, 224)).astype(np.float32)
    model(x)
    with pyasc.profile() as p:
        model(x)
    rows = p.key_averages(group_by="source")
    names = " ".join(r["name"] for r in rows)
    # Each of the 26 convolutions appears, its ReLU fused into the same row.
    convs = [n for n in model.graph.nodes if n.op_type == "Conv"]
    for n in convs:
        assert f":{n.name}(Conv)" in names
    assert any("(Conv)" in r["name"] and "(Relu)" in r["name"] for r in rows)
    assert sum(r["kernels"] for r in rows) == len(model.get_compiled_op(x).kernels())
    est = str(model.estimate(x))
    assert "910B" in est and est.count("_k") >= 26


def test_the_onnx_command_checks_against_onnxruntime(capsys):
    from pyasc.cli import main

    assert main(["onnx", os.path.join(LIGHT, "light_squeezenet.onnx"), "--bench", "--profile"]) == 0
    out = capsys.readouterr().out
    assert "Conv 26" in out and "onnxruntime's speed" in out and "(Conv)" in out


def test_the_conv_layers_bench_entry_times_layers_that_match_onnxruntime(capsys):
    from pyasc.bench.onnx_models import CONV_LAYERS, conv_layer_model, run_conv_layers

    # Every layer shape of the entry, shrunk to a small image, computes what onnxruntime does.
    for c, o, size, k, s in CONV_LAYERS:
        proto = conv_layer_model(min(c, 32), min(o, 48), min(size, 30), k, s)
        x = np.random.default_rng(2).random((1, min(c, 32), min(size, 30), min(size, 30))).astype(np.float32)
        sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
        want = sess.run(None, {"x": x})[0]
        got = np.asarray(po.load(proto)(x))
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
    summary = []
    run_conv_layers(True, 1, summary)
    assert len(summary) == 4 and "GFLOP/s" in summary[0] and "geometric mean" in summary[-1]
