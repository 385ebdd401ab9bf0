"""The NPU twin's limits (Unified Buffer, alignment) and its cost model, against hand-computed figures."""

from __future__ import annotations

import json
import math

import numpy as np
import pyasc
import pytest
from pyasc.device.npu_cost import Instruction, Register, TileProgram, model_kernel, parse_tile_program
from pyasc.device.npu_twin import NPU_910B

# The documented table (README, "NPU twin: limits and cost model"), restated by hand.
HBM = 1.6e12
CORES = 48
CORE_MTE = 128 * 1.8e9
CLOCK = 1.8e9
UB = 192 * 1024


def program(n_elems: int, tile: int, body: list, n_args: int = 1, n_temps: int = 0) -> TileProgram:
    """A float32 elementwise kernel: ``n_args`` loads, ``n_temps`` tile registers, one store."""
    regs = [Register(4, f"load b{i}") for i in range(n_args)]
    regs += [Register(4, "tile") for _ in range(n_temps)]
    regs.append(Register(4, f"store b{n_args}"))
    out = len(regs) - 1
    instrs = [Instruction(ops, out if dst == "out" else dst, srcs) for ops, dst, srcs in body]
    return TileProgram("k", [f"b{i}" for i in range(n_args)], [f"b{n_args}"], (n_elems,), 0, tile, regs, instrs)


def by_hand(n_elems, tile, in_bytes, out_bytes, cycles, depth):
    """The model's formulas evaluated from the table: (time, t_mte2, t_vector, t_mte3)."""
    tiles = math.ceil(n_elems / tile)
    blocks = min(tiles, CORES)
    per_core = math.ceil(tiles / blocks)
    bw = min(HBM / blocks, CORE_MTE)
    t2, t3, tv = tile * in_bytes / bw, tile * out_bytes / bw, cycles / CLOCK
    if depth == 2:
        return t2 + tv + t3 + (per_core - 1) * max(t2 + t3, tv), t2, tv, t3
    return per_core * (t2 + tv + t3), t2, tv, t3


N = CORES * 8 * 4096  # 8 tiles of 4096 float32 per core


@pytest.mark.parametrize("double_buffer", [True, False])
def test_copy_only_kernel_is_bound_by_hbm(double_buffer):
    p = program(N, 4096, [(["copy"], "out", [0])])
    est = model_kernel(p, NPU_910B, double_buffer)
    # 4096 float32 = 16 KiB = 64 repeats of 256 bytes, one cycle each.
    want, t2, tv, t3 = by_hand(N, 4096, 4, 4, 64, 2 if double_buffer else 1)
    assert (est.tiles, est.blocks, est.tiles_per_core, est.tile_elems) == (384, 48, 8, 4096)
    assert est.time_s == pytest.approx(want, rel=1e-12)
    assert (est.t_mte2, est.t_vector, est.t_mte3) == pytest.approx((t2, tv, t3), rel=1e-12)
    assert est.bound == "mte2"
    # First principles (roofline): bytes moved / HBM bandwidth, within the un-overlapped vector time.
    roofline = N * 8 / HBM
    if double_buffer:
        assert roofline <= est.time_s <= roofline + tv + 1e-15
        assert est.busy["mte2"] + est.busy["mte3"] == pytest.approx(8 * (t2 + t3) / want)
    else:
        assert est.time_s == pytest.approx(roofline + 8 * tv, rel=1e-12)


@pytest.mark.parametrize("double_buffer", [True, False])
def test_vector_only_kernel(double_buffer):
    # Ten exp and ten div on the tile: 10 * 8 + 10 * 4 = 120 cycles per repeat.
    body = [(["exp"], 1, [0])] + [(["exp"], 1, [1])] * 9 + [(["div"], 1, [1, 0])] * 9 + [(["div"], "out", [1, 0])]
    p = program(N, 4096, body, n_temps=1)
    est = model_kernel(p, NPU_910B, double_buffer)
    want, t2, tv, t3 = by_hand(N, 4096, 4, 4, 64 * 120, 2 if double_buffer else 1)
    assert est.time_s == pytest.approx(want, rel=1e-12)
    assert est.t_vector == pytest.approx(64 * 120 / CLOCK)
    assert est.bound == "vector"
    if double_buffer:
        assert est.time_s == pytest.approx(t2 + t3 + 8 * tv, rel=1e-12)
        assert est.busy["vector"] == pytest.approx(8 * tv / want)


