// pheap/graph/mpi/algorithms.hpp — the read-only algorithms of pheap/graph/algorithms.hpp
// across the ranks of an MPI job, each rank holding its part of a distributed graph
// (partition.hpp: the vertices it owns and their arcs), e.g. opened with
// pheap::mpi::datastore(open_read_only, comm, path).
//
// Every function is collective over `comm` (its size must be the graph's rank count: the
// partition record says so, check_partition). Results equal the single-process ones on the
// union of the parts: the same counts and degree distribution, BFS levels (hop distances)
// and per-level counts, CC labels (the smallest member id), component count and size.
//
//   count, degree_distribution   local counts reduced (sums; max of max_degree)
//   bfs       level-synchronous: the frontier's arcs go to the owners of their targets with
//             one MPI_Alltoallv per level; a level ends with one MPI_Allreduce
//   connected_components  weakly for directed graphs: the reverse arcs are first sent to
//             their owners (one Alltoallv), then min-label rounds (one Alltoallv of the labels
//             of the vertices whose label changed, one Allreduce) until no label changes
//   gather_edges  every rank's arcs to rank 0, in ascending vertex order (export)
//
// Caveats:
//   * bfs's parents are *a* neighbour-in at the level before (the one whose message arrived
//     first), not necessarily the single-process tool's.
//   * Working state lives in DRAM: labels/levels of the owned vertices, and for CC the
//     reverse arcs. The rows for --output and gather_edges are gathered on rank 0, which
//     must hold them (O(V) and O(E) words); exchange buffers are bounded by one level/round.
//   * MPI counts are int: at most 2^31 - 1 words to or from one rank per exchange.
#pragma once

#include <mpi.h>

#include <pheap/graph/algorithms.hpp>
#include <pheap/graph/mpi/partition.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <unordered_map>
#include <utility>
#include <vector>

