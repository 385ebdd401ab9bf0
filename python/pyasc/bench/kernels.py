"""``pyasc bench`` entry ``kernels``: the kernel-language examples against ``@pyasc.operator``.

Each of ``examples/kernels`` (add with double buffering, GELU, row softmax, row normalize)
is timed against the ``@pyasc.operator`` version of the same function in the same run (their calls
alternating), on
the same inputs; results are checked to agree first. The kernels write into preallocated
outputs (global memory), the operators return new arrays, as each is normally called. The
examples are loaded from the source tree: ``PYASC_EXAMPLES`` or an ``examples`` folder above
the working directory or this package.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import ModuleType
from typing import Any, List, Optional, Tuple

import numpy as np

import pyasc

from ..tools._timing import best_times_alternating

Row = Tuple[str, str, float]

#: Rounds of alternating calls each pair is timed over, at least.
ALTERNATING_ROUNDS = 25


def examples_dir() -> Optional[Path]:
    """Return the ``examples/kernels`` folder of the source tree, if one is found."""
    env = os.environ.get("PYASC_EXAMPLES")
    starts = [Path(env)] if env else []
    starts += [Path.cwd(), Path(__file__).resolve().parent]
    for s in starts:
        for d in [s, *s.parents]:
            cand = d / "kernels" if d.name == "examples" else d / "examples" / "kernels"
            if (cand / "add.py").is_file():
                return cand
    return None


def load(name: str) -> ModuleType:
    """Import the example ``examples/kernels/<name>.py``."""
    d = examples_dir()
    if d is None:
        raise FileNotFoundError("examples/kernels not found; run from a pyasc source tree or set PYASC_EXAMPLES")
    spec = importlib.util.spec_from_file_location(f"pyasc_example_kernel_{name}", d / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _pair(title: str, kern: Any, op: Any, repeat: int) -> Tuple[str, List[Row]]:
    # Calls taken in turn: the two lie within a few percent of each other, closer than a
    # shared machine's drift between two separate timing loops.
    tk, to = best_times_alternating([kern, op], max(repeat, ALTERNATING_ROUNDS))
    return title, [("kernel", "@pyasc.kernel", tk), ("operator", "@pyasc.operator", to)]


def bench_kernels(quick: bool, repeat: int, block_dim: int) -> List[Tuple[str, List[Row], float]]:
    """Time each example kernel and its operator; returns (title, rows, max |difference|)."""
    rng = np.random.default_rng(7)
    out = []
    n = 1 << 20 if quick else 1 << 24
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    z = np.empty_like(x)
    add = load("add").add_custom
    op_add = pyasc.operator(lambda a, b: a + b)
    add[block_dim](x, y, z, n)
    diff = float(np.max(np.abs(z - op_add(x, y))))
    out.append((*_pair(f"add (double-buffered): {n:,} float32", lambda: add[block_dim](x, y, z, n),
                       lambda: op_add(x, y), repeat), diff))
    gelu = load("gelu").gelu
    op_gelu = pyasc.operator(lambda v: v * 0.5 * (1.0 + pyasc.erf(v / 1.41421)))
    gelu[block_dim](x, z, n)
    diff = float(np.max(np.abs(z - op_gelu(x))))
    out.append((*_pair(f"gelu: {n:,} float32", lambda: gelu[block_dim](x, z, n), lambda: op_gelu(x), repeat), diff))
    rows, cols = (1024, 1024) if quick else (16384, 1024)
    m = rng.standard_normal((rows, cols), dtype=np.float32)
    mo = np.empty_like(m)
    sm = load("softmax").make_softmax(cols)
    op_sm = pyasc.operator(lambda v: pyasc.softmax(v, -1))
    sm[block_dim](m, mo, rows)
    diff = float(np.max(np.abs(mo - op_sm(m))))
    out.append((*_pair(f"softmax rows: {rows}x{cols} float32", lambda: sm[block_dim](m, mo, rows),
                       lambda: op_sm(m), repeat), diff))
    nm = load("normalize").make_normalize(cols)
    op_nm = pyasc.operator(lambda v: pyasc.layer_norm(v))
    nm[block_dim](m, mo, rows)
    diff = float(np.max(np.abs(mo - op_nm(m))))
    out.append((*_pair(f"normalize rows: {rows}x{cols} float32", lambda: nm[block_dim](m, mo, rows),
                       lambda: op_nm(m), repeat), diff))
    return out


def run_entries(want: set, quick: bool, repeat: int, summary: List[str]) -> None:
    """Run the ``kernels`` entry, adding one summary line."""
    from . import _report

    if "kernels" not in want:
        return
    block_dim = 4 * (os.cpu_count() or 1)
    parts = []
    for title, rows, diff in bench_kernels(quick, repeat, block_dim):
        t = _report(f"{title}, block_dim {block_dim} (max |kernel - operator| {diff:.1e})", rows)
        parts.append(f"{title.split(':')[0].split(' (')[0]} {t['operator'] / t['kernel']:.2f}x")
    summary.append("kernels: kernel-language speed vs @pyasc.operator: " + ", ".join(parts) + " (target >= 0.9x)")