def test_balanced_kernel_double_buffering_halves_the_time():
    # Memory per tile: 4096 * 8 bytes at 1.6e12 / 48 B/s = 0.98304 us = 1769.472 cycles;
    # 28 mul per repeat (64 repeats): 1792 cycles, just over.
    body = [(["mul"], 1, [0, 0])] + [(["mul"], 1, [1, 0])] * 26 + [(["mul"], "out", [1, 0])]
    p = program(N, 4096, body, n_temps=1)
    one, two = model_kernel(p, NPU_910B, False), model_kernel(p, NPU_910B, True)
    want1, t2, tv, t3 = by_hand(N, 4096, 4, 4, 64 * 28, 1)
    want2 = by_hand(N, 4096, 4, 4, 64 * 28, 2)[0]
    assert one.time_s == pytest.approx(want1, rel=1e-12) and two.time_s == pytest.approx(want2, rel=1e-12)
    assert two.bound == "vector" and tv > t2 + t3
    assert one.time_s / two.time_s == pytest.approx(8 * (t2 + tv + t3) / (t2 + t3 + 8 * tv), rel=1e-12)
    assert 1.7 < one.time_s / two.time_s < 2.0


def test_model_shrinks_double_buffered_tiles_to_the_unified_buffer():
    p = program(N, 16384, [(["add"], "out", [0, 1])], n_args=2)
    # Depth 1: 16384 * (8 + 4) bytes = 192 KiB fits; depth 2 needs twice that: 8192 elements.
    assert model_kernel(p, NPU_910B, False).tile_elems == 16384
    est = model_kernel(p, NPU_910B, True)
    assert est.tile_elems == 8192 and est.ub_bytes == 8192 * 24 <= UB
    assert "shrunk" in est.notes[0]


def test_parse_tile_program_reads_the_compilers_text():
    @pyasc.operator(device_type="npu")
    def gelu_ish(x, y):
        return np.tanh(x * y + 1.0) * 0.5

    x = np.ones(1 << 16, np.float32)
    c = gelu_ish.get_compiled_op(x, x)
    p = parse_tile_program(c.tile_program(0))
    k = c.kernels()[0]
    assert p.name == k["name"] and p.tile_elems == k["tile_elems"] and p.shape == (1 << 16,)
    assert len(p.registers) == k["registers"]
    assert "tanh" in [op for i in p.instructions for op in i.ops]


def test_estimate_of_an_elementwise_add_against_hand_arithmetic():
    @pyasc.operator(device_type="npu")
    def add(x, y):
        return x + y

    n = CORES * 4 * 8192
    x = np.ones(n, np.float32)
    for double_buffer in (True, False):
        est = add.estimate(x, x, double_buffer=double_buffer)
        assert len(est.kernels) == 1
        k = est.kernels[0]
        tile = 8192 if double_buffer else 16384  # 192 KiB / (2 * 12 B) and / 12 B
        want = by_hand(n, tile, 8, 4, math.ceil(tile * 4 / 256), 2 if double_buffer else 1)[0]
        assert k.tile_elems == tile and k.time_s == pytest.approx(want, rel=1e-12)
        assert est.total_s == pytest.approx(want, rel=1e-12) and est.bound == "mte2"
        # Memory-bound: within 5% of bytes / HBM bandwidth (first-principles roofline).
        assert est.total_s == pytest.approx(3 * 4 * n / HBM, rel=0.05)
        text = str(est)
        assert "mte2" in text and k.name in text and f"{est.total_us:.3f}" in text


def test_estimate_needs_an_npu_operator():
    @pyasc.operator
    def f(x):
        return x + 1

    with pytest.raises(pyasc.InvalidArgumentError, match="device_type='npu'"):
        f.estimate(np.ones(8, np.float32))


def test_compiled_npu_tiles_fit_the_unified_buffer():
    @pyasc.operator(device_type="npu")
    def many(a, b, c, d):
        t = [np.exp(a), np.sin(b), np.cos(c), d * d, a * b, c - d]
        return sum(x * y for x in t for y in t)

    x = np.linspace(0, 1, 1 << 20, dtype=np.float32)
    c = many.get_compiled_op(x, x, x, x)
    for i, k in enumerate(c.kernels()):
        p = parse_tile_program(c.tile_program(i))
        per_elem = sum(r.itemsize for r in p.registers if r.kind == "tile" or r.kind.startswith("load"))
        assert k["tile_elems"] * per_elem <= UB
    np.testing.assert_allclose(many(x, x, x, x), _many_ref(x), rtol=1e-4)


