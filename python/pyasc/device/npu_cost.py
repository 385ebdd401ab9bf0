"""The cost model of the NPU twin: predicted durations of tile programs on the modelled Ascend NPU.

Each kernel of an operator compiled for ``device_type="npu"`` is a tile program: per block
(one AI vector core), tiles stream through three pipelines, as in Ascend C's
CopyIn -> Compute -> CopyOut paradigm:

* **MTE2** loads a tile's inputs from global memory (HBM) into the Unified Buffer;
* **Vector** runs the tile's instructions (``ceil(elements * itemsize / 256)`` repeats per
  instruction, each costing :meth:`NpuModel.op_cost` cycles);
* **MTE3** stores the tile's outputs back to global memory.

The HBM bandwidth is shared by the active cores (each also capped by its own transfer engine), and
MTE2 and MTE3 of one core share that core's share, so a tile's memory time is ``t_mte2 + t_mte3``.
With queue depth 2 (double buffering) the stages of consecutive tiles overlap: a core's time for
``n`` tiles is ``t_mte2 + t_vec + t_mte3 + (n - 1) * max(t_mte2 + t_mte3, t_vec)``; with depth 1
they serialize: ``n * (t_mte2 + t_vec + t_mte3)``. Double buffering needs room for two copies of
the input and output tiles: when they do not fit the Unified Buffer, the model shrinks the tile
(or, for one row that cannot be halved, falls back to depth 1), so no modelled plan exceeds it.

:func:`estimate` (``op.estimate(*args)``) models every kernel of an operator;
:func:`trace_events` adds the modelled timeline to a profile's Chrome trace.
The model takes :class:`TileProgram` values, parsed here from the compiler's text form.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from ..errors import InvalidArgumentError
from .npu_twin import NPU_910B, NpuModel

__all__ = ["TileProgram", "Instruction", "parse_tile_program", "KernelEstimate", "Estimate",
           "model_kernel", "estimate", "trace_events"]

_ITEMSIZE = {"bool": 1, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "float16": 2, "bfloat16": 2,
             "int32": 4, "uint32": 4, "float32": 4, "int64": 8, "uint64": 8, "float64": 8}


def _itemsize(dtype: str) -> int:
    if dtype in _ITEMSIZE:
        return _ITEMSIZE[dtype]
    import numpy as np

    return int(np.dtype(dtype).itemsize)


@dataclass
class Register:
    """A register of a tile program.

    Holds its element size, its storage (``tile``, ``scalar``, ``load bN``, ``store bN``) and
    whether it holds one value per row.
    """

    itemsize: int
    kind: str
    per_row: bool = False


@dataclass
class Instruction:
    """One vector instruction: the ops it applies (two for a chained pair) and its registers."""

    ops: List[str]
    dst: int
    srcs: List[int]


@dataclass
class TileProgram:
    """What the cost model needs of a kernel: its iteration space, tile, registers and program.

    ``buffer_bytes`` maps each argument and output buffer (``"b3"``) to its size in bytes when
    known; without it, loads and stores are sized from the registers' element sizes.
    """

    name: str
    args: List[str]
    outs: List[str]
    shape: Tuple[int, ...]
    row_len: int
    tile_elems: int
    registers: List[Register] = field(default_factory=list)
    instructions: List[Instruction] = field(default_factory=list)
    library: Optional[str] = None
    buffer_bytes: Dict[str, int] = field(default_factory=dict)

    @property
    def numel(self) -> int:
        """Elements of the iteration space."""
        return math.prod(self.shape)


_HEADER = re.compile(r"kernel (\S+)\(([^)]*)\) -> \(([^)]*)\) over \(([^)]*)\)(?: rows of (\d+))?(?: calls (.*?))?"
                     r" tile=(\d+) fused_ops=\d+")
_REG = re.compile(r"\s+r(\d+): (\S+) (tile|scalar .*?|load b\d+|store b\d+)(?: \((per row|level \d+)\))?$")
_INSTR = re.compile(r"\s+r(\d+) = (?!load )(.*)$")
_OP = re.compile(r"([a-z_][a-z_0-9]*)(?:<[^>]*>)?\(")


def parse_tile_program(text: str) -> TileProgram:
    """Parse a kernel's tile program (``CompiledOp.tile_program(i)``) into a :class:`TileProgram`."""
    lines = text.splitlines()
    m = _HEADER.match(lines[0]) if lines else None
    if m is None:
        raise InvalidArgumentError(f"not a tile program: {lines[0] if lines else text!r}")
    name, args, outs, shape, rows, lib, tile = m.groups()
    prog = TileProgram(
        name=name, args=[a.strip() for a in args.split(",") if a.strip()],
        outs=[o.strip() for o in outs.split(",") if o.strip()],
        shape=tuple(int(d) for d in shape.split(",") if d.strip()), row_len=int(rows or 0),
        tile_elems=int(tile), library=lib)
    for line in lines[1:]:
        r = _REG.match(line)
        if r:
            prog.registers.append(Register(_itemsize(r.group(2)), r.group(3), r.group(4) == "per row"))
            continue
        i = _INSTR.match(line)
        if i:
            ops = [o for o in _OP.findall(i.group(2))]
            srcs = [int(s) for s in re.findall(r"\br(\d+)\b", i.group(2))]
            if ops:
                prog.instructions.append(Instruction(ops, int(i.group(1)), srcs))
    return prog


