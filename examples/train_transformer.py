"""Train a two-layer transformer encoder with pyasc.grad on a synthetic sequence task.

Each sequence is random tokens; the target at position ``i`` is the token at position
``i - shift`` (the first ``shift`` positions predict token 0), so the model must learn to
attend back by a fixed offset, which it can only do through attention and the positional
embeddings. Forward and backward of the whole encoder (embeddings, multi-head attention,
layer norms, a GELU MLP, the cross-entropy loss) run as one compiled operator.

    python examples/train_transformer.py [--epochs 6] [--width 64] [--heads 4]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Dict, List, Optional, Tuple

import numpy as np
import pyasc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_mlp import adam_step  # noqa: E402 (the same Adam step)

Params = Dict[str, np.ndarray]


def make_data(rng: np.random.Generator, n: int, length: int, vocab: int, shift: int) -> Tuple[np.ndarray, ...]:
    """Return one-hot token sequences and one-hot targets (the token ``shift`` places back)."""
    tokens = rng.integers(1, vocab, (n, length))
    targets = np.zeros_like(tokens)
    targets[:, shift:] = tokens[:, :-shift]
    eye = np.eye(vocab, dtype=np.float32)
    return eye[tokens], eye[targets]


def init_params(rng: np.random.Generator, vocab: int, length: int, width: int, layers: int) -> Params:
    """Return the encoder's weights (scaled normal) and its layer-norm gains and biases."""
    def w(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32)

    p = {"embed": w(vocab, width), "pos": (rng.standard_normal((length, width)) * 0.1).astype(np.float32),
         "out": w(width, vocab), "ln_g": np.ones(width, np.float32), "ln_b": np.zeros(width, np.float32)}
    for i in range(layers):
        p.update({f"qkv{i}": w(width, 3 * width), f"proj{i}": w(width, width), f"up{i}": w(width, 4 * width),
                  f"down{i}": w(4 * width, width), f"ln1_g{i}": np.ones(width, np.float32),
                  f"ln1_b{i}": np.zeros(width, np.float32), f"ln2_g{i}": np.ones(width, np.float32),
                  f"ln2_b{i}": np.zeros(width, np.float32)})
    return p


def encoder(p: Params, x: np.ndarray, heads: int, layers: int) -> np.ndarray:
    """Return the logits of the encoder for one-hot tokens ``x`` (batch, length, vocab)."""
    b, n, _ = x.shape
    width = p["embed"].shape[1]
    d = width // heads
    h = x @ p["embed"] + p["pos"]
    for i in range(layers):
        a = pyasc.layer_norm(h, p[f"ln1_g{i}"], p[f"ln1_b{i}"])
        qkv = (a @ p[f"qkv{i}"]).reshape(b, n, 3, heads, d).transpose(2, 0, 3, 1, 4)
        att = pyasc.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2])
        h = h + att.transpose(0, 2, 1, 3).reshape(b, n, width) @ p[f"proj{i}"]
        m = pyasc.layer_norm(h, p[f"ln2_g{i}"], p[f"ln2_b{i}"])
        h = h + pyasc.gelu(m @ p[f"up{i}"]) @ p[f"down{i}"]
    return pyasc.layer_norm(h, p["ln_g"], p["ln_b"]) @ p["out"]


def loss_fn(p: Params, x: np.ndarray, y: np.ndarray, heads: int = 4, layers: int = 2) -> np.ndarray:
    """Return the mean cross-entropy over every position."""
    logp = pyasc.log_softmax(encoder(p, x, heads, layers), axis=-1)
    return -pyasc.mean(pyasc.sum(logp * y, axis=-1))


def main(argv: Optional[List[str]] = None) -> Dict[str, object]:
    """Train and print the loss and accuracy per epoch; return the losses."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--samples", type=int, default=2048)
    ap.add_argument("--length", type=int, default=16)
    ap.add_argument("--vocab", type=int, default=12)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--shift", type=int, default=2)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=3e-3)
    args = ap.parse_args(argv)

    rng = np.random.default_rng(0)
    x, y = make_data(rng, args.samples, args.length, args.vocab, args.shift)
    params = init_params(rng, args.vocab, args.length, args.width, args.layers)
    m = {k: np.zeros_like(v) for k, v in params.items()}
    v = {k: np.zeros_like(w) for k, w in params.items()}
    step_fn = pyasc.value_and_grad(lambda p, x, y: loss_fn(p, x, y, args.heads, args.layers))
    predict = pyasc.operator(lambda p, x: encoder(p, x, args.heads, args.layers))
    losses: List[float] = []
    step = 0
    start = time.perf_counter()
    for epoch in range(args.epochs):
        order = rng.permutation(args.samples)
        batches = args.samples // args.batch
        total = 0.0
        for k in range(batches):
            idx = order[k * args.batch:(k + 1) * args.batch]
            loss, grads = step_fn(params, x[idx], y[idx])
            step += 1
            params, m, v = adam_step(params, grads, m, v, float(step), args.lr)
            total += float(loss)
        losses.append(total / batches)
        acc = float(np.mean(np.argmax(predict(params, x[:256]), -1) == np.argmax(y[:256], -1)))
        print(f"epoch {epoch + 1:3d}  loss {losses[-1]:.4f}  accuracy {acc:.3f}")
    print(f"{args.epochs} epochs in {time.perf_counter() - start:.2f} s")
    return {"losses": losses, "accuracy": acc}


if __name__ == "__main__":
    main()
