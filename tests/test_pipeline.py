"""``pyasc.pipeline``: stages over micro-batches give what the calls give one by one."""

from __future__ import annotations

import threading

import numpy as np
import pyasc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st


@pyasc.operator
def normalize(x):
    m = x.mean(axis=-1, keepdims=True)
    d = x - m
    return d / np.sqrt((d * d).mean(axis=-1, keepdims=True) + 1e-5)


@pyasc.operator
def project(x, w):
    return x @ w


@pyasc.operator
def gelu(x):
    return pyasc.gelu(x)


@pyasc.operator
def softmax(x):
    return pyasc.softmax(x, -1)


@pyasc.operator
def center_columns(x):
    return x - x.mean(axis=0, keepdims=True)


@pyasc.operator
def column_sums(x):
    return x.sum(axis=0)


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def four_stages(x, w):
    return softmax(gelu(project(normalize(x), w)))


def test_the_four_stage_example_matches_eager_calls():
    x, w = rand(5000, 64), rand(64, 64, seed=1) / 8
    with pyasc.pipeline(stages=4, micro_batch=512) as p:
        stage1 = normalize(x)
        stage2 = project(stage1, w)
        stage3 = gelu(stage2)
        stage4 = softmax(stage3)
    np.testing.assert_array_equal(np.asarray(stage4), four_stages(x, w))
    assert p.last_schedule == {"stages": 4, "micro_batch": 512, "micro_batches": 10, "batch": 5000,
                               "runner": "workers"}
    # Values handed between stages are never stored in full.
    with pytest.raises(pyasc.PipelineError, match="handed between pipeline stages"):
        np.asarray(stage2)


def test_float64_reference_and_default_micro_batch():
    x, w = rand(3000, 32), rand(32, 16, seed=2) / 4
    with pyasc.pipeline(stages=2) as p:
        out = softmax(gelu(project(normalize(x), w)))
    x64 = x.astype(np.float64)
    d = x64 - x64.mean(-1, keepdims=True)
    h = d / np.sqrt((d * d).mean(-1, keepdims=True) + 1e-5) @ w
    from scipy.special import erf

    g = 0.5 * h * (1 + erf(h / np.sqrt(2)))
    e = np.exp(g - g.max(-1, keepdims=True))
    np.testing.assert_allclose(np.asarray(out), e / e.sum(-1, keepdims=True), rtol=1e-4, atol=1e-6)
    assert p.last_schedule["stages"] == 2 and p.last_schedule["micro_batch"] >= 1


def test_reading_an_intermediate_inside_the_block():
    x = rand(100, 8)
    with pyasc.pipeline(stages=3, micro_batch=16):
        s1 = normalize(x)
        first = np.asarray(s1)  # read before anything consumes it: a result of its own pipeline
        s2 = gelu(s1)
        s3 = softmax(s2)
    np.testing.assert_array_equal(first, normalize(x))
    np.testing.assert_array_equal(np.asarray(s3), softmax(gelu(normalize(x))))


def test_stage_reducing_over_axis_0_is_a_typed_error_at_its_line():
    top = test_stage_reducing_over_axis_0_is_a_typed_error_at_its_line.__code__.co_firstlineno
    x = rand(64, 8)
    with pytest.raises(pyasc.PipelineError) as info:
        with pyasc.pipeline(stages=2):
            s1 = normalize(x)
            s2 = column_sums(s1)  # noqa: F841
    assert info.value.lineno == top + 6
    assert "rows" in str(info.value)
    with pytest.raises(pyasc.PipelineError, match="mixes rows") as info:
        with pyasc.pipeline(stages=2):
            s1 = gelu(x)
            s2 = center_columns(s1)  # noqa: F841
    assert info.value.filename == __file__
    assert info.value.lineno == top + 12


def test_bad_options_are_rejected():
    for kw in ({"stages": 0}, {"stages": 2.5}, {"micro_batch": 0}, {"micro_batch": True}):
        with pytest.raises(pyasc.InvalidArgumentError):
            pyasc.pipeline(**kw)


def test_an_error_in_a_stage_stops_the_pipeline():
    @pyasc.operator(debug=True)
    def checked_log(x):
        return np.log(x)

    x = np.abs(rand(400, 4)) + 1.0
    x[350, 2] = -1.0  # the NaN is in a late micro-batch
    with pytest.raises(pyasc.NumericalError):
        with pyasc.pipeline(stages=2, micro_batch=50):
            softmax(checked_log(x))


class _Stop(Exception):
    pass


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 300), st.integers(1, 12), st.integers(1, 5), st.integers(1, 64),
       st.lists(st.integers(0, 3), min_size=1, max_size=6), st.integers(0, 7), st.integers(0, 7), st.booleans())
