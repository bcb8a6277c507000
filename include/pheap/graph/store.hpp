// pheap/graph/store.hpp — graphs inside a pheap datastore (pheap::manager).
//
// A graph named N occupies these named objects in the heap, created together and therefore
// committed by the same watermark:
//   N               adjacency_list<W, pheap::allocator<std::byte>>  (W chosen by the weight kind)
//   N.info          graph_info  (directedness, weight kind, banks: tells readers which type N has)
//   N.ingest        ingest_state<pheap::allocator<std::byte>>  (position of the resumable ingestion)
//   N.ingest-check  input_check  (CRC32C of the bytes of the current input before that position:
//                   pheap/graph/ingest.hpp, "Changed inputs"). Graphs made before it existed
//                   get it at their next read-write open_or_create_graph; until a batch records
//                   it, a resume there is not verified (ingest_report::resume_unverified).
//                   Readers never need it.
//
//   pheap::manager m(pheap::open_read_only, "/data/g");
//   pheap::graph::visit_graph(m, "graph", [](const auto& g) { std::cout << g.num_arcs(); });
#pragma once

#include <pheap/graph/adjacency_list.hpp>
#include <pheap/graph/ingest.hpp>
#include <pheap/pheap.hpp>

#include <cstddef>
#include <string>
#include <utility>

