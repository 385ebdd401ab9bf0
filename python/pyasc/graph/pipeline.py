"""Pipelines over micro-batches: recorded stages overlapped on separate streams (GPipe style).

``with pyasc.pipeline(stages=4, micro_batch=None) as p:`` records operator calls as
:func:`pyasc.graph_mode` does. When the block ends (or a value is read) the calls are cut into
``stages`` consecutive groups, each compiled as one fused operator, and axis 0 of the inputs is
cut into micro-batches. Two runners overlap the stages:

- On the host CPU (array arguments, no ``debug``), each worker thread is a lane of the
  pipeline: it takes the next micro-batch and runs it through every stage on its own core, so
  while one core runs stage ``k`` of micro-batch ``i``, another runs stage ``k + 1`` of
  micro-batch ``i - 1``. Each stage's kernels run on that one core, the values handed from one
  stage to the next stay in its cache, and final results are written straight into their rows.
- Otherwise stage ``k`` runs on its own stream: while it computes micro-batch ``i``, stage
  ``k + 1`` computes micro-batch ``i - 1``, and at most ``stages`` micro-batches are in flight.

Either way the values handed between stages are a micro-batch each (blocks of pyasc's pool,
freed after the last stage that reads them), so intermediate memory stays bounded by
``stages x micro_batch`` rows per lane whatever the batch size (``pyasc.memory_stats()``
shows it). ``last_schedule["runner"]`` says which runner ran (``"workers"`` or ``"streams"``).

Rules:

- The batch length ``N`` is axis 0 of the first array argument of the first call. Inputs whose
  axis 0 follows the batch are cut into micro-batches; other inputs (weights) are passed whole.
  An input that merely has ``N`` rows (a weight that happens to be ``N`` long) is told apart by
  the result types: cutting it must keep each call's results at the micro-batch's rows.
- Every stage must compute each row of axis 0 from the same row of its inputs. A call whose
  result has another axis-0 length, or whose row 0 depends on other rows (a reduction or
  normalisation over axis 0), raises :class:`PipelineError` naming its line.
- The pipeline's results are the values of its last calls (those no later call reads), in full,
  identical to running the calls one by one. Values handed between stages are never stored in
  full: reading one after the block raises :class:`PipelineError` (read it inside the block,
  before the calls that consume it, or return it from the last stage).
- ``micro_batch=None`` picks about 256 KiB of the widest value per micro-batch for the workers
  (a micro-batch's values then stay in one core's cache) and about 4 MiB for streams (fewer,
  larger launches: each costs tens of microseconds of thread hand-off).
"""

from __future__ import annotations

from collections import deque
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from .. import _pyasc
from ..errors import InvalidArgumentError
from .record import GraphMode, _Recording, run_now, stitch

__all__ = ["pipeline", "Pipeline", "PipelineError"]

_TARGET_BYTES = 4 << 20
# The same for the worker runner: a micro-batch's values stay in one core's cache.
_WORKER_BYTES = 256 << 10
# Pipelines (stage operators and input types) whose calls passed the row check.
_CHECKED: set = set()


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


def _error_at(node: Any, what: str) -> PipelineError:
    """Return a PipelineError for the recorded call ``node``, at the line that recorded it."""
    file, line = node.site
    err = PipelineError(f"{getattr(node.op, '__name__', 'op')} {what} (at {file}:{line})")
    err.filename, err.lineno = file, line
    return err


