"""``pyasc bench --roofs``: where each memory-bound workload stands against the memory roof.

For each workload pyasc's kernel runs inside :func:`pyasc.profile` and its best run's bandwidth
fraction is read from the profile (bytes moved per second against the machine's measured triad
bandwidth, as the op_summary reports it). The peer (``jax.jit`` where installed, else NumPy) is
timed over the same calls, and its fraction is the same bytes over its own best time. A workload
where pyasc stays below 70% of the roof while the peer is above it is marked: the places the
profiler says to work on next.
"""

from __future__ import annotations

from typing import Any, Callable, List, Tuple

import numpy as np

import pyasc

from ..tools._timing import best_time, best_times_alternating

#: Below this fraction of the memory roof, with the peer above it, a workload is marked.
GOAL = 0.70

Workload = Tuple[str, Any, tuple, Callable[[], Any], str]


def _layer_norm(xp: Any, v: Any, w: Any, b: Any) -> Any:
    mu = v.mean(-1, keepdims=True)
    d = v - mu
    return d / xp.sqrt((d * d).mean(-1, keepdims=True) + 1e-5) * w + b


def _softmax(xp: Any, v: Any) -> Any:
    e = xp.exp(v - v.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


#: (name, pyasc's function, the peer's function of its array module and the arguments, input).
_CASES: List[Tuple[str, Callable[..., Any], Callable[..., Any], str]] = [
    ("layer_norm", lambda v, w, b: pyasc.layer_norm(v, w, b), _layer_norm, "rows+w+b"),
    ("softmax", lambda v: pyasc.softmax(v, -1), _softmax, "rows"),
    ("normalize", lambda v, w, b: (v - b) * w, lambda xp, v, w, b: (v - b) * w, "rows+w+b"),
    ("long_row", lambda v: np.exp(v).sum(), lambda xp, v: xp.exp(v).sum(), "long"),
    ("column_sum", lambda v: v.sum(0), lambda xp, v: v.sum(0), "square"),
    ("column_max", lambda v: v.max(0), lambda xp, v: v.max(0), "square"),
    ("cumsum_rows", lambda v: np.cumsum(v, -1), lambda xp, v: xp.cumsum(v, -1), "rows"),
]


def workloads(quick: bool) -> List[Workload]:
    """Return the memory-bound workloads: (name, pyasc operator, its arguments, peer call, peer name)."""
    rng = np.random.default_rng(0)
    rows, cols, n, side = (256, 1024, 1 << 18, 1024) if quick else (4096, 1024, 1 << 24, 4096)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    w = rng.standard_normal(cols).astype(np.float32)
    b = rng.standard_normal(cols).astype(np.float32)
    inputs = {"rows": (x,), "rows+w+b": (x, w, b), "long": (rng.standard_normal(n).astype(np.float32),),
              "square": (rng.standard_normal((side, side)).astype(np.float32),)}
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        jax = None
    out: List[Workload] = []
    for name, mine, theirs, kind in _CASES:
        args = inputs[kind]
        op = pyasc.operator(mine)
        if jax is not None:
            f = jax.jit(lambda *a, fn=theirs: fn(jnp, *a))
            jargs = [jnp.asarray(a) for a in args]
            out.append((name, op, args, lambda f=f, a=jargs: f(*a).block_until_ready(), "jax.jit"))
        else:
            out.append((name, op, args, lambda fn=theirs, a=args: fn(np, *a), "numpy"))
    return out


def measure(w: Workload, calls: int) -> Tuple[float, float, float, float]:
    """Return (pyasc seconds, pyasc fraction, peer seconds, peer fraction) of workload ``w``.

    pyasc's time is its best launch's kernel time in the profile; the peer's its best wall time,
    its calls alternating with pyasc's.
    """
    name, op, args, peer, _ = w
    # Warm up as the timed benchmarks do (compile, pool blocks, a settled machine).
    best_time(lambda: op(*args), repeat=0)
    with pyasc.profile() as prof:
        for _ in range(calls):
            op(*args)
    launches: dict = {}
    for r in prof.records():
        launches.setdefault(r["launch"], []).append(r)
    if not launches:
        raise RuntimeError(f"{name}: the profile recorded no kernel")
    best = min(launches.values(), key=lambda rs: sum(r["duration_us"] for r in rs))
    moved = sum(r["bytes_read"] + r["bytes_written"] for r in best)
    seconds = sum(r["duration_us"] for r in best) / 1e6
    roof = prof.roofs["triad_gbs"] * 1e9
    _, theirs = best_times_alternating([lambda: op(*args), peer], calls)
    return seconds, moved / seconds / roof, theirs, moved / theirs / roof


def run(quick: bool = False) -> int:
    """Print each workload's fraction of the memory roof and the peer's; mark the gaps."""
    from ..device.roofs import peaks

    calls = 5 if quick else 30
    print(f"pyasc {pyasc.__version__} memory-roof survey: fraction = bytes moved per second / triad bandwidth "
          f"({peaks()['triad_gbs']:.1f} GB/s); pyasc: best kernel time in a profile, peer: best wall time")
    print(f"  {'workload':<12} {'pyasc':>10} {'fraction':>9}   {'peer':<8} {'time':>10} {'fraction':>9}")
    for w in workloads(quick):
        mine, frac, theirs, peer_frac = measure(w, calls)
        mark = "  <- below 70% while the peer is above" if frac < GOAL <= peer_frac else ""
        print(f"  {w[0]:<12} {mine * 1e3:>8.3f}ms {frac:>9.2f}   {w[4]:<8} {theirs * 1e3:>8.3f}ms "
              f"{peer_frac:>9.2f}{mark}")
    return 0