@dataclass
class KernelEstimate:
    """The modelled run of one kernel: per-tile stage times (seconds), tiles, blocks and result."""

    name: str
    tile_elems: int
    tiles: int
    blocks: int
    tiles_per_core: int
    depth: int
    t_mte2: float
    t_vector: float
    t_mte3: float
    time_s: float
    bound: str
    busy: Dict[str, float]
    ub_bytes: int
    notes: List[str] = field(default_factory=list)

    def timeline(self, max_tiles: int = 64) -> List[Tuple[str, int, float, float]]:
        """``(pipe, tile, start_s, end_s)`` of one core's first ``max_tiles`` tiles."""
        out: List[Tuple[str, int, float, float]] = []
        n = min(self.tiles_per_core, max_tiles)
        if self.depth == 1:
            t = 0.0
            for i in range(n):
                for pipe, d in (("MTE2", self.t_mte2), ("Vector", self.t_vector), ("MTE3", self.t_mte3)):
                    out.append((pipe, i, t, t + d))
                    t += d
            return out
        mem = self.t_mte2 + self.t_mte3
        step = max(mem, self.t_vector)
        for i in range(n):
            # Tile i loads one steady step after tile i-1, computes once loaded and stores once
            # computed; a step is long enough for both memory engines and for the vector unit.
            load = i * step
            comp = load + self.t_mte2
            store = comp + self.t_vector
            out += [("MTE2", i, load, comp), ("Vector", i, comp, store), ("MTE3", i, store, store + self.t_mte3)]
        return out


def _bandwidth(model: NpuModel, blocks: int) -> float:
    return min(model.hbm_bytes_per_s / max(blocks, 1), model.core_mte_bytes_per_s)


def _vector_cycles(prog: TileProgram, tile: int, model: NpuModel) -> int:
    rows = tile // prog.row_len if prog.row_len else tile
    regs = prog.registers
    cycles = 0
    for ins in prog.instructions:
        used = [regs[r] for r in [ins.dst, *ins.srcs] if r < len(regs)]
        if used and all(r.kind.startswith("scalar") for r in used):
            continue
        if regs[ins.dst].kind.startswith("scalar") if ins.dst < len(regs) else False:
            continue
        per_row = all(r.per_row or r.kind.startswith("scalar") for r in used)
        elems = rows if per_row else tile
        size = max((r.itemsize for r in used), default=4)
        repeats = math.ceil(elems * size / model.vector_bytes_per_cycle)
        cycles += repeats * sum(model.op_cost(op) for op in ins.ops)
    return cycles


def _per_elem_bytes(prog: TileProgram, names: List[str], kind: str) -> float:
    """Bytes moved per element of the iteration space for the buffers ``names``."""
    total = 0.0
    n = max(prog.numel, 1)
    for b in names:
        if b in prog.buffer_bytes:
            total += prog.buffer_bytes[b] / n
        else:
            sizes = [r.itemsize for r in prog.registers if r.kind == f"{kind} {b}"]
            per_row = any(r.per_row for r in prog.registers if r.kind == f"{kind} {b}")
            size = sizes[0] if sizes else 4
            total += size / prog.row_len if per_row and prog.row_len else size
    return total


