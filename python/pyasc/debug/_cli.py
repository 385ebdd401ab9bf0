"""``pyasc debug serve``: the debug server from a shell, serving a script's operators or a demo.

``pyasc debug serve --port 9090 -- python script.py args`` starts the server, runs the script
in this process (as ``python script.py`` would, ``__name__ == "__main__"``) so its
``debug=True`` operators are captured, then keeps serving until Ctrl-C. Without a script it
runs a small demo of debug operators. The URL (with its token) is printed first.
"""

from __future__ import annotations

import os
import runpy
import sys
import threading
import traceback
from typing import List, Optional

from ..errors import PyAscError


def _script_argv(command: List[str]) -> Optional[List[str]]:
    """Return the script's argv from ``python script.py args`` or ``script.py args``; None if not one."""
    if command and os.path.basename(command[0]).startswith("python") and not command[0].endswith(".py"):
        command = command[1:]
    if not command or command[0].startswith("-"):
        return None
    return command


def serve_command(port: int, command: List[str], exit_after: bool = False) -> int:
    """Run the ``pyasc debug serve`` command; returns the exit status."""
    from . import serve

    if command and command[0] == "--":
        command = command[1:]
    argv: Optional[List[str]] = None
    if command:
        argv = _script_argv(command)
        if argv is None:
            print("pyasc debug serve: give a Python script to run in the server's process, as in "
                  "`pyasc debug serve --port 9090 -- python script.py`", file=sys.stderr)
            return 2
        if not os.path.isfile(argv[0]):
            print(f"pyasc debug serve: no such script: {argv[0]}", file=sys.stderr)
            return 2
    try:
        server = serve(port=port)
    except PyAscError as e:
        print(f"pyasc debug serve: {e}", file=sys.stderr)
        return 1
    print(f"pyasc debugger: {server.url}", flush=True)
    status = 0
    try:
        if argv is not None:
            saved = sys.argv[:]
            sys.argv = argv
            sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
            try:
                runpy.run_path(argv[0], run_name="__main__")
            except SystemExit as e:
                status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            except Exception:  # noqa: BLE001 - the script's error is shown; its results stay served
                traceback.print_exc()
                status = 1
            finally:
                sys.argv = saved
        else:
            from ._demo import run_demo

            demo = run_demo()  # noqa: F841 - keeps the demo's operators alive while serving
        count = len(server_runs())
        hint = "" if count else " (only operators made with debug=True are captured)"
        print(f"pyasc debugger: {count} debug runs captured{hint}; serving {server.url} until Ctrl-C", flush=True)
        if not exit_after:
            threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return status


def server_runs() -> list:
    """Return the runs the server holds."""
    from . import runs

    return runs()
