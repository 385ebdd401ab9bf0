"""The ``pyasc`` command's arguments and the ``PYASC_*`` environment variables, fed bad values.

CLI cases call ``pyasc.cli.main(argv)`` in a child interpreter: argument errors must exit with
argparse's status 2 and a usage message, never a traceback. Environment cases import pyasc in a
child with one variable set to a bad value: the import must succeed (with a ``PyAscWarning``
naming the variable) and operators must still compute NumPy's results.
"""

from __future__ import annotations

import pytest
from harness import check, run_cases

_CLI = """
import contextlib, io
out, err = io.StringIO(), io.StringIO()
status = None
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    try:
        status = pyasc.cli.main(ARGV)
    except SystemExit as e:
        status = e.code
assert status == STATUS, (status, out.getvalue()[-500:], err.getvalue()[-500:])
assert "Traceback" not in out.getvalue() + err.getvalue()
TEXT_CHECK
"""

# name -> (argv, exit status, a substring of stdout+stderr or None)
CLI = {
    "no_command": ([], 2, "usage"),
    "unknown_command": (["bogus"], 2, "invalid choice"),
    "help": (["--help"], 0, "demo"),
    "demo_help": (["demo", "--help"], 0, "--size"),
    "demo_size_text": (["demo", "--size", "abc"], 2, "--size"),
    "demo_size_negative": (["demo", "--size", "-1"], 2, "--size"),
    "demo_size_zero": (["demo", "--size", "0"], 2, "--size"),
    "demo_size_float": (["demo", "--size", "1.5"], 2, "--size"),
    "demo_size_past_address_space": (["demo", "--size", str(2 ** 62)], 2, "--size"),
    "demo_size_8tib": (["demo", "--size", str(2 ** 40)], 1, "pyasc demo"),
    "demo_size_one": (["demo", "--size", "1"], 0, "all checks passed"),
    "demo_size_odd": (["demo", "--size", "1001"], 0, "all checks passed"),
    "demo_extra": (["demo", "extra"], 2, "unrecognized"),
    "info_extra": (["info", "extra"], 2, "unrecognized"),
    "info": (["info"], 0, None),
    "doctor_flag": (["doctor", "--x"], 2, "unrecognized"),
    "bench_unknown_only": (["bench", "--only", "bogus"], 2, "--only"),
    "bench_unknown_flag": (["bench", "--fast"], 2, "unrecognized"),
    "bench_only_missing_value": (["bench", "--only"], 2, "--only"),
}


def _cli_cases():
    for name, (argv, status, text) in CLI.items():
        src = _CLI.replace("ARGV", repr(argv)).replace("STATUS", repr(status))
        src = src.replace("TEXT_CHECK", f"assert {text!r} in out.getvalue() + err.getvalue()" if text else "")
        yield f"cli-{name}", "import pyasc.cli\n" + src


# Variable -> bad values. Each must warn at import and leave operators working.
ENV = {
    "PYASC_NUM_THREADS": ["0", "-3", "abc", "1.5"],
    "PYASC_MEMORY_LIMIT": ["32MB", "-1", "abc", "1e999"],
    "PYASC_ISA": ["bogus", "AVX1024"],
    "PYASC_TILE_BUDGET": ["0", "-1", "abc"],
    "PYASC_POOL_CACHE_BYTES": ["-1", "abc"],
    "PYASC_CACHE_SIZE": ["0", "-1", "abc"],
    "PYASC_LOG": ["garbage", "42"],
}

_ENV_CASE = """
import subprocess
# This child imported pyasc with the bad value already; a fresh one shows the import's warning.
proc = subprocess.run([sys.executable, "-W", "always", "-c", "import pyasc"], capture_output=True, text=True,
                      timeout=60)
assert proc.returncode == 0, proc.stderr[-800:]
assert "PyAscWarning" in proc.stderr and "VAR" in proc.stderr, proc.stderr[-800:]
x = np.random.default_rng(0).uniform(-2, 2, (37, 129)).astype(np.float32)
op = pyasc.operator(lambda t: (t * 2 + 1).sum(axis=1))
want = (x.astype(np.float64) * 2 + 1).sum(axis=1).astype(np.float32)
same(op(x), want, ulp=1)
same(op(x), want, ulp=1)
"""


def _env_cases():
    for var, values in ENV.items():
        for i, value in enumerate(values):
            yield f"env-{var}-{i}", var, value


ENV_CASES = {name: (var, value) for name, var, value in _env_cases()}
CASES = dict(_cli_cases())


@pytest.fixture(scope="module")
def outcomes():
    return run_cases(CASES.items(), batch=20, timeout=120)


@pytest.mark.parametrize("name", sorted(CASES))
def test_cli_arguments(name, outcomes):
    check(outcomes, name)


@pytest.fixture(scope="module")
def env_outcomes():
    results = {}
    for name, (var, value) in ENV_CASES.items():
        # The prelude imports pyasc, so the variable must be set before the child starts.
        results.update(run_cases([(name, _ENV_CASE.replace("VAR", var))], env={var: value}))
    return results


@pytest.mark.parametrize("name", sorted(ENV_CASES))
def test_bad_environment_values(name, env_outcomes):
    check(env_outcomes, name)
