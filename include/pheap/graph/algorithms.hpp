// pheap/graph/algorithms.hpp — read-only algorithms over an adjacency_list.
//
// Every function takes the graph by const reference and only reads it, so it works on a graph
// found through a read-only datastore open. Working state (indices, queues, labels) lives in
// DRAM. Vertex ids are arbitrary uint64, so algorithms first build a dense `vertex_index`
// (ids sorted ascending → index 0..n-1); results are reported per index with `index.ids` giving
// the id, which makes output order deterministic.
#pragma once

#include <pheap/error.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <span>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace pheap::graph {

inline constexpr std::uint64_t kUnreached = std::numeric_limits<std::uint64_t>::max();

// ids ascending -> index 0..n-1, and back. index_of is the walks' inner step (one call per arc
// of a BFS or CC), so a dense id range — max id < 4n + 4096, as R-MAT's and most generators'
// — is looked up in a flat array of max id + 1 entries (8 bytes each: at most about 32 bytes per
// vertex), one memory access; other id sets in a hash map.
struct vertex_index {
  std::vector<std::uint64_t> ids;                          // ascending
  std::vector<std::uint64_t> dense;                        // dense ids: id -> index or kUnreached
  std::unordered_map<std::uint64_t, std::uint64_t> pos;    // otherwise: id -> index
  bool is_dense = false;
  std::uint64_t index_of(std::uint64_t id) const {
    if (is_dense) return id < dense.size() ? dense[id] : kUnreached;
    auto it = pos.find(id);
    return it == pos.end() ? kUnreached : it->second;
  }
};

namespace detail {

// The index of the ids gathered (in any order) in ix.ids: sorts them and builds the look-up.
inline void finish_index(vertex_index& ix) {
  std::sort(ix.ids.begin(), ix.ids.end());
  const std::uint64_t n = ix.ids.size();
  if (n != 0 && ix.ids.back() < 4 * n + 4096) {
    ix.is_dense = true;
    ix.dense.assign(ix.ids.back() + 1, kUnreached);
    for (std::uint64_t i = 0; i < n; ++i) ix.dense[ix.ids[i]] = i;
  } else {
    ix.pos.reserve(n);
    for (std::uint64_t i = 0; i < n; ++i) ix.pos.emplace(ix.ids[i], i);
  }
}

// A graph whose adjacency lists are contiguous arrays (neighbors(u) -> a list with size() and
// operator[] over one array): a walk can keep where each list lies and read it again without
// looking its vertex up.
template <class Graph>
concept contiguous_lists = requires(const Graph& g) {
  g.neighbors(std::uint64_t{0})->size();
  g.neighbors(std::uint64_t{0})->data();
  (*g.neighbors(std::uint64_t{0}))[0];
};

// Where a vertex's list lies in the heap (a graph with contiguous_lists): a range over it.
template <class Graph>
struct list_span {
  using neighbor = std::remove_cvref_t<decltype((*std::declval<const Graph&>().neighbors(0))[0])>;
  const neighbor* first = nullptr;
  std::size_t count = 0;
  const neighbor* data() const noexcept { return first; }
  std::size_t size() const noexcept { return count; }
  bool empty() const noexcept { return count == 0; }
  const neighbor* begin() const noexcept { return first; }
  const neighbor* end() const noexcept { return first + count; }
  const neighbor& operator[](std::size_t i) const noexcept { return first[i]; }
};

}  // namespace detail

template <class Graph>
vertex_index build_index(const Graph& g) {
  vertex_index ix;
  ix.ids.reserve(g.num_vertices());
  g.for_each_vertex([&](std::uint64_t u, const auto&) { ix.ids.push_back(u); });
  detail::finish_index(ix);
  return ix;
}

// build_index, keeping where each vertex's list lies (lists[index]) from the same pass over the
// vertices: a walk then reads a list without a look-up (out of core: without the fault on the
// vertex's hash node). 16 bytes per vertex more, in DRAM.
template <class Graph>
  requires detail::contiguous_lists<Graph>
