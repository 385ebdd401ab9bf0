"""``pyasc prof -- python script.py [args]``: profile a whole program, as ``msprof --application``.

The command runs with ``PYASC_PROF_DIR`` set: every Python process it starts that imports pyasc
profiles itself from import to exit and writes its files (``pyasc_prof_<pid>.html``,
``..._op_summary.csv``, ``..._trace.json``) into that directory, which is printed at the end.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from typing import List

from ..tools.profiler import PROF_DIR_ENV, PROF_FORMATS_ENV


def run(args: argparse.Namespace) -> int:
    """Run the program of ``args`` under the profiler; returns its exit status."""
    program: List[str] = list(args.program)
    if program and program[0] == "--":
        program = program[1:]
    if not program:
        print("pyasc prof: nothing to run; usage: pyasc prof [--html] [--csv] [--trace] -- python script.py [args]",
              file=sys.stderr)
        return 2
    formats = [f for f in ("html", "csv", "trace") if getattr(args, f)] or ["html", "csv", "trace"]
    out = os.path.abspath(args.output or time.strftime("PYASC_PROF_%Y%m%d%H%M%S"))
    os.makedirs(out, exist_ok=True)
    env = dict(os.environ, **{PROF_DIR_ENV: out, PROF_FORMATS_ENV: ",".join(formats)})
    if program[0] in ("python", "python3"):
        program[0] = sys.executable
    try:
        status = subprocess.call(program, env=env)
    except OSError as e:
        print(f"pyasc prof: cannot run {program[0]!r}: {e}", file=sys.stderr)
        return 127
    files = sorted(os.listdir(out))
    print(f"pyasc prof: {len(files)} file(s) in {out}")
    for f in files:
        print(f"  {f}")
    if not files:
        print("pyasc prof: no file written: the program did not import pyasc", file=sys.stderr)
    return status