namespace pheap::graph {

using heap_alloc = pheap::allocator<std::byte>;
template <class W>
using persistent_graph = adjacency_list<W, heap_alloc>;
using persistent_ingest_state = ingest_state<heap_alloc>;

// The graph layer's defaults for the datastores it opens and creates (pheap-graph, the
// Python package's graphs, the graph benches' pheap systems): the library's (pheap::options{}),
// except
//   page_size   4 KiB, not the library's 64 KiB: a graph datastore is built to outgrow memory,
//               and out of core a graph's scattered updates make a larger page bring in bytes
//               nobody touches, so 4 KiB pages ingest faster. (Used when a datastore is
//               created; an existing one keeps its own.)
//   fault_fill  automatic: missing pages are filled on the faulting thread
//               (pheap/pager.hpp, "Fills on the faulting thread"), which saves each fill the
//               two wake-ups of a hand-off to the fault workers. Its cost — a system call on a
//               heap page not in memory fails with EFAULT — does not arise here: the graph
//               code reads input, exchanges batches (MPI) and writes edges through private
//               buffers, never handing graph memory to the kernel. Code of your own that does
//               (a read(2) straight into a graph's arrays) should use the library's default
//               (workers) or touch the pages first.
// Pure: reads no environment variable.
inline pheap::options datastore_defaults() {
  pheap::options o;
  o.page_size = 4096;
  o.pager.fault_fill = pheap::fault_filling::automatic;
  return o;
}

// What pheap-graph opens and creates graph datastores with before its command line: the
// defaults above with the PHEAP_* variables applied (pheap::options::from_env), which win over
// them — PHEAP_PAGE_SIZE gives a new graph datastore that page size, PHEAP_FAULT_FILL=workers
// the library's fills; the tool's --page-size and --buffer-size win over the variables.
inline pheap::options datastore_options() { return pheap::options::from_env(datastore_defaults()); }

inline std::string info_name(const std::string& graph) { return graph + ".info"; }
inline std::string ingest_name(const std::string& graph) { return graph + ".ingest"; }
inline std::string ingest_check_name(const std::string& graph) { return graph + ".ingest-check"; }

// The graph_info of graph `name`, or nullptr when the datastore has no such graph. Throws
// pheap::error(corrupt) when the record has the wrong magic or version.
inline const graph_info* find_graph_info(const pheap::manager& m, const std::string& name) {
  const graph_info* gi = m.find<graph_info>(info_name(name)).first;
  if (gi != nullptr && (gi->magic != graph_info::kMagic || gi->version != graph_info::kVersion)) {
    throw pheap::error(pheap::errc::corrupt, m.path(), "find graph '" + name + "'",
                       "graph_info record has an unknown magic or version");
  }
  return gi;
}

// Calls f(G&) with the graph `name` as its concrete type (const for read-only use is up to f).
// Throws pheap::error(not_found) when the datastore has no graph of that name.
template <class F>
decltype(auto) visit_graph(pheap::manager& m, const std::string& name, F&& f) {
  const graph_info* gi = find_graph_info(m, name);
  if (gi == nullptr) {
    throw pheap::error(pheap::errc::not_found, m.path(), "find graph",
                       "no graph named '" + name + "' in this datastore");
  }
  auto get = [&](auto* tag) -> auto& {
    using G = std::remove_pointer_t<decltype(tag)>;
    G* g = m.find<G>(name).first;
    if (g == nullptr) {
      throw pheap::error(pheap::errc::corrupt, m.path(), "find graph '" + name + "'",
                         "graph_info exists but the graph object does not");
    }
    return *g;
  };
  switch (gi->weights) {
    case weight_kind::none: return f(get(static_cast<persistent_graph<void>*>(nullptr)));
    case weight_kind::u64: return f(get(static_cast<persistent_graph<std::uint64_t>*>(nullptr)));
    case weight_kind::f32: return f(get(static_cast<persistent_graph<float>*>(nullptr)));
  }
  throw pheap::error(pheap::errc::corrupt, m.path(), "find graph '" + name + "'", "unknown weight kind");
}

// Finds graph `name` of weight type W, or creates it (with its info and ingest state) when the
// datastore has none. Throws pheap::error(invalid_argument) naming the difference when an existing
// graph's directedness or weight kind differs from the request.
template <class W>
persistent_graph<W>& open_or_create_graph(pheap::manager& m, const std::string& name, bool directed,
                                          std::size_t banks = persistent_graph<W>::default_banks) {
  if (const graph_info* gi = find_graph_info(m, name)) {
    if ((gi->directed != 0) != directed) {
      throw pheap::error(pheap::errc::invalid_argument, m.path(), "open graph '" + name + "'",
                         "graph '" + name + "' is " + (gi->directed ? "directed" : "undirected") +
                             ", but " + (directed ? "directed" : "undirected (--undirected)") +
                             " was requested");
    }
    if (gi->weights != weight_kind_of<W>) {
      throw pheap::error(pheap::errc::invalid_argument, m.path(), "open graph '" + name + "'",
                         "graph '" + name + "' has weights '" + to_string(gi->weights) + "', but '" +
                             to_string(weight_kind_of<W>) + "' was requested");
    }
  }
  graph_info want;
  want.directed = directed ? 1 : 0;
  want.weights = weight_kind_of<W>;
  want.banks = banks;
  m.find_or_construct<graph_info>(info_name(name))(want);
  m.find_or_construct<persistent_ingest_state>(ingest_name(name))(m.get_allocator<std::byte>());
  m.find_or_construct<input_check>(ingest_check_name(name))();
  return *m.find_or_construct<persistent_graph<W>>(name)(directed, banks, m.get_allocator<std::byte>());
}

// Creates the datastore `path` holding an empty graph `name` (with its info and ingest state),
// atomically with respect to kill -9: pheap::manager's creation with an initialisation step
// builds it under a temporary sibling name (".NAME.creating-XXXXXX", locked while in use; the
// next creation of the name removes an unlocked leftover) and publishes it under its name only
// once its first watermark holds the graph, so a rerun finds either no datastore or a complete
// one (pheap-graph ingest and pheap.graph.create). Throws pheap::error: already_exists when
// `path` exists; what create_only throws, naming `path` with op "create".
void create_datastore(const std::string& path, const pheap::options& o, const std::string& name,
                      bool directed, weight_kind weights, std::size_t banks);

inline persistent_ingest_state* find_ingest_state(pheap::manager& m, const std::string& name) {
  return m.find<persistent_ingest_state>(ingest_name(name)).first;
}

// The input_check of graph `name`, or nullptr (a graph no read-write open_or_create_graph has
// touched since pheap-graph began recording it).
inline input_check* find_input_check(pheap::manager& m, const std::string& name) {
  return m.find<input_check>(ingest_check_name(name)).first;
}

}  // namespace pheap::graph
