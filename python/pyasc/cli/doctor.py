"""``pyasc doctor``: checks of the environment pyasc runs in, each with a fix when it fails.

Every check prints ``OK``, ``WARN`` (works, but slower than it could) or ``FAIL`` with a
one-line fix; the exit status is non-zero when any check fails.
"""

from __future__ import annotations

import os
import platform
import tempfile
from dataclasses import dataclass
from typing import List, Set

from .. import _env
from ..errors import PyAscError

__all__ = ["Check", "run", "run_checks"]


@dataclass
class Check:
    """The outcome of one check: its name, ``OK``/``WARN``/``FAIL``, what was found, how to fix it."""

    name: str
    status: str
    detail: str
    fix: str = ""


def _extension() -> Check:
    try:
        from .. import _pyasc

        return Check("extension", "OK", f"pyasc._pyasc {_pyasc.__version__} loaded")
    except ImportError as e:  # pragma: no cover - the package itself imports the extension
        return Check("extension", "FAIL", str(e), "reinstall pyasc: pip install --force-reinstall pyasc")


def _cpu_flags() -> Set[str]:
    """Read the CPU feature flags of ``/proc/cpuinfo`` (empty where there is no such file)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def _simd(query_kernels: bool) -> Check:
    flags = _cpu_flags()
    x86 = platform.machine().lower() in ("x86_64", "amd64")
    best = [f for f in ("avx512f", "avx2", "fma", "sse2", "asimd", "neon") if f in flags]
    detail = f"cpu features: {' '.join(best) or 'unknown'}"
    if query_kernels:
        # Querying the device builds the worker pool, so only with a sane PYASC_NUM_THREADS.
        try:
            from .. import _pyasc

            info = _pyasc.device_info("cpu")
            detail += f"; kernels use {info['isa']} (best supported: {info['detected_isa']})"
            if info["isa"] != info["detected_isa"]:
                return Check("cpu simd", "WARN", detail, "unset PYASC_ISA to use the best instruction set")
        except (ImportError, PyAscError) as e:
            return Check("cpu simd", "FAIL", f"cannot query the CPU: {e}", "reinstall pyasc")
    if x86 and flags and not {"avx2", "fma"} <= flags:
        return Check("cpu simd", "WARN", detail, "kernels run without AVX2+FMA: use a CPU (or VM CPU model) with them")
    return Check("cpu simd", "OK", detail)


def _threads() -> Check:
    cores = _env.cpu_cores()
    raw = os.environ.get("PYASC_NUM_THREADS")
    if raw is None:
        return Check("threads", "OK", f"PYASC_NUM_THREADS unset: {cores} worker threads (one per core)")
    try:
        n = int(raw.strip())
    except ValueError:
        n = 0
    if n <= 0:
        return Check(
            "threads",
            "FAIL",
            f"PYASC_NUM_THREADS={raw!r} is not a positive integer (it is ignored)",
            f"set PYASC_NUM_THREADS to a whole number from 1 to {cores}, or unset it",
        )
    if n > cores:
        return Check(
            "threads",
            "FAIL",
            f"PYASC_NUM_THREADS={n} exceeds the {cores} cores available (threads would contend)",
            f"set PYASC_NUM_THREADS to at most {cores}, or unset it",
        )
    return Check("threads", "OK", f"PYASC_NUM_THREADS={n} of {cores} cores")


def _memory_limit() -> Check:
    raw = os.environ.get("PYASC_MEMORY_LIMIT")
    try:
        limit = _env.memory_limit()
    except PyAscError:
        detail = next(p.message() for p in _env.problems() if p.var == "PYASC_MEMORY_LIMIT")
        return Check("memory limit", "FAIL", detail, "set PYASC_MEMORY_LIMIT to bytes or e.g. 512M / 8G, or unset it")
    if limit is None:
        return Check("memory limit", "OK", f"PYASC_MEMORY_LIMIT unset: up to {_env.fmt_bytes(_env.system_memory())}")
    return Check("memory limit", "OK", f"PYASC_MEMORY_LIMIT={raw.strip() if raw else ''} = {_env.fmt_bytes(limit)}")


def _dump_dir() -> Check:
    path = _env.dump_dir()
    source = "PYASC_DUMP_DIR" if os.environ.get("PYASC_DUMP_DIR") else "default"
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".pyasc-doctor-"):
            pass
    except OSError as e:
        return Check(
            "dump dir",
            "FAIL",
            f"{path} ({source}) is not a writable directory: {e.strerror or e}",
            "point PYASC_DUMP_DIR at a writable directory (e.g. export PYASC_DUMP_DIR=/tmp/pyasc)",
        )
    return Check("dump dir", "OK", f"{path} ({source}) is writable")


def _numpy() -> Check:
    try:
        import numpy as np
    except ImportError as e:
        return Check("numpy", "FAIL", f"numpy is not importable: {e}", "pip install 'numpy>=2'")
    major = int(np.__version__.split(".")[0])
    if major < 2:
        return Check("numpy", "FAIL", f"numpy {np.__version__} is older than 2.0", "pip install -U 'numpy>=2'")
    return Check("numpy", "OK", f"numpy {np.__version__}")


def _environment() -> Check:
    # Threads and the memory limit have checks of their own.
    bad = [p for p in _env.problems() if p.var not in ("PYASC_NUM_THREADS", "PYASC_MEMORY_LIMIT")]
    if not bad:
        return Check("environment", "OK", "every PYASC_* variable set is valid")
    return Check("environment", "FAIL", " | ".join(p.message() for p in bad), "; ".join(p.fix for p in bad))


def run_checks() -> List[Check]:
    """Run every check: extension, cpu simd, threads, memory limit, environment, dump dir, numpy."""
    extension, threads = _extension(), _threads()
    simd = _simd(query_kernels=extension.status == "OK" and threads.status == "OK")
    return [extension, simd, threads, _memory_limit(), _environment(), _dump_dir(), _numpy()]


def run() -> int:
    """Print every check with its fix; returns 1 when any failed, else 0."""
    results = run_checks()
    width = max(len(c.name) for c in results)
    for c in results:
        print(f"{c.status:<4}  {c.name:<{width}}  {c.detail}")
        if c.status != "OK" and c.fix:
            print(f"{'':<4}  {'':<{width}}  fix: {c.fix}")
    failed = [c.name for c in results if c.status == "FAIL"]
    print(f"{len(failed)} check(s) failed: {', '.join(failed)}" if failed else "all checks passed")
    return 1 if failed else 0
