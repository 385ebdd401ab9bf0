"""Helper the lower-ISA tests share: run a script in a fresh interpreter under ``PYASC_ISA``."""

from __future__ import annotations

import os
import subprocess
import sys


def run_under_isa(script: str, isa: str) -> str:
    """Run ``script`` with ``python -c`` and ``PYASC_ISA=isa``; return what it wrote to stdout."""
    env = dict(os.environ, PYASC_ISA=isa)
    return subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True).stdout
