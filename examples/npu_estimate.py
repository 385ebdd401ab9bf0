"""Predicted NPU durations of a memory-bound and a vector-bound operator, against their rooflines.

Run ``python examples/npu_estimate.py``: for ``x + y`` and ``sin(x) + cos(x)`` over float32 inputs
it prints the cost model's prediction (``op.estimate``), double-buffered and serialized, and the
first-principles roofline from the modelled device's figures (README, "NPU twin").
"""

from __future__ import annotations

import argparse
from typing import Dict, List, Optional

import numpy as np
import pyasc
from pyasc.device.npu_twin import NPU_910B


@pyasc.operator(device_type="npu")
def add(x, y):
    """Memory-bound: 12 bytes moved per element, one vector op."""
    return x + y


@pyasc.operator(device_type="npu")
def sincos(x):
    """Vector-bound: 8 bytes moved per element, 33 vector cycles per 64 elements."""
    return np.sin(x) + np.cos(x)


def main(argv: Optional[List[str]] = None) -> List[Dict[str, float]]:
    """Print and return one row per (operator, size): model and roofline times in microseconds."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tiles", type=int, nargs="+", default=[4, 64], help="8192-element tiles per core")
    args = parser.parse_args(argv)
    m = NPU_910B
    rows = []
    for per_core in args.tiles:
        n = m.vector_cores * per_core * 8192
        x = np.ones(n, np.float32)
        # sin 16 + cos 16 + add 1 cycles per 256-byte repeat of 64 float32.
        vector_roof = n / 64 * 33 / (m.vector_cores * m.clock_hz)
        for name, op, op_args, roof in (("x + y", add, (x, x), 12 * n / m.hbm_bytes_per_s),
                                        ("sin(x) + cos(x)", sincos, (x,), max(vector_roof, 8 * n / m.hbm_bytes_per_s))):
            two, one = op.estimate(*op_args), op.estimate(*op_args, double_buffer=False)
            row = {"op": name, "n": n, "model_us": two.total_us, "serial_us": one.total_us,
                   "roofline_us": roof * 1e6, "diff": two.total_s / roof - 1, "bound": two.bound}
            rows.append(row)
            print(f"{name:16} n={n:>9}: model {two.total_us:9.3f} us (serialized {one.total_us:9.3f} us), "
                  f"roofline {roof * 1e6:9.3f} us, diff {row['diff']:+.2%}, bound {two.bound}")
    return rows


if __name__ == "__main__":
    main()