def _many_ref(x):
    x = x.astype(np.float64)
    t = [np.exp(x), np.sin(x), np.cos(x), x * x, x * x, x - x]
    return sum(a * b for a in t for b in t)


def test_row_longer_than_the_unified_buffer_is_an_error_at_the_users_line():
    @pyasc.operator(device_type="npu")
    def normalize(x):
        return x / x.sum(axis=-1, keepdims=True)  # the line the error names

    x = np.ones((2, 200_000), np.float32)
    with pytest.raises(pyasc.OutOfMemoryError, match="Unified Buffer") as info:
        normalize(x)
    assert info.value.code // 100000 == 2
    assert info.value.filename == __file__
    # The same row fits when it is short enough.
    y = np.ones((4, 1000), np.float32)
    np.testing.assert_allclose(normalize(y), y / 1000.0)


def test_misaligned_device_view_raises_alignment_error_with_the_users_line():
    @pyasc.operator(device_type="npu")
    def double(x):
        return x * 2

    host = np.arange(64, dtype=np.float32)
    dev = pyasc.to_device(host)
    with pytest.raises(pyasc.AlignmentError) as info:
        double(dev[1:])  # 4 bytes past a 32-byte boundary
    line = info.value.__traceback__.tb_lineno
    assert info.value.code == 100001 and "100001" in str(info.value)
    assert info.value.filename == __file__ and info.value.lineno == line
    with pytest.raises(pyasc.AlignmentError):
        double.estimate(dev[3:])
    # 8 float32 = 32 bytes: aligned, runs, right answer.
    np.testing.assert_array_equal(np.asarray(double(dev[8:])), host[8:] * 2)
    # The CPU device has no such rule.
    cpu = pyasc.operator(lambda x: x * 2)
    np.testing.assert_array_equal(np.asarray(cpu(dev[1:])), host[1:] * 2)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.float64])
@pytest.mark.parametrize("shape", [(1,), (3, 5), (1000,), (7, 9, 11)])
def test_device_arrays_are_128_byte_aligned(shape, dtype):
    arrays = [pyasc.DeviceArray(shape, dtype, alignment=128) for _ in range(4)]
    assert all(a.data_ptr_int % 128 == 0 and a.alignment == 128 for a in arrays)
    default = pyasc.DeviceArray(shape, dtype)
    assert default.data_ptr_int % 128 == 0
    big = pyasc.DeviceArray(shape, dtype, alignment=4096)
    assert big.data_ptr_int % 4096 == 0


def test_info_device_npu_prints_the_modelled_device(capsys):
    from pyasc.cli import main

    assert main(["info", "--device", "npu"]) == 0
    out = capsys.readouterr().out
    assert "npu twin" in out and "host CPU (" not in out  # the npu row only
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in out.splitlines() if line.startswith("| ")]
    table = {c[0]: c[1] for c in cells if len(c) == 2}
    assert table["vector cores (AIV, block_dim limit)"] == "48"
    assert table["Unified Buffer per vector core"] == "192 KiB"
    assert table["L1 buffer per cube core"] == "512 KiB"
    assert table["L0A / L0B / L0C"] == "64 KiB / 64 KiB / 128 KiB"
    assert table["HBM"].startswith("64 GiB, 1.60 TB/s") and table["clock"] == "1.80 GHz"
    # 256-byte repeats: 64 float32, 128 float16 elements per cycle per op; chip: x 1.8 GHz x 48.
    assert table["vector float32"].startswith("64 elem/cycle/op per core (5.53 Tops/s chip)")
    assert table["vector float16 / bfloat16"].startswith("128 elem/cycle/op")
    assert table["cube peak float16"].startswith(f"{2 * 4096 * 24 * 1.8e9 / 1e12:.1f} TFLOP/s")
    assert table["alignment"] == "GM transfers 32 B, allocations 128 B"