def model_kernel(prog: TileProgram, model: NpuModel = NPU_910B, double_buffer: bool = True) -> KernelEstimate:
    """Predict one kernel's duration on ``model`` (see the module docstring for the formulas)."""
    numel = max(prog.numel, 1)
    load_pe = _per_elem_bytes(prog, prog.args, "load")
    store_pe = _per_elem_bytes(prog, prog.outs, "store")
    temp_pe = sum(r.itemsize / (prog.row_len if r.per_row and prog.row_len else 1)
                  for r in prog.registers if r.kind == "tile")
    depth = 2 if double_buffer else 1
    tile = max(1, min(prog.tile_elems, numel))
    notes: List[str] = []

    def ub(t: int, d: int) -> int:
        return math.ceil(t * (d * (load_pe + store_pe) + temp_pe))

    if ub(tile, depth) > model.ub_bytes:
        unit = prog.row_len if prog.row_len else 1
        fit = int(model.ub_bytes // (depth * (load_pe + store_pe) + temp_pe)) // unit * unit
        if not prog.row_len and fit >= 256:
            fit = fit // 256 * 256
        if fit >= max(unit, 1):
            notes.append(f"tile shrunk from {tile} to {fit} elements to fit the Unified Buffer at queue depth {depth}")
            tile = fit
        elif depth == 2:
            notes.append("one row does not fit twice in the Unified Buffer: single-buffered")
            depth = 1
    tiles = math.ceil(numel / tile)
    blocks = min(tiles, model.vector_cores)
    per_core = math.ceil(tiles / blocks)
    bw = _bandwidth(model, blocks)
    t2 = load_pe * tile / bw
    t3 = store_pe * tile / bw
    tv = _vector_cycles(prog, tile, model) / model.clock_hz
    if prog.library:
        notes.append(f"library routine ({prog.library}): modelled by its memory traffic only")
    if depth == 2:
        total = t2 + tv + t3 + (per_core - 1) * max(t2 + t3, tv)
        bound = "vector" if tv >= t2 + t3 else ("mte2" if t2 >= t3 else "mte3")
    else:
        total = per_core * (t2 + tv + t3)
        bound = max((("mte2", t2), ("vector", tv), ("mte3", t3)), key=lambda p: p[1])[0]
    busy = {p: (per_core * t / total if total else 0.0) for p, t in (("mte2", t2), ("vector", tv), ("mte3", t3))}
    return KernelEstimate(prog.name, tile, tiles, blocks, per_core, depth, t2, tv, t3, total, bound, busy,
                          ub(tile, depth), notes)


@dataclass
class Estimate:
    """The predicted run of an operator on the modelled NPU: per-kernel estimates and their sum."""

    kernels: List[KernelEstimate]
    double_buffer: bool
    model: NpuModel = NPU_910B

    @property
    def total_s(self) -> float:
        """Predicted duration of the whole operator, in seconds (kernels run one after another)."""
        return sum(k.time_s for k in self.kernels)

    @property
    def total_us(self) -> float:
        """Predicted duration in microseconds."""
        return self.total_s * 1e6

    @property
    def bound(self) -> str:
        """The bound unit of the longest kernel (``"mte2"``, ``"vector"`` or ``"mte3"``)."""
        return max(self.kernels, key=lambda k: k.time_s).bound if self.kernels else "none"

    def table(self) -> str:
        """Format the estimate as a small text table, one row per kernel."""
        head = ["kernel", "time us", "bound", "MTE2", "Vector", "MTE3", "tiles x elems", "blocks", "depth"]
        rows = [[k.name, f"{k.time_s * 1e6:.3f}", k.bound, f"{k.busy['mte2']:.0%}", f"{k.busy['vector']:.0%}",
                 f"{k.busy['mte3']:.0%}", f"{k.tiles} x {k.tile_elems}", str(k.blocks), str(k.depth)]
                for k in self.kernels]
        widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(head)]
        fmt = "  ".join(f"{{:<{w}}}" for w in widths)
        mode = "double-buffered" if self.double_buffer else "serialized (depth 1)"
        lines = [f"{self.model.name}, {mode}: predicted {self.total_us:.3f} us", fmt.format(*head).rstrip()]
        lines += [fmt.format(*r).rstrip() for r in rows]
        lines += [f"  note ({k.name}): {n}" for k in self.kernels for n in k.notes]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()

    def __repr__(self) -> str:
        return f"Estimate(total_us={self.total_us:.3f}, bound={self.bound!r}, kernels={len(self.kernels)})"


