"""Pipelines over micro-batches: recorded stages overlapped on separate streams (GPipe style).

``with pyasc.pipeline(stages=4, micro_batch=None) as p:`` records operator calls as
:func:`pyasc.graph_mode` does. When the block ends (or a value is read) the calls are cut into
``stages`` consecutive groups, each compiled as one fused operator, and axis 0 of the inputs is
cut into micro-batches. Stage ``k`` runs on its own worker thread and stream: while it computes
micro-batch ``i``, stage ``k + 1`` computes micro-batch ``i - 1``. The values handed from one
stage to the next are a micro-batch each, kept in cache, and at most two per stage boundary are
alive at a time, so intermediate memory stays bounded by ``stages x micro_batch`` rows whatever
the batch size.

Rules:

- The batch length ``N`` is axis 0 of the first array argument of the first call. Every array
  input whose axis 0 has length ``N`` is cut into micro-batches; other inputs (weights) are
  passed whole to every micro-batch.
- Every stage must compute each row of axis 0 from the same row of its inputs. A call whose
  result has another axis-0 length, or whose row 0 depends on other rows (a reduction or
  normalisation over axis 0), raises :class:`PipelineError` naming its line.
- The pipeline's results are the values of its last calls (those no later call reads), in full,
  identical to running the calls one by one. Values handed between stages are never stored in
  full: reading one after the block raises :class:`PipelineError` (read it inside the block,
  before the calls that consume it, or return it from the last stage).
- ``micro_batch=None`` picks about 1 MiB of the widest value per micro-batch.
"""

from __future__ import annotations

import queue
import threading
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from . import _pyasc
from .errors import InvalidArgumentError
from .graph_record import GraphMode, _Recording, run_now, stitch

__all__ = ["pipeline", "Pipeline", "PipelineError"]

_TARGET_BYTES = 1 << 20


class PipelineError(InvalidArgumentError):
    """A call that cannot run in a pipeline over axis 0, or a read of a value it never stores."""


def _perturbed(a: np.ndarray) -> np.ndarray:
    """Return a copy of ``a`` with every row but the first changed (row 0 kept bit for bit)."""
    b = np.array(a, copy=True)
    rest = b[1:]
    if b.dtype == np.bool_:
        rest[...] = ~rest
    elif np.issubdtype(b.dtype, np.integer):
        rest += 1
    else:
        rest[...] = rest * 1.5 + 0.25
    return b


def _drain(q: queue.Queue) -> None:
    try:
        while True:
            q.get_nowait()
    except queue.Empty:
        pass


def _same_row0(x: Any, y: Any) -> bool:
    a, b = np.asarray(x), np.asarray(y)
    if a.ndim == 0 or a.shape != b.shape:
        return False
    return bool(np.array_equal(a[:1], b[:1], equal_nan=a.dtype.kind in "fc"))


