// pheap/graph/adjacency_list.hpp — a banked, concurrent adjacency list that can live in a
// persistent heap.
//
// Layout (Metall's reference design, bench/data_structure/multithread_adjacency_list.hpp):
//   banks_ : vector< unordered_map<uint64 vertex, vector<neighbour>> >, 1024 banks by default
//   vertex u lives in bank mix64(u) % num_banks (fixed for the lifetime of the graph).
// A neighbour is a plain uint64 id for unweighted graphs and a {dst, weight} pair otherwise.
//
// The object holds only offsets-safe members (sizes, flags and containers using `Alloc`), so
// with an allocator whose pointer is boost::interprocess::offset_ptr (pheap::allocator,
// Boost.Interprocess allocators) it can be constructed inside a mapped heap and reopened at any
// address. Nested containers get their allocator through scoped_allocator_adaptor, so the whole
// structure lives in the same heap.
//
// Concurrency contract: locks are NOT part of the persistent object (a mutex in a mapped file
// is meaningless after a crash). Writers share a DRAM-side `bank_locks` table with one mutex per
// bank; every mutation of bank b happens under lock b. The bank vector is never resized after
// construction, so different banks are independent. Readers may run concurrently with each
// other but not with writers (algorithms are meant for a quiescent or read-only graph).
//
// Invariants (checked by tests):
//   * every endpoint of every inserted edge is a key (vertex) — for directed graphs the
//     destination gets an (possibly empty) entry too, so num_vertices() is a key count;
//   * undirected: edge {u,v} stores v in adj(u) and u in adj(v); a self-loop {u,u} is stored
//     once; num_arcs() counts stored entries, i.e. 2 per non-loop undirected edge;
//   * arcs_[b * kCounterStride] == sum of list sizes in bank b.
#pragma once

#include <pheap/error.hpp>
#include <pheap/graph/types.hpp>

#include <boost/container/scoped_allocator.hpp>
#include <boost/container/vector.hpp>
#include <boost/functional/hash.hpp>
#include <boost/unordered_map.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <type_traits>

namespace pheap::graph {

// A neighbour with a weight. Weight is std::uint64_t or float.
template <class W>
struct weighted_neighbor {
  std::uint64_t dst;
  W weight;
  friend bool operator==(const weighted_neighbor&, const weighted_neighbor&) = default;
};

namespace detail {
template <class W>
struct neighbor_of {
  using type = weighted_neighbor<W>;
};
template <>
struct neighbor_of<void> {
  using type = std::uint64_t;
};
}  // namespace detail

// The weight_kind matching a weight type parameter (void, std::uint64_t, float).
template <class W>
inline constexpr weight_kind weight_kind_of = std::is_void_v<W>                   ? weight_kind::none
                                              : std::is_same_v<W, std::uint64_t> ? weight_kind::u64
                                                                                  : weight_kind::f32;

// DRAM lock table: one mutex per bank, each on its own cache line.
class bank_locks {
 public:
  explicit bank_locks(std::size_t banks) : size_(banks), locks_(new padded[banks]) {}
  std::mutex& operator[](std::size_t bank) noexcept { return locks_[bank].m; }
  std::size_t size() const noexcept { return size_; }

 private:
  struct alignas(64) padded {
    std::mutex m;
  };
  std::size_t size_;
  std::unique_ptr<padded[]> locks_;
};

// W: void (unweighted), std::uint64_t or float. Alloc: any allocator (it is rebound), e.g.
// std::allocator<std::byte>, pheap::allocator<std::byte>, a Boost.Interprocess allocator.
template <class W, class Alloc>
class adjacency_list {
  static_assert(std::is_void_v<W> || std::is_same_v<W, std::uint64_t> || std::is_same_v<W, float>,
                "weights are void (none), std::uint64_t or float");

 public:
  using weight_type = W;
  using neighbor_type = typename detail::neighbor_of<W>::type;
  template <class T>
  using rebind = typename std::allocator_traits<Alloc>::template rebind_alloc<T>;
  using list_type = boost::container::vector<neighbor_type, rebind<neighbor_type>>;
  using map_value_type = std::pair<const std::uint64_t, list_type>;
  using map_type =
      boost::unordered_map<std::uint64_t, list_type, boost::hash<std::uint64_t>,
                           std::equal_to<std::uint64_t>,
                           boost::container::scoped_allocator_adaptor<rebind<map_value_type>>>;
  using bank_vector =
      boost::container::vector<map_type, boost::container::scoped_allocator_adaptor<rebind<map_type>>>;
  using counter_vector = boost::container::vector<std::uint64_t, rebind<std::uint64_t>>;

