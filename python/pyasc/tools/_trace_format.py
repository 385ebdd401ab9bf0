"""A profile as Chrome trace-event JSON (the format Perfetto and chrome://tracing open).

Three processes group the tracks: ``host threads`` (one track per Python or stream thread:
tracing, compiles and their passes, launches, copies, synchronisations, pool allocations),
``cores`` (one track per worker thread: the blocks it ran, named by kernel) and ``streams`` (one
track per stream, and one per thread for its synchronous launches: the kernels and stream tasks). A flow
arrow leads from each launch to each kernel it ran. Times are microseconds from the first event.
"""

from __future__ import annotations

from typing import Any, Dict, List

HOST, CORES, STREAMS = 1, 2, 3
_HOST_KINDS = {"trace", "compile", "pass", "launch", "copy", "sync", "alloc", "free"}


#: Track ids of synchronous launches start here (one track per launching thread, so kernels run
#: at once by different threads never overlap on one track); streams keep their own ids.
SYNC_TRACK = 1 << 20


def _stream_track(e: Dict[str, Any]) -> int:
    return e["stream"] if e["stream"] is not None else SYNC_TRACK + e["thread"]


def _meta(pid: int, tid: Any, what: str, name: str) -> Dict[str, Any]:
    e: Dict[str, Any] = {"ph": "M", "pid": pid, "name": what, "args": {"name": name}}
    if tid is not None:
        e["tid"] = tid
    return e


def chrome_trace(prof: Any) -> Dict[str, Any]:
    """Build the trace of ``prof`` (a finished :class:`pyasc.profile`)."""
    events = prof.events
    t0 = min((e["start_ns"] for e in events), default=0)

    def us(ns: int) -> float:
        return (ns - t0) / 1e3

    kernel_names = {e["counters"].get("id"): e["name"] for e in events if e["kind"] == "kernel"}
    out: List[Dict[str, Any]] = [
        _meta(HOST, None, "process_name", "pyasc host threads"),
        _meta(CORES, None, "process_name", "pyasc worker cores"),
        _meta(STREAMS, None, "process_name", "pyasc streams"),
    ]
    for pid, order in ((HOST, 0), (STREAMS, 1), (CORES, 2)):
        out.append({"ph": "M", "pid": pid, "name": "process_sort_index", "args": {"sort_index": order}})
    host_threads, cores, streams = set(), set(), set()
    launches = {}
    for e in events:
        args: Dict[str, Any] = dict(e["counters"])
        args.update({k: v for k, v in e["labels"].items() if k in ("operator", "ops", "input_shapes",
                                                                 "input_dtypes", "output_shapes", "output_dtypes")})
        if e["notes"]:
            args["notes"] = e["notes"]
        if e["stream"] is not None:
            args["stream"] = e["stream"]
        kind = e["kind"]
        name = e["name"]
        if kind == "block":
            pid, tid = CORES, e["thread"]
            name = kernel_names.get(e["counters"].get("kernel"), "block")
            cores.add(tid)
        elif kind in ("kernel", "task"):
            pid, tid = STREAMS, _stream_track(e)
            streams.add(tid)
        else:
            pid, tid = HOST, e["thread"]
            host_threads.add(tid)
        if kind == "launch":
            launches[e["counters"]["id"]] = e
        out.append({"name": name, "cat": kind, "ph": "X", "pid": pid, "tid": tid, "ts": us(e["start_ns"]),
                    "dur": (e["end_ns"] - e["start_ns"]) / 1e3, "args": args})
    for e in events:
        if e["kind"] != "kernel":
            continue
        launch = launches.get(e["counters"].get("launch"))
        if launch is None:
            continue
        fid = e["counters"]["id"]
        out.append({"name": "launch", "cat": "flow", "ph": "s", "id": fid, "pid": HOST, "tid": launch["thread"],
                    "ts": us(launch["start_ns"])})
        out.append({"name": "launch", "cat": "flow", "ph": "f", "bp": "e", "id": fid, "pid": STREAMS,
                    "tid": _stream_track(e), "ts": us(e["start_ns"])})
    for t in sorted(host_threads):
        out.append(_meta(HOST, t, "thread_name", f"thread {t}"))
    for t in sorted(cores):
        out.append(_meta(CORES, t, "thread_name", f"core (thread {t})"))
    for s in sorted(streams):
        name = f"stream 0 (synchronous, thread {s - SYNC_TRACK})" if s >= SYNC_TRACK else f"stream {s}"
        out.append(_meta(STREAMS, s, "thread_name", name))
    return {"traceEvents": out, "displayTimeUnit": "ns",
            "otherData": {"producer": "pyasc", "epoch_ns": t0}}
