// BFS, connected components, counts and degree distribution equal simple DRAM references on
// several graphs (hand-made shapes and R-MAT, directed and undirected); the look-ahead of a walk
// (look_ahead.hpp) touches every item once within its window and changes no BFS result.
#include <pheap/graph/adjacency_list.hpp>
#include <pheap/graph/algorithms.hpp>
#include <pheap/graph/rmat.hpp>

#include "common/test_util.hpp"
#include "graph_reference.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace pheap::graph;
using pheap::graph::test::reference_bfs;
using pheap::graph::test::reference_cc;
using pheap::graph::test::reference_from_edges;

namespace {
using G = adjacency_list<void, std::allocator<std::byte>>;

struct named_graph {
  const char* name;
  bool directed;
  std::vector<edge> edges;
};

std::vector<named_graph> graphs() {
  std::vector<named_graph> gs;
  gs.push_back({"path", false, {{1, 2}, {2, 3}, {3, 4}, {4, 5}}});
  gs.push_back({"directed path (one-way reachability)", true, {{1, 2}, {2, 3}, {3, 4}, {10, 3}}});
  gs.push_back({"star with loops and multi-edges", false, {{0, 1}, {0, 2}, {0, 3}, {0, 3}, {2, 2}, {0, 0}}});
  gs.push_back({"three components", false, {{100, 200}, {300, 400}, {400, 500}, {7, 7}, {200, 150}}});
  gs.push_back({"huge ids", true, {{~0ull, 0}, {0, ~0ull - 1}, {5, ~0ull}}});
  gs.push_back({"cycle directed", true, {{1, 2}, {2, 3}, {3, 1}, {3, 4}}});
  for (bool directed : {false, true}) {
    for (unsigned scale : {6u, 10u}) {
      rmat_params p;
      p.scale = scale;
      p.edge_factor = scale == 6 ? 1 : 4;  // sparse small graph: many components
      p.seed = 99 + scale;
      p.scramble = true;
      rmat_generator gen(p);
      std::vector<edge> es(gen.num_edges());
      gen.generate(0, es.size(), es.data());
      gs.push_back({directed ? "rmat directed" : "rmat undirected", directed, es});
    }
  }
  return gs;
}

G build(const named_graph& ng) {
  G g(ng.directed, 64, {});
  for (const edge& e : ng.edges) g.insert(e);
  return g;
}
}  // namespace

TEST(GraphAlgorithms, BfsLevelsEqualReferenceAndParentsAreValid) {
  for (const auto& ng : graphs()) {
    const G g = build(ng);
    const auto ref = reference_from_edges(ng.edges, ng.directed, false);
    // Several sources, including one that reaches little in the directed graphs.
    std::vector<std::uint64_t> sources{ng.edges.front().src, ng.edges.back().dst, ng.edges[ng.edges.size() / 2].src};
    for (std::uint64_t s : sources) {
      const auto r = bfs(g, s);
      const auto want = reference_bfs(ref, s);
      EXPECT_EQ(r.reached, want.size()) << ng.name << " source " << s;
      std::uint64_t max_level = 0;
      for (std::size_t i = 0; i < r.index.ids.size(); ++i) {
        const std::uint64_t v = r.index.ids[i];
        auto it = want.find(v);
        if (it == want.end()) {
          EXPECT_EQ(r.level[i], kUnreached) << ng.name << " v=" << v;
          EXPECT_EQ(r.parent[i], kUnreached);
          continue;
        }
        ASSERT_EQ(r.level[i], it->second) << ng.name << " v=" << v;
        max_level = std::max(max_level, it->second);
        if (v == s) {
          EXPECT_EQ(r.parent[i], s);
          continue;
        }
        // Parent: a vertex one level up with an arc parent -> v.
        const std::uint64_t p = r.parent[i];
        ASSERT_EQ(want.at(p) + 1, it->second) << ng.name << " parent level of " << v;
        const auto& pl = ref.at(p);
        EXPECT_TRUE(std::any_of(pl.begin(), pl.end(), [&](const auto& x) { return x.first == v; }))
            << ng.name << ": parent " << p << " has no arc to " << v;
      }
      EXPECT_EQ(r.max_level, max_level) << ng.name;
    }
  }
}