  static constexpr std::size_t default_banks = 1024;
  static constexpr weight_kind kind = weight_kind_of<W>;

  // Creates an empty graph with `banks` (> 0) banks.
  adjacency_list(bool directed, std::size_t banks, const Alloc& alloc)
      : directed_(directed ? 1 : 0),
        banks_(check_banks(banks), alloc),
        arcs_(banks * kCounterStride, 0, alloc) {}
  explicit adjacency_list(bool directed, const Alloc& alloc = Alloc())
      : adjacency_list(directed, default_banks, alloc) {}

  bool directed() const noexcept { return directed_ != 0; }
  std::size_t num_banks() const noexcept { return banks_.size(); }
  std::size_t bank_of(std::uint64_t u) const noexcept { return mix64(u) % banks_.size(); }

  // Inserts one edge. `e.weight` holds raw weight bits (see types.hpp) and is ignored for
  // unweighted graphs. With `locks` (size num_banks()) the call is safe against concurrent
  // inserts sharing the same table; without, the caller guarantees exclusive access.
  void insert(const edge& e, bank_locks* locks = nullptr) {
    add_arc(e.src, e.dst, e.weight, locks);
    if (!directed()) {
      if (e.src != e.dst) add_arc(e.dst, e.src, e.weight, locks);
    } else {
      ensure_vertex(e.dst, locks);
    }
  }
  void insert(std::uint64_t u, std::uint64_t v, std::uint64_t weight_bits = 0,
              bank_locks* locks = nullptr) {
    insert(edge{u, v, weight_bits}, locks);
  }

  // One half of insert(), for a graph partitioned by vertex (pheap/graph/mpi: a rank holds
  // the vertices it owns): add_arc stores v in adj(u) only (u becomes a vertex); ensure_vertex
  // makes u a vertex with no arc. insert(e) is add_arc(src, dst) plus, directed,
  // ensure_vertex(dst) or, undirected and not a loop, add_arc(dst, src).
  void add_arc(std::uint64_t u, std::uint64_t v, std::uint64_t weight_bits, bank_locks* locks = nullptr) {
    const std::size_t b = bank_of(u);
    std::unique_lock<std::mutex> g;
    if (locks) g = std::unique_lock<std::mutex>((*locks)[b]);
    banks_[b][u].push_back(make_neighbor(v, weight_bits));
    ++arcs_[b * kCounterStride];
  }
  void ensure_vertex(std::uint64_t u, bank_locks* locks = nullptr) {
    const std::size_t b = bank_of(u);
    std::unique_lock<std::mutex> g;
    if (locks) g = std::unique_lock<std::mutex>((*locks)[b]);
    banks_[b].try_emplace(u);
  }

  // Many arcs of one source at once (the grouped insertion of grouped_insert.hpp is built on
  // it): appends `arcs` to adj(u) in their order, with one look-up of u, at most one
  // reallocation of its list and, with `locks`, lock bank_of(u) taken once. The list then holds
  // what add_arc(u, ...) once per arc in the same order would have stored; only its capacity
  // may differ. No arcs: ensure_vertex(u). If the reallocation throws, nothing is appended (u
  // may have become a vertex, as with add_arc).
  //
  // Growth: when the arcs do not fit, the list is reserved to max(size + k, capacity * 8 / 5),
  // then appended to. 8/5 is the factor of the list's own push_back (boost::container::vector's
  // default growth_factor_60), so a list reaches the same order of capacity whichever way it
  // grew and a grouped ingestion makes a datastore of the size a per-edge one makes (what the
  // out-of-core benchmarks budget against). Geometric growth keeps the cost amortised O(1) per
  // arc: each reallocation multiplies the capacity by about 1.6 at least (integer rounding aside
  // for capacities below 5), so a list of n arcs has copied fewer than 8n/3 elements in all,
  // however the arcs came in groups. Reserving exactly size + k instead would reallocate — copy,
  // and out of core read back — the whole list at every batch that grows it: O(n * batches).
  void add_arcs(std::uint64_t u, std::span<const neighbor_type> arcs, bank_locks* locks = nullptr) {
    const std::size_t b = bank_of(u);
    std::unique_lock<std::mutex> g;
    if (locks) g = std::unique_lock<std::mutex>((*locks)[b]);
    list_type& l = banks_[b][u];
    const std::size_t need = l.size() + arcs.size();
    if (need > l.capacity()) l.reserve(std::max<std::size_t>(need, l.capacity() * 8 / 5));
    for (const neighbor_type& n : arcs) l.push_back(n);
    arcs_[b * kCounterStride] += arcs.size();
  }