def _bit_choices(k: int) -> List[Tuple[bool, ...]]:
    """All ``k``-long tuples of flags, cutting (True) before passing whole."""
    out: List[Tuple[bool, ...]] = [()]
    for _ in range(k):
        out = [c + (b,) for c in out for b in (True, False)]
    return out


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

    # -- planning -----------------------------------------------------------------------
    def _batch(self, rec: _Recording) -> int:
        for ref in rec.nodes[0].spec:
            x = rec.leaves[ref[1]] if ref[0] == 0 else None
            if x is not None and getattr(x, "ndim", 0) >= 1:
                return int(x.shape[0])
        raise PipelineError("the first call of a pipeline needs an array argument with an axis 0 to cut")

    def _infer_batched(self, rec: _Recording, n_rows: int) -> List[bool]:
        """Decide which inputs are cut along axis 0: those whose axis 0 must follow the batch.

        An input with ``n_rows`` rows may be a batch (cut) or a weight that happens to have as
        many rows (passed whole). Each call's result types are worked out for a probe batch of
        ``m`` rows (a length no input dimension has) with each choice; the one that keeps the
        call's results at ``m`` rows wins, preferring to cut when both do.
        """
        leaves = rec.leaves
        dims = {d for x in leaves for d in getattr(x, "shape", ())}
        m = next((v for v in range(2, n_rows) if v not in dims), 1)
        batched: List[Optional[bool]] = [None if getattr(x, "ndim", 0) >= 1 and x.shape[0] == n_rows else False
                                         for x in leaves]
        first = next(r for r in rec.nodes[0].spec if r[0] == 0 and getattr(leaves[r[1]], "ndim", 0) >= 1)
        batched[first[1]] = True
        avals: Dict[Tuple[int, int], Tuple[tuple, Any]] = {}
        for n, node in enumerate(rec.nodes):
            open_leaves = sorted({r[1] for r in node.spec if r[0] == 0 and batched[r[1]] is None})
            choices = [dict(zip(open_leaves, bits)) for bits in _bit_choices(len(open_leaves))]
            found = None
            for choice in choices:
                fake = []
                for r in node.spec:
                    if r[0]:
                        shape, dt = avals[(r[1], r[2])]
                        fake.append(np.empty(shape, dt))
                    else:
                        x = leaves[r[1]]
                        cut = batched[r[1]] if batched[r[1]] is not None else choice[r[1]]
                        if cut:
                            fake.append(np.empty((m,) + tuple(x.shape[1:]), x.dtype))
                        else:
                            fake.append(np.empty(x.shape, x.dtype) if hasattr(x, "shape") else x)
                try:
                    c = node.op.get_compiled_op(*fake)
                except Exception:
                    if len(choices) == 1:
                        raise
                    continue
                outs = [(tuple(sh), dt) for sh, dt in c.outputs]
                if all(len(sh) >= 1 and sh[0] == m for sh, _ in outs) or len(choices) == 1:
                    found = (choice, outs)
                    break
            if found is None:
                raise _error_at(node, "cannot run on micro-batches of its batched inputs: its results do not "
                                      "keep axis 0")
            for i, cut in found[0].items():
                batched[i] = cut
            for k, av in enumerate(found[1]):
                avals[(n, k)] = av
        return [bool(b) for b in batched]

    def _check_shapes(self, rec: _Recording, n_rows: int) -> None:
        for node in rec.nodes:
            for shape, _ in node.avals:
                if len(shape) == 0 or shape[0] != n_rows:
                    raise _error_at(node, f"returns shape {tuple(shape)}, not {n_rows} rows: a pipeline stage "
                                          "must keep axis 0 (it is cut into micro-batches)")

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
                    raise _error_at(node, "mixes rows of axis 0 (row 0 of its result depends on other rows, as a "
                                          "reduction over axis 0 does): it cannot run per micro-batch")
                va[(n, k)], vb[(n, k)] = x, y

    def _groups(self, n_nodes: int) -> List[range]:
        s = min(self.stages, n_nodes)
        cuts = [round(i * n_nodes / s) for i in range(s + 1)]
        return [range(cuts[i], cuts[i + 1]) for i in range(s)]

    # -- running ------------------------------------------------------------------------
    def _run(self, rec: _Recording, wanted: List[Tuple[int, int]]) -> List[Any]:
        nodes = rec.nodes
        rec.compute_avals()
        n_rows = self._batch(rec)
        self._check_shapes(rec, n_rows)
        batched = self._infer_batched(rec, n_rows)
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
        # The stage operators themselves (kept alive by the key, so no other one reuses their id).
        key = (tuple(p[0] for p in plans),
               tuple((getattr(x, "dtype", type(x)), getattr(x, "shape", None)) for x in rec.leaves))
        if key not in _CHECKED:
            self._check_rows(rec, batched, n_rows)
            if len(_CHECKED) > 1024:
                _CHECKED.clear()
            _CHECKED.add(key)
        out_arrays = {}
        for n, k in results:
            shape, dtype = nodes[n].avals[k]
            out_arrays[(n, k)] = _pyasc._host_empty(shape, dtype)  # warm pool pages
        self.runs += 1
        self._last = None
        leaves = [np.asarray(x) if isinstance(x, _pyasc.DeviceArray) else x for x in rec.leaves]
        mb = self._micro_batch(nodes, n_rows, _WORKER_BYTES)
        runner = "workers"
        if not self._run_native(plans, nodes, leaves, batched, mb, n_rows, out_arrays, rec.first_op):
            runner = "streams"
            mb = self._micro_batch(nodes, n_rows, _TARGET_BYTES)
            self._schedule(plans, leaves, batched, list(range(0, n_rows, mb)), mb, n_rows, out_arrays)
        self.last_schedule = {"stages": len(groups), "micro_batch": mb, "micro_batches": -(-n_rows // mb),
                              "batch": n_rows, "runner": runner}
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

    def _micro_batch(self, nodes: list, n_rows: int, target: int) -> int:
        """Rows per micro-batch, between 1 and the batch.

        The caller's ``micro_batch``, or about ``target`` bytes of the widest value (at most 256
        micro-batches).
        """
        if self.micro_batch:
            return max(1, min(self.micro_batch, n_rows))
        row_bytes = max((int(np.prod(shape[1:], dtype=np.int64)) * np.dtype(dt).itemsize
                         for node in nodes for shape, dt in node.avals), default=1)
        rows = max(1, target // max(row_bytes, 1))
        return int(max(1, min(n_rows, max(rows, -(-n_rows // 256)))))

    def _run_native(self, plans: list, nodes: list, leaves: list, batched: list, mb: int, n_rows: int,
                    out_arrays: dict, first_op: Any) -> bool:
        """Run the stages on the host's workers, one micro-batch per worker at a time.

        Each worker takes the next micro-batch and runs it through every stage on its own core,
        so stage ``k`` of one micro-batch overlaps later stages of the one before it on another
        core, and the values handed between stages stay in that core's cache. False (nothing
        run) where that path does not apply: another device, ``debug=True``, an argument that
        is not an array, a captured array that is not a NumPy array of its traced dtype and
        shape (the stream schedule then runs the stages).
        """
        opts = getattr(first_op, "options", {})
        if opts.get("debug") or n_rows == 0:
            return False
        stages = [p for p in plans if p[3]]
        used = sorted({i for p in stages for i in p[1]})
        if not all(isinstance(leaves[i], np.ndarray) for i in used):
            return False
        results = list(out_arrays)
        res_idx = {ref: i for i, ref in enumerate(results)}
        slot: Dict[Tuple[int, int], int] = {}
        for _, _, _, outs in stages:
            for ref in outs:
                if ref not in res_idx:
                    slot[ref] = len(slot)

        def example(leaves_in: list, vals_in: list, rows: int) -> list:
            args = [leaves[i][:rows] if batched[i] else leaves[i] for i in leaves_in]
            for n, k in vals_in:
                shape, dt = nodes[n].avals[k]
                args.append(np.empty((rows,) + tuple(shape[1:]), dt))
            return args

        tail = n_rows % mb
        specs = []
        for comp, leaves_in, vals_in, outs in stages:
            full = comp.get_compiled_op(*example(leaves_in, vals_in, mb))
            last = comp.get_compiled_op(*example(leaves_in, vals_in, tail)) if tail else None
            if full.device != "cpu":
                return False
            inputs = [(0, used.index(i)) for i in leaves_in] + [(1, slot[v]) for v in vals_in]
            outputs = [(0, res_idx[o]) if o in res_idx else (1, slot[o]) for o in outs]
            specs.append((full, last, inputs, outputs))
        return bool(_pyasc._run_pipeline(specs, [leaves[i] for i in used], [bool(batched[i]) for i in used],
                                         [out_arrays[r] for r in results], len(slot), mb, n_rows))

    def _schedule(self, plans: list, leaves: list, batched: list, starts: list, mb: int, n_rows: int,
                  out_arrays: dict) -> None:
        """Queue every (micro-batch, stage) launch on the stage's stream, in micro-batch order.

        Launches on DeviceArrays are asynchronous: a stage's launch waits for the launch on the
        previous stage's stream that writes its input (the runtime orders launches by the
        buffers they read), so stage ``k`` of micro-batch ``i`` runs while stage ``k + 1`` runs
        micro-batch ``i - 1``. At most ``stages`` micro-batches are in flight: before queueing
        another, the oldest one's results are copied out (which waits for them).
        """
        n_stages = len(plans)
        streams = [_pyasc.Stream() for _ in plans]
        inflight: deque = deque()

        def finish(item: Tuple[slice, list]) -> None:
            rows, outs = item
            for ref, dev in outs:
                dev.copy_to(out_arrays[ref][rows])

        for start in starts:
            rows = slice(start, min(start + mb, n_rows))
            if len(inflight) >= n_stages:
                finish(inflight.popleft())
            on_device: Dict[int, Any] = {}
            env: Dict[Tuple[int, int], Any] = {}
            for g, (comp, leaves_in, vals_in, outs) in enumerate(plans):
                if not outs:
                    continue  # nothing reads this stage's results
                args = []
                for i in leaves_in:
                    if batched[i]:
                        if i not in on_device:
                            on_device[i] = _pyasc.from_dlpack(np.ascontiguousarray(leaves[i][rows]))  # no copy
                        args.append(on_device[i])
                    else:
                        args.append(leaves[i])
                args += [env[v] for v in vals_in]
                with streams[g]:
                    res = run_now(comp, tuple(args))
                env.update(zip(outs, res))
            inflight.append((rows, [(ref, env[ref]) for ref in out_arrays]))
        while inflight:
            finish(inflight.popleft())


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
