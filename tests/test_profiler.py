"""The profiler's recorder, tables and files: ordering, nesting, threads, streams, facts, CSV, trace."""

from __future__ import annotations

import csv
import json
import threading

import numpy as np
import pyasc
import pytest
from pyasc.tools.profiler import OP_SUMMARY_COLUMNS

MSPROF_COLUMNS = ["Op Name", "OP Type", "Task Type", "Stream ID", "Task Start Time(us)", "Task Duration(us)",
                  "Task Wait Time(us)", "Block Dim", "Input Shapes", "Input Data Types", "Output Shapes",
                  "Output Data Types"]


def _assert_tracks_nest(events):
    """Slices of one track must nest: Perfetto draws overlapping ones wrongly."""
    tracks = {}
    for e in events:
        if e["ph"] == "X":
            tracks.setdefault((e["pid"], e["tid"]), []).append(e)
    for slices in tracks.values():
        stack = []
        for e in sorted(slices, key=lambda e: (e["ts"], -e["dur"])):
            while stack and stack[-1] <= e["ts"] + 1e-3:
                stack.pop()
            assert not stack or e["ts"] + e["dur"] <= stack[-1] + 1e-3, e
            stack.append(e["ts"] + e["dur"])


def _within(inner, outer):
    return outer["start_ns"] <= inner["start_ns"] <= inner["end_ns"] <= outer["end_ns"]


def test_compile_encloses_its_passes_and_events_are_ordered():
    op = pyasc.operator(lambda v: np.exp(v) * 2.0, kernel_name="pr_order")
    with pyasc.profile() as p:
        op(np.ones(1000, np.float32))
    ev = p.events
    assert ev == sorted(ev, key=lambda e: (e["start_ns"], e["thread"], -e["end_ns"]))
    (trace,) = [e for e in ev if e["kind"] == "trace" and e["name"] == "pr_order"]
    (comp,) = [e for e in ev if e["kind"] == "compile" and e["name"] == "pr_order"]
    assert trace["end_ns"] <= comp["start_ns"]
    passes = [e for e in ev if e["kind"] == "pass" and _within(e, comp)]
    names = [e["name"] for e in passes]
    assert names[:4] == ["precision", "attention", "promote", "host_ints"] and "lower" in names
    assert all(ev.index(comp) < ev.index(e) for e in passes)


def test_kernel_facts_against_numpy():
    op = pyasc.operator(lambda a, b: a * b + 1.0, kernel_name="pr_facts")
    a = np.arange(3 * 50_000, dtype=np.float32).reshape(3, 50_000)
    b = np.full((3, 50_000), 0.5, np.float32)
    with pyasc.profile() as p:
        y = op(a, b)
    np.testing.assert_array_equal(y, a.astype(np.float64) * 0.5 + 1.0)
    (k,) = [e for e in p.kernels() if e["name"].startswith("pr_facts")]
    c, lab = k["counters"], k["labels"]
    assert c["bytes_read"] == a.nbytes + b.nbytes and c["bytes_written"] == y.nbytes
    assert c["flops"] == 2 * a.size  # one multiply and one add per element
    assert lab["input_shapes"] == "3,50000;3,50000" and lab["input_dtypes"] == "FLOAT;FLOAT"
    assert lab["output_shapes"] == "3,50000" and lab["output_dtypes"] == "FLOAT"
    assert set(lab["ops"].split(",")) == {"mul", "add"}
    (launch,) = [e for e in p.launches() if e["labels"]["operator"] == "pr_facts"]
    assert c["launch"] == launch["counters"]["id"] and _within(k, launch)
    blocks = [e for e in p.events if e["kind"] == "block" and e["counters"]["kernel"] == c["id"]]
    assert len(blocks) == c["blocks"] >= 1 and all(_within(b_, k) for b_ in blocks)
    assert "graph_ir" in launch["labels"] and "pr_facts_k0" in launch["labels"]["tile_programs"]


def test_matmul_flops_are_two_per_multiply_add():
    op = pyasc.operator(lambda a, b: a @ b, kernel_name="pr_mm")
    a, b = np.ones((64, 48), np.float32), np.ones((48, 80), np.float32)
    with pyasc.profile() as p:
        op(a, b)
    (k,) = [e for e in p.kernels() if e["name"].startswith("pr_mm")]
    assert k["counters"]["flops"] == 2 * 64 * 48 * 80 and "matmul" in k["labels"]["ops"]
    (r,) = [r for r in p.records() if r["operator"] == "pr_mm"]
    assert r["task_type"] == "AI_CORE" and r["bound"] in ("memory", "compute")


