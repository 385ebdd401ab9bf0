"""How an operator's traced graph splits over chunks: pointwise, axis-coupled, reduction or matmul.

The traced graph (``CompiledOp.graph_ir(True)``) is read node by node. A node whose output
has the broadcast shape of its operands and that takes no axis attribute is pointwise: any
chunking of the arrays works. Nodes with integer axis attributes (reductions, scans, sorts)
couple the axes they name: those axes must be whole in every chunk, unless the graph is one
such reduction of a pointwise expression, which Dask's reduction tree can combine.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import FrozenSet, List, Optional, Tuple

_NODE = re.compile(r"^%(\d+) = ([A-Za-z_][\w.]*)(\[[^\]]*\]|<[^>]*>)?(?: ([^(]*))?\((.*?)\) : \w+\(([\d, ]*)\)"
                   r"(?: [a-z]+)*(?:\s+#\s*(.*))?$")  # a type may carry flags (``weak``)
_RETURN = re.compile(r"^return (.*)$")
#: Reductions whose per-chunk partials combine by the same reduction.
COMBINABLE = ("sum", "max", "min", "prod")


@dataclass
class Node:
    """One line of the traced graph."""

    index: int
    name: str
    attrs: str
    operands: List[int]
    shape: Tuple[int, ...]
    line: str
    value: str = ""  # a constant's value as printed


@dataclass
class Structure:
    """What the graph needs from the chunking of its arguments (axes in the full rank)."""

    kind: str  # "pointwise", "coupled", "reduction", "matmul" or "unsupported"
    coupled: FrozenSet[int] = frozenset()
    reduce: str = ""
    reduce_axes: Tuple[int, ...] = ()
    keepdims: bool = False
    why: str = ""
    nodes: List[Node] = field(default_factory=list)


def parse(text: str) -> Tuple[List[Node], List[int]]:
    """Return the nodes and the returned node indices of a traced graph's text."""
    nodes: List[Node] = []
    returns: List[int] = []
    for raw in text.splitlines():
        raw = raw.strip()
        m = _NODE.match(raw)
        if m:
            idx, name, attrs, value, ops, shape, line = m.groups()
            operands = [int(t) for t in re.findall(r"%(\d+)", ops)]
            dims = tuple(int(t) for t in shape.replace(" ", "").split(",") if t)
            nodes.append(Node(int(idx), name, attrs or "", operands, dims, line or "", (value or "").strip()))
            continue
        r = _RETURN.match(raw)
        if r:
            returns = [int(t) for t in re.findall(r"%(\d+)", r.group(1))]
    return nodes, returns


def _broadcast(shapes: List[Tuple[int, ...]]) -> Optional[Tuple[int, ...]]:
    rank = max((len(s) for s in shapes), default=0)
    out = [1] * rank
    for s in shapes:
        for i, n in enumerate(s, start=rank - len(s)):
            if n != 1:
                if out[i] not in (1, n):
                    return None
                out[i] = n
    return tuple(out)


def _axes(attrs: str, rank: int) -> Optional[Tuple[Tuple[int, ...], bool]]:
    """Integer axes and keepdims of an axis attribute such as ``[1, keepdims]`` or ``[Sort, axis=1]``."""
    if not attrs.startswith("["):
        return None
    axes: List[int] = []
    keep = False
    for part in attrs[1:-1].split(","):
        part = part.strip()
        if part == "keepdims":
            keep = True
        elif re.fullmatch(r"-?\d+", part):
            axes.append(int(part) % rank if rank else 0)
        elif re.fullmatch(r"axis=-?\d+", part):
            axes.append(int(part[5:]) % rank if rank else 0)
        elif re.fullmatch(r"[A-Za-z]+", part):
            continue
        else:
            return None
    return (tuple(axes), keep) if axes else None