vertex_index build_index(const Graph& g, std::vector<detail::list_span<Graph>>& lists) {
  vertex_index ix;
  std::vector<detail::list_span<Graph>> found;
  ix.ids.reserve(g.num_vertices());
  found.reserve(g.num_vertices());
  g.for_each_vertex([&](std::uint64_t u, const auto& lst) {
    ix.ids.push_back(u);
    found.push_back({lst.size() == 0 ? nullptr : &lst[0], static_cast<std::size_t>(lst.size())});
  });
  const std::vector<std::uint64_t> order = ix.ids;  // the ids in the order found
  detail::finish_index(ix);
  lists.assign(order.size(), {});
  for (std::size_t i = 0; i < order.size(); ++i) lists[ix.index_of(order[i])] = found[i];
  return ix;
}

namespace detail {

// What a walk keeps of the index's pass: where each list lies (a graph with contiguous_lists),
// else nothing.
template <class Graph>
using kept_lists = std::vector<std::conditional_t<contiguous_lists<Graph>, list_span<Graph>, char>>;

template <class Graph>
vertex_index index_keeping_lists(const Graph& g, kept_lists<Graph>& lists) {
  if constexpr (contiguous_lists<Graph>) {
    return build_index(g, lists);
  } else {
    return build_index(g);
  }
}

}  // namespace detail

// Calls f(id, list) for every vertex, ids ascending, and returns the index of the ids. A graph
// with contiguous lists is passed once (build_index's pass) and each list read where that pass
// found it, with no look-up per vertex (f gets a detail::list_span: begin(), end(), size(),
// empty(), data(), operator[]); other graphs look each vertex up (f gets its list). For walks
// in id order that read every list: pheap-graph export.
template <class Graph, class F>
vertex_index for_each_vertex_by_id(const Graph& g, F&& f) {
  if constexpr (detail::contiguous_lists<Graph>) {
    std::vector<detail::list_span<Graph>> lists;
    vertex_index ix = build_index(g, lists);
    for (std::size_t i = 0; i < ix.ids.size(); ++i) {
      if (i + 8 < lists.size()) __builtin_prefetch(lists[i + 8].data());  // lists lie at random
      f(ix.ids[i], lists[i]);
    }
    return ix;
  } else {
    vertex_index ix = build_index(g);
    for (const std::uint64_t u : ix.ids) f(u, *g.neighbors(u));
    return ix;
  }
}

struct graph_counts {
  std::uint64_t vertices = 0;
  std::uint64_t arcs = 0;            // stored adjacency entries
  std::uint64_t max_degree = 0;      // out-degree (entries in a list)
  std::uint64_t isolated = 0;        // vertices with an empty list
  std::uint64_t self_loops = 0;
};

// The counts and the exact out-degree histogram (degree -> number of vertices with that degree)
// from one pass over the vertices (pheap-graph stats: out of core each pass reads the heap).
// Degrees below 1024 are counted in an array, the rest in the map, merged at the end.
struct graph_profile {
  graph_counts counts;
  std::map<std::uint64_t, std::uint64_t> degrees;
};

template <class Graph>
graph_profile profile(const Graph& g) {
  graph_profile p;
  graph_counts& c = p.counts;
  std::vector<std::uint64_t> small(1024, 0);
  g.for_each_vertex([&](std::uint64_t u, const auto& lst) {
    const std::uint64_t d = lst.size();
    ++c.vertices;
    c.arcs += d;
    c.max_degree = std::max(c.max_degree, d);
    if (d < small.size()) {
      ++small[d];
    } else {
      ++p.degrees[d];
    }
    for (const auto& n : lst)
      if (Graph::dst_of(n) == u) ++c.self_loops;
  });
  c.isolated = small[0];
  for (std::size_t d = 0; d < small.size(); ++d)
    if (small[d] != 0) p.degrees.emplace(d, small[d]);
  return p;
}

template <class Graph>
graph_counts count(const Graph& g) {
  return profile(g).counts;
}

