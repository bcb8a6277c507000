"""pheap.graph — the persistent graphs of ``pheap-graph ingest``, from Python.

    g = pheap.graph.open("/data/g1")             # read-only by default
    ids, deg = g.vertices(), g.degrees()         # aligned, ids ascending
    nb = g.neighbors(ids[0])                     # a zero-copy view into the heap
    level, parent = g.bfs(ids[0])                # == `pheap-graph bfs --output`'s rows
    comp = g.components()                        # == `pheap-graph cc --output`'s rows

    w = pheap.graph.open("/data/g1", read_only=False)
    w.add_edges(src, dst, flush_every=1_000_000) # exactly once, resumable like the tool

Results are aligned with ``vertices()``; ``UNREACHED`` (2**64 - 1) marks vertices a BFS did
not reach.
"""

from ._pheap import graph as _graph

Graph = _graph.Graph
open = _graph.open
create = _graph.create
UNREACHED = _graph.UNREACHED

__all__ = ["Graph", "open", "create", "UNREACHED"]