def _argument(node: Node, nargs: int) -> bool:
    """Return True for an input node that is one of the call's ``nargs`` arguments (not a captured array)."""
    m = re.fullmatch(r"input(\d+)", node.name)
    return m is not None and int(m.group(1)) < nargs


def classify(text: str, rank: int, nargs: int) -> Structure:
    """Classify a traced graph of ``nargs`` arguments whose arrays broadcast to ``rank`` dimensions.

    Arrays the function captures (inputs beyond its arguments) span whole axes: the axes
    they align with (from the right, extent above 1) are coupled.
    """
    nodes, returns = parse(text)
    by_index = {n.index: n for n in nodes}
    coupled: set = set()
    non_pointwise: List[Node] = []
    for n in nodes:
        if n.name.startswith("input") and not _argument(n, nargs):
            coupled.update(rank - len(n.shape) + j for j, e in enumerate(n.shape) if e != 1 and len(n.shape) <= rank)
        if not n.operands:
            continue  # inputs and constants
        shapes = [by_index[o].shape for o in n.operands if o in by_index]
        if n.name == "matmul":
            non_pointwise.append(n)
            continue
        if not n.attrs.startswith("[") and _broadcast(shapes) == n.shape:
            continue
        ax = _axes(n.attrs, len(shapes[0]) if shapes else 0)
        if ax is None or not shapes or len(shapes[0]) != rank:
            return Structure("unsupported", why=f"{n.name}{n.attrs}", nodes=[n])
        coupled.update(ax[0])
        non_pointwise.append(n)
    if not non_pointwise:
        return Structure("coupled", coupled=frozenset(coupled)) if coupled else Structure("pointwise")
    if len(non_pointwise) == 1 and non_pointwise[0].name == "matmul":
        m = non_pointwise[0]
        if (len(nodes) == 3 and returns == [m.index] and len(m.operands) == 2 and rank == 2
                and all(len(by_index[o].shape) == 2 and _argument(by_index[o], nargs) for o in m.operands)):
            return Structure("matmul", nodes=[m])
        captured = any(not _argument(by_index[o], nargs) for o in m.operands if not by_index[o].operands)
        why = "matmul with an array the function captures" if captured else "matmul inside a larger expression"
        return Structure("unsupported", why=why, nodes=[m])
    if any(n.name == "matmul" for n in non_pointwise):
        m = next(n for n in non_pointwise if n.name == "matmul")
        return Structure("unsupported", why="matmul inside a larger expression", nodes=[m])
    last = non_pointwise[-1]
    if (len(non_pointwise) == 1 and returns == [last.index] and last.name in COMBINABLE):
        axes, keep = _axes(last.attrs, rank) or ((), False)
        return Structure("reduction", coupled=frozenset(coupled), reduce=last.name, reduce_axes=axes,
                         keepdims=keep, nodes=[last])
    mean = _mean_of(last, returns, by_index, rank) if len(non_pointwise) == 1 else None
    if mean is not None:
        return Structure("reduction", coupled=frozenset(coupled), reduce="mean", reduce_axes=mean[0],
                         keepdims=mean[1], nodes=[last])
    return Structure("coupled", coupled=frozenset(coupled), nodes=non_pointwise)


def _mean_of(red: Node, returns: List[int], by_index: dict, rank: int) -> Optional[Tuple[Tuple[int, ...], bool]]:
    """Axes and keepdims when the graph returns ``sum(expr) / count`` with count the summed extents (a mean)."""
    if red.name != "sum" or len(returns) != 1 or not red.operands:
        return None
    div = by_index.get(returns[0])
    if div is None or div.name != "div" or len(div.operands) != 2 or div.operands[0] != red.index:
        return None
    const = by_index.get(div.operands[1])
    axes, keep = _axes(red.attrs, rank) or ((), False)
    if const is None or const.name != "const" or not axes:
        return None
    count = 1
    for a in axes:
        count *= by_index[red.operands[0]].shape[a]
    try:
        return (axes, keep) if float(const.value) == count else None
    except ValueError:
        return None