// Exact out-degree histogram: degree -> number of vertices with that degree.
template <class Graph>
std::map<std::uint64_t, std::uint64_t> degree_distribution(const Graph& g) {
  return profile(g).degrees;
}

struct bfs_result {
  vertex_index index;
  std::vector<std::uint64_t> level;   // kUnreached when not reached; source has level 0
  std::vector<std::uint64_t> parent;  // parent id; the source is its own parent; kUnreached
  std::uint64_t reached = 0;
  std::uint64_t max_level = 0;
};

// Whether a walk over every vertex of a heap with `live_bytes` of data through a pager buffer
// of `buffer_bytes` gains from walk_hints: when the data does not fit in the buffer (the walk's
// reads are then faults; a heap that fits is read ahead whole by manager::prefetch_all).
inline bool walk_read_ahead_wanted(std::uint64_t live_bytes, std::uint64_t buffer_bytes) noexcept {
  return buffer_bytes != 0 && live_bytes > buffer_bytes;
}

// Out of core, how a walk asks for what it will read before it reads it: the walk hands
// `prefetch` the lists of the next `window` vertices of its BFS level, a batch at a time
// (pheap: [&m](auto r) { m.prefetch(r); } — the pager's workers then read them, many reads in
// flight, while the walk reads the lists before them). Empty: no read-ahead.
struct walk_hints {
  std::function<void(std::span<const std::pair<const void*, std::size_t>>)> prefetch;
  // Vertices of a level whose lists are asked for ahead of the walk. 1024: at SCALE 20 through a
  // quarter-size buffer, 256 and 1024 kept 18-26 reads in flight and 4096 only 14-15, with
  // twice the faults (likely: a worker claims the queue 512 pages at a time in page order, so
  // the lists the walk needs next wait behind farther ones; bench/DECISIONS.md "the BFS reads
  // its lists where the index found them").
  std::size_t window = 1024;
  explicit operator bool() const noexcept { return static_cast<bool>(prefetch) && window != 0; }
};

