"""``pyasc info``: a device table in the spirit of ``npu-smi info``.

One row per device pyasc runs on: the host CPU (id 0) and the NPU twin (id 1), which share the
same cores, memory pool and sensors.
"""

from __future__ import annotations

import sys
from typing import Dict, List, Optional, Tuple

from .. import _env
from ..errors import PyAscError

__all__ = ["device_rows", "render", "run"]

_ISA_RANK = {"none": -1, "scalar": 0, "sse2": 1, "neon": 1, "avx2+fma": 2, "avx512": 3}
_COLUMNS = [
    ("id", "ID"),
    ("name", "Name"),
    ("kind", "Kind"),
    ("cores", "Cores"),
    ("isa", "SIMD ISA"),
    ("memory", "Memory used / total"),
    ("util", "Util"),
    ("temp", "Temp"),
    ("health", "Health"),
]


def _health(info: dict) -> str:
    """``OK`` when the kernels use an ISA the CPU supports, else what is wrong."""
    if _ISA_RANK.get(info["isa"], 99) <= _ISA_RANK.get(info["detected_isa"], -1):
        return "OK"
    return f"ISA {info['isa']} unsupported (cpu has {info['detected_isa']})"


def device_rows() -> Tuple[List[Dict[str, str]], Optional[str]]:
    """Build the table rows as strings, and the reason there is no temperature (``None`` if there is one).

    Raises :class:`pyasc.InvalidArgumentError` when ``PYASC_MEMORY_LIMIT`` does not parse.
    """
    import pyasc

    limit = _env.memory_limit()
    total = limit if limit is not None else _env.system_memory()
    used = pyasc.memory_stats()["bytes_in_use"]
    util = pyasc.NpuUtilization().current()
    sensor = pyasc.NpuTemperature()
    celsius = sensor.current()
    rows = []
    for dev_id, (device, kind) in enumerate((("cpu", "cpu"), ("npu", "npu twin"))):
        info = pyasc.device_info(device)
        rows.append(
            {
                "id": str(dev_id),
                "name": info["name"],
                "kind": kind,
                "cores": str(info["cores"]),
                "isa": info["isa"],
                "memory": f"{_env.fmt_bytes(used)} / {_env.fmt_bytes(total)}",
                "util": f"{util:.1f}%",
                "temp": "n/a" if celsius is None else f"{celsius:.1f} C",
                "health": _health(info),
            }
        )
    return rows, (sensor.reason if celsius is None else None)


def render(rows: List[Dict[str, str]]) -> str:
    """Format the rows as a boxed text table."""
    widths = [max(len(title), *(len(r[key]) for r in rows)) for key, title in _COLUMNS]
    rule = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
    heading = "| " + " | ".join(title.ljust(w) for (_, title), w in zip(_COLUMNS, widths)) + " |"
    lines = [rule, heading, rule.replace("-", "=")]
    for r in rows:
        lines.append("| " + " | ".join(r[key].ljust(w) for (key, _), w in zip(_COLUMNS, widths)) + " |")
    lines.append(rule)
    return "\n".join(lines)


def run(device: Optional[str] = None) -> int:
    """Print the device table; returns a process exit status (2 when the environment is invalid).

    With ``device`` (``"cpu"`` or ``"npu"``) only that device's row, the NPU's followed by the
    modelled NPU's figures.
    """
    import pyasc

    bad = _env.problems()
    if bad:
        for p in bad:
            print(f"pyasc info: {p.message()}", file=sys.stderr)
        print("pyasc info: fix the variables above (run `pyasc doctor`)", file=sys.stderr)
        return 2
    try:
        rows, no_temp = device_rows()
    except PyAscError as e:
        print(f"pyasc info: {e} (run `pyasc doctor`)", file=sys.stderr)
        return 2
    if device is not None:
        rows = [r for r in rows if r["kind"].split()[0] == device]
    print(f"pyasc {pyasc.__version__}")
    print(render(rows))
    if device == "npu":
        from ..device.npu_twin import render_model

        print(render_model())
    if no_temp:
        print(f"Temp n/a: {no_temp}")
    return 0
