"""Train a two-layer classifier with pyasc.grad: cross-entropy loss, an Adam step in pyasc ops.

The data are synthetic: points drawn around one centre per class. The loss and its gradient
with respect to every weight run as one compiled operator (``pyasc.value_and_grad``), traced
once for the batch shape; the Adam update is a second operator over the same parameter tree.

    python examples/train_mlp.py [--epochs 20] [--hidden 64] [--classes 4]
"""

from __future__ import annotations

import argparse
import time
from typing import Dict, List, Optional, Tuple

import numpy as np
import pyasc

Params = Dict[str, np.ndarray]


def make_data(rng: np.random.Generator, n: int, features: int, classes: int) -> Tuple[np.ndarray, np.ndarray]:
    """Return ``n`` points around ``classes`` random centres and their labels."""
    centres = rng.standard_normal((classes, features)).astype(np.float32) * 0.5
    labels = rng.integers(0, classes, n)
    x = centres[labels] + rng.standard_normal((n, features)).astype(np.float32)
    return x.astype(np.float32), labels


def init_params(rng: np.random.Generator, features: int, hidden: int, classes: int) -> Params:
    """Return He-initialised weights and zero biases."""
    return {
        "w1": (rng.standard_normal((features, hidden)) * np.sqrt(2.0 / features)).astype(np.float32),
        "b1": np.zeros(hidden, np.float32),
        "w2": (rng.standard_normal((hidden, classes)) * np.sqrt(2.0 / hidden)).astype(np.float32),
        "b2": np.zeros(classes, np.float32),
    }


def logits(params: Params, x: np.ndarray) -> np.ndarray:
    """Return the class scores of the two-layer network."""
    h = pyasc.relu(x @ params["w1"] + params["b1"])
    return h @ params["w2"] + params["b2"]


def loss_fn(params: Params, x: np.ndarray, onehot: np.ndarray) -> np.ndarray:
    """Return the mean cross-entropy of the network's predictions."""
    return -pyasc.mean(pyasc.sum(pyasc.log_softmax(logits(params, x), axis=-1) * onehot, axis=-1))


loss_and_grad = pyasc.value_and_grad(loss_fn)


@pyasc.operator
def adam_step(params: Params, grads: Params, m: Params, v: Params, step: float, lr: float) -> Tuple[Params, ...]:
    """Return the parameters and moments after one Adam step (beta1 0.9, beta2 0.999)."""
    new_p, new_m, new_v = {}, {}, {}
    for k in params:
        new_m[k] = 0.9 * m[k] + 0.1 * grads[k]
        new_v[k] = 0.999 * v[k] + 0.001 * grads[k] * grads[k]
        m_hat = new_m[k] / (1.0 - 0.9 ** step)
        v_hat = new_v[k] / (1.0 - 0.999 ** step)
        new_p[k] = params[k] - lr * m_hat / (pyasc.sqrt(v_hat) + 1e-8)
    return new_p, new_m, new_v


def main(argv: Optional[List[str]] = None) -> Dict[str, object]:
    """Train and print the loss per epoch; return the losses and the final accuracy."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--samples", type=int, default=4096)
    ap.add_argument("--features", type=int, default=16)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--classes", type=int, default=4)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--lr", type=float, default=1e-2)
    args = ap.parse_args(argv)

    rng = np.random.default_rng(0)
    x, labels = make_data(rng, args.samples, args.features, args.classes)
    onehot = np.eye(args.classes, dtype=np.float32)[labels]
    params = init_params(rng, args.features, args.hidden, args.classes)
    m = {k: np.zeros_like(p) for k, p in params.items()}
    v = {k: np.zeros_like(p) for k, p in params.items()}
    losses, step = [], 0
    start = time.perf_counter()
    for epoch in range(args.epochs):
        order = rng.permutation(args.samples)
        total = 0.0
        batches = args.samples // args.batch
        for b in range(batches):
            idx = order[b * args.batch:(b + 1) * args.batch]
            loss, grads = loss_and_grad(params, x[idx], onehot[idx])
            step += 1
            params, m, v = adam_step(params, grads, m, v, float(step), args.lr)
            total += float(loss)
        losses.append(total / batches)
        print(f"epoch {epoch + 1:3d}  loss {losses[-1]:.4f}")
    seconds = time.perf_counter() - start
    accuracy = float(np.mean(np.argmax(np.asarray(logits_op(params, x)), axis=1) == labels))
    print(f"accuracy {accuracy:.3f} after {args.epochs} epochs ({seconds:.2f} s)")
    return {"losses": losses, "accuracy": accuracy, "params": params}


logits_op = pyasc.operator(logits)


if __name__ == "__main__":
    main()
