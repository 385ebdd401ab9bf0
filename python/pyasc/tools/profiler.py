"""``pyasc.profile``: what ran, where, for how long, and how close to the machine's roofs.

``with pyasc.profile() as prof:`` collects pyasc's event stream, recorded in Rust into one
buffer per thread: tracing and compiling (each pass, lowering included), launches and the
kernels they ran (op types, stream, block count, bytes, FLOPs, shapes and dtypes), every block
on every core, stream tasks, copies, synchronisations and pool allocations and frees. Then:

* :meth:`profile.export_chrome_trace` — Chrome trace-event JSON for Perfetto or chrome://tracing:
  a track per thread (launches, compiles, copies), per core (blocks) and per stream (kernels),
  with flow arrows from each launch to the kernels it ran;
* :meth:`profile.export_csv` — an ``op_summary`` CSV with msprof's column names, plus bytes,
  GB/s, GFLOP/s and the fraction of the measured roofs;
* :meth:`profile.key_averages` / :meth:`profile.summary` — a table per operator, sorted by
  total time, as torch.profiler prints;
* :meth:`profile.export_html` — one self-contained page: timeline, top kernels, roofline and
  each compiled operator's graph IR, fusion groups and tile programs.
"""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from typing import Any, Dict, List, Optional

from .. import _pyasc

__all__ = ["profile", "KeyAverages", "OP_SUMMARY_COLUMNS"]

#: msprof's op_summary columns, then pyasc's additions.
OP_SUMMARY_COLUMNS = [
    "Op Name", "OP Type", "Task Type", "Stream ID", "Task Start Time(us)", "Task Duration(us)",
    "Task Wait Time(us)", "Block Dim", "Input Shapes", "Input Data Types", "Output Shapes",
    "Output Data Types", "Kernel Name", "Bytes Read", "Bytes Written", "FLOPs", "Achieved GB/s",
    "Achieved GFLOP/s", "Bandwidth Fraction", "Compute Fraction", "Bound",
]


class KeyAverages(list):
    """Rows of :meth:`profile.key_averages` (one dict per operator), sorted by total time."""

    def table(self, sort_by: str = "total_us", row_limit: Optional[int] = None) -> str:
        """Return the rows as a fixed-width text table, sorted by ``sort_by`` (largest first)."""
        rows = sorted(self, key=lambda r: r[sort_by], reverse=True)[:row_limit]
        head = ["Name", "Calls", "Kernels", "Total(us)", "Total %", "Avg(us)", "Min(us)", "Max(us)",
                "GB/s", "GFLOP/s", "Bound"]
        body = [[r["name"], str(r["calls"]), str(r["kernels"]), f"{r['total_us']:.1f}", f"{r['percent']:.1f}%",
                 f"{r['avg_us']:.1f}", f"{r['min_us']:.1f}", f"{r['max_us']:.1f}", f"{r['gbs']:.2f}",
                 f"{r['gflops']:.2f}", r["bound"]] for r in rows]
        widths = [max(len(c[i]) for c in [head] + body) for i in range(len(head))]
        line = "-" * (sum(widths) + 2 * (len(head) - 1))

        def fmt(cells: List[str]) -> str:
            return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))

        total = sum(r["total_us"] for r in self)
        return "\n".join([line, fmt(head), line, *map(fmt, body), line, f"Total kernel time: {total:.1f} us"])

    def __str__(self) -> str:
        return self.table()


def _gb(n: float, us: float) -> float:
    return n / (us * 1e3) if us > 0 else 0.0


