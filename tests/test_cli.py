"""The ``pyasc`` command line: info, doctor and demo, run as subprocesses."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest
from pyasc import _env
from pyasc.errors import InvalidArgumentError


def _pyasc(*args: str, **env: str) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("PYASC_")}
    full_env.update(env)
    return subprocess.run(
        [sys.executable, "-m", "pyasc.cli", *args],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=300,
    )


def _meminfo_total() -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no MemTotal")


def _rows(out: str):
    return [[c.strip() for c in line.strip("|").split("|")] for line in out.splitlines() if line.startswith("| ")]


def test_info_prints_a_device_table():
    r = _pyasc("info")
    assert r.returncode == 0, r.stderr
    header, *rows = _rows(r.stdout)
    assert header == ["ID", "Name", "Kind", "Cores", "SIMD ISA", "Memory used / total", "Util", "Temp", "Health"]
    assert [row[0] for row in rows] == ["0", "1"]
    assert [row[2] for row in rows] == ["cpu", "npu twin"]
    cores = len(os.sched_getaffinity(0))
    for row in rows:
        assert row[3] == str(cores)
        assert row[4] in {"avx512", "avx2+fma", "sse2", "neon", "scalar"}
        used, total = row[5].split(" / ")
        assert used == "0 B"
        assert total == _env.fmt_bytes(_meminfo_total())
        assert re.fullmatch(r"\d+\.\d%", row[6]) and 0.0 <= float(row[6][:-1]) <= 100.0
        assert row[8] == "OK"
        if row[7] == "n/a":
            assert re.search(r"Temp n/a: \S", r.stdout), r.stdout
        else:
            assert 0.0 < float(row[7].split()[0]) < 150.0


def test_info_takes_the_memory_limit_from_the_environment():
    r = _pyasc("info", PYASC_MEMORY_LIMIT="3G")
    assert r.returncode == 0, r.stderr
    assert all(row[5].endswith("/ 3.0 GiB") for row in _rows(r.stdout)[1:])
    bad = _pyasc("info", PYASC_MEMORY_LIMIT="lots")
    assert bad.returncode != 0 and "'lots' is not a size" in bad.stderr


def test_doctor_passes_here(tmp_path):
    r = _pyasc("doctor", PYASC_DUMP_DIR=str(tmp_path / "dumps"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "all checks passed" in r.stdout
    assert "FAIL" not in r.stdout
    assert (tmp_path / "dumps").is_dir()
    for name in ("extension", "cpu simd", "threads", "memory limit", "dump dir", "numpy"):
        assert re.search(rf"^(OK|WARN)\s+{name}\s", r.stdout, re.M), (name, r.stdout)


def test_doctor_default_dump_dir(tmp_path):
    r = _pyasc("doctor", HOME=str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / ".cache" / "pyasc").is_dir()


@pytest.mark.parametrize(
    "env, fix",
    [
        ({"PYASC_NUM_THREADS": "abc"}, "fix: set PYASC_NUM_THREADS to a whole number"),
        ({"PYASC_NUM_THREADS": "0"}, "fix: set PYASC_NUM_THREADS to a whole number"),
        ({"PYASC_NUM_THREADS": "100000"}, "fix: set PYASC_NUM_THREADS to at most"),
        ({"PYASC_MEMORY_LIMIT": "12Q"}, "fix: set PYASC_MEMORY_LIMIT to bytes"),
    ],
)
def test_doctor_fails_with_a_fix(env, fix, tmp_path):
    r = _pyasc("doctor", PYASC_DUMP_DIR=str(tmp_path), **env)
    assert r.returncode != 0, r.stdout
    assert fix in r.stdout, r.stdout
    assert "1 check(s) failed" in r.stdout


def test_doctor_rejects_an_unwritable_dump_dir(tmp_path):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    r = _pyasc("doctor", PYASC_DUMP_DIR=str(not_a_dir / "sub"))
    assert r.returncode != 0, r.stdout
    assert re.search(r"^FAIL\s+dump dir", r.stdout, re.M), r.stdout
    assert "fix: point PYASC_DUMP_DIR at a writable directory" in r.stdout
    r = _pyasc("doctor", PYASC_DUMP_DIR=str(not_a_dir))
    assert r.returncode != 0 and "fix: point PYASC_DUMP_DIR" in r.stdout


def test_demo_runs():
    r = _pyasc("demo", "--size", "100000")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "frompyfunc" not in r.stdout, "the demo's NumPy peer must be vectorised"


def test_demo_numpy_erf_is_vectorised_and_accurate():
    import math

    from pyasc.cli.demo import numpy_erf

    x = np.linspace(-6, 6, 2001)
    want = np.array([math.erf(v) for v in x])
    assert np.max(np.abs(numpy_erf(x) - want)) < 1.5e-7
    assert numpy_erf(x.astype(np.float32)).dtype == np.float32


@pytest.mark.parametrize(
    "text, want", [("0", 0), ("123", 123), ("4k", 4096), (" 2M ", 2 << 20), ("3G", 3 << 30), ("1 g", 1 << 30)]
)
def test_parse_bytes(text, want):
    assert _env.parse_bytes(text) == want


@pytest.mark.parametrize("text", ["", "G", "1.5G", "-1", "4T", "12Q", "1GiB"])
def test_parse_bytes_rejects(text):
    with pytest.raises(InvalidArgumentError):
        _env.parse_bytes(text)


def test_fmt_bytes():
    assert [_env.fmt_bytes(n) for n in (None, 0, 1023, 1024, 1536 << 20, 5 << 40)] == [
        "n/a",
        "0 B",
        "1023 B",
        "1.0 KiB",
        "1.5 GiB",
        "5.0 TiB",
    ]


@pytest.mark.parametrize(
    "var, value, accepted",
    [
        ("PYASC_MEMORY_LIMIT", "32MB", "512M or 8G"),
        ("PYASC_LOG", "garbage", "DEBUG, INFO"),
        ("PYASC_NUM_THREADS", "0", "whole number"),
        ("PYASC_ISA", "avx9000", "avx512, avx2"),
        ("PYASC_TILE_BUDGET", "big", "bytes such as 32768"),
        ("PYASC_POOL_CACHE_BYTES", "-5", "bytes such as"),
        ("PYASC_CACHE_SIZE", "lots", "such as 64"),
    ],
)
def test_invalid_environment_is_reported_the_same_everywhere(var, value, accepted):
    code = "import numpy as np, pyasc; print(pyasc.operator(lambda x: x * 2)(np.ones(2, np.float32)))"
    imp = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, var: value})
    assert imp.returncode == 0, imp.stderr
    assert "[2. 2.]" in imp.stdout
    assert "PyAscWarning" in imp.stderr and f"{var}={value!r}" in imp.stderr and accepted in imp.stderr
    info = _pyasc("info", **{var: value})
    assert info.returncode == 2 and f"{var}={value!r}" in info.stderr and accepted in info.stderr
    doc = _pyasc("doctor", **{var: value})
    assert doc.returncode != 0 and f"{var}={value!r}" in doc.stdout and accepted in doc.stdout


@pytest.mark.parametrize("budget, tile", [(None, 4096), ("4096", 512), ("65536", 8192)])
def test_tile_budget_sizes_tiles(budget, tile):
    code = (
        "import numpy as np, pyasc\n"
        "op = pyasc.operator(lambda x: pyasc.exp(x) * 2 + 1)\n"
        "k = op.get_compiled_op(np.ones(1 << 20, np.float32)).kernels()[0]\n"
        "print(k['tile_elems'], pyasc.device_info('cpu')['local_memory_bytes'])\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYASC_")}
    if budget:
        env["PYASC_TILE_BUDGET"] = budget
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [str(tile), budget or "32768"]


def test_plan_caches_are_bounded_and_memory_stays_flat():
    code = (
        "import numpy as np, pyasc, resource\n"
        "op = pyasc.operator(lambda x: x * 2 + 1)\n"
        "def rss(): return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "for n in range(1, 1501): op(np.ones(n, np.float32))\n"
        "half = rss()\n"
        "for n in range(1501, 4501): op(np.ones(n, np.float32)); pyasc.reshape(np.ones(n, np.float32), (1, n))\n"
        "from pyasc import ops\n"
        "print(op.cache_info().currsize, len(ops._eager), rss() - half)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYASC_")}
    env["PYASC_CACHE_SIZE"] = "16"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    size, eager, grown_kib = (int(v) for v in r.stdout.split())
    assert size == 16 and eager <= 16
    # 3000 more new shapes (and 3000 eager reshapes) add no plans: memory does not grow with them.
    assert grown_kib < 20_000, grown_kib
