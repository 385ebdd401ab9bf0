"""The profiler as a user sees it: the HTML report in headless chromium, and ``pyasc prof``."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pyasc
from browser_support import chromium_path, open_page


def _profile_mixed():
    gelu = pyasc.operator(lambda v: v * 0.5 * (1.0 + pyasc.erf(v / 1.41421)), kernel_name="rp_gelu")
    softmax = pyasc.operator(lambda v: np.exp(v - v.max(axis=-1, keepdims=True)) /
                             np.exp(v - v.max(axis=-1, keepdims=True)).sum(axis=-1, keepdims=True),
                             kernel_name="rp_softmax")
    mm = pyasc.operator(lambda a, b: a @ b, kernel_name="rp_mm")
    x = np.linspace(-3, 3, 1 << 18, dtype=np.float32)
    m = np.linspace(0, 1, 256 * 512, dtype=np.float32).reshape(256, 512)
    a = np.ones((128, 96), np.float32)
    s = pyasc.Stream()
    with pyasc.profile() as prof:
        for _ in range(2):
            gelu(x)
            softmax(m)
            mm(a, a.T)
        with pyasc.stream(s):
            gelu(pyasc.to_device(x))
        pyasc.synchronize()
    return prof


_PAGE_FACTS = [
    "[...document.querySelectorAll('#timeline rect.kernel')].map(r => Number(r.dataset.id))",
    "[...document.querySelectorAll('#roofline circle.point')].map(c => Number(c.dataset.id))",
    "[...document.querySelectorAll('#timeline rect.kernel')].every(r => r.getBoundingClientRect().width >= 1)",
    "[...document.querySelectorAll('#roofline circle.point')].every(c => { const b = c.getBoundingClientRect(),"
    " s = document.querySelector('#roofline svg').getBoundingClientRect();"
    " return b.left >= s.left && b.right <= s.right && b.top >= s.top && b.bottom <= s.bottom; })",
    "[...document.querySelectorAll('#top tr.top-row')].map(r => r.cells[1].textContent)",
    "[...document.querySelectorAll('#ops details.op')].map(d => d.querySelector('summary').textContent)",
    "document.querySelector('#ops').textContent",
    "document.querySelectorAll('#roofline polyline.roof-triad').length",
]


def test_chromium_is_installed():
    # Fails (never skips) with the install command when chromium is missing.
    assert os.access(chromium_path(), os.X_OK)


def test_report_page_shows_every_kernel_on_timeline_and_roofline(tmp_path):
    prof = _profile_mixed()
    path = tmp_path / "report.html"
    prof.export_html(str(path))
    page = path.read_text()
    assert "<link" not in page and "src=" not in page and "@import" not in page  # nothing fetched
    r = open_page(path, evaluate=_PAGE_FACTS, wait_for="window.pyascReport && window.pyascReport.ready")
    assert r["console_errors"] == [] and r["status"] is None
    timeline, roofline, wide, inside, top, ops, ops_text, roofs = r["evaluate"]
    ids = sorted(k["counters"]["id"] for k in prof.kernels())
    assert len(ids) == 7
    assert sorted(timeline) == ids and sorted(roofline) == ids
    assert wide and inside and roofs == 1
    totals = {}
    for rec in prof.records():
        totals[rec["kernel"]] = totals.get(rec["kernel"], 0.0) + rec["duration_us"]
    assert top == sorted(totals, key=totals.get, reverse=True)
    assert set(top) == {"rp_gelu_k0", "rp_softmax_k0", "rp_mm_k0"}
    assert len(ops) == 3 and all(o.split(" (")[0] in prof.compiled_ops() for o in ops)
    for compiled in prof.compiled_ops().values():
        assert compiled["graph_ir"].splitlines()[0] in ops_text
        assert all(p.splitlines()[0] in ops_text for p in compiled["tile_programs"])


def test_timeline_zooms_at_the_pointer(tmp_path):
    prof = _profile_mixed()
    path = tmp_path / "report.html"
    prof.export_html(str(path))
    width = ("[...document.querySelectorAll('#timeline rect.kernel')]"
             ".reduce((s, r) => s + Number(r.getAttribute('width')), 0)")
    zoom = ("(() => { const s = document.querySelector('#timeline svg'), b = s.getBoundingClientRect();"
            " for (let i = 0; i < 5; i++) s.dispatchEvent(new WheelEvent('wheel', {deltaY: -100,"
            " clientX: b.left + b.width / 2, clientY: b.top + 30, bubbles: true, cancelable: true}));"
            " return true; })()")
    reset = "(() => { document.querySelector('#timeline svg').dispatchEvent(new MouseEvent('dblclick')); return 1; })()"
    r = open_page(path, evaluate=[width, zoom, width, reset, width])
    before, _, zoomed, _, after = r["evaluate"]
    assert r["console_errors"] == []
    assert zoomed > before * 2 and abs(after - before) < 1e-6 * before + 1e-3


def test_pyasc_prof_profiles_a_whole_script(tmp_path):
    script = tmp_path / "work.py"
    script.write_text(textwrap.dedent("""
        import sys
        import numpy as np
        import pyasc

        op = pyasc.operator(lambda v: v * 2.0 + 1.0, kernel_name="cli_op")
        x = np.ones(50_000, np.float32)
        for _ in range(int(sys.argv[1])):
            op(x)
        print("ran", sys.argv[1])
    """))
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYASC_")}
    done = subprocess.run([sys.executable, "-m", "pyasc.cli", "prof", "--html", "--csv", "--trace", "-o", str(out),
                           "--", "python", str(script), "5"], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "ran 5" in done.stdout and str(out) in done.stdout
    files = sorted(os.listdir(out))
    assert len(files) == 3 and {f.split("_", 3)[-1] for f in files} >= {"op_summary.csv", "trace.json"}
    csv_path = next(out / f for f in files if f.endswith(".csv"))
    with open(csv_path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["Kernel Name"] == "cli_op_k0"]
    assert len(rows) == 5 and all(r["Input Shapes"] == "50000" for r in rows)
    trace = json.loads(next(out / f for f in files if f.endswith(".json")).read_text())
    assert len([e for e in trace["traceEvents"] if e.get("cat") == "kernel" and e["name"] == "cli_op_k0"]) == 5
    html_path = next(out / f for f in files if f.endswith(".html"))
    r = open_page(html_path, evaluate=["window.pyascReport"])
    assert r["console_errors"] == [] and r["evaluate"][0]["timelineKernels"] == 5
    assert r["evaluate"][0]["rooflinePoints"] == 5


def test_pyasc_prof_without_a_program_says_how():
    done = subprocess.run([sys.executable, "-m", "pyasc.cli", "prof"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "usage: pyasc prof" in done.stderr


def test_info_peaks_measures_once_then_reads_the_cache(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYASC_")}
    env["PYASC_DUMP_DIR"] = str(tmp_path)
    first = subprocess.run([sys.executable, "-m", "pyasc.cli", "info", "--peaks"], capture_output=True, text=True,
                           env=env, timeout=300)
    assert first.returncode == 0, first.stderr
    assert "measured now" in first.stdout and "GB/s" in first.stdout and "GFLOP/s" in first.stdout
    saved = json.loads((tmp_path / "peaks.json").read_text())["peaks"]
    assert saved["copy_gbs"] > 0 and saved["triad_gbs"] > 0 and saved["fma_gflops"] > 0
    # Buffers far larger than the last-level cache.
    assert saved["buffer_bytes"] >= max(8 * saved["llc_bytes"], 64 << 20)
    second = subprocess.run([sys.executable, "-m", "pyasc.cli", "info", "--peaks"], capture_output=True, text=True,
                            env=env, timeout=300)
    assert "cached in" in second.stdout and "measured now" not in second.stdout
    assert f"{saved['triad_gbs']:8.1f} GB/s" in second.stdout


def test_kernels_are_classified_against_the_roofs():
    from pyasc.device.roofs import bound

    roofs = {"triad_gbs": 20.0, "fma_gflops": 200.0, "copy_gbs": 18.0}  # ridge at 10 FLOP/byte
    assert bound(0.25, roofs) == "memory" and bound(9.9, roofs) == "memory"
    assert bound(10.0, roofs) == "compute" and bound(float("inf"), roofs) == "compute"
    prof = _profile_mixed()
    ridge = prof.roofs["fma_gflops"] / prof.roofs["triad_gbs"]
    for r in prof.records():
        assert r["bound"] == ("memory" if r["flops"] / (r["bytes_read"] + r["bytes_written"]) < ridge else "compute")
