"""Helpers the Dask reduction-tree tests share: what a result's graph holds."""

from __future__ import annotations


def rechunks(r):
    """The names of the rechunk layers in Dask array ``r``'s graph."""
    return [name for name in r.dask.layers if "rechunk" in name]


def partial_tasks(r):
    """The number of per-chunk partial tasks (the chunks the operator ran on)."""
    return sum(len(layer) for name, layer in r.dask.layers.items() if "-partials-" in name)
