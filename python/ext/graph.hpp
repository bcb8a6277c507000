// python/ext/graph.hpp — pheap.graph: the graphs pheap-graph makes (pheap/graph/store.hpp) from
// Python.
//
//   pheap.graph.open(path, name="graph", read_only=True)  -> Graph
//   pheap.graph.create(path, name="graph", directed=True, weights="none")  -> Graph (read-write)
//   Graph.vertices(), degrees()    ascending ids and their out-degrees (computed once, cached
//                                  until add_edges: the lists' sizes are scattered over the
//                                  heap's hash nodes, so this is an array, not a view)
//   Graph.neighbors(v)             a zero-copy, read-only view of v's list (uint64); weighted
//                                  graphs: (dst, weight) views, strided over the same entries
//   Graph.bfs(source)              (level, parent) per vertex of vertices(): the library's
//                                  pheap::graph::bfs, the rows `pheap-graph bfs --output` writes
//   Graph.components()             per vertex: the smallest id of its (weakly) connected component
//   Graph.add_edges(src, dst)      grouped insertion with pheap-graph ingest's exactly-once
//                                  protocol (pheap/graph/ingest.hpp): a job per set of arrays
//                                  (fingerprint: CRC32C of their bytes and their length), its
//                                  position the index of the next edge, a watermark every
//                                  flush_every edges / seconds and at the end. Killed and rerun
//                                  with the same arrays, it resumes edge for edge.
// Long calls (open, degrees, bfs, components, add_edges) release the GIL and read the heap under
// the fault guard: a damaged page is pheap.CorruptError naming the segment file and the page.
// Caveats: add_edges with threads > 1 guards only its calling thread (the others' faults are
// SIGBUS, as in the tool); a failure in the middle of a batch leaves the heap half-inserted, so
// the handle is abandoned without a flush — the datastore keeps its last watermark, and this
// process cannot reopen it (its lock stays held): rerun in a new process to resume.
#pragma once

#include <nanobind/nanobind.h>

namespace pyheap {

// Registers the submodule `graph` of m.
void register_graph(nanobind::module_& m);

}  // namespace pyheap
