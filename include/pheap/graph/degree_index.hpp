// pheap/graph/degree_index.hpp — every vertex of a graph and its out-degree, kept in the heap
// next to the graph, so that a reader gets them in one sequential read instead of a walk of
// the graph's hash banks.
//
// The record. A graph named N (pheap/graph/store.hpp) may have a named object
//   N.degrees   degree_index<pheap::allocator<std::byte>>
// holding two arrays of the same length, aligned: `ids`, every vertex of N in ascending order,
// and `degrees`, the size of each one's adjacency list; and a stamp, the graph's
// (num_vertices, num_arcs) at the moment the arrays were computed.
//
// Why a stamp is enough. adjacency_list only grows: every mutation it offers either adds an arc
// (num_arcs + 1) or a vertex (num_vertices + 1), and nothing removes either. So between two
// moments the graph changed exactly when its (num_vertices, num_arcs) changed, and an index
// whose stamp equals the graph's describes the graph as it is. The record lives in the same
// heap as the graph and is written under the same exclusive access, so a watermark holds both
// as of one instant and a crash rolls both back together: a reopened datastore never pairs a
// graph with an index of another state of it. An index that does not match is ignored
// (find_degree_index returns nullptr) and the reader walks the graph (degrees_by_walk) — the
// answer is the same, only slower. Nothing here destroys or recreates a graph under a name;
// code that does so through pheap::manager directly must destroy N.degrees with it.
//
// Who keeps it. refresh_degree_index recomputes it by one walk of the banks. pheap-graph
// ingest and the Python package's add_edges call it at the end of each ingestion job
// (ingest_options::on_finish: after the job is recorded finished, before the job's last
// flush), so the watermark that ends a job also holds its index. An interrupted job, or
// edges inserted by other code, leave the index stale until the next job ends: readers then
// walk. The walk at a job's end reads every vertex's hash node once (not the lists), on the
// ingesting thread; the index costs 16 bytes per vertex of heap.
//
// Caveats
//   * The distributed graphs of pheap/graph/mpi have no index (each rank's part would need its
//     own; nobody reads them by degree yet).
//   * The stamp is computed in O(num_banks) (adjacency_list::num_vertices and num_arcs).
//   * A refresh that throws (the heap full) leaves an index that matches nothing (its stamp
//     is cleared first), never a half-written one that matches.
#pragma once

#include <pheap/graph/adjacency_list.hpp>
#include <pheap/pheap.hpp>

#include <boost/container/vector.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace pheap::graph {

template <class Alloc>
struct degree_index {
  static constexpr std::uint64_t kMagic = 0x7844474450484750ULL;  // "PGHPDGDx"
  static constexpr std::uint64_t kVersion = 1;
  static constexpr std::uint64_t kNoStamp = ~std::uint64_t{0};
  using u64_vector = boost::container::vector<std::uint64_t,
                                              typename std::allocator_traits<Alloc>::template rebind_alloc<std::uint64_t>>;

  explicit degree_index(const Alloc& a) : ids(a), degrees(a) {}

  std::uint64_t magic = kMagic;
  std::uint64_t version = kVersion;
  std::uint64_t vertices = kNoStamp;  // the stamp: the graph's num_vertices() ...
  std::uint64_t arcs = kNoStamp;      // ... and num_arcs() when ids and degrees were computed
  u64_vector ids;                     // ascending
  u64_vector degrees;                 // degrees[i] = size of the adjacency list of ids[i]

  template <class G>
  bool describes(const G& g) const noexcept {
    return magic == kMagic && version == kVersion && vertices == g.num_vertices() && arcs == g.num_arcs() &&
           ids.size() == vertices && degrees.size() == vertices;
  }
};

using persistent_degree_index = degree_index<pheap::allocator<std::byte>>;

inline std::string degrees_name(const std::string& graph) { return graph + ".degrees"; }

// Orders (vertex, degree) pairs by vertex into `ids` and `deg`. Dense id ranges (max id <
// 4n + 4096, as R-MAT's) are placed by id in one pass; others sorted.
inline void order_by_vertex(std::span<const std::vector<std::pair<std::uint64_t, std::uint64_t>>> parts,
                            std::vector<std::uint64_t>& ids, std::vector<std::uint64_t>& deg) {
  std::size_t n = 0;
  std::uint64_t max_id = 0;
  for (const auto& p : parts) {
    n += p.size();
    for (const auto& [u, d] : p) max_id = std::max(max_id, u);
  }
  ids.resize(n);
  deg.resize(n);
  if (n != 0 && max_id < 4 * n + 4096) {
    constexpr std::uint64_t none = ~std::uint64_t{0};
    std::vector<std::uint64_t> by_id(max_id + 1, none);
    for (const auto& p : parts) {
      for (const auto& [u, d] : p) by_id[u] = d;
    }
    std::size_t k = 0;
    for (std::uint64_t u = 0; u <= max_id; ++u) {
      if (by_id[u] == none) continue;
      ids[k] = u;
      deg[k++] = by_id[u];
    }
  } else {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> all;
    all.reserve(n);
    for (const auto& p : parts) all.insert(all.end(), p.begin(), p.end());
    std::sort(all.begin(), all.end());
    for (std::size_t i = 0; i < n; ++i) {
      ids[i] = all[i].first;
      deg[i] = all[i].second;
    }
  }
}

// The index of `g` as it is now, by one walk of its banks on this thread.
template <class G>
void degrees_by_walk(const G& g, std::vector<std::uint64_t>& ids, std::vector<std::uint64_t>& deg) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> all;
  all.reserve(g.num_vertices());
  g.for_each_vertex([&](std::uint64_t u, const auto& l) { all.emplace_back(u, l.size()); });
  order_by_vertex(std::span(&all, 1), ids, deg);
}

// The index of graph `name` if it describes `g` as it is now, else nullptr (none, stale, or
// of an unknown version). g must be the graph `name` of m.
template <class G>
const persistent_degree_index* find_degree_index(const pheap::manager& m, const std::string& name, const G& g) {
  const persistent_degree_index* idx = m.find<persistent_degree_index>(degrees_name(name)).first;
  return idx != nullptr && idx->describes(g) ? idx : nullptr;
}

// Recomputes the index of graph `name` (g) and stores it in m, creating it if needed. The
// caller holds exclusive access to g (no insertion running). The change is durable with m's
// next flush.
template <class G>
void refresh_degree_index(pheap::manager& m, const std::string& name, const G& g) {
  std::vector<std::uint64_t> ids, deg;
  degrees_by_walk(g, ids, deg);
  persistent_degree_index* idx =
      m.find_or_construct<persistent_degree_index>(degrees_name(name))(m.get_allocator<std::byte>());
  idx->vertices = idx->arcs = persistent_degree_index::kNoStamp;  // matches nothing until complete
  idx->ids.assign(ids.begin(), ids.end());
  idx->degrees.assign(deg.begin(), deg.end());
  idx->vertices = g.num_vertices();
  idx->arcs = g.num_arcs();
}

}  // namespace pheap::graph
