"""``pyasc bench`` entries of gradients: ``pyasc.grad`` against ``jax.jit(jax.grad(...))``.

``grad_transformer``: one transformer encoder block (multi-head attention, two layer norms, a
GELU MLP of width 4x) forward and backward with respect to all its weights, float32.
``grad_attention``: the backward pass of fused attention against its forward and against JAX's
gradient of the written-out formula, and the memory pool's peak for one long sequence.
``grad_layer_norm``: layer norm's backward against
``np.copyto`` of as many bytes as it must move (the input, the cotangent and the result) and JAX.
``grad_compile``: the first call of a new ``grad`` of the transformer block (trace, both
passes, compile) and the cached call of a small one against an operator call.
"""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any, Dict, List, Tuple

import numpy as np

import pyasc

from ..tools._timing import best_time, fmt_time
from ..tools._timing import peer as _peer

Row = Tuple[str, str, float]


def _block_params(rng: np.random.Generator, width: int) -> Dict[str, np.ndarray]:
    def w(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32)

    return {"qkv": w(width, 3 * width), "proj": w(width, width), "up": w(width, 4 * width),
            "down": w(4 * width, width), "g1": np.ones(width, np.float32), "b1": np.zeros(width, np.float32),
            "g2": np.ones(width, np.float32), "b2": np.zeros(width, np.float32)}


def _block(ops: Any, attention: Any, p: Dict[str, Any], x: Any, heads: int) -> Any:
    """One pre-norm encoder block written against a NumPy-like module ``ops``; returns sum(y * y)."""
    b, n, width = x.shape
    d = width // heads
    a = ops.layer_norm(x, p["g1"], p["b1"])
    qkv = (a @ p["qkv"]).reshape(b, n, 3, heads, d).transpose(2, 0, 3, 1, 4)
    att = attention(qkv[0], qkv[1], qkv[2]).transpose(0, 2, 1, 3).reshape(b, n, width)
    h = x + att @ p["proj"]
    m = ops.layer_norm(h, p["g2"], p["b2"])
    y = h + ops.gelu(m @ p["up"]) @ p["down"]
    return ops.sum(y * y) / y.size


class _JaxOps:
    """The few functions ``_block`` needs, from ``jax.numpy``."""

    def __init__(self, jax: Any) -> None:
        import jax.numpy as jnp

        self.jnp, self.nn = jnp, jax.nn

    def layer_norm(self, x: Any, g: Any, b: Any) -> Any:
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / self.jnp.sqrt(var + 1e-5) * g + b

    def gelu(self, x: Any) -> Any:
        return self.nn.gelu(x, approximate=False)

    def sum(self, x: Any) -> Any:
        return self.jnp.sum(x)

    def attention(self, q: Any, k: Any, v: Any) -> Any:
        s = q @ self.jnp.swapaxes(k, -1, -2) / self.jnp.sqrt(self.jnp.float32(q.shape[-1]))
        return self.nn.softmax(s, axis=-1) @ v


def bench_transformer(batch: int, length: int, width: int, heads: int, repeat: int) -> List[Row]:
    """Forward and backward of one encoder block with respect to every weight."""
    rng = np.random.default_rng(3)
    p = _block_params(rng, width)
    x = rng.standard_normal((batch, length, width)).astype(np.float32)
    g = pyasc.grad(lambda p, x: _block(pyasc, pyasc.scaled_dot_product_attention, p, x, heads))
    fwd = pyasc.operator(lambda p, x: _block(pyasc, pyasc.scaled_dot_product_attention, p, x, heads))
    rows: List[Row] = [("pyasc", "grad of the block", best_time(lambda: g(p, x), repeat)),
                       ("forward", "the block alone", best_time(lambda: fwd(p, x), repeat))]
    jax = _peer("jax")
    if jax is not None:
        ops = _JaxOps(jax)
        jg = jax.jit(jax.grad(lambda p, x: _block(ops, ops.attention, p, x, heads)))
        rows.append(("jax", "jit(grad) of the block", best_time(lambda: jax.block_until_ready(jg(p, x)), repeat)))
    return rows


def bench_attention_backward(heads: int, length: int, dim: int, repeat: int) -> List[Row]:
    """Time the gradient of ``sum(attention(q, k, v) * w)`` with respect to q, k and v."""
    rng = np.random.default_rng(4)
    q, k, v, w = (rng.standard_normal((heads, length, dim)).astype(np.float32) for _ in range(4))
    g = pyasc.grad(lambda q, k, v: pyasc.sum(pyasc.scaled_dot_product_attention(q, k, v) * w), argnums=(0, 1, 2))
    fwd = pyasc.operator(lambda q, k, v: pyasc.scaled_dot_product_attention(q, k, v))
    rows: List[Row] = [("pyasc", "grad (forward + backward)", best_time(lambda: g(q, k, v), repeat)),
                       ("forward", "fused forward alone", best_time(lambda: fwd(q, k, v), repeat))]
    jax = _peer("jax")
    if jax is not None:
        ops = _JaxOps(jax)
        jg = jax.jit(jax.grad(lambda q, k, v: ops.jnp.sum(ops.attention(q, k, v) * w), argnums=(0, 1, 2)))
        rows.append(("jax", "jit(grad) of the formula", best_time(lambda: jax.block_until_ready(jg(q, k, v)),
                                                                   repeat)))
    return rows