def test_profile_trace_has_the_npu_model_tracks(tmp_path):
    @pyasc.operator(device_type="npu")
    def scale(x):
        return np.exp(x) * 3.0

    x = np.ones(CORES * 2 * 8192, np.float32)
    scale(x)
    with pyasc.profile() as prof:
        scale(x)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    names = {e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == "thread_name"}
    assert {"NPU model core 0: MTE2", "NPU model core 0: Vector", "NPU model core 0: MTE3"} <= names
    model = [e for e in trace["traceEvents"] if e.get("cat") == "npu_model"]
    assert model and all(e["ph"] == "X" and e["dur"] >= 0 for e in model)
    est = scale.estimate(x).kernels[0]
    core0 = [e for e in model if e["tid"] < 3]
    span = max(e["ts"] + e["dur"] for e in core0) - min(e["ts"] for e in core0)
    assert span == pytest.approx(est.time_s * 1e6, rel=1e-6)
    # A CPU operator adds no model tracks.
    with pyasc.profile() as cpu_prof:
        pyasc.operator(lambda v: v + 1)(x)
    assert not [e for e in cpu_prof.chrome_trace()["traceEvents"] if e.get("cat") == "npu_model"]


def test_readme_validation_figures_come_from_the_example():
    import importlib.util
    import pathlib

    root = pathlib.Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location("npu_estimate", root / "examples" / "npu_estimate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rows = mod.main(["--tiles", "4", "64"])
    readme = (root / "README.md").read_text()
    for r in rows:
        assert f"{r['model_us']:.3f} us" in readme and f"{r['roofline_us']:.3f} us" in readme
        assert (r["bound"] == "mte2") == (r["op"] == "x + y")
    for r in rows[:2]:  # the double-buffering example's serialized figures
        assert f"{r['serial_us']:.3f} us" in readme
    assert abs(rows[0]["diff"]) < 0.01 and abs(rows[2]["diff"]) < 0.001


def test_npu_device_array_copies_must_be_32_byte_aligned():
    host = np.arange(64, dtype=np.float32)
    dev = pyasc.DeviceArray((64,), np.float32, alignment=128, device="npu")
    assert dev.device == "npu-twin" and dev.data_ptr_int % 128 == 0
    dev.copy_from(host)
    with pytest.raises(pyasc.AlignmentError) as info:
        dev[1:].copy_from(host[1:])  # 4 bytes past a 32-byte boundary
    line = info.value.__traceback__.tb_lineno
    assert info.value.code == 100001 and "ERROR 100001" in str(info.value)
    assert info.value.filename == __file__ and info.value.lineno == line
    out = np.zeros(62, np.float32)
    with pytest.raises(pyasc.AlignmentError, match="copy_to"):
        dev[2:].copy_to(out)
    assert not out.any()  # nothing was copied
    # 8 float32 = 32 bytes: aligned transfers work and move the right values.
    dev[8:].copy_from(host[8:] * 10)
    dev[8:].copy_to(out[:56])
    np.testing.assert_array_equal(out[:56], host[8:] * 10)
    np.testing.assert_array_equal(dev.numpy()[:8], host[:8])
    # An NPU operator reads it; a CPU DeviceArray view has no such rule.
    double = pyasc.operator(lambda x: x * 2, device_type="npu")
    np.testing.assert_array_equal(np.asarray(double(dev[16:])), host[16:] * 20)
    cpu = pyasc.DeviceArray((64,), np.float32)
    cpu[1:].copy_from(host[1:])
    np.testing.assert_array_equal(cpu.numpy()[1:], host[1:])


def test_npu_device_array_options_are_checked():
    with pytest.raises(pyasc.AlignmentError, match="at least 32"):
        pyasc.DeviceArray((4,), np.float32, alignment=16, device="npu")
    with pytest.raises(pyasc.InvalidArgumentError):
        pyasc.DeviceArray((4,), np.float32, device="gpu")
    a = pyasc.DeviceArray((3, 5), np.float16, alignment=256, device="NPU")
    assert a.device == "npu-twin" and a.data_ptr_int % 256 == 0 and a.alignment == 256


def test_to_device_empty_and_zeros_place_arrays_on_the_npu():
    host = np.arange(40, dtype=np.float32)
    a = pyasc.to_device(host, device="npu")
    b = pyasc.empty((40,), np.float32, device="npu")
    z = pyasc.zeros((40,), np.float32, device="npu")
    assert {a.device, b.device, z.device} == {"npu-twin"}
    assert all(x.data_ptr_int % 128 == 0 for x in (a, b, z))
    np.testing.assert_array_equal(a.numpy(), host)
    np.testing.assert_array_equal(z.numpy(), np.zeros(40, np.float32))
    with pytest.raises(pyasc.AlignmentError):
        a[3:].copy_to(np.empty(37, np.float32))
    assert pyasc.to_device(host).device == "cpu" and pyasc.zeros((2,)).device == "cpu"
    with pytest.raises(pyasc.AlignmentError, match="at least 32"):
        pyasc.to_device(host, alignment=8, device="npu")
