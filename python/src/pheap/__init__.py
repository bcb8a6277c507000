"""pheap — a crash-safe persistent heap, from Python.

A pheap datastore holds C++ objects (arrays, vectors, graphs) that outlive the process.
From Python its numeric objects are NumPy arrays that *are* the heap's memory: no copy, no
parsing, reopened in milliseconds at the last watermark.

    import numpy as np, pheap

    with pheap.create("/data/run1") as ds:          # or pheap.open(path, read_only=True)
        a = ds.create_array("temps", (1000, 3), "float64")
        a[:] = np.random.rand(1000, 3)              # writes go straight to the heap
        epoch = ds.flush()                          # durable, atomically: a watermark

    with pheap.open("/data/run1", read_only=True) as ds:
        t = ds.array("temps")                       # shape (1000, 3), flags.writeable False
        print(ds.names(), ds.info()["epoch"])

    g = pheap.graph.open("/data/g1")                # what `pheap-graph ingest` made
    deg = g.degrees(); level, parent = g.bfs(0)

Durability: everything written before ``flush()`` is durable atomically; after a crash
(``kill -9``, a power cut) the datastore opens at the last completed flush. ``close()`` (or
leaving the ``with`` block) flushes too, and so does interpreter exit for handles left open.

Lifetimes: a view keeps its datastore alive. ``close()`` returns at once; views made before
stay valid until they are deleted, and the datastore stays locked until then. Objects cannot
be destroyed, and vectors cannot grow past their capacity, while views of them live
(``BufferError``). A damaged page met while making a view or reading a graph is
``pheap.CorruptError`` naming the segment file and the page, not SIGBUS.

Errors are ``pheap.Error`` subclasses whose message names the datastore, the operation and
the cause (``pheap: open /data/g1: locked by another process ...``).
"""

import atexit as _atexit

from ._errors import (
    ClosedError,
    CorruptError,
    Error,
    ExistsError,
    FormatError,
    IngestError,
    InvalidArgumentError,
    LockedError,
    NoSpaceError,
    NotADatastoreError,
    NotFoundError,
    PoisonedError,
    StaleError,
    ReadOnlyError,
    StoreIOError,
    TypeMismatchError,
    UnavailableError,
)
from ._pheap import Datastore, Vector, consistent, create, info, open, remove
from . import graph

__version__ = "0.1.0"

__all__ = [
    "Datastore",
    "Vector",
    "create",
    "open",
    "info",
    "remove",
    "consistent",
    "graph",
    "Error",
    "StoreIOError",
    "NoSpaceError",
    "NotFoundError",
    "ExistsError",
    "NotADatastoreError",
    "FormatError",
    "CorruptError",
    "LockedError",
    "ReadOnlyError",
    "InvalidArgumentError",
    "TypeMismatchError",
    "UnavailableError",
    "PoisonedError",
    "StaleError",
    "IngestError",
    "ClosedError",
]

from ._pheap import _flush_all_at_exit

_atexit.register(_flush_all_at_exit)