// Breadth-first search along stored arcs (out-edges; both directions for undirected graphs).
// Throws pheap::error(invalid_argument) when `source` is not a vertex. Contract: level[] is the
// exact hop distance; parent[v] is a neighbour-in of v with level[parent] == level[v] - 1.
// A graph with contiguous lists (adjacency_list) is walked through where each list lies, kept
// by the index's pass over the vertices: no look-up per visit, so out of core no fault on a
// vertex's hash node, only on its list. `hints` change no result, only which reads are in
// flight when the walk needs them (other graphs: ignored).
template <class Graph>
bfs_result bfs(const Graph& g, std::uint64_t source, const walk_hints& hints = {}) {
  bfs_result r;
  constexpr bool by_span = detail::contiguous_lists<Graph>;
  detail::kept_lists<Graph> lists;
  r.index = detail::index_keeping_lists(g, lists);
  const std::uint64_t s = r.index.index_of(source);
  if (s == kUnreached) {
    throw error(errc::invalid_argument, "", "bfs",
                "source " + std::to_string(source) + " is not a vertex of the graph");
  }
  const std::size_t n = r.index.ids.size();
  r.level.assign(n, kUnreached);
  r.parent.assign(n, kUnreached);
  std::vector<std::uint64_t> frontier{s}, next;
  r.level[s] = 0;
  r.parent[s] = source;
  r.reached = 1;
  std::uint64_t depth = 0;
  constexpr std::size_t batch = 64;  // vertices whose lists are asked for in one prefetch call
  std::vector<std::pair<const void*, std::size_t>> ranges;
  std::size_t asked = 0;  // the frontier's lists [0, asked) are asked for
  auto ask_until = [&](std::size_t end) {
    if constexpr (by_span) {
      end = std::min(end, frontier.size());
      if (end <= asked) return;
      ranges.clear();
      for (std::size_t j = asked; j < end; ++j) {
        const auto& l = lists[frontier[j]];
        if (!l.empty()) ranges.emplace_back(l.data(), l.size() * sizeof(l[0]));
      }
      asked = end;
      if (!ranges.empty()) hints.prefetch(ranges);
    }
  };
  // Dense ids: which ids need no visit (reached, or not a vertex), a bit per id, so an arc to a
  // vertex already reached — most arcs — costs a read of a bitmap of max id / 8 bytes (in the
  // CPU's caches far longer than the index and the levels, 8 bytes a vertex each) and no look-up.
  const vertex_index& ix = r.index;
  std::vector<std::uint64_t> done_ids;
  if (ix.is_dense) {
    done_ids.assign((ix.dense.size() + 63) / 64, ~std::uint64_t{0});
    for (const std::uint64_t id : ix.ids) done_ids[id / 64] &= ~(std::uint64_t{1} << (id % 64));
    done_ids[source / 64] |= std::uint64_t{1} << (source % 64);
  }
  auto reach = [&](std::uint64_t u, std::uint64_t vi) {
    r.level[vi] = depth + 1;
    r.parent[vi] = u;
    ++r.reached;
    next.push_back(vi);
  };
  auto visit = [&](std::uint64_t u, const auto& lst) {
    if (ix.is_dense) {
      const std::uint64_t ids = ix.dense.size();
      for (const auto& nb : lst) {
        const std::uint64_t v = Graph::dst_of(nb);
        if (v >= ids) continue;
        std::uint64_t& word = done_ids[v / 64];
        const std::uint64_t bit = std::uint64_t{1} << (v % 64);
        if ((word & bit) != 0) continue;
        word |= bit;
        reach(u, ix.dense[v]);
      }
      return;
    }
    for (const auto& nb : lst) {
      const std::uint64_t vi = ix.index_of(Graph::dst_of(nb));
      if (vi == kUnreached || r.level[vi] != kUnreached) continue;
      reach(u, vi);
    }
  };
  while (!frontier.empty()) {
    next.clear();
    asked = 0;
    for (std::size_t k = 0; k < frontier.size(); ++k) {
      if (hints && k % batch == 0) ask_until(k + std::max(hints.window, batch));
      const std::uint64_t ui = frontier[k];
      const std::uint64_t u = r.index.ids[ui];
      if constexpr (by_span) {
        // The frontier's lists lie at random in the heap: have the CPU fetch ahead of the walk
        // where the lists 16 ahead lie, and the first bytes of those 8 ahead.
        if (k + 16 < frontier.size()) __builtin_prefetch(&lists[frontier[k + 16]]);
        if (k + 8 < frontier.size()) __builtin_prefetch(lists[frontier[k + 8]].data());
        visit(u, lists[ui]);
      } else if (const auto* lst = g.neighbors(u)) {
        visit(u, *lst);
      }
    }
    if (!next.empty()) r.max_level = depth + 1;
    ++depth;
    frontier.swap(next);
  }
  return r;
}

struct cc_result {
  vertex_index index;
  std::vector<std::uint64_t> component;  // per index: the smallest vertex id in its component
  std::uint64_t components = 0;
  std::uint64_t largest = 0;             // size of the largest component
};

namespace detail {

// The union-find of connected_components over keys 0..n-1, in words of W (uint32_t when the
// keys fit: half the DRAM the walk reads at random). Union by smaller key: a root is the
// smallest key of its set.
template <class W>
class key_union_find {
 public:
  explicit key_union_find(std::size_t n) : parent_(n) {
    for (std::size_t i = 0; i < n; ++i) parent_[i] = static_cast<W>(i);
  }
  W find(W x) noexcept {
    while (parent_[x] != x) {
      parent_[x] = parent_[parent_[x]];  // path halving
      x = parent_[x];
    }
    return x;
  }
  // Joins the set of root a with the set of key k; returns the joint root.
  W join(W a, W k) noexcept {
    const W b = find(k);
    if (a == b) return a;
    if (a < b) {
      parent_[b] = a;
      return a;
    }
    parent_[a] = b;
    return b;
  }