TEST(GraphAlgorithms, TheVertexIndexMapsEveryIdToItsRankAndOtherIdsToUnreachedWhetherIdsAreDenseOrNot) {
  for (const named_graph& ng : graphs()) {
    SCOPED_TRACE(ng.name);
    const G g = build(ng);
    const vertex_index ix = build_index(g);
    ASSERT_EQ(ix.ids.size(), g.num_vertices());
    ASSERT_TRUE(std::is_sorted(ix.ids.begin(), ix.ids.end()));
    EXPECT_EQ(ix.is_dense, ix.ids.back() < 4 * ix.ids.size() + 4096);
    std::set<std::uint64_t> present(ix.ids.begin(), ix.ids.end());
    for (std::uint64_t i = 0; i < ix.ids.size(); ++i) EXPECT_EQ(ix.index_of(ix.ids[i]), i);
    for (std::uint64_t id : {std::uint64_t{6}, std::uint64_t{8}, std::uint64_t{199}, std::uint64_t{4095},
                             ix.ids.back() + 1, std::uint64_t{1} << 40, ~std::uint64_t{0} - 2}) {
      if (present.count(id) == 0) {
        EXPECT_EQ(ix.index_of(id), kUnreached) << id;
      }
    }
  }
  const std::vector<named_graph> gs = graphs();
  EXPECT_TRUE(build_index(build(gs[0])).is_dense) << "a path 1..5";
  EXPECT_FALSE(build_index(build(gs[4])).is_dense) << "huge ids";
}

TEST(GraphAlgorithms, BfsFromUnknownSourceThrows) {
  G g(false, 4, {});
  g.insert(1, 2);
  EXPECT_EQ(pheap::test::code_of([&] { bfs(g, 3); }), pheap::errc::invalid_argument);
}

TEST(GraphAlgorithms, ConnectedComponentsEqualReference) {
  for (const auto& ng : graphs()) {
    const G g = build(ng);
    const auto want = reference_cc(reference_from_edges(ng.edges, ng.directed, false));
    const auto r = connected_components(g);
    ASSERT_EQ(r.index.ids.size(), want.size()) << ng.name;
    std::map<std::uint64_t, std::uint64_t> sizes;
    for (std::size_t i = 0; i < r.index.ids.size(); ++i) {
      EXPECT_EQ(r.component[i], want.at(r.index.ids[i])) << ng.name << " v=" << r.index.ids[i];
      ++sizes[want.at(r.index.ids[i])];
    }
    EXPECT_EQ(r.components, sizes.size()) << ng.name;
    std::uint64_t largest = 0;
    for (const auto& [c, n] : sizes) largest = std::max(largest, n);
    EXPECT_EQ(r.largest, largest) << ng.name;
  }
}

TEST(GraphAlgorithms, CountsAndDegreeDistributionEqualReference) {
  for (const auto& ng : graphs()) {
    const G g = build(ng);
    const auto ref = reference_from_edges(ng.edges, ng.directed, false);
    std::map<std::uint64_t, std::uint64_t> hist;
    std::uint64_t arcs = 0, loops = 0, maxd = 0, isolated = 0;
    for (const auto& [u, l] : ref) {
      ++hist[l.size()];
      arcs += l.size();
      maxd = std::max<std::uint64_t>(maxd, l.size());
      isolated += l.empty();
      for (const auto& [v, w] : l) loops += v == u;
    }
    EXPECT_EQ(degree_distribution(g), hist) << ng.name;
    const auto c = count(g);
    EXPECT_EQ(c.vertices, ref.size()) << ng.name;
    EXPECT_EQ(c.arcs, arcs) << ng.name;
    EXPECT_EQ(c.self_loops, loops) << ng.name;
    EXPECT_EQ(c.max_degree, maxd) << ng.name;
    EXPECT_EQ(c.isolated, isolated) << ng.name;
  }
}

TEST(GraphAlgorithms, EmptyGraphHasNoVerticesOrComponents) {
  const G g(true, 8, {});
  EXPECT_EQ(count(g).vertices, 0u);
  EXPECT_EQ(connected_components(g).components, 0u);
  EXPECT_TRUE(degree_distribution(g).empty());
}

