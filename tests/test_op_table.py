"""The Python op names come from the extension's op table: every exported op is reachable as
``pyasc.<name>`` and through its NumPy ufuncs, and nothing is listed twice by hand."""

from __future__ import annotations

import pathlib

import numpy as np
import pyasc
import pytest
from pyasc import _pyasc
from pyasc.core import _numpy_api

UNARY = {name: (kind, tuple(ufuncs), api) for name, kind, ufuncs, api in _pyasc.UNARY_OPS}
BINARY = {name: (cls, tuple(ufuncs), comm) for name, cls, ufuncs, comm in _pyasc.BINARY_OPS}


def test_table_rows_are_unique_and_well_formed():
    assert len(UNARY) == len(_pyasc.UNARY_OPS) and len(BINARY) == len(_pyasc.BINARY_OPS)
    assert {k for k, _, _ in UNARY.values()} <= {"numeric", "float", "rounding", "classify", "bitwise"}
    assert {c for c, _, _ in BINARY.values()} == {"arith", "float", "integer", "compare", "bitwise"}
    ufuncs = [u for _, us, _ in UNARY.values() for u in us] + [u for _, us, _ in BINARY.values() for u in us]
    assert len(ufuncs) == len(set(ufuncs)), "a NumPy ufunc maps onto two ops"


@pytest.mark.parametrize("name", sorted(n for n, (_, _, api) in UNARY.items() if api))
def test_every_api_op_is_exported(name):
    assert callable(getattr(pyasc, name)), name
    assert name in pyasc.__all__
    assert getattr(pyasc, name).__doc__


def test_ufunc_dispatch_tables_match_the_op_table():
    for name, (_, ufuncs, _) in UNARY.items():
        for uf in ufuncs:
            assert isinstance(getattr(np, uf), np.ufunc) and getattr(np, uf).nin == 1, uf
            assert _numpy_api._UFUNC_UNARY[uf] == name
    for name, (_, ufuncs, _) in BINARY.items():
        for uf in ufuncs:
            assert isinstance(getattr(np, uf), np.ufunc) and getattr(np, uf).nin == 2, uf
            assert _numpy_api._UFUNC_BINARY[uf] == name
    assert len(_numpy_api._UFUNC_UNARY) == sum(len(u) for _, u, _ in UNARY.values())
    assert len(_numpy_api._UFUNC_BINARY) == sum(len(u) for _, u, _ in BINARY.values())


@pytest.mark.parametrize("name", sorted(n for n, (_, us, _) in UNARY.items() if us and UNARY[n][0] == "float"))
def test_float_ufuncs_run_inside_operators(name):
    uf = getattr(np, UNARY[name][1][0])
    x = np.linspace(0.25, 3.0, 37)

    @pyasc.operator
    def f(t):
        return uf(t)

    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(f(x), uf(x), rtol=1e-14)


def test_binary_commutativity_flags_hold():
    a = np.array([3.0, 2.0, 0.0, 7.0, -1.0])
    b = np.array([1.5, 0.0, 0.25, 7.0, 2.0])
    for name, (cls, ufuncs, comm) in BINARY.items():
        if not ufuncs or cls in ("bitwise", "integer") or name == "ldexp":
            continue
        uf = getattr(np, ufuncs[0])
        with np.errstate(all="ignore"):
            same = np.array_equal(uf(a, b), uf(b, a), equal_nan=True)
        assert comm == bool(same), name


def test_stub_declares_the_table():
    stub = pathlib.Path(pyasc.__file__).with_name("_pyasc.pyi").read_text()
    assert "UNARY_OPS:" in stub and "BINARY_OPS:" in stub