  // Number of vertices (keys). O(num_banks).
  std::uint64_t num_vertices() const noexcept {
    std::uint64_t n = 0;
    for (const auto& b : banks_) n += b.size();
    return n;
  }
  // Number of stored adjacency entries (arcs). O(num_banks).
  std::uint64_t num_arcs() const noexcept {
    std::uint64_t n = 0;
    for (std::size_t b = 0; b < banks_.size(); ++b) n += arcs_[b * kCounterStride];
    return n;
  }
  bool contains(std::uint64_t u) const { return banks_[bank_of(u)].count(u) != 0; }
  // Adjacency of u, or nullptr when u is not a vertex.
  const list_type* neighbors(std::uint64_t u) const {
    const auto& m = banks_[bank_of(u)];
    auto it = m.find(u);
    return it == m.end() ? nullptr : &it->second;
  }
  // Calls f(vertex, const list_type&) for every vertex, bank by bank (unspecified order).
  template <class F>
  void for_each_vertex(F&& f) const {
    for (const auto& b : banks_)
      for (const auto& [u, lst] : b) f(u, lst);
  }
  const map_type& bank(std::size_t b) const { return banks_[b]; }

  static std::uint64_t dst_of(const neighbor_type& n) noexcept {
    if constexpr (std::is_void_v<W>) {
      return n;
    } else {
      return n.dst;
    }
  }
  // The neighbour v with raw weight bits (edge::weight's encoding; ignored when unweighted):
  // what insert() stores, and what dst_of / weight_bits_of read back.
  static neighbor_type make_neighbor(std::uint64_t v, std::uint64_t weight_bits) noexcept {
    if constexpr (std::is_void_v<W>) {
      (void)weight_bits;
      return v;
    } else if constexpr (std::is_same_v<W, float>) {
      return neighbor_type{v, f32_from_bits(weight_bits)};
    } else {
      return neighbor_type{v, weight_bits};
    }
  }
  // Raw weight bits of a neighbour (0 for unweighted graphs), same encoding as edge::weight.
  static std::uint64_t weight_bits_of(const neighbor_type& n) noexcept {
    if constexpr (std::is_void_v<W>) {
      (void)n;
      return 0;
    } else if constexpr (std::is_same_v<W, float>) {
      return f32_bits(n.weight);
    } else {
      return n.weight;
    }
  }

 private:
  // Counters of different banks are kept 64 bytes apart so that concurrent writers do not
  // share a cache line.
  static constexpr std::size_t kCounterStride = 8;

  static std::size_t check_banks(std::size_t banks) {
    if (banks == 0) {
      throw error(errc::invalid_argument, "", "adjacency_list", "number of banks must be > 0");
    }
    return banks;
  }

  std::uint64_t directed_;
  bank_vector banks_;
  counter_vector arcs_;
};

// Small fixed-layout record stored next to a graph so tools can discover, before touching the
// graph object, how it was created (which template instantiation to look up).
struct graph_info {
  static constexpr std::uint64_t kMagic = 0x70686561702d6731ULL;  // "pheap-g1"
  static constexpr std::uint32_t kVersion = 1;
  std::uint64_t magic = kMagic;
  std::uint32_t version = kVersion;
  std::uint32_t directed = 1;
  weight_kind weights = weight_kind::none;
  std::uint32_t reserved = 0;
  std::uint64_t banks = 1024;
};

}  // namespace pheap::graph
