"""Recurrent layers: RNN, GRU and LSTM, unrolled over the sequence."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

import numpy as np

from ...errors import UnsupportedError
from ._base import OPS, Op, _dims, traced


def _activation(name: str, alpha: Optional[float], beta: Optional[float]) -> Callable[[Any], Any]:
    name = name.lower()
    if name == "sigmoid":
        return lambda t: 1 / (1 + np.exp(-t))
    if name == "tanh":
        return np.tanh
    if name == "relu":
        return lambda t: np.maximum(t, 0)
    if name == "leakyrelu":
        return lambda t: np.where(t < 0, t * (0.01 if alpha is None else alpha), t)
    if name == "hardsigmoid":
        return lambda t: np.clip(t * (0.2 if alpha is None else alpha) + (0.5 if beta is None else beta), 0, 1)
    if name == "affine":
        return lambda t: t * (1.0 if alpha is None else alpha) + (0.0 if beta is None else beta)
    if name == "scaledtanh":
        return lambda t: np.tanh(t * (1.0 if beta is None else beta)) * (1.0 if alpha is None else alpha)
    if name == "softsign":
        return lambda t: t / (1 + np.abs(t))
    if name == "softplus":
        return lambda t: np.logaddexp(t, 0)
    if name == "elu":
        return lambda t: np.where(t < 0, (np.exp(t) - 1) * (1.0 if alpha is None else alpha), t)
    raise UnsupportedError(f"recurrent activation {name!r} is not supported")


def _recurrent(kind: str) -> Op:
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[kind]
    defaults = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}[kind]

    def run(x: List[Any], a: Dict[str, Any], v: int) -> List[Any]:
        get = lambda i: x[i] if len(x) > i and x[i] is not None else None  # noqa: E731
        xs, w, r = x[0], x[1], x[2]
        bias, lens, h0 = get(3), get(4), get(5)
        c0, peep = (get(6), get(7)) if kind == "LSTM" else (None, None)
        layout = a.get("layout", 0)
        if layout:
            xs = np.swapaxes(xs, 0, 1)
        steps, batch, _ = _dims(xs)
        hidden = a.get("hidden_size") or _dims(r)[-1]
        direction = a.get("direction", "forward")
        dirs = 2 if direction == "bidirectional" else 1
        names = list(a.get("activations", [])) or defaults * dirs
        alphas, betas = list(a.get("activation_alpha", [])), list(a.get("activation_beta", []))
        per = len(defaults)
        acts = [_activation(n, alphas[i] if i < len(alphas) else None, betas[i] if i < len(betas) else None)
                for i, n in enumerate(names)]
        clip = a.get("clip")
        dt = np.dtype(xs.dtype)
        if lens is not None and direction != "forward" and (traced(lens) or np.any(np.asarray(lens) != steps)):
            raise UnsupportedError(f"{kind} running backwards over sequences shorter than the input is not supported")
        zeros = np.zeros((batch, hidden), dt)
        ys, hs, cs = [], [], []
        for d in range(dirs):
            f = acts[d * per:(d + 1) * per]
            wd, rd = w[d], r[d]
            bd = bias[d] if bias is not None else np.zeros(2 * gates * hidden, dt)
            wb, rb = bd[:gates * hidden], bd[gates * hidden:]
            h = h0[d] if h0 is not None else zeros
            c = c0[d] if c0 is not None else zeros
            reverse = direction == "reverse" or d == 1
            out: List[Any] = [None] * steps
            for step in range(steps):
                t = steps - 1 - step if reverse else step
                xt = xs[t]
                gx = np.matmul(xt, np.swapaxes(wd, 0, 1)) + wb
                gh = np.matmul(h, np.swapaxes(rd, 0, 1)) + rb
                if kind == "RNN":
                    pre = gx + gh
                    if clip:
                        pre = np.clip(pre, -clip, clip)
                    h_new, c_new = f[0](pre), c
                elif kind == "GRU":
                    zx, rx, hx = gx[:, :hidden], gx[:, hidden:2 * hidden], gx[:, 2 * hidden:]
                    zh, rh, hh = gh[:, :hidden], gh[:, hidden:2 * hidden], gh[:, 2 * hidden:]
                    cl = (lambda q: np.clip(q, -clip, clip)) if clip else (lambda q: q)
                    z, rr = f[0](cl(zx + zh)), f[0](cl(rx + rh))
                    if a.get("linear_before_reset", 0):
                        cand = f[1](cl(hx + rr * hh))
                    else:
                        cand = f[1](cl(hx + np.matmul(rr * h, np.swapaxes(rd[2 * hidden:], 0, 1))
                                       + rb[2 * hidden:]))
                    h_new, c_new = (1 - z) * cand + z * h, c
                else:
                    pre = gx + gh
                    if clip:
                        pre = np.clip(pre, -clip, clip)
                    i_, o_, f_, g_ = (pre[:, k * hidden:(k + 1) * hidden] for k in range(4))
                    if peep is not None:
                        pi, po, pf = peep[d][:hidden], peep[d][hidden:2 * hidden], peep[d][2 * hidden:]
                        i_, f_ = i_ + pi * c, f_ + pf * c
                    it, ft = f[0](i_), f[0](f_)
                    if a.get("input_forget", 0):
                        ft = 1 - it
                    c_new = ft * c + it * f[1](g_)
                    if peep is not None:
                        o_ = o_ + po * c_new
                    h_new = f[0](o_) * f[2](c_new)
                if lens is not None:
                    live = (np.asarray(lens) > t if not traced(lens) else lens > t).reshape(-1, 1)
                    h_out = np.where(live, h_new, np.zeros((), dt))
                    h = np.where(live, h_new, h)
                    c = np.where(live, c_new, c)
                else:
                    h_out, h, c = h_new, h_new, c_new
                out[t] = h_out
            ys.append(np.stack(out, 0))
            hs.append(h)
            cs.append(c)
        y = np.stack(ys, 1)
        if layout:
            y = np.transpose(y, (2, 0, 1, 3))
            yh, yc = np.swapaxes(np.stack(hs, 0), 0, 1), np.swapaxes(np.stack(cs, 0), 0, 1)
        else:
            yh, yc = np.stack(hs, 0), np.stack(cs, 0)
        return [y, yh, yc]

    return run


OPS["RNN"], OPS["GRU"], OPS["LSTM"] = _recurrent("RNN"), _recurrent("GRU"), _recurrent("LSTM")
