// pheap/graph/mpi/partition.hpp — a graph partitioned by vertex over the ranks of a
// distributed datastore (pheap/mpi/manifest.hpp), and its single-process view. Needs no MPI:
// a process without it reads a distributed graph through distributed_graph below.
//
// Ownership: vertex v belongs to rank owner_of(v, N) (N = the datastore's rank count, fixed at
// creation). Rank r's datastore holds, under the graph's name, an ordinary graph
// (pheap/graph/store.hpp) of the vertices it owns: every arc u -> v with owner_of(u) = r, and
// every vertex of rank r, also one without arcs. So each rank directory is a valid graph
// datastore, and the union of the ranks' graphs is the graph the single-process tool would
// have built from the same input (same vertices, same arcs; the order of a vertex's arcs may
// differ). A record `<graph>.mpi` (partition_state) in every rank's heap names N, the rank
// and the owner function, so a reader checks that it routes as the writer did.
//
// The input split (graph/mpi/FORMAT.md): each rank reads a disjoint byte range of every input,
// cut at line (text) or record (binary) boundaries; the ranges are a function of the input
// sizes and N, recorded in the partition record when the job starts, so a rerun resumes them.
//
// Caveats:
//   * The owner function is part of the format: changing it makes every existing distributed
//     graph unreadable (the record's owner_hash says which one wrote it).
//   * With N > 1 the inputs must be plain files (a byte range of a gzip or zstd stream cannot
//     be read on its own, stdin cannot be split): ingest_usage_error otherwise.
#pragma once