 private:
  std::vector<W> parent_;
};

// connected_components over the vertices' lists (for_each_list(f) calls f(id, list) for every
// vertex) with union-find keys of word W: a vertex's id itself when the index is dense (ids
// below dense.size(); which are vertices, a bit each), so an arc costs no look-up in the
// index; its index otherwise.
template <class W, class Graph, class ForEachList>
void components_by_key(const Graph& g, cc_result& r, ForEachList&& for_each_list) {
  const vertex_index& ix = r.index;
  const std::size_t n = ix.ids.size();
  const std::size_t keys = ix.is_dense ? ix.dense.size() : n;
  std::vector<std::uint64_t> is_vertex;  // dense: one bit per id below keys
  if (ix.is_dense) {
    is_vertex.assign((keys + 63) / 64, 0);
    for (const std::uint64_t id : ix.ids) is_vertex[id / 64] |= std::uint64_t{1} << (id % 64);
  }
  auto key_of = [&](std::uint64_t id) -> std::uint64_t {
    if (ix.is_dense) {
      return id < keys && (is_vertex[id / 64] >> (id % 64) & 1) != 0 ? id : kUnreached;
    }
    return ix.index_of(id);
  };
  key_union_find<W> uf(keys);
  const bool each_edge_twice = !g.directed();
  for_each_list([&](std::uint64_t u, const auto& lst) {
    W a = uf.find(static_cast<W>(key_of(u)));  // the root of u's set, kept as the list is read
    for (const auto& nb : lst) {
      const std::uint64_t v = Graph::dst_of(nb);
      if (each_edge_twice && v <= u) continue;  // read at v's end (v < u), or a loop
      const std::uint64_t k = key_of(v);
      if (k != kUnreached) a = uf.join(a, static_cast<W>(k));
    }
  });
  // Keys ascend with ids (an index, or the id), so a root is its set's smallest id.
  r.component.resize(n);
  std::vector<std::uint64_t> size(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t root = uf.find(static_cast<W>(key_of(ix.ids[i])));
    const std::uint64_t root_index = ix.is_dense ? ix.dense[root] : root;
    r.component[i] = ix.ids[root_index];
    if (size[root_index]++ == 0) ++r.components;
    r.largest = std::max(r.largest, size[root_index]);
  }
}

}  // namespace detail

// Connected components; for directed graphs weakly connected (arc direction ignored).
// Labels are canonical (smallest member id), so two runs — or a run and a reference — can be
// compared element by element. The walk's cost is its union-find (random reads of DRAM per
// arc), so: an undirected graph stores each edge at both ends (adjacency_list's invariant) and
// each is read once, from its smaller end; dense ids are their own keys (no look-up in the
// index per arc), in 32-bit words when they fit. A graph with contiguous lists is read through
// where the index's pass found each list (no second pass over the vertices' hash table).
// The Graph gives directed().
template <class Graph>
cc_result connected_components(const Graph& g) {
  cc_result r;
  constexpr bool by_span = detail::contiguous_lists<Graph>;
  detail::kept_lists<Graph> lists;
  r.index = detail::index_keeping_lists(g, lists);
  auto for_each_list = [&](auto&& f) {
    if constexpr (by_span) {
      for (std::size_t i = 0; i < lists.size(); ++i) {
        if (i + 8 < lists.size()) __builtin_prefetch(lists[i + 8].data());  // lists lie at random
        f(r.index.ids[i], lists[i]);
      }
    } else {
      g.for_each_vertex(f);
    }
  };
  const std::size_t keys = r.index.is_dense ? r.index.dense.size() : r.index.ids.size();
  if (keys <= std::numeric_limits<std::uint32_t>::max()) {
    detail::components_by_key<std::uint32_t>(g, r, for_each_list);
  } else {
    detail::components_by_key<std::uint64_t>(g, r, for_each_list);
  }
  return r;
}

}  // namespace pheap::graph