def programs_of(compiled: Any) -> List[TileProgram]:
    """Return the tile programs of a ``CompiledOp``, with their buffers' sizes."""
    sizes = {m["name"]: int(m["bytes"]) for m in compiled.memory_usage()}
    out = []
    for i in range(len(compiled.kernels())):
        prog = parse_tile_program(compiled.tile_program(i))
        prog.buffer_bytes = {b: sizes[b] for b in prog.args + prog.outs if b in sizes}
        out.append(prog)
    return out


def estimate(op: Any, *args: Any, double_buffer: bool = True, model: NpuModel = NPU_910B) -> Estimate:
    """Predict the duration of ``op(*args)`` on the modelled NPU (``op.estimate(*args)``).

    ``op`` must be declared with ``device_type="npu"``. Compiles (or fetches) the plan without
    running it; ``double_buffer=False`` models queue depth 1 (the serialized timeline).
    Raises :class:`pyasc.AlignmentError` for DeviceArray arguments the NPU could not load.
    """
    if not isinstance(double_buffer, bool):
        raise InvalidArgumentError(f"double_buffer must be True or False, not {double_buffer!r}")
    from .npu_twin import check_transfers

    check_transfers(args)
    compiled = op.get_compiled_op(*args)
    if compiled.device != "npu-twin":
        raise InvalidArgumentError(f"estimate models the NPU twin; operator {getattr(op, '__name__', op)!r} runs "
                                   f"on the {compiled.device} device (declare it with device_type='npu')")
    return Estimate([model_kernel(p, model, double_buffer) for p in programs_of(compiled)], double_buffer, model)


#: Chrome-trace process id of the modelled NPU's tracks.
NPU_MODEL_PID = 4
_PIPES = ("MTE2", "Vector", "MTE3")


def trace_events(prof: Any, cores: int = 2, model: NpuModel = NPU_910B) -> List[Dict[str, Any]]:
    """Chrome trace events of the modelled timeline of every kernel the profile ran on the twin.

    Each kernel's modelled pipelines start where its host run started; tracks are named
    ``NPU model core N: MTE2`` / ``Vector`` / ``MTE3`` for the first ``cores`` cores (all cores
    run the same timeline).
    """
    launches = {e["counters"].get("id"): e for e in prof.events
                if e["kind"] == "launch" and e["labels"].get("device") == "npu-twin"}
    if not launches:
        return []
    t0 = min(e["start_ns"] for e in prof.events)
    programs: Dict[str, TileProgram] = {}
    for e in launches.values():
        for text in e["labels"].get("tile_programs", "").split("\n\x1e"):
            if text.strip():
                p = parse_tile_program(text.strip("\n"))
                programs.setdefault(p.name, p)
    out: List[Dict[str, Any]] = [{"ph": "M", "pid": NPU_MODEL_PID, "name": "process_name",
                                  "args": {"name": "NPU model (predicted)"}},
                                 {"ph": "M", "pid": NPU_MODEL_PID, "name": "process_sort_index",
                                  "args": {"sort_index": 3}}]
    used = set()
    for k in prof.events:
        if k["kind"] != "kernel" or k["counters"].get("launch") not in launches or k["name"] not in programs:
            continue
        prog = programs[k["name"]]
        c = k["counters"]
        n = max(prog.numel, 1)
        prog.buffer_bytes = {}
        if c.get("bytes_read") is not None and prog.args:
            prog.buffer_bytes.update({b: c["bytes_read"] // len(prog.args) for b in prog.args})
        if c.get("bytes_written") is not None and prog.outs:
            prog.buffer_bytes.update({b: c["bytes_written"] // len(prog.outs) for b in prog.outs})
        est = model_kernel(prog, model)
        start = (k["start_ns"] - t0) / 1e3
        for core in range(min(cores, est.blocks)):
            for pipe, tile, s, e in est.timeline():
                tid = core * 3 + _PIPES.index(pipe)
                used.add((core, pipe, tid))
                out.append({"name": f"{prog.name} tile {tile}", "cat": "npu_model", "ph": "X", "pid": NPU_MODEL_PID,
                            "tid": tid, "ts": start + s * 1e6, "dur": (e - s) * 1e6,
                            "args": {"kernel": prog.name, "bound": est.bound, "predicted_us": est.time_s * 1e6,
                                     "elements": n, "tile_elems": est.tile_elems}})
    for core, pipe, tid in sorted(used):
        out.append({"ph": "M", "pid": NPU_MODEL_PID, "tid": tid, "name": "thread_name",
                    "args": {"name": f"NPU model core {core}: {pipe}"}})
    return out
