"""Run adversarial snippets in child interpreters, so a crash, abort or hang fails one named case.

A case is a name and a snippet of Python source. Snippets run in batches: one child process
(``sys.executable -c``) executes many snippets in order, printing a start marker before each one
and its outcome after it. A child that dies (segfault, abort, ``os._exit``) or exceeds the batch
timeout is blamed on the case it had started but not finished; the remaining cases run in a
fresh child. Each snippet reaches the checks below through its globals:

* ``raises(cls, fn, *args, **kwargs)``: ``fn`` raises ``cls`` (and nothing a pyasc user should
  never see: ``PanicException``, ``SystemError``);
* ``same(got, want, ulp=0)``: identical type (NumPy array), dtype, shape and values (NaN equal
  NaN, signed zeros equal); floats within ``ulp`` units in the last place of ``want``;
* ``pyasc_error_or(fn, want)``: ``fn()`` gives ``want`` (as ``same``) or raises a ``PyAscError``;
* ``error_or(cls, fn, want)``: ``fn()`` gives ``want`` or raises ``cls``;
* ``like_numpy(pfn, nfn, *args, ulp=0)``: NumPy's result, or where NumPy raises, a PyAscError
  of the same builtin kind (a DTypeError for NumPy's TypeError, a ShapeError for its ValueError).

A snippet fails by raising; the exception's type and message become the case's failure text.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from typing import Dict, Iterable, List, Sequence, Tuple

#: Source run once in each child before its snippets.
PRELUDE = r'''
import json, sys, threading, traceback
import numpy as np
import pyasc

BAD_CLASSES = ("PanicException", "SystemError")


class Fail(AssertionError):
    pass


def _describe(e):
    return f"{type(e).__module__}.{type(e).__name__}: {str(e)[:300]}"


def raises(cls, fn, *args, **kwargs):
    label = " or ".join(c.__name__ for c in cls) if isinstance(cls, tuple) else cls.__name__
    try:
        fn(*args, **kwargs)
    except BaseException as e:  # noqa: BLE001 - classified below
        if type(e).__name__ in BAD_CLASSES:
            raise Fail(f"expected {label}, got {_describe(e)}") from None
        if isinstance(e, cls):
            return e
        raise Fail(f"expected {label}, got {_describe(e)}") from None
    raise Fail(f"expected {label}, nothing was raised")


def _as_float(a):
    return np.asarray(a, dtype=np.float64)


def same(got, want, ulp=0):
    want = np.asarray(want)
    if not isinstance(got, np.ndarray):
        raise Fail(f"got a {type(got).__name__}, want a numpy.ndarray")
    if got.dtype != want.dtype or got.shape != want.shape:
        raise Fail(f"got {got.dtype}{got.shape}, want {want.dtype}{want.shape}")
    if got.dtype.kind == "f":
        g, w = _as_float(got), _as_float(want)
        nan_ok = np.isnan(g) == np.isnan(w)
        with np.errstate(all="ignore"):
            spacing = np.abs(np.spacing(want.astype(got.dtype))).astype(np.float64)
            dist = np.where(g == w, 0.0, np.abs(g - w) / spacing)
        dist = np.where(np.isnan(g) & np.isnan(w), 0.0, dist)
        if not nan_ok.all() or (dist.size and not np.nanmax(dist) <= ulp) or np.isnan(dist).any():
            raise Fail(f"values differ (max {ulp} ulp): got {got.ravel()[:8]!r}, want {want.ravel()[:8]!r}")
    elif got.dtype.kind == "c":
        eps = np.finfo(got.dtype).eps
        with np.errstate(all="ignore"):
            ok = (got == want) | (np.abs(got - want) <= ulp * eps * np.abs(want)) | (np.isnan(got) & np.isnan(want))
        if not ok.all():
            raise Fail(f"values differ (max {ulp} ulp of |want|): got {got.ravel()[:8]!r}, want {want.ravel()[:8]!r}")
    elif not np.array_equal(got, want):
        raise Fail(f"values differ: got {got.ravel()[:8]!r}, want {want.ravel()[:8]!r}")
    return got


def pyasc_error_or(fn, want, ulp=0):
    try:
        got = fn()
    except pyasc.PyAscError:
        return None
    except BaseException as e:  # noqa: BLE001 - reported
        raise Fail(f"expected the NumPy result or a PyAscError, got {_describe(e)}") from None
    return same(got, want, ulp)


def error_or(cls, fn, want, ulp=0):
    try:
        got = fn()
    except cls:
        return None
    except BaseException as e:  # noqa: BLE001 - reported
        raise Fail(f"expected the NumPy result or {cls.__name__}, got {_describe(e)}") from None
    return same(got, want, ulp)


def like_numpy(pfn, nfn, *args, ulp=0):
    """``pfn(*args)`` behaves as NumPy's ``nfn(*args)``: the same result, or, where NumPy raises,
    a PyAscError that is also an instance of NumPy's builtin class (TypeError or ValueError)."""
    try:
        want = np.asarray(nfn(*args))
    except (TypeError, ValueError, IndexError) as ne:
        e = raises(pyasc.PyAscError, pfn, *args)
        base = TypeError if isinstance(ne, TypeError) else ValueError if isinstance(ne, ValueError) else None
        if base is not None and not isinstance(e, base):
            raise Fail(f"NumPy raised {type(ne).__name__}; pyasc's {type(e).__name__} is no {base.__name__}") from None
        return None
    if want.dtype == np.float16:  # pyasc may or may not compute in float16
        return pyasc_error_or(lambda: pfn(*args), want, ulp)
    return same(pfn(*args), want, ulp)