def test_launches_from_several_threads_keep_their_threads():
    ops = [pyasc.operator(lambda v, i=i: v + float(i), kernel_name=f"pr_thr{i}") for i in range(3)]
    x = np.ones(40_000, np.float32)
    for op in ops:
        op(x)
    done = []

    def run(op):
        for _ in range(4):
            op(x)
        done.append(threading.get_ident())

    with pyasc.profile() as p:
        ts = [threading.Thread(target=run, args=(op,)) for op in ops]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    assert len(done) == 3
    launches = [e for e in p.launches() if e["name"].startswith("pr_thr")]
    assert len(launches) == 12
    threads = {e["name"]: {x["thread"] for x in launches if x["name"] == e["name"]} for e in launches}
    assert all(len(t) == 1 for t in threads.values()) and len(set().union(*threads.values())) == 3
    by_id = {e["counters"]["id"]: e for e in launches}
    kernels = [k for k in p.kernels() if k["name"].startswith("pr_thr")]
    assert len(kernels) == 12
    for k in kernels:
        launch = by_id[k["counters"]["launch"]]
        assert k["thread"] == launch["thread"] and _within(k, launch) and k["stream"] is None
    trace = p.chrome_trace()["traceEvents"]
    tracks = {e["tid"] for e in trace if e.get("cat") == "kernel" and e["name"].startswith("pr_thr")}
    assert len(tracks) == 3
    _assert_tracks_nest(trace)


def test_streams_record_their_kernels_tasks_copies_and_syncs():
    op = pyasc.operator(lambda v: v * 3.0, kernel_name="pr_streams")
    x = np.arange(70_000, dtype=np.float32)
    s1, s2 = pyasc.Stream(), pyasc.Stream()
    with pyasc.profile() as p:
        d = pyasc.to_device(x)
        with pyasc.stream(s1):
            y1 = op(d)
        with pyasc.stream(s2):
            y2 = op(d)
        pyasc.synchronize()
        out = y1.numpy(), y2.numpy()
    np.testing.assert_array_equal(out[0], x * 3)
    np.testing.assert_array_equal(out[1], x * 3)
    kernels = [k for k in p.kernels() if k["name"].startswith("pr_streams")]
    assert sorted(k["stream"] for k in kernels) == sorted([s1.id, s2.id])
    launches = {e["counters"]["id"]: e for e in p.launches() if e["name"] == "pr_streams"}
    for k in kernels:
        launch = launches[k["counters"]["launch"]]
        # The kernel starts after its launch began (it may end before the launching thread
        # records the launch's end: the stream's worker can run it at once).
        assert launch["counters"]["to_stream"] == k["stream"] and launch["start_ns"] <= k["start_ns"]
        (task,) = [t for t in p.events if t["kind"] == "task" and t["stream"] == k["stream"] and _within(k, t)]
        assert task["thread"] == k["thread"]
    copies = [e for e in p.events if e["kind"] == "copy"]
    assert [c["counters"]["bytes"] for c in copies if c["name"] == "copy host to device"] == [x.nbytes]
    assert [c["counters"]["bytes"] for c in copies if c["name"] == "copy device to host"] == [x.nbytes] * 2
    assert any(e["kind"] == "sync" for e in p.events)
    assert any(e["kind"] == "alloc" and e["counters"]["bytes"] >= x.nbytes for e in p.events)


def test_pool_blocks_given_back_are_recorded():
    with pyasc.profile() as p:
        d = pyasc.to_device(np.ones(1 << 16, np.float32))
        del d
    allocs = [e for e in p.events if e["kind"] == "alloc"]
    frees = [e for e in p.events if e["kind"] == "free"]
    assert allocs and frees and frees[-1]["counters"]["bytes"] == allocs[0]["counters"]["bytes"]


def test_nothing_recorded_after_the_block():
    op = pyasc.operator(lambda v: v - 2.0, kernel_name="pr_after")
    with pyasc.profile() as p:
        op(np.ones(10, np.float32))
    n = len(p.events)
    op(np.ones(10, np.float32))
    assert len(p.events) == n and n > 0


def _profiled_pair():
    big = pyasc.operator(lambda v: np.sin(v) * 2.0, kernel_name="pr_big")
    small = pyasc.operator(lambda v: v + 1.0, kernel_name="pr_small")
    x = np.linspace(0, 1, 1 << 18, dtype=np.float32)
    with pyasc.profile() as p:
        for _ in range(3):
            big(x)
        small(x[:100])
    return p


def test_key_averages_group_by_operator_sorted_by_total():
    p = _profiled_pair()
    rows = p.key_averages()
    mine = [r for r in rows if r["name"] in ("pr_big", "pr_small")]
    assert [r["name"] for r in mine] == ["pr_big", "pr_small"]
    assert [r["total_us"] for r in rows] == sorted((r["total_us"] for r in rows), reverse=True)
    big = mine[0]
    kernels = [k for k in p.kernels() if k["name"].startswith("pr_big")]
    assert big["calls"] == 3 and big["kernels"] == len(kernels)
    assert big["total_us"] == pytest.approx(sum(k["micros"] for k in kernels))
    assert big["min_us"] <= big["avg_us"] <= big["max_us"]
    moved = sum(k["counters"]["bytes_read"] + k["counters"]["bytes_written"] for k in kernels)
    assert big["gbs"] == pytest.approx(moved / (big["total_us"] * 1e3))
    text = p.summary()
    assert "pr_big" in text and "Total(us)" in text and text.index("pr_big") < text.index("pr_small")