namespace pheap::graph::mpi {

namespace detail {
// Sends out[r] to rank r (MPI_Alltoall of the counts, MPI_Alltoallv of the words) and returns
// what every rank sent to this one, in rank order. Clears out.
std::vector<std::uint64_t> exchange(MPI_Comm comm, std::vector<std::vector<std::uint64_t>>& out);
// Every rank's `words` concatenated in rank order on rank 0 (empty elsewhere).
std::vector<std::uint64_t> gather(MPI_Comm comm, const std::vector<std::uint64_t>& words);
std::uint64_t sum(MPI_Comm comm, std::uint64_t v);
std::uint64_t max(MPI_Comm comm, std::uint64_t v);
int ranks(MPI_Comm comm);
}  // namespace detail

template <class G>
graph_counts count(MPI_Comm comm, const G& g) {
  const graph_counts c = pheap::graph::count(g);
  return {detail::sum(comm, c.vertices), detail::sum(comm, c.arcs), detail::max(comm, c.max_degree),
          detail::sum(comm, c.isolated), detail::sum(comm, c.self_loops)};
}

// The exact out-degree histogram of the whole graph, on rank 0 (empty elsewhere).
template <class G>
std::map<std::uint64_t, std::uint64_t> degree_distribution(MPI_Comm comm, const G& g) {
  std::vector<std::uint64_t> words;
  for (const auto& [d, n] : pheap::graph::degree_distribution(g)) words.insert(words.end(), {d, n});
  std::map<std::uint64_t, std::uint64_t> all;
  const auto got = detail::gather(comm, words);
  for (std::size_t i = 0; i + 1 < got.size(); i += 2) all[got[i]] += got[i + 1];
  return all;
}

struct bfs_summary {
  std::uint64_t vertices = 0, reached = 0, max_level = 0;
  std::vector<std::uint64_t> per_level;                // vertices at each level
  std::vector<std::array<std::uint64_t, 3>> rows;      // rank 0, with_rows: vertex, level, parent (by vertex)
};

// Throws pheap::error(invalid_argument) on every rank when `source` is not a vertex.
template <class G>
bfs_summary bfs(MPI_Comm comm, const G& g, std::uint64_t source, bool with_rows) {
  const int n = detail::ranks(comm);
  bfs_summary s;
  s.vertices = detail::sum(comm, g.num_vertices());
  std::unordered_map<std::uint64_t, std::array<std::uint64_t, 2>> seen;  // vertex -> level, parent
  std::vector<std::uint64_t> frontier, next;
  if (g.contains(source)) {
    seen[source] = {0, source};
    frontier.push_back(source);
  }
  if (detail::sum(comm, frontier.size()) == 0) {
    throw error(errc::invalid_argument, "", "bfs", "source " + std::to_string(source) + " is not a vertex of the graph");
  }
  s.per_level.push_back(1);
  std::vector<std::vector<std::uint64_t>> out(static_cast<std::size_t>(n));
  for (std::uint64_t depth = 1;; ++depth) {
    for (std::uint64_t u : frontier) {
      for (const auto& nb : *g.neighbors(u)) {
        const std::uint64_t v = G::dst_of(nb);
        out[static_cast<std::size_t>(owner_of(v, n))].insert(out[static_cast<std::size_t>(owner_of(v, n))].end(), {v, u});
      }
    }
    const auto got = detail::exchange(comm, out);
    next.clear();
    for (std::size_t i = 0; i < got.size(); i += 2) {
      if (g.contains(got[i]) && seen.try_emplace(got[i], std::array<std::uint64_t, 2>{depth, got[i + 1]}).second) {
        next.push_back(got[i]);
      }
    }
    const std::uint64_t level = detail::sum(comm, next.size());
    if (level == 0) break;
    s.per_level.push_back(level);
    frontier.swap(next);
  }
  s.max_level = s.per_level.size() - 1;
  for (auto c : s.per_level) s.reached += c;
  if (with_rows) {
    std::vector<std::uint64_t> words;
    for (const auto& [v, lp] : seen) words.insert(words.end(), {v, lp[0], lp[1]});
    const auto all = detail::gather(comm, words);
    for (std::size_t i = 0; i + 2 < all.size(); i += 3) s.rows.push_back({all[i], all[i + 1], all[i + 2]});
    std::sort(s.rows.begin(), s.rows.end());
  }
  return s;
}

struct cc_summary {
  std::uint64_t vertices = 0, components = 0, largest = 0;
  std::vector<std::array<std::uint64_t, 2>> rows;  // rank 0, with_rows: vertex, component (by vertex)
};

template <class G>
cc_summary connected_components(MPI_Comm comm, const G& g, bool with_rows) {
  const int n = detail::ranks(comm);
  auto to = [n](std::vector<std::vector<std::uint64_t>>& out, std::uint64_t v) -> std::vector<std::uint64_t>& {
    return out[static_cast<std::size_t>(owner_of(v, n))];
  };
  std::vector<std::vector<std::uint64_t>> out(static_cast<std::size_t>(n));
  // The reverse arcs, so that labels also travel against an arc's direction (weakly).
  g.for_each_vertex([&](std::uint64_t u, const auto& lst) {
    for (const auto& nb : lst) to(out, G::dst_of(nb)).insert(to(out, G::dst_of(nb)).end(), {G::dst_of(nb), u});
  });
  std::unordered_map<std::uint64_t, std::vector<std::uint64_t>> reverse;
  const auto rev = detail::exchange(comm, out);
  for (std::size_t i = 0; i < rev.size(); i += 2) reverse[rev[i]].push_back(rev[i + 1]);
  std::unordered_map<std::uint64_t, std::uint64_t> label;
  std::vector<std::uint64_t> changed;
  g.for_each_vertex([&](std::uint64_t u, const auto&) {
    label[u] = u;
    changed.push_back(u);
  });
  // Min-label rounds: a vertex whose label changed offers it to all of its neighbours.
  while (detail::sum(comm, changed.size()) != 0) {
    for (std::uint64_t u : changed) {
      const std::uint64_t l = label[u];
      for (const auto& nb : *g.neighbors(u)) to(out, G::dst_of(nb)).insert(to(out, G::dst_of(nb)).end(), {G::dst_of(nb), l});
      if (auto it = reverse.find(u); it != reverse.end()) {
        for (std::uint64_t w : it->second) to(out, w).insert(to(out, w).end(), {w, l});
      }
    }
    changed.clear();
    const auto got = detail::exchange(comm, out);
    for (std::size_t i = 0; i < got.size(); i += 2) {
      auto it = label.find(got[i]);
      if (it != label.end() && got[i + 1] < it->second) {
        it->second = got[i + 1];
        changed.push_back(it->first);
      }
    }
    std::sort(changed.begin(), changed.end());
    changed.erase(std::unique(changed.begin(), changed.end()), changed.end());
  }
  cc_summary s;
  s.vertices = detail::sum(comm, label.size());
  // Component sizes, counted at the owner of each label (the smallest member).
  std::unordered_map<std::uint64_t, std::uint64_t> local_size;
  for (const auto& [v, l] : label) ++local_size[l];
  for (const auto& [l, c] : local_size) to(out, l).insert(to(out, l).end(), {l, c});
  std::unordered_map<std::uint64_t, std::uint64_t> size;
  const auto sizes = detail::exchange(comm, out);
  for (std::size_t i = 0; i < sizes.size(); i += 2) size[sizes[i]] += sizes[i + 1];
  std::uint64_t largest = 0;
  for (const auto& [l, c] : size) largest = std::max(largest, c);
  s.components = detail::sum(comm, size.size());
  s.largest = detail::max(comm, largest);
  if (with_rows) {
    std::vector<std::uint64_t> words;
    for (const auto& [v, l] : label) words.insert(words.end(), {v, l});
    const auto all = detail::gather(comm, words);
    for (std::size_t i = 0; i + 1 < all.size(); i += 2) s.rows.push_back({all[i], all[i + 1]});
    std::sort(s.rows.begin(), s.rows.end());
  }
  return s;
}

// Calls write(edge) on rank 0 for every edge of the graph: vertices in ascending id order, a
// vertex's arcs in stored order; all arcs of a directed graph, those with src <= dst of an
// undirected one (the single-process export's order). Returns the edge count (every rank).
template <class G>
std::uint64_t gather_edges(MPI_Comm comm, const G& g, const std::function<void(const edge&)>& write) {
  std::vector<std::uint64_t> words;
  for (std::uint64_t u : build_index(g).ids) {
    for (const auto& nb : *g.neighbors(u)) {
      const std::uint64_t v = G::dst_of(nb);
      if (!g.directed() && v < u) continue;
      words.insert(words.end(), {u, v, G::weight_bits_of(nb)});
    }
  }
  const std::uint64_t total = detail::sum(comm, words.size() / 3);
  const auto all = detail::gather(comm, words);
  std::vector<std::size_t> order(all.size() / 3);
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  // Each rank's vertices are disjoint and ascending: a stable sort by vertex keeps arc order.
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return all[3 * a] < all[3 * b]; });
  for (std::size_t i : order) write(edge{all[3 * i], all[3 * i + 1], all[3 * i + 2]});
  return total;
}

}  // namespace pheap::graph::mpi