// Each round's items are touched exactly once, never `window` or more items ahead of the last
// progress() — also over many rounds (BFS levels) of different sizes, started and finished in
// turn, with four threads.
TEST(GraphLookAhead, EveryItemOfARoundIsTouchedOnceAndNeverAWindowAheadOfTheWalk) {
  constexpr std::size_t window = 32;
  look_ahead ahead(4, window);
  for (std::size_t n : {0u, 1u, 7u, 1000u, 20000u, 3u}) {
    std::vector<std::atomic<int>> times(n);
    std::atomic<std::size_t> at{0}, worst{0};
    ahead.start(n, [&](std::size_t j) {
      times[j].fetch_add(1);
      const std::size_t ahead_by = j - std::min(j, at.load());
      std::size_t w = worst.load();
      while (ahead_by > w && !worst.compare_exchange_weak(w, ahead_by)) {
      }
    });
    for (std::size_t k = 0; k < n; ++k) {
      at.store(k);
      ahead.progress(k);
      if (k % 64 == 0) std::this_thread::yield();
    }
    // The walk is at the end: wait for the touches, then end the round.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    auto all_done = [&] {
      for (const auto& t : times) {
        if (t.load() == 0) return false;
      }
      return true;
    };
    while (!all_done() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ahead.finish();
    for (std::size_t j = 0; j < n; ++j) ASSERT_EQ(times[j].load(), 1) << "item " << j << " of " << n;
    EXPECT_LT(worst.load(), window) << n << " items";
  }
  EXPECT_FALSE(ahead.stopped());
}

// A touch that throws ends the look-ahead (later rounds touch nothing) and the walk goes on.
TEST(GraphLookAhead, ATouchThatThrowsStopsTheLookAheadForGood) {
  look_ahead ahead(2, 8);
  std::atomic<int> calls{0};
  ahead.start(100, [&](std::size_t j) {
    calls.fetch_add(1);
    if (j == 3) throw std::runtime_error("a damaged page");
  });
  for (std::size_t k = 0; k < 100; ++k) ahead.progress(k);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!ahead.stopped() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ahead.finish();
  ASSERT_TRUE(ahead.stopped());
  const int before = calls.load();
  ahead.start(100, [&](std::size_t) { calls.fetch_add(1); });
  for (std::size_t k = 0; k < 100; ++k) ahead.progress(k);
  ahead.finish();
  EXPECT_EQ(calls.load(), before);
}

// The graph as a walk sees it out of core: a look-up on the walk's own thread waits (a fault's
// read), look-ups on other threads do not.
struct slow_walk_graph {
  using neighbor_type = G::neighbor_type;
  const G* g;
  std::thread::id walker;
  static std::uint64_t dst_of(const neighbor_type& n) noexcept { return G::dst_of(n); }
  std::uint64_t num_vertices() const noexcept { return g->num_vertices(); }
  template <class F>
  void for_each_vertex(F&& f) const {
    g->for_each_vertex(std::forward<F>(f));
  }
  const auto* neighbors(std::uint64_t u) const {
    if (std::this_thread::get_id() == walker) std::this_thread::sleep_for(std::chrono::microseconds(20));
    return g->neighbors(u);
  }
};

// With walk_hints, BFS gives the levels and parents it gives without them, on every graph of
// the suite; and on the R-MAT graphs a walk slower than its look-ahead (as out of core) has the
// lists of at least 90 % of the vertices it visits asked for.
TEST(GraphAlgorithms, BfsWithALookAheadGivesTheSameResultAndAsksForTheListsAheadOfASlowWalk) {
  look_ahead ahead(3, 16);
  for (const auto& ng : graphs()) {
    const G g = build(ng);
    const std::uint64_t s = ng.edges.front().src;
    std::mutex mu;
    std::set<const void*> asked;
    walk_hints hints{&ahead, [&](std::span<const std::pair<const void*, std::size_t>> r) {
                       std::lock_guard lk(mu);
                       for (const auto& [p, n] : r) {
                         EXPECT_GT(n, 0u);
                         asked.insert(p);
                       }
                     }};
    const auto plain = bfs(g, s);
    const auto hinted = bfs(g, s, hints);
    EXPECT_EQ(hinted.level, plain.level) << ng.name;
    EXPECT_EQ(hinted.parent, plain.parent) << ng.name;
    EXPECT_EQ(hinted.reached, plain.reached) << ng.name;
    asked.clear();
    const auto slow = bfs(slow_walk_graph{&g, std::this_thread::get_id()}, s, hints);
    EXPECT_EQ(slow.level, plain.level) << ng.name;
    std::size_t with_arcs = 0;
    for (std::size_t i = 0; i < plain.index.ids.size(); ++i) {
      const auto* l = g.neighbors(plain.index.ids[i]);
      if (plain.level[i] != kUnreached && l != nullptr && l->size() != 0) ++with_arcs;
    }
    EXPECT_LE(asked.size(), with_arcs) << ng.name;
    // (Levels of a few vertices are over before a thread wakes: only the larger graphs count.)
    if (with_arcs >= 200) {
      EXPECT_GE(asked.size() * 10, with_arcs * 9) << ng.name << ": " << asked.size() << " of " << with_arcs;
    }
  }
  EXPECT_FALSE(ahead.stopped());
}
