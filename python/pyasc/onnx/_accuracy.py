"""A model run under a 16-bit precision mode against the same model in float32.

``pyasc.check_accuracy(model, *inputs)`` (or ``model.check_accuracy(*inputs)``) runs the model
as loaded and a float32 copy of it on the same inputs, and reports per output the largest
absolute and relative error and, for outputs with classes on the last axis, the fraction of
rows whose top-1 class agrees.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Optional

import numpy as np


@dataclass
class OutputAgreement:
    """One output of the model against its float32 run."""

    name: str
    shape: tuple
    max_abs: float
    max_rel: float
    top1: Optional[float]


@dataclass
class ModelAccuracy:
    """The report: the model's precision mode and one :class:`OutputAgreement` per output."""

    model: str
    precision_mode: Optional[str]
    outputs: List[OutputAgreement]

    def __str__(self) -> str:
        """Render as a table."""
        lines = [f"{self.model} ({self.precision_mode or 'float32'}) against float32",
                 f"{'output':<24} {'shape':<18} {'max abs':>10} {'max rel':>10} {'top-1':>8}"]
        for o in self.outputs:
            top = f"{o.top1:.1%}" if o.top1 is not None else "-"
            lines.append(f"{o.name:<24} {str(o.shape):<18} {o.max_abs:>10.3g} {o.max_rel:>10.3g} {top:>8}")
        return "\n".join(lines)


def compare(model: Any, reference: Any, inputs: Any) -> ModelAccuracy:
    """Run ``model`` and ``reference`` (its float32 twin) on ``inputs`` and compare their outputs."""
    got = model.run(None, inputs)
    want = reference.run(None, inputs)
    outs = []
    for v, g, w in zip(model.outputs, got, want):
        g64, w64 = np.asarray(g, np.float64), np.asarray(w, np.float64)
        err = np.abs(g64 - w64)
        scale = np.max(np.abs(w64)) if w64.size else 0.0
        top1 = None
        if g64.ndim >= 1 and g64.shape[-1] > 1 and np.dtype(np.asarray(w).dtype).kind == "f":
            top1 = float(np.mean(g64.argmax(-1) == w64.argmax(-1)))
        outs.append(OutputAgreement(v.name, tuple(g64.shape), float(err.max()) if err.size else 0.0,
                                    float(err.max() / scale) if err.size and scale else 0.0, top1))
    return ModelAccuracy(model.graph.name, model.precision_mode, outs)
