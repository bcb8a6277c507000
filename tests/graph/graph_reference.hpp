// DRAM reference implementations the graph tests compare against. Deliberately simple and
// independent of the library's data structures (std::map, sorted vectors, plain queues).
#pragma once

#include <pheap/graph/rmat.hpp>
#include <pheap/graph/types.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <queue>
#include <set>
#include <utility>
#include <vector>

namespace pheap::graph::test {

// The scrambled R-MAT edges the tests ingest and compare (deterministic for the seed).
inline std::vector<edge> rmat_edges(unsigned scale, std::uint64_t edge_factor, weight_kind w,
                                    std::uint64_t seed) {
  rmat_params p;
  p.scale = scale;
  p.edge_factor = edge_factor;
  p.weights = w;
  p.seed = seed;
  p.scramble = true;
  rmat_generator g(p);
  std::vector<edge> es(g.num_edges());
  g.generate(0, es.size(), es.data(), 2);
  return es;
}

// vertex -> list of (neighbour, weight bits). Same vertex/arc semantics as adjacency_list:
// every endpoint is a vertex; undirected edges stored both ways, loops once.
using ref_graph = std::map<std::uint64_t, std::vector<std::pair<std::uint64_t, std::uint64_t>>>;

// The lists inserting `edges` one at a time in input order makes, each in that order.
inline ref_graph reference_in_input_order(const std::vector<edge>& edges, bool directed, bool weighted) {
  ref_graph r;
  for (const edge& e : edges) {
    const std::uint64_t w = weighted ? e.weight : 0;
    r[e.src].emplace_back(e.dst, w);
    if (directed) {
      r[e.dst];
    } else if (e.src != e.dst) {
      r[e.dst].emplace_back(e.src, w);
    }
  }
  return r;
}

// The same with every list sorted: the graph as a multiset of arcs per vertex.
inline ref_graph reference_from_edges(const std::vector<edge>& edges, bool directed, bool weighted) {
  ref_graph r = reference_in_input_order(edges, directed, weighted);
  for (auto& [u, l] : r) std::sort(l.begin(), l.end());
  return r;
}

// g's lists in stored order.
template <class Graph>
ref_graph lists_of(const Graph& g) {
  ref_graph r;
  g.for_each_vertex([&](std::uint64_t u, const auto& lst) {
    auto& out = r[u];
    for (const auto& n : lst) out.emplace_back(Graph::dst_of(n), Graph::weight_bits_of(n));
  });
  return r;
}

// g's lists sorted (compare with reference_from_edges).
template <class Graph>
ref_graph reference_of(const Graph& g) {
  ref_graph r = lists_of(g);
  for (auto& [u, l] : r) std::sort(l.begin(), l.end());
  return r;
}

// Hop distances from s along arcs (kUnreached-free: only reached vertices are keys).
inline std::map<std::uint64_t, std::uint64_t> reference_bfs(const ref_graph& g, std::uint64_t s) {
  std::map<std::uint64_t, std::uint64_t> dist{{s, 0}};
  std::queue<std::uint64_t> q;
  q.push(s);
  while (!q.empty()) {
    const std::uint64_t u = q.front();
    q.pop();
    auto it = g.find(u);
    if (it == g.end()) continue;
    for (const auto& [v, w] : it->second) {
      if (dist.emplace(v, dist[u] + 1).second) q.push(v);
    }
  }
  return dist;
}

// vertex -> smallest vertex id of its weakly connected component.
inline std::map<std::uint64_t, std::uint64_t> reference_cc(const ref_graph& g) {
  std::map<std::uint64_t, std::set<std::uint64_t>> und;
  for (const auto& [u, l] : g) {
    und[u];
    for (const auto& [v, w] : l) {
      und[u].insert(v);
      und[v].insert(u);
    }
  }
  std::map<std::uint64_t, std::uint64_t> label;
  for (const auto& [start, ignored] : und) {  // ascending: first unlabeled is the smallest
    if (label.count(start)) continue;
    std::vector<std::uint64_t> stack{start};
    label[start] = start;
    while (!stack.empty()) {
      const std::uint64_t u = stack.back();
      stack.pop_back();
      for (std::uint64_t v : und[u]) {
        if (label.emplace(v, start).second) stack.push_back(v);
      }
    }
  }
  return label;
}

}  // namespace pheap::graph::test