class profile:
    """Collect pyasc's events while the ``with`` block runs.

    ``with pyasc.profile() as p: ...`` then ``p.events`` holds one dict per event, ordered by
    start (an enclosing event before what it encloses): ``kind`` (``"trace"``, ``"compile"``,
    ``"pass"``, ``"launch"``, ``"kernel"``, ``"block"``, ``"task"``, ``"copy"``, ``"sync"``,
    ``"alloc"`` or ``"free"``), ``name``, ``start_ns``, ``end_ns``, ``micros``, ``thread``,
    ``stream`` (the stream whose worker ran it, or ``None``), ``counters``, ``labels`` and
    ``notes``. Work queued on streams is recorded once it has run: synchronise inside the block.
    """

    def __init__(self) -> None:
        """Create a profiler; collection starts on entering the ``with`` block."""
        self.events: List[Dict[str, Any]] = []
        self._collector: Any = None
        self._roofs: Optional[Dict[str, Any]] = None

    def __enter__(self) -> profile:
        self._collector = _pyasc.EventCollector()
        return self

    def __exit__(self, *exc: Any) -> bool:
        self.events = self._collector.finish()
        self._collector = None
        return False

    # -- raw views -------------------------------------------------------------------------

    def kernels(self) -> List[Dict[str, Any]]:
        """Return the kernel events (one per kernel of every launch)."""
        return [e for e in self.events if e["kind"] == "kernel"]

    def launches(self) -> List[Dict[str, Any]]:
        """Return the launch events (one per operator call that ran or queued kernels)."""
        return [e for e in self.events if e["kind"] == "launch"]

    @property
    def roofs(self) -> Dict[str, Any]:
        """The machine's measured roofs (:func:`pyasc.device.roofs.peaks`, cached on disk)."""
        if self._roofs is None:
            from ..device.roofs import peaks

            self._roofs = peaks()
        return self._roofs

    def compiled_ops(self) -> Dict[str, Dict[str, str]]:
        """Return what each launched operator was compiled to.

        Per operator: ``graph_ir``, ``traced_ir``, ``fusion``
        (``kernel<TAB>fused ops<TAB>source lines`` per line) and ``tile_programs`` (a list).
        """
        out: Dict[str, Dict[str, Any]] = {}
        for e in self.launches():
            lab = e["labels"]
            if "graph_ir" in lab and lab["operator"] not in out:
                out[lab["operator"]] = {"graph_ir": lab["graph_ir"], "traced_ir": lab.get("traced_ir", ""),
                                        "fusion": lab.get("fusion", ""),
                                        "tile_programs": lab.get("tile_programs", "").split("\n\x1e")}
        return out

    def records(self) -> List[Dict[str, Any]]:
        """Return one dict per kernel run, in start order.

        Each holds: operator, kernel, op types, task type, stream,
        start/duration/wait (us), blocks (each ``(thread, start_us, end_us)``), shapes, dtypes,
        bytes, FLOPs, achieved GB/s and GFLOP/s, their fractions of the roofs and the bound.
        """
        launches = {e["counters"]["id"]: e for e in self.launches()}
        blocks: Dict[int, List[Any]] = defaultdict(list)
        for e in self.events:
            if e["kind"] == "block" and e["counters"].get("kernel"):
                blocks[e["counters"]["kernel"]].append((e["thread"], e["start_ns"] / 1e3, e["end_ns"] / 1e3))
        roofs = self.roofs
        last_end: Dict[int, float] = {}
        out = []
        for k in self.kernels():
            c, lab = k["counters"], k["labels"]
            launch = launches.get(c.get("launch", 0))
            stream = k["stream"] or 0
            start, us = k["start_ns"] / 1e3, k["micros"]
            wait = max(0.0, start - last_end[stream]) if stream in last_end else 0.0
            last_end[stream] = k["end_ns"] / 1e3
            moved = c.get("bytes_read", 0) + c.get("bytes_written", 0)
            flops = c.get("flops", 0)
            gbs, gflops = _gb(moved, us), _gb(flops, us)
            intensity = flops / moved if moved else float("inf")
            ops = lab.get("ops", "")
            out.append({
                "operator": launch["labels"]["operator"] if launch else k["name"].rsplit("_k", 1)[0],
                "kernel": k["name"], "ops": ops,
                "task_type": "AI_CORE" if "matmul" in ops.split(",") else "AI_VECTOR_CORE",
                "stream": stream, "thread": k["thread"], "launch": c.get("launch", 0), "id": c.get("id", 0),
                "launch_thread": launch["thread"] if launch else k["thread"],
                "launch_us": launch["start_ns"] / 1e3 if launch else start,
                "start_us": start, "duration_us": us, "wait_us": wait, "block_dim": c.get("blocks", 0),
                "blocks": sorted(blocks.get(c.get("id", -1), []), key=lambda b: b[1]),
                "elements": c.get("elements", 0),
                "input_shapes": lab.get("input_shapes", ""), "input_dtypes": lab.get("input_dtypes", ""),
                "output_shapes": lab.get("output_shapes", ""), "output_dtypes": lab.get("output_dtypes", ""),
                "bytes_read": c.get("bytes_read", 0), "bytes_written": c.get("bytes_written", 0), "flops": flops,
                "gbs": gbs, "gflops": gflops, "intensity": intensity,
                "bw_fraction": gbs / roofs["triad_gbs"] if roofs["triad_gbs"] else 0.0,
                "compute_fraction": gflops / roofs["fma_gflops"] if roofs["fma_gflops"] else 0.0,
                "bound": _bound(intensity, roofs),
            })
        return out

    # -- tables ----------------------------------------------------------------------------

    def _kernel_sources(self) -> Dict[str, str]:
        """Return each kernel's source lines (the user's lines of its fused ops), joined by " + "."""
        out: Dict[str, str] = {}
        for op in self.compiled_ops().values():
            for line in op["fusion"].split("\n"):
                parts = line.split("\t")
                if len(parts) == 3:
                    out[parts[0]] = " + ".join(parts[2].split()) or parts[0]
        return out

    def key_averages(self, group_by: str = "operator") -> KeyAverages:
        """Return one row per operator (or, with ``group_by="source"``, per source line), sorted by total kernel time.

        Each row (``name``, ``calls``, ``kernels``, ``total_us``, ``percent``,
        ``avg_us``, ``min_us``, ``max_us``, ``bytes``, ``flops``, ``gbs``, ``gflops``, ``bound``),
        sorted by total kernel time, largest first. ``group_by="source"`` names each kernel by
        the user's lines its ops came from (fused lines joined by ``+``): for a model from
        :func:`pyasc.onnx.load`, its ONNX nodes.
        """
        if group_by not in ("operator", "source"):
            raise ValueError(f"group_by is 'operator' or 'source', not {group_by!r}")
        sources = self._kernel_sources() if group_by == "source" else {}
        per_launch: Dict[Any, float] = defaultdict(float)
        groups: Dict[str, List[Dict[str, Any]]] = defaultdict(list)
        for r in self.records():
            key = sources.get(r["kernel"], r["kernel"]) if group_by == "source" else r["operator"]
            groups[key].append(r)
            per_launch[(key, r["launch"])] += r["duration_us"]
        total = sum(r["duration_us"] for rs in groups.values() for r in rs) or 1.0
        rows = KeyAverages()
        for name, rs in groups.items():
            calls = [t for (op, _), t in per_launch.items() if op == name]
            t = sum(calls)
            moved = sum(r["bytes_read"] + r["bytes_written"] for r in rs)
            flops = sum(r["flops"] for r in rs)
            intensity = flops / moved if moved else float("inf")
            rows.append({"name": name, "calls": len(calls), "kernels": len(rs), "total_us": t,
                         "percent": 100.0 * t / total, "avg_us": t / len(calls), "min_us": min(calls),
                         "max_us": max(calls), "bytes": moved, "flops": flops, "gbs": _gb(moved, t),
                         "gflops": _gb(flops, t), "bound": _bound(intensity, self.roofs)})
        rows.sort(key=lambda r: r["total_us"], reverse=True)
        return rows

    def summary(self, row_limit: Optional[int] = None, group_by: str = "operator") -> str:
        """:meth:`key_averages` as a text table (largest total time first)."""
        return self.key_averages(group_by).table(row_limit=row_limit)

    # -- files -----------------------------------------------------------------------------

    def export_csv(self, path: str) -> None:
        """Write the ``op_summary`` CSV (:data:`OP_SUMMARY_COLUMNS`, one row per kernel run)."""
        with open(path, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(OP_SUMMARY_COLUMNS)
            for r in self.records():
                w.writerow([r["operator"], r["ops"], r["task_type"], r["stream"], f"{r['start_us']:.3f}",
                            f"{r['duration_us']:.3f}", f"{r['wait_us']:.3f}", r["block_dim"],
                            r["input_shapes"], r["input_dtypes"], r["output_shapes"],
                            r["output_dtypes"], r["kernel"], r["bytes_read"], r["bytes_written"], r["flops"],
                            f"{r['gbs']:.3f}", f"{r['gflops']:.3f}", f"{r['bw_fraction']:.4f}",
                            f"{r['compute_fraction']:.4f}", r["bound"]])

    def chrome_trace(self) -> Dict[str, Any]:
        """Return the events in the Chrome trace-event format (Perfetto, chrome://tracing)."""
        from ..device.npu_cost import trace_events
        from ._trace_format import chrome_trace

        trace = chrome_trace(self)
        # Operators on the NPU twin: the modelled NPU's pipelines beside the host timeline.
        trace["traceEvents"].extend(trace_events(self))
        return trace

    def export_chrome_trace(self, path: str) -> None:
        """Write :meth:`chrome_trace` as JSON to ``path``."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.chrome_trace(), f)

    save_chrome_trace = export_chrome_trace

    def export_html(self, path: str) -> None:
        """Write the self-contained HTML report (timeline, top kernels, roofline, compiled ops)."""
        from ._report_html import render

        with open(path, "w", encoding="utf-8") as f:
            f.write(render(self))

    def __repr__(self) -> str:
        return f"profile({len(self.events)} events)"


def _bound(intensity: float, roofs: Dict[str, Any]) -> str:
    from ..device.roofs import bound

    return bound(intensity, roofs)


#: Set by ``pyasc prof``: profile the whole process and write the files into this directory.
PROF_DIR_ENV = "PYASC_PROF_DIR"
#: Comma-separated formats to write (``html``, ``csv``, ``trace``).
PROF_FORMATS_ENV = "PYASC_PROF_FORMATS"


def write_files(prof: profile, directory: str, formats: List[str], stem: str) -> List[str]:
    """Write ``prof`` to ``directory`` in each of ``formats``.

    The files are ``stem.html``, ``stem_op_summary.csv`` and
    ``stem_trace.json`` (those of ``formats``); returns the paths written.
    """
    import os

    os.makedirs(directory, exist_ok=True)
    written = []
    for fmt, suffix, write in (("html", ".html", prof.export_html), ("csv", "_op_summary.csv", prof.export_csv),
                               ("trace", "_trace.json", prof.export_chrome_trace)):
        if fmt in formats:
            path = os.path.join(directory, stem + suffix)
            write(path)
            written.append(path)
    return written


def start_from_environment() -> None:
    """Profile this whole process when ``PYASC_PROF_DIR`` is set.

    ``pyasc prof`` sets it; the files are written when the process exits.
    """
    import atexit
    import os

    directory = os.environ.get(PROF_DIR_ENV)
    if not directory:
        return
    formats = [f.strip() for f in os.environ.get(PROF_FORMATS_ENV, "html,csv,trace").split(",") if f.strip()]
    prof = profile()
    prof.__enter__()

    def finish() -> None:
        try:
            import pyasc

            pyasc.synchronize()
        except Exception:  # noqa: BLE001 - queued work that failed still leaves its events
            pass
        prof.__exit__(None, None, None)
        write_files(prof, directory, formats, f"pyasc_prof_{os.getpid()}")

    atexit.register(finish)
