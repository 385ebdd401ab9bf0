"""The modelled Ascend NPU behind ``device_type="npu"``: its figures and its transfer rules.

The NPU twin runs on the host's cores with the programming model of an Ascend 910B-class AI
Core. :data:`NPU_910B` holds the figures the twin enforces (the 192 KiB Unified Buffer that
tiles must fit, the 32-byte alignment of global-memory transfers, the core count that bounds
``block_dim``) and those the cost model of :mod:`pyasc.device.npu_cost` predicts durations from.
The README's "NPU twin" section names the source of every figure and marks the estimates.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Sequence

from .. import _hooks
from ..errors import AlignmentError, at_user_line

__all__ = ["NpuModel", "NPU_910B", "GM_ALIGN", "ALLOC_ALIGN", "check_transfers", "render_model"]

#: Bytes every transfer between global memory and a local buffer must be aligned to.
GM_ALIGN = 32
#: Bytes the NPU's device allocations are aligned to (``DeviceArray(..., alignment=128)``).
ALLOC_ALIGN = 128

KiB = 1024


@dataclass(frozen=True)
class NpuModel:
    """The figures of one modelled NPU (one AI Core's buffers, the chip's cores and memory).

    ``vector_bytes_per_cycle`` is the width of one vector repeat: an op over ``n`` elements of
    ``s`` bytes takes ``ceil(n * s / vector_bytes_per_cycle) * cost`` cycles, ``cost`` from
    ``op_cycles`` (1 for simple arithmetic, more for transcendental functions).
    """

    name: str
    vector_cores: int
    cube_cores: int
    ub_bytes: int
    l1_bytes: int
    l0a_bytes: int
    l0b_bytes: int
    l0c_bytes: int
    hbm_bytes: int
    hbm_bytes_per_s: float
    core_mte_bytes_per_cycle: int
    clock_hz: float
    vector_bytes_per_cycle: int
    cube_fp16_macs_per_cycle: int
    op_cycles: Dict[str, int] = field(default_factory=dict)

    def vector_elems_per_cycle(self, itemsize: int) -> float:
        """Elements of ``itemsize`` bytes one vector core processes per cycle in a simple op."""
        return self.vector_bytes_per_cycle / itemsize

    def op_cost(self, op: str) -> int:
        """Cycles per 256-byte repeat of vector op ``op`` (unknown ops cost as ``default``)."""
        return self.op_cycles.get(op, self.op_cycles["default"])

    @property
    def cube_fp16_flops(self) -> float:
        """Peak float16 matrix throughput of all cube cores, in FLOP/s."""
        return 2.0 * self.cube_fp16_macs_per_cycle * self.cube_cores * self.clock_hz

    @property
    def core_mte_bytes_per_s(self) -> float:
        """The most one core's transfer engine moves per second (before HBM sharing)."""
        return self.core_mte_bytes_per_cycle * self.clock_hz


#: Cycles per 256-byte vector repeat. Simple arithmetic, comparisons, selects and casts take
#: one; division and square root four; exponentials and logarithms eight; the functions built
#: from several of those (tanh, sigmoid, erf, gelu, trigonometry, powers) sixteen.
_OP_CYCLES: Dict[str, int] = {
    "default": 1,
    **{op: 1 for op in ("add", "sub", "mul", "max", "min", "maximum", "minimum", "neg", "abs", "copy", "cast",
                        "select", "eq", "ne", "lt", "le", "gt", "ge", "and", "or", "xor", "not", "relu",
                        "square", "sign", "floor", "ceil", "round", "trunc", "where", "fma", "clip")},
    **{op: 4 for op in ("div", "true_divide", "floor_divide", "mod", "remainder", "sqrt", "rsqrt",
                        "reciprocal", "recip")},
    **{op: 8 for op in ("exp", "exp2", "expm1", "log", "log2", "log10", "log1p")},
    **{op: 16 for op in ("tanh", "sigmoid", "erf", "erfc", "gelu", "sin", "cos", "tan", "asin", "acos", "atan",
                         "atan2", "sinh", "cosh", "asinh", "acosh", "atanh", "pow", "power", "softplus", "silu")},
    # A reduction repeat folds its 256 bytes into the running value: two cycles.
    **{f"reduce_{op}": 2 for op in ("sum", "max", "min", "prod", "any", "all", "argmax", "argmin")},
    **{f"scan_{op}": 4 for op in ("sum", "prod", "max", "min")},
}

