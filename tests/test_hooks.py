"""The binding reaches the Python package through ``pyasc._hooks`` alone, and features plug in there."""

from __future__ import annotations

import pathlib
import re

import numpy as np
import pyasc
import pytest
from pyasc import _hooks

BINDING = pathlib.Path(__file__).resolve().parents[1] / "crates" / "pyasc-py" / "src"


def test_the_binding_imports_only_the_errors_and_the_hooks():
    imports = {}
    for f in sorted(BINDING.glob("*.rs")):
        for m in re.findall(r'import\("(pyasc[^"]*)"\)', f.read_text()):
            imports.setdefault(m, []).append(f.name)
    assert sorted(imports) == ["pyasc._hooks", "pyasc.errors"], imports


class Doubled:
    """An argument type no part of pyasc knows: a companion registered here runs it."""

    def __init__(self, value):
        self.value = value


@pyasc.operator
def _plus_one(x):
    return x + 1.0


def _unwrap(op, args):
    return op(*[a.value * 2 if isinstance(a, Doubled) else a for a in args])


def test_a_registered_companion_takes_arguments_the_core_cannot_read():
    x = np.arange(5, dtype=np.float32)
    with pytest.raises(pyasc.PyAscError):
        _plus_one(Doubled(x))
    _hooks.register_companion("doubled", order=99, accepts=lambda args: any(isinstance(a, Doubled) for a in args),
                              call=_unwrap, cache_info=lambda op: (0, 0, 0, 0), cache_clear=lambda op: None)
    try:
        np.testing.assert_array_equal(_plus_one(Doubled(x)), x * 2 + 1)
        # Complex numbers still go to their own companion, registered before.
        np.testing.assert_array_equal(_plus_one(x + 1j), x + 1j + 1)
    finally:
        _hooks.unregister_companion("doubled")
    with pytest.raises(pyasc.PyAscError):
        _plus_one(Doubled(x))


def test_hook_points_are_checked_by_name():
    with pytest.raises(ValueError, match="unknown hook point"):
        _hooks.register("no_such_point", print)
    # Every point the binding calls is registered by a feature module of the package (graph
    # mode and the debugger register theirs when first used).
    pyasc.graph_mode, pyasc.debug  # noqa: B018
    assert {name: getattr(_hooks, name).__module__ for name in _hooks.POINTS} == {
        "bind": "pyasc.core._binding", "check_transfers": "pyasc.device.npu_twin", "enter_trace": "pyasc.core.dynamic",
        "exit_trace": "pyasc.core.dynamic", "like": "pyasc.core._interop", "record_run": "pyasc.debug",
        "complex_binary": "pyasc.core._complex", "note_view": "pyasc.api.updates", "graph_record": "pyasc.graph.record",
        "graph_resolve": "pyasc.graph.record"}


def test_cache_info_counts_the_companions_plans():
    @pyasc.operator
    def f(x):
        return x * 2

    f(np.ones(3, np.float32))
    f(np.ones(3, np.complex64))  # runs through the complex companion, which compiles its own plan
    info = f.cache_info()
    assert f._core_cache_info() == (0, 1, 1, 1)
    assert (info.misses, info.compiles, info.currsize) == (2, 2, 2)
    f.cache_clear()
    assert f.cache_info().currsize == 0


def test_a_plain_import_loads_neither_the_debugger_graph_mode_the_pipeline_nor_the_profiler():
    import subprocess
    import sys

    code = ("import sys, pyasc;"
            "parts = ['pyasc.debug', 'pyasc.graph.record', 'pyasc.graph.pipeline', 'pyasc.tools.profiler'];"
            "print([p for p in parts if p in sys.modules]);"
            "pyasc.graph_mode; pyasc.pipeline; pyasc.profile; pyasc.debug;"
            "print([p for p in parts if p not in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[:2] == ["[]", "[]"], out
