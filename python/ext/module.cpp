// python/ext/module.cpp — the extension module pheap._pheap: the classes and functions the
// package pheap re-exports (python/src/pheap/__init__.py). One file per concept beside it:
// store (a datastore's lifetime, lock and views), dtypes (C++ element types <-> NumPy),
// datastore (Datastore, Vector), graph (pheap.graph), errors (pheap::error -> pheap.Error).
#include <nanobind/nanobind.h>

#include "datastore.hpp"
#include "errors.hpp"
#include "graph.hpp"
#include "store.hpp"

NB_MODULE(_pheap, m) {
  m.doc() = "pheap's C++ core for Python; use the package `pheap`.";
  pyheap::register_errors(m);
  pyheap::register_datastore(m);
  pyheap::register_graph(m);
  m.def("_flush_all_at_exit", &pyheap::flush_all_at_exit,
        "Flushes and closes every read-write datastore still open (registered with atexit).");
}