#: An Ascend 910B-class chip (910B2 core counts). Sources and estimates: README, "NPU twin".
NPU_910B = NpuModel(
    name="Ascend 910B (modelled)",
    vector_cores=48,
    cube_cores=24,
    ub_bytes=192 * KiB,
    l1_bytes=512 * KiB,
    l0a_bytes=64 * KiB,
    l0b_bytes=64 * KiB,
    l0c_bytes=128 * KiB,
    hbm_bytes=64 * 1024**3,
    hbm_bytes_per_s=1.6e12,
    core_mte_bytes_per_cycle=128,
    clock_hz=1.8e9,
    vector_bytes_per_cycle=256,
    cube_fp16_macs_per_cycle=4096,
    op_cycles=_OP_CYCLES,
)


def _data_address(a: Any) -> Any:
    """Return the address of a DeviceArray's first element, or ``None`` for anything else."""
    from .. import _pyasc

    if isinstance(a, _pyasc.DeviceArray):
        return a.data_ptr_int
    return None


def check_transfers(args: Sequence[Any]) -> None:
    """Raise :class:`pyasc.AlignmentError` for a DeviceArray argument off a 32-byte boundary.

    The error (code 100001) names the user's line: each DeviceArray argument of an NPU-twin
    operator must start at a 32-byte aligned address.

    Global-memory transfers of an AI Core (MTE2 loads, MTE3 stores) move 32-byte blocks; a view
    such as ``dev[1:]`` of a float32 DeviceArray starts 4 bytes into one. NumPy arguments are
    copied into aligned device memory first, as the NPU's runtime does, and are not checked.
    """
    for i, a in enumerate(args):
        addr = _data_address(a)
        if addr is not None and addr % GM_ALIGN:
            raise at_user_line(AlignmentError(
                f"argument {i} of an NPU operator is a DeviceArray starting {addr % GM_ALIGN} bytes past a "
                f"{GM_ALIGN}-byte boundary (ERROR 100001): global-memory transfers of an AI Core must be "
                f"{GM_ALIGN}-byte aligned; pass a copy (pyasc.to_device(np.asarray(view))) or a view whose byte "
                f"offset is a multiple of {GM_ALIGN}"))


def _fmt_bytes(n: int) -> str:
    for unit, size in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} B"


def model_rows(model: NpuModel = NPU_910B) -> List[List[str]]:
    """Return the modelled device as (figure, value) rows, as ``pyasc info --device npu`` prints them."""
    rows = [
        ["device", model.name],
        ["vector cores (AIV, block_dim limit)", str(model.vector_cores)],
        ["cube cores (AIC)", str(model.cube_cores)],
        ["Unified Buffer per vector core", _fmt_bytes(model.ub_bytes)],
        ["L1 buffer per cube core", _fmt_bytes(model.l1_bytes)],
        ["L0A / L0B / L0C", f"{_fmt_bytes(model.l0a_bytes)} / {_fmt_bytes(model.l0b_bytes)} / "
                            f"{_fmt_bytes(model.l0c_bytes)}"],
        ["HBM", f"{_fmt_bytes(model.hbm_bytes)}, {model.hbm_bytes_per_s / 1e12:.2f} TB/s (shared by all cores)"],
        ["per-core MTE2/MTE3 limit", f"{model.core_mte_bytes_per_cycle} B/cycle "
                                     f"({model.core_mte_bytes_per_s / 1e9:.0f} GB/s)"],
        ["clock", f"{model.clock_hz / 1e9:.2f} GHz"],
    ]
    for dtype, size in (("float32", 4), ("float16 / bfloat16", 2), ("int8", 1), ("int32", 4)):
        per_cycle = model.vector_elems_per_cycle(size)
        rows.append([f"vector {dtype}", f"{per_cycle:.0f} elem/cycle/op per core "
                                        f"({per_cycle * model.clock_hz * model.vector_cores / 1e12:.2f} Tops/s chip)"])
    rows.append(["vector op costs (cycles/repeat)", "add/mul/cmp 1, div/sqrt 4, exp/log 8, tanh/erf/sin 16, "
                                                    "reduce 2"])
    rows.append(["cube peak float16", f"{model.cube_fp16_flops / 1e12:.1f} TFLOP/s "
                                      f"({model.cube_fp16_macs_per_cycle} MAC/cycle/core)"])
    rows.append(["alignment", f"GM transfers {GM_ALIGN} B, allocations {ALLOC_ALIGN} B"])
    return rows


def render_model(model: NpuModel = NPU_910B) -> str:
    """Format the modelled device as a boxed two-column table."""
    rows = model_rows(model)
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    rule = f"+-{'-' * w0}-+-{'-' * w1}-+"
    lines = [rule, f"| {'NPU twin: modelled device'.ljust(w0 + w1 + 3)} |", rule]
    lines += [f"| {a.ljust(w0)} | {b.ljust(w1)} |" for a, b in rows]
    lines.append(rule)
    lines.append("Sources and estimates: README, section 'NPU twin: limits and cost model'.")
    return "\n".join(lines)


_hooks.register("check_transfers", check_transfers)
