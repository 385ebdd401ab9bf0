"""Environment settings the CLI reports on: the memory limit, thread count and dump directory.

The parsing mirrors the Rust runtime's, so that ``pyasc info`` and ``pyasc doctor`` agree with
what kernels actually use.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Optional

from .errors import InvalidArgumentError

_SIZE = re.compile(r"^\s*(\d+)\s*([kKmMgG]?)\s*$")
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_bytes(text: str) -> int:
    """Bytes in ``text``: a whole number, optionally followed by K, M or G (powers of 1024)."""
    m = _SIZE.match(text)
    if not m:
        raise InvalidArgumentError(f"{text!r} is not a size: use bytes or a number with a K, M or G suffix (e.g. 8G)")
    return int(m.group(1)) * _UNITS[m.group(2).upper()]


def memory_limit() -> Optional[int]:
    """``PYASC_MEMORY_LIMIT`` in bytes, ``None`` when unset; an invalid value raises InvalidArgumentError."""
    raw = os.environ.get("PYASC_MEMORY_LIMIT")
    if raw is None or not raw.strip():
        return None
    return parse_bytes(raw)


def system_memory() -> Optional[int]:
    """``MemTotal`` of ``/proc/meminfo`` in bytes, or ``None`` where there is no such file."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def cpu_cores() -> int:
    """CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def dump_dir() -> Path:
    """Where pyasc writes dumps: ``PYASC_DUMP_DIR`` or ``~/.cache/pyasc``."""
    raw = os.environ.get("PYASC_DUMP_DIR")
    return Path(raw).expanduser() if raw else Path.home() / ".cache" / "pyasc"


def fmt_bytes(n: Optional[int]) -> str:
    """``n`` bytes in the largest binary unit that keeps it at least 1 (``"1.5 GiB"``); ``"n/a"`` for None."""
    if n is None:
        return "n/a"
    if n < 1024:
        return f"{n} B"
    units = ["KiB", "MiB", "GiB", "TiB"]
    value, i = n / 1024, 0
    while value >= 1024 and i < len(units) - 1:
        value, i = value / 1024, i + 1
    return f"{value:.1f} {units[i]}"
