"""The differential fuzzer (``tests/fuzz_programs.py``) in CI: a fixed seed and a bounded count.

``PYASC_FUZZ_COUNT`` and ``PYASC_FUZZ_SEED`` run it longer or elsewhere; ``python
tests/fuzz_programs.py --seed N --count M`` runs it from the command line.
"""

from __future__ import annotations

import os

import fuzz_programs
import numpy as np
import pytest

SEED = int(os.environ.get("PYASC_FUZZ_SEED", "20240607"))
COUNT = int(os.environ.get("PYASC_FUZZ_COUNT", "4000"))


def test_random_programs_match_numpy():
    failures = fuzz_programs.run(SEED, COUNT)
    assert not failures, f"{len(failures)} of {COUNT} programs failed; the first:\n{failures[0]}"


def test_programs_cover_every_op_of_the_table():
    gen = fuzz_programs.Generator(SEED)
    text = " ".join(gen.program().body for _ in range(COUNT))
    missing = [u for u in list(fuzz_programs.UNARY_UFUNCS) + list(fuzz_programs.BINARY_UFUNCS)
               if f"np.{u}(" not in text]
    assert not missing, missing
    for needle in ("np.sum(", "np.where(", "np.clip(", "np.transpose(", "np.reshape(", "keepdims=True"):
        assert needle in text


def test_programs_cover_every_dtype_and_the_complex_ops():
    gen = fuzz_programs.Generator(SEED)
    programs = [gen.program() for _ in range(COUNT)]
    inputs = " ".join(src for p in programs for _, src in p.inputs)
    for dtype in fuzz_programs.DTYPES[1:] + ["complex64", "complex128"]:
        assert f"np.{dtype}" in inputs, dtype
    assert "endpoint=True" in inputs  # narrow integers over their whole range
    text = " ".join(p.body for p in programs if "complex" in " ".join(s for _, s in p.inputs))
    for op in ("add", "subtract", "multiply", "divide", "power", "equal", "not_equal", "abs", "exp", "log", "sqrt",
               "sin", "cos", "tanh", "conj", "real", "imag", "angle", "square", "reciprocal", "sum", "mean", "prod",
               "matmul", "where"):
        assert f"np.{op}(" in text, op


def test_a_wrong_result_is_reported_with_a_reproducer(monkeypatch):
    real = fuzz_programs.pyasc.operator

    def off_by_a_little(fn):
        op = real(fn)
        return lambda *a: np.asarray(op(*a)) + np.asarray(1e-3, np.asarray(op(*a)).dtype)

    monkeypatch.setattr(fuzz_programs.pyasc, "operator", off_by_a_little)
    p = fuzz_programs.Program(inputs=[("a", "rng.uniform(-2, 2, (3, 4)).astype(np.float32)")],
                              body="np.exp(a)", ops=1)
    with pytest.raises(fuzz_programs.Mismatch) as e:
        fuzz_programs.check(p)
    assert "def f(a):" in str(e.value) and "np.exp(a)" in str(e.value)