#include <pheap/graph/algorithms.hpp>
#include <pheap/graph/store.hpp>

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace pheap::graph::mpi {

// The owner function (owner_hash 1). Salted so that a rank's vertices still spread over all
// of its banks (bank_of is mix64(v) % banks).
inline constexpr std::uint64_t kOwnerHash = 1;
inline int owner_of(std::uint64_t v, int ranks) noexcept {
  return static_cast<int>(mix64(v ^ 0x9e3779b97f4a7c15ULL) % static_cast<std::uint64_t>(ranks));
}

struct byte_range {
  std::uint64_t begin = 0, end = 0;  // [begin, end): the lines or records starting in it
};

// Rank `rank`'s range of each input when `ranks` ranks read them. The nominal cut for rank r
// is size * r / ranks, moved forward to the next line start (text: just past the first '\n'
// at or after cut - 1) or record boundary (binary); so the ranges tile each input. One rank:
// every input whole (any input, also compressed or stdin). Throws ingest_usage_error for
// stdin or a compressed input when ranks > 1, input_error when an input cannot be read.
std::vector<byte_range> split_inputs(const std::vector<std::string>& inputs, input_format format,
                                     weight_kind weights, int ranks, int rank);

// The partition record of a graph in one rank's heap, named partition_name(graph).
template <class Alloc>
struct partition_state {
  static constexpr std::uint64_t kMagic = 0x70686561702d676dULL;  // "pheap-gm"
  static constexpr std::uint32_t kVersion = 1;
  using range_vector =
      boost::container::vector<std::uint64_t, typename std::allocator_traits<Alloc>::template rebind_alloc<std::uint64_t>>;

  partition_state(std::uint64_t n, std::uint64_t r, const Alloc& a) : ranks(n), rank(r), ranges(a) {}

  std::uint64_t magic = kMagic;
  std::uint32_t version = kVersion;
  std::uint32_t owner_hash = kOwnerHash;
  std::uint64_t ranks;            // N of the distributed datastore
  std::uint64_t rank;             // this heap's rank
  std::uint64_t fingerprint = 0;  // the ingestion job `ranges` belong to (ingest.hpp)
  range_vector ranges;            // begin, end of this rank's range of each input of that job
};
using persistent_partition = partition_state<heap_alloc>;
inline std::string partition_name(const std::string& graph) { return graph + ".mpi"; }

// The partition record of graph `name` in rank `rank`'s heap of an N-rank datastore. Throws
// pheap::error naming the datastore: not_found (no graph of that name), corrupt (a record of
// another rank, rank count or owner function, or with an unknown magic or version).
const persistent_partition& check_partition(const pheap::manager& m, const std::string& name, int ranks,
                                            int rank);

// The union of the ranks' graphs as one read-only graph with the interface the algorithms of
// pheap/graph/algorithms.hpp use (count, bfs, connected_components, build_index), so they
// run unchanged, in one process, over a distributed graph.
template <class G>
class distributed_graph {
 public:
  using list_type = typename G::list_type;
  using neighbor_type = typename G::neighbor_type;
  static constexpr weight_kind kind = G::kind;

  explicit distributed_graph(std::vector<const G*> parts) : parts_(std::move(parts)) {}
  bool directed() const noexcept { return parts_.front()->directed(); }
  std::size_t num_banks() const noexcept { return parts_.front()->num_banks(); }
  int ranks() const noexcept { return static_cast<int>(parts_.size()); }
  const G& part(int r) const noexcept { return *parts_[static_cast<std::size_t>(r)]; }
  std::uint64_t num_vertices() const noexcept {
    std::uint64_t n = 0;
    for (const G* p : parts_) n += p->num_vertices();
    return n;
  }
  std::uint64_t num_arcs() const noexcept {
    std::uint64_t n = 0;
    for (const G* p : parts_) n += p->num_arcs();
    return n;
  }
  bool contains(std::uint64_t u) const { return part(owner_of(u, ranks())).contains(u); }
  const list_type* neighbors(std::uint64_t u) const { return part(owner_of(u, ranks())).neighbors(u); }
  template <class F>
  void for_each_vertex(F&& f) const {
    for (const G* p : parts_) p->for_each_vertex(f);
  }
  static std::uint64_t dst_of(const neighbor_type& n) noexcept { return G::dst_of(n); }
  static std::uint64_t weight_bits_of(const neighbor_type& n) noexcept { return G::weight_bits_of(n); }

 private:
  std::vector<const G*> parts_;
};

// Calls f(const distributed_graph<G>&) with graph `name` of the ranks' heaps `ranks` (rank
// order, e.g. pheap::mpi::open_read_only(path).ranks) as its concrete type. Every rank must
// hold the graph with the same directedness, weights and banks, and its partition record
// must match (check_partition): pheap::error(not_found / corrupt) naming the rank otherwise.
template <class F>
decltype(auto) visit_distributed(std::vector<pheap::manager>& ranks, const std::string& name, F&& f) {
  const int n = static_cast<int>(ranks.size());
  const graph_info* first = nullptr;
  for (int r = 0; r < n; ++r) {
    pheap::manager& m = ranks[static_cast<std::size_t>(r)];
    check_partition(m, name, n, r);
    const graph_info* gi = find_graph_info(m, name);
    if (first != nullptr && (gi->directed != first->directed || gi->weights != first->weights ||
                             gi->banks != first->banks)) {
      throw pheap::error(pheap::errc::corrupt, m.path(), "find graph " + name,
                         "rank " + std::to_string(r) + "'s graph differs from rank 0's (directedness, weights or banks)");
    }
    first = first == nullptr ? gi : first;
  }
  return visit_graph(ranks.front(), name, [&](auto& g0) -> decltype(auto) {
    using G = std::remove_cvref_t<decltype(g0)>;
    std::vector<const G*> parts;
    for (auto& m : ranks) parts.push_back(m.find<G>(name).first);
    for (int r = 0; r < n; ++r) {
      if (parts[static_cast<std::size_t>(r)] == nullptr) {
        throw pheap::error(pheap::errc::corrupt, ranks[static_cast<std::size_t>(r)].path(), "find graph " + name,
                           "graph_info exists but the graph object does not");
      }
    }
    const distributed_graph<G> dg(std::move(parts));
    return f(dg);
  });
}

}  // namespace pheap::graph::mpi