class Pipeline(GraphMode):
    """The context manager returned by :func:`pipeline`.

    After a run, ``last_schedule`` holds ``stages``, ``micro_batch``, ``micro_batches`` and
    ``batch`` of the latest pipeline; ``runs`` and ``compiles`` count as in graph mode.
    """

    def __init__(self, stages: int = 4, micro_batch: Optional[int] = None) -> None:
        for name, v in (("stages", stages), ("micro_batch", 1 if micro_batch is None else micro_batch)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise InvalidArgumentError(f"{name} must be a positive int, not {v!r}")
        super().__init__()
        self.stages = stages
        self.micro_batch = micro_batch
        self.last_schedule: Dict[str, int] = {}
        self._checked: set = set()

    # -- planning -----------------------------------------------------------------------
    def _batch(self, rec: _Recording) -> int:
        for ref in rec.nodes[0].spec:
            x = rec.leaves[ref[1]] if ref[0] == 0 else None
            if x is not None and getattr(x, "ndim", 0) >= 1:
                return int(x.shape[0])
        raise PipelineError("the first call of a pipeline needs an array argument with an axis 0 to cut")

    def _check_shapes(self, rec: _Recording, n_rows: int) -> None:
        for node in rec.nodes:
            for shape, _ in node.avals:
                if len(shape) == 0 or shape[0] != n_rows:
                    err = PipelineError(
                        f"{getattr(node.op, '__name__', 'op')} returns shape {tuple(shape)}, not {n_rows} rows: "
                        "a pipeline stage must keep axis 0 (it is cut into micro-batches)")
                    err.filename, err.lineno = node.site
                    err.args = (f"{err.args[0]} (at {node.site[0]}:{node.site[1]})",)
                    raise err

    def _check_rows(self, rec: _Recording, batched: List[bool], n_rows: int) -> None:
        """Run each call on a few rows twice, other rows changed: row 0 must not move."""
        m = min(n_rows, 4)
        if m < 2:
            return
        va: Dict[Tuple[int, int], Any] = {}
        vb: Dict[Tuple[int, int], Any] = {}
        for n, node in enumerate(rec.nodes):
            args_a, args_b = [], []
            for ref in node.spec:
                if ref[0] == 0:
                    x = rec.leaves[ref[1]]
                    if batched[ref[1]]:
                        xa = np.asarray(x[:m])
                        args_a.append(xa)
                        args_b.append(_perturbed(xa))
                    else:
                        args_a.append(x)
                        args_b.append(x)
                else:
                    args_a.append(va[(ref[1], ref[2])])
                    args_b.append(vb[(ref[1], ref[2])])
            ra, rb = run_now(node.op, tuple(args_a)), run_now(node.op, tuple(args_b))
            ra = tuple(ra) if node.tuple_out else (ra,)
            rb = tuple(rb) if node.tuple_out else (rb,)
            for k, (x, y) in enumerate(zip(ra, rb)):
                if not _same_row0(x, y):
                    err = PipelineError(
                        f"{getattr(node.op, '__name__', 'op')} mixes rows of axis 0 (row 0 of its result depends "
                        "on other rows, as a reduction over axis 0 does): it cannot run per micro-batch")
                    err.filename, err.lineno = node.site
                    err.args = (f"{err.args[0]} (at {node.site[0]}:{node.site[1]})",)
                    raise err
                va[(n, k)], vb[(n, k)] = x, y

    def _groups(self, n_nodes: int) -> List[range]:
        s = min(self.stages, n_nodes)
        cuts = [round(i * n_nodes / s) for i in range(s + 1)]
        return [range(cuts[i], cuts[i + 1]) for i in range(s)]

    # -- running ------------------------------------------------------------------------
    def _run(self, rec: _Recording, wanted: List[Tuple[int, int]]) -> List[Any]:
        nodes = rec.nodes
        n_rows = self._batch(rec)
        self._check_shapes(rec, n_rows)
        batched = [getattr(x, "ndim", 0) >= 1 and x.shape[0] == n_rows for x in rec.leaves]
        consumed = {(r[1], r[2]) for node in nodes for r in node.spec if r[0]}
        groups = self._groups(len(nodes))
        stage_of = {i: g for g, rg in enumerate(groups) for i in rg}
        results = [(n, k) for n, k in wanted if (n, k) not in consumed]
        # Per stage: parameters (leaves, then values from earlier stages) and results.
        plans = []
        for g, rg in enumerate(groups):
            leaves_in = sorted({r[1] for i in rg for r in nodes[i].spec if r[0] == 0})
            vals_in = sorted({(r[1], r[2]) for i in rg for r in nodes[i].spec if r[0] and stage_of[r[1]] < g})
            later = {(r[1], r[2]) for i in range(groups[g].stop, len(nodes)) for r in nodes[i].spec if r[0]}
            outs = sorted({(n, k) for n in rg for k in range(len(nodes[n].avals))
                           if (n, k) in later or (n, k) in results})
            inputs = [(0, i) for i in leaves_in] + [(1, n, k) for n, k in vals_in]
            comp, fresh = stitch(nodes, rg, inputs, outs, rec.first_op, rec.opts)
            self.compiles += fresh
            plans.append((comp, leaves_in, vals_in, outs))
        key = (id(plans[0][0]), tuple(id(p[0]) for p in plans),
               tuple((getattr(x, "dtype", type(x)), getattr(x, "shape", None)) for x in rec.leaves))
        if key not in self._checked:
            self._check_rows(rec, batched, n_rows)
            self._checked.add(key)
        out_arrays = {}
        for n, k in results:
            shape, dtype = nodes[n].avals[k]
            out_arrays[(n, k)] = np.empty(shape, dtype)
        mb = self.micro_batch or self._auto_micro_batch(nodes, n_rows, len(groups))
        starts = list(range(0, n_rows, mb))
        self.last_schedule = {"stages": len(groups), "micro_batch": mb, "micro_batches": len(starts),
                              "batch": n_rows}
        self.runs += 1
        self._last = None
        leaves = [np.asarray(x) if isinstance(x, _pyasc.DeviceArray) else x for x in rec.leaves]
        self._schedule(plans, leaves, batched, starts, mb, n_rows, out_arrays)
        stored = []
        for n, k in wanted:
            if (n, k) in out_arrays:
                stored.append(out_arrays[(n, k)])
            else:
                err = PipelineError(f"this value is handed between pipeline stages (made at {nodes[n].site[0]}:"
                                    f"{nodes[n].site[1]}) and is never stored in full; read it inside the block "
                                    "before the calls that use it, or return it from the last stage")
                stored.append(err)
        return stored

    def _auto_micro_batch(self, nodes: list, n_rows: int, n_stages: int) -> int:
        row_bytes = max((int(np.prod(shape[1:], dtype=np.int64)) * np.dtype(dt).itemsize
                         for node in nodes for shape, dt in node.avals), default=1)
        rows = max(1, _TARGET_BYTES // max(row_bytes, 1))
        return int(min(n_rows, max(rows, -(-n_rows // 256))))

    def _schedule(self, plans: list, leaves: list, batched: list, starts: list, mb: int, n_rows: int,
                  out_arrays: dict) -> None:
        n_stages = len(plans)
        hand = [queue.Queue(maxsize=1) for _ in range(n_stages)]
        failed: List[BaseException] = []
        stop = threading.Event()

        def stage(g: int) -> None:
            comp, leaves_in, vals_in, outs = plans[g]
            try:
                with _pyasc.Stream():
                    for start in starts:
                        rows = slice(start, min(start + mb, n_rows))
                        got: Dict[Tuple[int, int], Any] = {}
                        if g > 0:
                            got = hand[g - 1].get()
                            if got is None:
                                break
                        if stop.is_set():
                            break
                        args = [leaves[i][rows] if batched[i] else leaves[i] for i in leaves_in]
                        args += [got[v] for v in vals_in]
                        res = run_now(comp, tuple(args))
                        passed = dict(got)
                        for ref, r in zip(outs, res):
                            dst = out_arrays.get(ref)
                            if dst is not None:
                                dst[rows] = r
                            passed[ref] = r
                        if g + 1 < n_stages:
                            hand[g].put(passed)
            except BaseException as e:  # stop the others, re-raised on the caller's thread
                failed.append(e)
                stop.set()
            finally:
                if stop.is_set():
                    if g > 0:
                        _drain(hand[g - 1])  # a producer blocked on a full queue moves on and stops
                    if g + 1 < n_stages:
                        _drain(hand[g])  # only this stage puts here: the end mark always fits
                        hand[g].put_nowait(None)

        workers = [threading.Thread(target=stage, args=(g,), name=f"pyasc-stage{g}", daemon=True)
                   for g in range(1, n_stages)]
        for w in workers:
            w.start()
        stage(0)
        for w in workers:
            w.join()
        if failed:
            raise failed[0]


def pipeline(stages: int = 4, micro_batch: Optional[int] = None) -> Pipeline:
    """Record operator calls and run them as a software pipeline over micro-batches of axis 0.

    See :mod:`pyasc.pipeline` for the rules. Example (the article's four stages)::

        with pyasc.pipeline(stages=4):
            stage1 = preprocess(data)
            stage2 = feature_extract(stage1)
            stage3 = inference(stage2)
            stage4 = postprocess(stage3)
        result = np.asarray(stage4)
    """
    return Pipeline(stages, micro_batch)