def _run(name, src):
    print("@@START " + json.dumps(name), flush=True)
    np.seterr(all="ignore")
    try:
        exec(compile(src, name, "exec"), {**globals(), "__name__": "__case__"})
        out = {"ok": True}
    except BaseException as e:  # noqa: BLE001 - every outcome is reported
        out = {"ok": False, "error": _describe(e), "where": traceback.format_exc(limit=-2)[-600:]}
    print("@@END " + json.dumps([name, out]), flush=True)
'''


@dataclass
class Outcome:
    """What one case did: passed, failed with a message, or killed its child process."""

    ok: bool
    detail: str = ""


def _child_source(cases: Sequence[Tuple[str, str]]) -> str:
    calls = "\n".join(f"_run({json.dumps(n)}, {src!r})" for n, src in cases)
    return PRELUDE + "\n" + calls + "\n"


def run_cases(cases: Iterable[Tuple[str, str]], batch: int = 40, timeout: float = 90.0,
              env: Dict[str, str] = None) -> Dict[str, Outcome]:
    """Run every case and return its outcome by name (crashes and hangs blamed on their case)."""
    todo: List[Tuple[str, str]] = list(cases)
    names = [n for n, _ in todo]
    if len(set(names)) != len(names):
        raise ValueError("case names must be unique")
    child_env = dict(os.environ, PYTHONFAULTHANDLER="1", **(env or {}))
    results: Dict[str, Outcome] = {}
    while todo:
        chunk, todo = todo[:batch], todo[batch:]
        try:
            proc = subprocess.run([sys.executable, "-c", _child_source(chunk)], capture_output=True, text=True,
                                  timeout=timeout, env=child_env)
            stdout, stderr, rc = proc.stdout, proc.stderr, proc.returncode
        except subprocess.TimeoutExpired as e:
            stdout = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            stderr = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
            rc = None
        started = None
        for line in stdout.splitlines():
            if line.startswith("@@START "):
                started = json.loads(line[8:])
            elif line.startswith("@@END "):
                name, out = json.loads(line[6:])
                results[name] = Outcome(out["ok"], out.get("error", "") + "\n" + out.get("where", ""))
                started = None
        if started is None and rc == 0:
            continue
        how = f"hung past {timeout:.0f} s" if rc is None else f"killed the interpreter (exit status {rc})"
        report = Outcome(False, f"{how}; stderr tail:\n{stderr[-1500:]}")
        if started is None:
            # Every case finished but the interpreter died on the way out: blame the last one.
            for n, _ in chunk:
                if n not in results or n == chunk[-1][0]:
                    results[n] = report
            continue
        results[started] = report
        # The cases after the culprit run again in a fresh child.
        culprit = [n for n, _ in chunk].index(started)
        todo = chunk[culprit + 1:] + todo
    return results


def check(outcomes: Dict[str, Outcome], name: str) -> None:
    """Fail the calling test with the case's own report unless the case passed."""
    out = outcomes.get(name)
    if out is None:
        raise AssertionError(f"{name}: no outcome was recorded")
    if not out.ok:
        raise AssertionError(f"{name}: {out.detail}")
