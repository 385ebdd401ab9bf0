"""``kernel.estimate``: the NPU cost model (:mod:`pyasc.device.npu_cost`) applied to a traced kernel.

Every block's statements are walked with the launch's values (no data moves): copies in are
MTE2 traffic, copies out MTE3 traffic, each vector instruction over ``n`` elements of ``s``
bytes costs ``ceil(n * s / vector_bytes_per_cycle) * op_cost`` cycles. With double buffering
a block's iterations of its outermost loop overlap their transfers with computation, as in
:func:`pyasc.device.npu_cost.model_kernel`; blocks beyond the vector cores run in further waves.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ..device.npu_cost import Estimate, KernelEstimate, _bandwidth
from ..device.npu_twin import NPU_910B, NpuModel

_FOLD = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
         "floordiv": lambda a, b: a // b, "mod": lambda a, b: a % b, "min": min, "max": max}


def eval_expr(e: Any, env: Dict[str, Any]) -> int:
    """Return the value of a traced integer expression."""
    if isinstance(e, int):
        return e
    tag = e[0]
    if tag == "block":
        return env["block"]
    if tag == "block_num":
        return env["block_num"]
    if tag == "var":
        return env["vars"][e[1]]
    if tag == "arg":
        return env["args"][e[1]]
    return _FOLD[tag](eval_expr(e[1], env), eval_expr(e[2], env))


class _Walk:
    def __init__(self, regs: List[Any], model: NpuModel) -> None:
        self.regs, self.model = regs, model
        self.mte2 = self.mte3 = 0
        self.cycles = 0
        self.steps = 0
        self.max_len = 0

    def vec(self, op: str, reg: int, n: int) -> None:
        size = np.dtype(self.regs[reg][0]).itemsize
        self.cycles += math.ceil(n * size / self.model.vector_bytes_per_cycle) * self.model.op_cost(op)
        self.max_len = max(self.max_len, n)

    def run(self, body: List[Any], env: Dict[str, Any], depth: int) -> None:
        for s in body:
            tag = s[0]
            if tag == "copy":
                n = eval_expr(s[7], env) * np.dtype(self.regs[s[3]][0]).itemsize
                if s[1]:
                    self.mte2 += n
                else:
                    self.mte3 += n
            elif tag in ("unary", "binary"):
                self.vec(s[1], s[2], eval_expr(s[-2], env))
            elif tag in ("select", "cast", "copy_reg"):
                self.vec(tag, s[1], eval_expr(s[-2], env))
            elif tag == "reduce":
                self.vec(s[1], s[3], eval_expr(s[4], env) * eval_expr(s[5], env))
            elif tag == "row_op":
                self.vec(s[1], s[2], eval_expr(s[5], env) * eval_expr(s[6], env))
            elif tag == "broadcast":
                self.vec("copy", s[1], eval_expr(s[3], env) * eval_expr(s[4], env))
            elif tag == "loop":
                v = eval_expr(s[2], env)
                hi = eval_expr(s[3], env)
                while v < hi:
                    env["vars"][s[1]] = v
                    if depth == 0:
                        self.steps += 1
                    self.run(s[5], env, depth + 1)
                    v += s[4]


def estimate_kernel(kernel: Any, args: Tuple[Any, ...], block_dim: int, double_buffer: Optional[bool],
                    model: NpuModel = NPU_910B) -> Estimate:
    """Predict ``kernel[block_dim](*args)`` on ``model``."""
    t = kernel.trace(*args)
    ints = [int(a) for a in args if isinstance(a, (int, np.integer)) and not isinstance(a, (bool, np.bool_))]
    depth = 2 if (t.double_buffered if double_buffer is None else double_buffer) else 1
    cores = min(block_dim, model.vector_cores)
    bw = _bandwidth(model, cores)
    core_time = [0.0] * cores
    tot = _Walk(t.regs, model)
    for b in range(block_dim):
        w = _Walk(t.regs, model)
        w.run(t.body, {"block": b, "block_num": block_dim, "vars": {}, "args": ints}, 0)
        t2, t3, tv = w.mte2 / bw, w.mte3 / bw, w.cycles / model.clock_hz
        steps = max(w.steps, 1)
        if depth == 2:
            block_s = (t2 + tv + t3) / steps + (steps - 1) * max((t2 + t3) / steps, tv / steps)
        else:
            block_s = t2 + tv + t3
        core_time[b % cores] += block_s
        tot.mte2 += w.mte2
        tot.mte3 += w.mte3
        tot.cycles += w.cycles
        tot.steps += steps
        tot.max_len = max(tot.max_len, w.max_len)
    total = max(core_time)
    steps = max(tot.steps, 1)
    t2, t3, tv = tot.mte2 / bw / steps, tot.mte3 / bw / steps, tot.cycles / model.clock_hz / steps
    per_core = math.ceil(steps / cores)
    if depth == 2:
        bound = "vector" if tv >= t2 + t3 else ("mte2" if t2 >= t3 else "mte3")
    else:
        bound = max((("mte2", t2), ("vector", tv), ("mte3", t3)), key=lambda p: p[1])[0]
    busy = {p: (min(1.0, per_core * x / total) if total else 0.0) for p, x in (("mte2", t2), ("vector", tv),
                                                                                ("mte3", t3))}
    ke = KernelEstimate(kernel.__name__, tot.max_len, steps, block_dim, per_core, depth, t2, tv, t3, total, bound,
                        busy, t.ub_used, [f"{block_dim} blocks on {cores} vector cores (kernel language)"])
    return Estimate([ke], depth == 2, model)
