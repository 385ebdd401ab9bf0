"""ONNX's own backend test suite (``onnx.backend.test``) run on ``pyasc.onnx.backend``.

Every CPU node and model test runs except those in ``onnx_backend_exclusions.EXCLUDED``, each
listed with its reason; the model tests include the nine light zoo models against their
reference outputs.
"""

import warnings

import onnx.backend.test
from onnx_backend_exclusions import EXCLUDED
from pyasc.onnx import backend

with warnings.catch_warnings():
    # The suite's case generators overflow casts on purpose.
    warnings.simplefilter("ignore", RuntimeWarning)
    _suite = onnx.backend.test.BackendTest(backend, __name__)
_EXCLUDED = {f"{n}_cpu" for names in EXCLUDED.values() for n in names}
_cases = _suite.test_cases  # a new set of classes at each access
for _case in _cases.values():
    # Only the CPU tests pyasc runs are collected (the excluded ones are listed, not skipped).
    for _test in [n for n in vars(_case) if n.startswith("test_")]:
        if not _test.endswith("_cpu") or _test in _EXCLUDED:
            delattr(_case, _test)
del _case, _test  # not collected twice under these names
globals().update(_cases)


def test_at_least_three_quarters_of_the_suite_runs_and_every_exclusion_names_a_real_test():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        everything = onnx.backend.test.BackendTest(backend, "all")
    names = {n[:-4] for case in everything.test_cases.values() for n in dir(case)
             if n.startswith("test_") and n.endswith("_cpu")}
    excluded = [n for group in EXCLUDED.values() for n in group]
    assert len(set(excluded)) == len(excluded)
    assert set(excluded) <= names, sorted(set(excluded) - names)
    assert (len(names) - len(excluded)) / len(names) >= 0.75, (len(names), len(excluded))
