// pheap/graph/algorithms.hpp — read-only algorithms over an adjacency_list.
//
// Every function takes the graph by const reference and only reads it, so it works on a graph
// found through a read-only datastore open. Working state (indices, queues, labels) lives in
// DRAM. Vertex ids are arbitrary uint64, so algorithms first build a dense `vertex_index`
// (ids sorted ascending → index 0..n-1); results are reported per index with `index.ids` giving
// the id, which makes output order deterministic.
#pragma once

#include <pheap/error.hpp>
#include <pheap/graph/look_ahead.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <span>
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

template <class Graph>
vertex_index build_index(const Graph& g) {
  vertex_index ix;
  ix.ids.reserve(g.num_vertices());
  g.for_each_vertex([&](std::uint64_t u, const auto&) { ix.ids.push_back(u); });
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
  return ix;
}

struct graph_counts {
  std::uint64_t vertices = 0;
  std::uint64_t arcs = 0;            // stored adjacency entries
  std::uint64_t max_degree = 0;      // out-degree (entries in a list)
  std::uint64_t isolated = 0;        // vertices with an empty list
  std::uint64_t self_loops = 0;
};

template <class Graph>
graph_counts count(const Graph& g) {
  graph_counts c;
  g.for_each_vertex([&](std::uint64_t u, const auto& lst) {
    ++c.vertices;
    c.arcs += lst.size();
    c.max_degree = std::max<std::uint64_t>(c.max_degree, lst.size());
    if (lst.empty()) ++c.isolated;
    for (const auto& n : lst)
      if (Graph::dst_of(n) == u) ++c.self_loops;
  });
  return c;
}

// Exact out-degree histogram: degree -> number of vertices with that degree.
template <class Graph>
std::map<std::uint64_t, std::uint64_t> degree_distribution(const Graph& g) {
  std::map<std::uint64_t, std::uint64_t> h;
  g.for_each_vertex([&](std::uint64_t, const auto& lst) { ++h[lst.size()]; });
  return h;
}

struct bfs_result {
  vertex_index index;
  std::vector<std::uint64_t> level;   // kUnreached when not reached; source has level 0
  std::vector<std::uint64_t> parent;  // parent id; the source is its own parent; kUnreached
  std::uint64_t reached = 0;
  std::uint64_t max_level = 0;
};

// Out of core, how a walk asks for what it will read before it reads it (look_ahead.hpp): for
// each vertex of a BFS level, a look-ahead thread looks the vertex up and hands `prefetch` the
// bytes of its list (pheap: [&m](auto r) { m.prefetch(r); }). Empty: no look-ahead.
struct walk_hints {
  look_ahead* ahead = nullptr;
  std::function<void(std::span<const std::pair<const void*, std::size_t>>)> prefetch;
  explicit operator bool() const noexcept { return ahead != nullptr && static_cast<bool>(prefetch); }
};

// Breadth-first search along stored arcs (out-edges; both directions for undirected graphs).
// Throws pheap::error(invalid_argument) when `source` is not a vertex. Contract: level[] is the
// exact hop distance; parent[v] is a neighbour-in of v with level[parent] == level[v] - 1.
// `hints` change no result, only which thread waits for a page first.
template <class Graph>
bfs_result bfs(const Graph& g, std::uint64_t source, const walk_hints& hints = {}) {
  bfs_result r;
  r.index = build_index(g);
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
  // The look-ahead reads the frontier and the index while the walk writes only next and
  // the level and parent arrays; finish() returns before the frontier is swapped.
  auto touch = [&](std::size_t j) {
    const auto* lst = g.neighbors(r.index.ids[frontier[j]]);
    if constexpr (requires { lst->data(); }) {
      if (lst != nullptr && lst->size() != 0) {
        const std::pair<const void*, std::size_t> range{lst->data(), lst->size() * sizeof(*lst->data())};
        hints.prefetch(std::span<const std::pair<const void*, std::size_t>>(&range, 1));
      }
    }
  };
  while (!frontier.empty()) {
    next.clear();
    if (hints) hints.ahead->start(frontier.size(), touch);
    for (std::size_t k = 0; k < frontier.size(); ++k) {
      if (hints && k % 16 == 0) hints.ahead->progress(k);
      const std::uint64_t ui = frontier[k];
      const std::uint64_t u = r.index.ids[ui];
      const auto* lst = g.neighbors(u);
      if (lst == nullptr) continue;
      for (const auto& nb : *lst) {
        const std::uint64_t vi = r.index.index_of(Graph::dst_of(nb));
        if (vi == kUnreached || r.level[vi] != kUnreached) continue;
        r.level[vi] = depth + 1;
        r.parent[vi] = u;
        ++r.reached;
        next.push_back(vi);
      }
    }
    if (hints) hints.ahead->finish();
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

// Connected components; for directed graphs weakly connected (arc direction ignored).
// Labels are canonical (smallest member id), so two runs — or a run and a reference — can be
// compared element by element.
template <class Graph>
cc_result connected_components(const Graph& g) {
  cc_result r;
  r.index = build_index(g);
  const std::size_t n = r.index.ids.size();
  std::vector<std::uint64_t> parent(n);
  for (std::size_t i = 0; i < n; ++i) parent[i] = i;
  auto find = [&](std::uint64_t x) {
    while (parent[x] != x) {
      parent[x] = parent[parent[x]];  // path halving
      x = parent[x];
    }
    return x;
  };
  g.for_each_vertex([&](std::uint64_t u, const auto& lst) {
    const std::uint64_t ui = r.index.index_of(u);
    for (const auto& nb : lst) {
      const std::uint64_t vi = r.index.index_of(Graph::dst_of(nb));
      if (vi == kUnreached) continue;
      std::uint64_t a = find(ui), b = find(vi);
      if (a == b) continue;
      if (a > b) std::swap(a, b);
      parent[b] = a;  // union by smaller index: the root is the component's smallest index
    }
  });
  r.component.resize(n);
  std::vector<std::uint64_t> size(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t root = find(i);
    r.component[i] = r.index.ids[root];  // ids ascending => smallest index is the smallest id
    if (size[root]++ == 0) ++r.components;
    r.largest = std::max(r.largest, size[root]);
  }
  return r;
}

}  // namespace pheap::graph