def test_csv_has_msprof_columns_and_one_row_per_kernel(tmp_path):
    p = _profiled_pair()
    path = tmp_path / "op_summary.csv"
    p.export_csv(str(path))
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        assert reader.fieldnames[:12] == MSPROF_COLUMNS and reader.fieldnames == OP_SUMMARY_COLUMNS
        rows = list(reader)
    kernels = p.kernels()
    assert len(rows) == len(kernels)
    for row, k in zip(rows, kernels):
        assert row["Kernel Name"] == k["name"]
        assert float(row["Task Duration(us)"]) == pytest.approx(k["micros"], abs=1e-3)
        assert int(row["Block Dim"]) == k["counters"]["blocks"]
        moved = k["counters"]["bytes_read"] + k["counters"]["bytes_written"]
        assert int(row["Bytes Read"]) + int(row["Bytes Written"]) == moved
        assert float(row["Achieved GB/s"]) == pytest.approx(moved / (k["micros"] * 1e3), rel=1e-3, abs=1e-3)
        assert row["Bound"] in ("memory", "compute") and float(row["Task Wait Time(us)"]) >= 0
    big = [r for r in rows if r["Op Name"] == "pr_big"]
    assert len(big) == 3 and all(r["Input Shapes"] == str(1 << 18) and r["Output Data Types"] == "FLOAT" for r in big)
    starts = [float(r["Task Start Time(us)"]) for r in rows]
    assert starts == sorted(starts)


def test_chrome_trace_has_perfetto_fields_and_every_launch_once(tmp_path):
    op = pyasc.operator(lambda v: v * 0.25, kernel_name="pr_trace")
    s = pyasc.Stream()
    x = np.ones(50_000, np.float32)
    with pyasc.profile() as p:
        op(x)
        d = pyasc.to_device(x)
        with pyasc.stream(s):
            op(d)
        pyasc.synchronize()
    path = tmp_path / "trace.json"
    p.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    events = trace["traceEvents"]
    for e in events:
        assert {"ph", "pid", "name"} <= set(e), e
        if e["ph"] == "X":
            assert {"ts", "dur", "tid", "cat"} <= set(e) and e["dur"] >= 0 and e["ts"] >= 0
    kernels = [e for e in events if e["ph"] == "X" and e["cat"] == "kernel" and e["name"].startswith("pr_trace")]
    assert len(kernels) == 2 and len({e["args"]["id"] for e in kernels}) == 2
    sync_track = [e["tid"] for e in kernels if e["args"].get("stream") is None]
    assert len(sync_track) == 1 and sorted(e["tid"] for e in kernels) == sorted(sync_track + [s.id])
    _assert_tracks_nest(events)
    launches = [e for e in events if e["ph"] == "X" and e["cat"] == "launch" and e["name"] == "pr_trace"]
    assert len(launches) == 2
    for k in kernels:
        (start,) = [e for e in events if e["ph"] == "s" and e["id"] == k["args"]["id"]]
        (end,) = [e for e in events if e["ph"] == "f" and e["id"] == k["args"]["id"]]
        assert end["tid"] == k["tid"] and end["ts"] == k["ts"] and end["bp"] == "e"
        assert any(la["tid"] == start["tid"] and la["ts"] <= start["ts"] <= la["ts"] + la["dur"] for la in launches)
    names = {(e["pid"], e.get("tid")): e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] == "thread_name"}
    assert f"stream {s.id}" in names.values() and any(n.startswith("core") for n in names.values())
    assert any(n.startswith("stream 0 (synchronous, thread") for n in names.values())
    blocks = [e for e in events if e["ph"] == "X" and e["cat"] == "block" and e["name"].startswith("pr_trace")]
    assert blocks and all(("core" in names[(e["pid"], e["tid"])]) for e in blocks)


def test_nested_profiles_each_see_what_ran_inside_them():
    op = pyasc.operator(lambda v: v * 4.0, kernel_name="pr_nest")
    x = np.ones(1000, np.float32)
    op(x)
    with pyasc.profile() as outer:
        op(x)
        with pyasc.profile() as inner:
            op(x)
        op(x)
    inner_ids = [k["counters"]["id"] for k in inner.kernels() if k["name"].startswith("pr_nest")]
    outer_ids = [k["counters"]["id"] for k in outer.kernels() if k["name"].startswith("pr_nest")]
    assert len(inner_ids) == 1 and len(outer_ids) == 3 and inner_ids[0] == outer_ids[1]