def test_random_pipelines_equal_eager(rows, cols, stages, micro, kinds, read_at, raise_at, in_thread):
    x = rand(rows, cols, seed=rows + cols)
    w = rand(cols, cols, seed=7) / 4
    fns = [normalize, gelu, softmax, lambda v: project(v, w)]
    eager = [x]
    for k in kinds:
        eager.append(fns[k](eager[-1]))
    got, reads = [x], {}
    stop = raise_at if raise_at < len(kinds) else None

    def run():
        try:
            with pyasc.pipeline(stages=stages, micro_batch=micro):
                for n, k in enumerate(kinds):
                    if n == stop:
                        raise _Stop()
                    with pyasc.graph_mode():  # a nested block joins the pipeline
                        got.append(fns[k](got[-1]))
                    if n == read_at:  # read before later calls use it
                        reads[n + 1] = np.array(got[-1])
        except _Stop:
            pass

    if in_thread:
        t = threading.Thread(target=run)
        t.start()
        t.join()
    else:
        run()
    for n, v in reads.items():
        np.testing.assert_allclose(v, eager[n], rtol=1e-6, atol=1e-6)
    # The pipeline's results: the last call's value (when an exception cut the block, the last
    # call recorded before it).
    np.testing.assert_allclose(np.asarray(got[-1]), eager[len(got) - 1], rtol=1e-6, atol=1e-6)


@pyasc.operator
def scaled(x, s):
    return x * s


@pyasc.operator
def add(a, b):
    return a + b


@pyasc.operator(debug=True)
def checked_gelu(x):
    return pyasc.gelu(x)


def test_workers_hand_several_values_between_stages_and_run_a_short_last_micro_batch():
    # 1001 rows in micro-batches of 100 (the last has 1 row); stage 1's value feeds stages 2 and
    # 3, so it stays alive across a stage.
    x, w = rand(1001, 48), rand(48, 48, seed=3) / 7
    with pyasc.pipeline(stages=3, micro_batch=100) as p:
        a = normalize(x)
        b = project(a, w)
        c = add(gelu(b), a)
    want_a = normalize(x)
    want_c = add(gelu(project(want_a, w)), want_a)
    np.testing.assert_array_equal(np.asarray(c), want_c)
    assert p.last_schedule["runner"] == "workers" and p.last_schedule["micro_batches"] == 11


W_GLOBAL = rand(24, 24, seed=5) / 5


@pyasc.operator
def project_global(x):
    return x @ W_GLOBAL


def test_stages_that_capture_a_global_array_run_on_the_workers():
    x = rand(900, 24)
    with pyasc.pipeline(stages=2, micro_batch=128) as p:
        y = softmax(project_global(normalize(x)))
    np.testing.assert_array_equal(np.asarray(y), softmax(project_global(normalize(x))))
    assert p.last_schedule["runner"] == "workers"


def test_a_batched_matmul_stage_runs_on_the_workers():
    # (rows, 6, 32) @ (32, 32): a batch of products per micro-batch, on one core each.
    x, w = rand(300, 6, 32), rand(32, 32, seed=4) / 6
    with pyasc.pipeline(stages=2, micro_batch=40) as p:
        y = gelu(project(x, w))
    np.testing.assert_array_equal(np.asarray(y), gelu(project(x, w)))
    assert p.last_schedule["runner"] == "workers"


def test_scalar_arguments_and_debug_stages_run_on_streams():
    x = rand(700, 24)
    with pyasc.pipeline(stages=2, micro_batch=64) as p:
        y = softmax(scaled(x, 2.5))
    np.testing.assert_array_equal(np.asarray(y), softmax(scaled(x, 2.5)))
    assert p.last_schedule["runner"] == "streams"
    with pyasc.pipeline(stages=2, micro_batch=64) as p:
        y = checked_gelu(normalize(x))
    np.testing.assert_array_equal(np.asarray(y), checked_gelu(normalize(x)))
    assert p.last_schedule["runner"] == "streams"


def test_memory_between_stages_is_bounded_by_stages_times_micro_batch():
    # Four stages over 16 micro-batches of 1 MiB values: at most `stages` micro-batches are in
    # flight, each holding one value per stage, so the pool never holds more than the result
    # plus stages x values x micro-batch bytes (plus one value per stage of slack: a stream's
    # worker may release a finished task's buffers a moment late); eager calls hold every
    # full-size intermediate.
    rows, cols, mb, stages = 16384, 256, 1024, 4
    x, w = rand(rows, cols), rand(cols, cols, seed=1) / 16
    mb_bytes, result_bytes = mb * cols * 4, rows * cols * 4

    def piped():
        with pyasc.pipeline(stages=stages, micro_batch=mb):
            out = softmax(gelu(project(normalize(x), w)))
        return out.value()

    piped()  # compile outside the measurement
    base = pyasc.memory_stats()["bytes_in_use"]
    pyasc.reset_peak_memory_stats()
    got = piped()
    peak = pyasc.memory_stats()["peak_bytes_in_use"] - base
    np.testing.assert_array_equal(got, four_stages(x, w))
    assert peak <= result_bytes + stages * (4 + 1) * mb_bytes, peak / 2**20
    with pyasc.Stream():
        dx = pyasc.from_dlpack(x)
        base = pyasc.memory_stats()["bytes_in_use"]
        pyasc.reset_peak_memory_stats()
        softmax(gelu(project(normalize(dx), w))).numpy()
        eager_peak = pyasc.memory_stats()["peak_bytes_in_use"] - base
    assert eager_peak >= 3 * result_bytes > peak - result_bytes
