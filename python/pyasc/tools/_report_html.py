"""A profile as one self-contained HTML page: no network, inline SVG drawn by inline script.

The page shows a zoomable timeline (one row per host thread, per stream and per worker core),
the top kernels, a roofline (each kernel run a point against the measured memory and FMA roofs)
and, per compiled operator, its graph IR, fusion groups and tile programs. The profile's data
is embedded as JSON; the script and style ship in ``pyasc/_report/`` next to this module.
"""

from __future__ import annotations

import html
import json
from importlib import resources
from typing import Any, Dict, List

_HOST_KINDS = ("trace", "compile", "pass", "launch", "copy", "sync", "alloc", "free")


def report_data(prof: Any) -> Dict[str, Any]:
    """Return the JSON the page draws from: roofs, kernel records, host and stream spans, compiled ops."""
    events = prof.events
    t0 = min((e["start_ns"] for e in events), default=0)

    def us(ns: int) -> float:
        return round((ns - t0) / 1e3, 3)

    kernels: List[Dict[str, Any]] = []
    for r in prof.records():
        kernels.append({
            "id": r["id"], "operator": r["operator"], "kernel": r["kernel"], "ops": r["ops"], "stream": r["stream"],
            "thread": r["thread"],
            "start": round(r["start_us"] - t0 / 1e3, 3), "dur": round(r["duration_us"], 3),
            "launchThread": r["launch_thread"], "launchAt": round(r["launch_us"] - t0 / 1e3, 3),
            "blocks": [[b[0], round(b[1] - t0 / 1e3, 3), round(b[2] - t0 / 1e3, 3)] for b in r["blocks"]],
            "blockDim": r["block_dim"], "bytes": r["bytes_read"] + r["bytes_written"], "flops": r["flops"],
            "gbs": r["gbs"], "gflops": r["gflops"],
            "intensity": None if r["intensity"] == float("inf") else r["intensity"],
            "bound": r["bound"], "bw": r["bw_fraction"], "fma": r["compute_fraction"],
            "inShapes": r["input_shapes"], "inTypes": r["input_dtypes"], "outShapes": r["output_shapes"],
            "outTypes": r["output_dtypes"],
        })
    host = [{"kind": e["kind"], "name": e["name"], "thread": e["thread"], "start": us(e["start_ns"]),
             "dur": round((e["end_ns"] - e["start_ns"]) / 1e3, 3), "bytes": e["counters"].get("bytes", 0)}
            for e in events if e["kind"] in _HOST_KINDS]
    tasks = [{"name": e["name"], "stream": e["stream"] or 0, "start": us(e["start_ns"]),
              "dur": round((e["end_ns"] - e["start_ns"]) / 1e3, 3)} for e in events if e["kind"] == "task"]
    roofs = {k: prof.roofs[k] for k in ("copy_gbs", "triad_gbs", "fma_gflops", "isa", "threads")}
    return {"roofs": roofs, "kernels": kernels, "host": host, "tasks": tasks,
            "ops": prof.compiled_ops(), "summary": list(prof.key_averages())}


def _asset(name: str) -> str:
    return resources.files("pyasc.tools").joinpath("_report", name).read_text(encoding="utf-8")


def render(prof: Any, title: str = "pyasc profile") -> str:
    """Return the report page of ``prof`` as a string."""
    data = json.dumps(report_data(prof), separators=(",", ":")).replace("</", "<\\/")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{html.escape(title)}</title><style>{_asset('report.css')}</style></head><body>"
        f"<h1>{html.escape(title)}</h1>"
        "<div id=\"facts\"></div>"
        "<h2>Timeline</h2><p class=\"hint\">Wheel: zoom at the pointer. Drag: pan. Double-click: reset.</p>"
        "<div id=\"timeline\"></div><div id=\"tip\" hidden></div>"
        "<h2>Top kernels</h2><table id=\"top\"></table>"
        "<h2>Roofline</h2><div id=\"roofline\"></div>"
        "<h2>Compiled operators</h2><div id=\"ops\"></div>"
        f"<script type=\"application/json\" id=\"data\">{data}</script>"
        f"<script>{_asset('report.js')}</script></body></html>\n"
    )
