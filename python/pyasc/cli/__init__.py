"""The ``pyasc`` command: ``demo``, ``bench``, ``info``, ``doctor``, ``prof``, ``onnx`` and ``debug serve``."""

from __future__ import annotations

import argparse
import sys
from typing import List, Optional

#: The benchmarks ``pyasc bench --only`` can name.
BENCHMARKS = ("gelu", "normalize", "first_call", "cached_call", "launch", "copy_from", "softmax", "layer_norm",
              "column_sum", "column_var", "column_max", "matmul", "matmul_large", "matmul_bf16", "dynamic", "long_row",
              "cumsum_rows",
              "cumsum_cols", "cumsum_fused", "sort", "topk", "einsum", "einsum_batched", "profiler", "half_elementwise",
              "bert_gelu", "matmul_policy", "conv2d", "sr_inference", "attention", "attention_long",
              "attention_causal", "graph_mode", "pipeline", "nms", "yolo_postprocess",
              "stencil", "stencil_steps", "stencil_3d", "mandelbrot", "piecewise", "kernels", "grad_transformer",
              "grad_attention", "grad_layer_norm", "grad_compile", "onnx", "conv_layers")


def _positive_int(text: str) -> int:
    """Parse a whole number of at least 1 (an argparse type)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not a positive number")
    if value >= sys.maxsize // 8:
        raise argparse.ArgumentTypeError(f"{value} elements are more than an array can address")
    return value


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point of the ``pyasc`` console script."""
    parser = argparse.ArgumentParser(prog="pyasc", description="pyasc operator development kit")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run the article's GELU and normalize operators and check them")
    demo.add_argument("--size", type=_positive_int, default=1 << 22, help="number of float32 elements")
    bench = sub.add_parser("bench", help="benchmark against NumPy, numexpr, Numba and JAX where installed")
    bench.add_argument("--quick", action="store_true", help="small sizes and few repeats (a smoke test)")
    bench.add_argument("--only", action="append", default=None, choices=BENCHMARKS,
                       help="run only the named benchmark (repeatable)")
    bench.add_argument("--roofs", action="store_true",
                       help="run only the memory-roof survey: each memory-bound workload's fraction of the measured "
                            "bandwidth, pyasc's from a profile, against its peer's")
    bench.add_argument("--dask", action="store_true",
                       help="run only the Dask entries on a local two-worker cluster (sizes: PYASC_BENCH_DASK_GIB, "
                            "PYASC_BENCH_DASK_GRID)")
    info = sub.add_parser("info", help="show the devices pyasc can run on (like npu-smi info)")
    info.add_argument("--peaks", action="store_true",
                      help="print the measured memory bandwidth and float32 FMA roofs (measured once, then cached)")
    info.add_argument("--refresh", action="store_true", help="with --peaks: measure again")
    info.add_argument("--device", choices=("cpu", "npu"), default=None,
                      help="show one device; npu adds the modelled Ascend NPU's figures (cores, buffers, bandwidth)")
    sub.add_parser("doctor", help="check the environment and print a fix for each problem")
    debug = sub.add_parser("debug", help="the operator debugger").add_subparsers(dest="debug_command", required=True)
    serve = debug.add_parser("serve", help="serve the intermediate results of debug=True operators on 127.0.0.1",
                             description="Start the debug page on 127.0.0.1, run the script given after -- in "
                                         "this process (or a demo) and serve until Ctrl-C.")
    serve.add_argument("--port", type=int, default=9090, help="port on 127.0.0.1 (0: any free port)")
    serve.add_argument("--exit-after", action="store_true", help="stop once the script or demo has run")
    serve.add_argument("script", nargs=argparse.REMAINDER, help="-- python script.py [args]")
    onnx_cmd = sub.add_parser("onnx", help="summarise an ONNX model, check it against onnxruntime, time it")
    onnx_cmd.add_argument("model", help="path of the .onnx file")
    onnx_cmd.add_argument("--bench", action="store_true", help="time pyasc and onnxruntime (same thread count)")
    onnx_cmd.add_argument("--estimate", action="store_true", help="print the NPU twin's per-kernel estimate")
    onnx_cmd.add_argument("--profile", action="store_true", help="print the kernel time per ONNX node")
    prof = sub.add_parser("prof", help="profile a whole Python program: pyasc prof [--html] [--csv] [--trace] -- "
                          "python script.py [args]")
    prof.add_argument("--html", action="store_true", help="write the HTML report")
    prof.add_argument("--csv", action="store_true", help="write the op_summary CSV")
    prof.add_argument("--trace", action="store_true", help="write the Chrome trace JSON (Perfetto)")
    prof.add_argument("--output", "-o", default=None, help="directory for the files (default: ./PYASC_PROF_<time>)")
    prof.add_argument("program", nargs=argparse.REMAINDER, help="-- followed by the command to profile")
    args = parser.parse_args(argv)
    if args.command == "debug":
        from ..debug._cli import serve_command

        return serve_command(args.port, args.script, exit_after=args.exit_after)
    if args.command == "onnx":
        from .onnx_cmd import run as run_onnx

        return run_onnx(args.model, bench=args.bench, estimate=args.estimate, profile=args.profile)
    if args.command == "prof":
        from .prof import run as run_prof

        return run_prof(args)
    if args.command == "demo":
        from .demo import run

        try:
            return run(args.size)
        except MemoryError as e:  # NumPy's or pyasc's OutOfMemoryError for a --size too large
            print(f"pyasc demo: {args.size:,} elements do not fit in memory ({e})", file=sys.stderr)
            return 1
    if args.command == "bench":
        if args.roofs:
            from ..bench.roofs import run as run_roofs

            return run_roofs(quick=args.quick)
        if args.dask:
            from ..bench.dask import run as run_dask

            return run_dask(quick=args.quick)
        from ..bench import run as run_bench

        return run_bench(quick=args.quick, only=args.only)
    if args.command == "doctor":
        from .doctor import run as run_doctor

        return run_doctor()
    if args.peaks:
        from ..device.roofs import peaks, render

        print(render(peaks(refresh=args.refresh)))
        return 0
    from .info import run as run_info

    return run_info(args.device)

