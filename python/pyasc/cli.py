"""The ``pyasc`` command: ``pyasc demo``, ``pyasc bench``, ``pyasc info``, ``pyasc doctor``."""

from __future__ import annotations

import argparse
import sys
from typing import List, Optional


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point of the ``pyasc`` console script."""
    parser = argparse.ArgumentParser(prog="pyasc", description="pyasc operator development kit")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run the article's GELU and normalize operators and check them")
    demo.add_argument("--size", type=int, default=1 << 22, help="number of float32 elements")
    bench = sub.add_parser("bench", help="benchmark against NumPy, numexpr, Numba and JAX where installed")
    bench.add_argument("--quick", action="store_true", help="small sizes and few repeats (a smoke test)")
    bench.add_argument("--only", action="append", default=None, help="run only the named benchmark (repeatable)")
    sub.add_parser("info", help="show the devices pyasc can run on (like npu-smi info)")
    sub.add_parser("doctor", help="check the environment and print a fix for each problem")
    args = parser.parse_args(argv)
    if args.command == "demo":
        from .demo import run

        return run(args.size)
    if args.command == "bench":
        from .bench import run as run_bench

        return run_bench(quick=args.quick, only=args.only)
    if args.command == "doctor":
        from .doctor import run as run_doctor

        return run_doctor()
    from .info import run as run_info

    return run_info()


if __name__ == "__main__":
    sys.exit(main())