_PEAK = """
import numpy as np, pyasc
rng = np.random.default_rng(0)
q, k, v, w = (pyasc.to_device(rng.standard_normal((1, {n}, {d})).astype(np.float32)) for _ in range(4))
g = pyasc.grad(lambda q, k, v, w: pyasc.sum(pyasc.scaled_dot_product_attention(q, k, v) * w), argnums=(0, 1, 2))
base = pyasc.memory_stats()["peak_bytes_in_use"]
g(q, k, v, w)
pyasc.synchronize()
print(base, pyasc.memory_stats()["peak_bytes_in_use"])
"""


def peak_grad_pool_bytes(length: int, dim: int) -> Tuple[int, int]:
    """Pool bytes in use at the peak of attention's gradient: inputs on the device, then after a call.

    Measured in a fresh process, so that nothing else has used the pool.
    """
    out = subprocess.run([sys.executable, "-c", _PEAK.format(n=length, d=dim)], capture_output=True, text=True,
                         check=True).stdout.split()
    return int(out[0]), int(out[1])


def bench_layer_norm_backward(shape: Tuple[int, int], repeat: int) -> List[Row]:
    """Time the gradient of ``sum(layer_norm(x) * w)`` with respect to x."""
    rng = np.random.default_rng(5)
    x, w = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
    g = pyasc.grad(lambda x: pyasc.sum(pyasc.layer_norm(x) * w))
    # The kernel reads x and w and writes dx: three arrays of traffic, which a copy of one and
    # a half arrays also moves (each byte read once and written once).
    src = np.concatenate([x, w[: shape[0] // 2]], axis=0)
    dst = np.empty_like(src)
    rows: List[Row] = [("pyasc", "grad of layer_norm", best_time(lambda: g(x), repeat)),
                       ("limit", "np.copyto of its bytes", best_time(lambda: np.copyto(dst, src), repeat))]
    jax = _peer("jax")
    if jax is not None:
        ops = _JaxOps(jax)
        one, zero = np.ones(shape[1], np.float32), np.zeros(shape[1], np.float32)
        jg = jax.jit(jax.grad(lambda x: ops.jnp.sum(ops.layer_norm(x, one, zero) * w)))
        rows.append(("jax", "jit(grad)", best_time(lambda: jax.block_until_ready(jg(x)), repeat)))
    return rows


def bench_compile(width: int, heads: int) -> Tuple[float, float, float]:
    """First call of a new grad of the block (seconds), and a cached grad call and operator call on 8 floats."""
    rng = np.random.default_rng(6)
    p = _block_params(rng, width)
    x = rng.standard_normal((1, 8, width)).astype(np.float32)
    g = pyasc.grad(lambda p, x: _block(pyasc, pyasc.scaled_dot_product_attention, p, x, heads))
    start = time.perf_counter()
    g(p, x)
    first = time.perf_counter() - start
    small = np.ones(8, np.float32)
    sg = pyasc.grad(lambda x: pyasc.sum(x * x))
    op = pyasc.operator(lambda x: x * x)
    cached = best_time(lambda: sg(small), 7, number=200)
    call = best_time(lambda: op(small), 7, number=200)
    return first, cached, call


def run_entries(want: set, quick: bool, repeat: int, summary: List[str]) -> None:
    """Run the gradient entries named in ``want``, adding summary lines."""
    from . import _report

    if "grad_transformer" in want:
        b, n, d, h = (1, 64, 128, 4) if quick else (4, 256, 256, 8)
        t = _report(f"grad_transformer: encoder block {b}x{n}x{d}, {h} heads, MLP {4 * d}, float32",
                    bench_transformer(b, n, d, h, 2 if quick else 5))
        line = f"grad_transformer: {t['pyasc'] / t['forward']:.2f}x the forward's time"
        if "jax" in t:
            line += f", {t['jax'] / t['pyasc']:.2f}x jax.jit(jax.grad)'s speed (target >= 1.2x)"
        summary.append(line)
    if "grad_attention" in want:
        h, n, d = (2, 256, 64) if quick else (8, 1024, 64)
        t = _report(f"grad_attention: {h} heads x {n} x {d} float32", bench_attention_backward(h, n, d, repeat))
        line = f"grad_attention: {t['pyasc'] / t['forward']:.2f}x the fused forward's time (target <= 3.5x, " \
               "forward included)"
        if "jax" in t:
            line += f", {t['jax'] / t['pyasc']:.2f}x jax.jit(jax.grad)'s speed (target >= 1.5x)"
        summary.append(line)
        n = 4096 if quick else 16384
        base, peak = peak_grad_pool_bytes(n, 64)
        summary.append(f"grad_attention: pool peak of the gradient of 1 x {n} x 64: {(peak - base) / 2**20:.0f} MiB "
                       f"beyond the inputs' {base / 2**20:.0f} MiB (one {n} x {n} score matrix alone: "
                       f"{4 * n * n / 2**20:.0f} MiB)")
    if "grad_layer_norm" in want:
        shape = (512, 1024) if quick else (4096, 1024)
        t = _report(f"grad_layer_norm: {shape[0]}x{shape[1]} float32", bench_layer_norm_backward(shape, repeat))
        line = f"grad_layer_norm: {t['pyasc'] / t['limit']:.2f}x the time of np.copyto of its bytes (target <= 1.5x)"
        if "jax" in t:
            line += f", {t['jax'] / t['pyasc']:.2f}x jax.jit(jax.grad)'s speed (target >= 1.1x)"
        summary.append(line)
    if "grad_compile" in want:
        first, cached, call = bench_compile(128 if quick else 256, 8)
        summary.append(f"grad_compile: first call of grad of the encoder block {fmt_time(first)} (target <= 20 ms); "
                       f"cached grad call {fmt_time(cached)} against an operator call {fmt_time(call)}")
