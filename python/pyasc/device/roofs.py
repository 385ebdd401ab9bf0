"""The machine's roofs: memory bandwidth and peak float32 FMA throughput, measured once.

:func:`peaks` measures a copy and a triad over buffers far larger than the last-level cache on
all worker cores, and fused multiply-adds with the active ISA's widest vectors on all worker
cores, then caches the figures as JSON under the dump directory (``PYASC_DUMP_DIR`` or
``~/.cache/pyasc``), keyed by the CPU model, ISA and thread count. ``pyasc info --peaks`` prints
them; the profiler places each kernel against them (a roofline).
"""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import Any, Dict, Optional

from .. import _env, _pyasc

__all__ = ["peaks", "peaks_path", "bound", "render"]


#: Roofs already read or measured by this process, by cache path: (key, roofs).
_MEMO: Dict[str, Any] = {}


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _key() -> Dict[str, Any]:
    info = _pyasc.device_info("cpu")
    # "method" changes when the measurement does, so older cached figures are measured again.
    return {"cpu": _cpu_model(), "isa": info.get("isa", ""), "cores": info.get("cores", _env.cpu_cores()),
            "method": 2}


def peaks_path() -> Path:
    """Return the cache file of the measured roofs."""
    return _env.dump_dir() / "peaks.json"


def peaks(refresh: bool = False) -> Dict[str, Any]:
    """Return the machine's roofs, measured once and cached.

    Keys: ``copy_gbs``, ``triad_gbs`` (GB/s), ``fma_gflops`` (GFLOP/s), the
    ``isa`` and ``threads`` used, the buffer and cache sizes, ``cached`` (True when read back
    from :func:`peaks_path`) and ``path``.

    Measured on first use (a second or two) and cached for the same CPU, ISA and thread count;
    ``refresh=True`` measures again. A dump directory that cannot be written only loses the cache.
    """
    path = peaks_path()
    key = _key()
    memo = _MEMO.get(str(path))
    if not refresh and memo is not None and memo[0] == key:
        return dict(memo[1])
    if not refresh:
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
            if saved.get("key") == key:
                found = dict(saved["peaks"], cached=True, path=str(path))
                _MEMO[str(path)] = (key, found)
                return dict(found)
        except (OSError, ValueError, KeyError, TypeError):
            pass
    measured = dict(_pyasc.measure_peaks())
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"key": key, "peaks": measured}, indent=1), encoding="utf-8")
        tmp.replace(path)
    except OSError:
        pass
    _MEMO[str(path)] = (key, dict(measured, cached=True, path=str(path)))
    return dict(measured, cached=False, path=str(path))


def bound(intensity: float, roofs: Dict[str, Any]) -> str:
    """Classify a kernel as memory- or compute-bound.

    ``"memory"`` when a kernel doing ``intensity`` FLOP per byte sits left of the ridge point
    (``fma_gflops / triad_gbs``), else ``"compute"``.
    """
    ridge = roofs["fma_gflops"] / max(roofs["triad_gbs"], 1e-9)
    return "memory" if intensity < ridge else "compute"


def render(roofs: Optional[Dict[str, Any]] = None) -> str:
    """Return the roofs as the lines ``pyasc info --peaks`` prints."""
    r = roofs or peaks()
    ridge = r["fma_gflops"] / max(r["triad_gbs"], 1e-9)
    source = "cached in" if r.get("cached") else "measured now, cached in"
    return "\n".join([
        f"memory bandwidth (copy):  {r['copy_gbs']:8.1f} GB/s",
        f"memory bandwidth (triad): {r['triad_gbs']:8.1f} GB/s",
        f"float32 FMA peak ({r['isa']}): {r['fma_gflops']:8.1f} GFLOP/s",
        f"ridge point:              {ridge:8.2f} FLOP/byte",
        f"threads {r['threads']}, buffers {_env.fmt_bytes(r['buffer_bytes'])} each, "
        f"last-level cache {_env.fmt_bytes(r['llc_bytes']) if r['llc_bytes'] else 'unknown'}",
        f"{source} {r.get('path', peaks_path())}",
    ])
