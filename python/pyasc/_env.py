"""Environment settings the CLI reports on: the memory limit, thread count and dump directory.

The parsing mirrors the Rust runtime's, so that ``pyasc info`` and ``pyasc doctor`` agree with
what kernels actually use.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Callable, List, NamedTuple, Optional

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


class EnvProblem(NamedTuple):
    """An environment variable whose value pyasc cannot use."""

    var: str
    value: str
    problem: str
    fix: str

    def message(self) -> str:
        """One line naming the variable, its value, what pyasc does instead, and the accepted forms."""
        return f"{self.var}={self.value!r} {self.problem}; {self.fix}"


_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "WARN", "ERROR", "CRITICAL", "OFF")
_ISAS = ("avx512", "avx2", "avx2+fma", "sse2", "neon", "scalar")


def _positive_int(text: str) -> Optional[int]:
    try:
        n = int(text.strip())
    except ValueError:
        return None
    return n if n > 0 else None


def cache_size() -> int:
    """Plans kept per operator (and eager one-op operators kept): ``PYASC_CACHE_SIZE`` or 512."""
    return _positive_int(os.environ.get("PYASC_CACHE_SIZE", "")) or 512


def problems() -> List[EnvProblem]:
    """Every ``PYASC_*`` variable set to a value the runtime ignores, with the accepted forms.

    The same list is warned about at import and reported by ``pyasc info`` and ``pyasc doctor``;
    the runtime falls back to the default named in each message.
    """
    env = os.environ
    found: List[EnvProblem] = []

    def check(var: str, ok: Callable[[str], bool], problem: str, fix: str) -> None:
        raw = env.get(var)
        if raw is not None and raw.strip() and not ok(raw):
            found.append(EnvProblem(var, raw, problem, fix))

    check("PYASC_LOG", lambda v: v.strip().upper() in _LOG_LEVELS, "is not a log level (the level stays WARNING)",
          f"use one of {', '.join(_LOG_LEVELS)}")
    check("PYASC_NUM_THREADS", lambda v: _positive_int(v) is not None,
          "is not a positive integer (every core is used)", "use a whole number such as 1 or 4, or unset it")
    check("PYASC_MEMORY_LIMIT", lambda v: _SIZE.match(v) is not None, "is not a size (no limit is applied)",
          "use bytes or a number with a K, M or G suffix, such as 512M or 8G")
    check("PYASC_ISA", lambda v: v.strip().lower() in _ISAS, "is not an instruction set (the best one is used)",
          f"use one of {', '.join(_ISAS)}")
    check("PYASC_TILE_BUDGET", lambda v: _positive_int(v) is not None,
          "is not a positive number of bytes (tiles keep the default 32768)", "use bytes such as 32768")
    check("PYASC_CACHE_SIZE", lambda v: _positive_int(v) is not None,
          "is not a positive integer (each operator keeps up to 512 plans)", "use a whole number such as 64")
    check("PYASC_POOL_CACHE_BYTES", lambda v: v.strip().isdigit(),
          "is not a number of bytes (the pool keeps up to 2 GiB)", "use bytes such as 1073741824")
    return found


def warn_problems() -> None:
    """Warn once per invalid ``PYASC_*`` variable (at import; never raises)."""
    import warnings

    from .errors import PyAscWarning

    for p in problems():
        warnings.warn(p.message(), PyAscWarning, stacklevel=3)
