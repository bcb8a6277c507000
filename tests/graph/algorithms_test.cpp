// BFS, connected components, counts and degree distribution equal simple DRAM references on
// several graphs (hand-made shapes and R-MAT, directed and undirected); a BFS, CC or walk in id
// order over contiguous lists looks no vertex up, and BFS hints ask for every visited list once
// and change no result.
#include <pheap/graph/adjacency_list.hpp>
#include <pheap/graph/algorithms.hpp>
#include <pheap/graph/rmat.hpp>

#include "common/test_util.hpp"
#include "graph_reference.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <set>
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

// profile() (and count(), degree_distribution() through it) equals the reference, degrees of
// 1024 and more (kept in the map, not the array) too.
TEST(GraphAlgorithms, ProfileEqualsTheReferenceForDegreesBelowAndAbove1024) {
  named_graph hub{"hub of degree 1500 and one of 1023", false, {}};
  for (std::uint64_t v = 1; v <= 1500; ++v) hub.edges.push_back({0, v});
  for (std::uint64_t v = 1; v <= 1023; ++v) hub.edges.push_back({5000, 5000 + v});
  hub.edges.push_back({0, 0});
  const G g = build(hub);
  const auto ref = reference_from_edges(hub.edges, hub.directed, false);
  std::map<std::uint64_t, std::uint64_t> hist;
  std::uint64_t arcs = 0, loops = 0, maxd = 0;
  for (const auto& [u, l] : ref) {
    ++hist[l.size()];
    arcs += l.size();
    maxd = std::max<std::uint64_t>(maxd, l.size());
    for (const auto& [v, w] : l) loops += v == u;
  }
  const graph_profile p = profile(g);
  EXPECT_EQ(p.degrees, hist);
  EXPECT_EQ(p.degrees.at(1501), 1u);  // vertex 0: 1500 arcs and its loop
  EXPECT_EQ(p.degrees.at(1023), 1u);
  EXPECT_EQ(p.counts.vertices, ref.size());
  EXPECT_EQ(p.counts.arcs, arcs);
  EXPECT_EQ(p.counts.max_degree, maxd);
  EXPECT_EQ(p.counts.self_loops, loops);
  EXPECT_EQ(p.counts.isolated, 0u);
}

TEST(GraphAlgorithms, EmptyGraphHasNoVerticesOrComponents) {
  const G g(true, 8, {});
  EXPECT_EQ(count(g).vertices, 0u);
  EXPECT_EQ(connected_components(g).components, 0u);
  EXPECT_TRUE(degree_distribution(g).empty());
}

namespace {

// A graph that counts its look-ups, over contiguous lists (as adjacency_list's).
struct counting_graph {
  using neighbor_type = G::neighbor_type;
  const G* g;
  mutable std::size_t lookups = 0;
  static std::uint64_t dst_of(const neighbor_type& n) noexcept { return G::dst_of(n); }
  bool directed() const noexcept { return g->directed(); }
  std::uint64_t num_vertices() const noexcept { return g->num_vertices(); }
  template <class F>
  void for_each_vertex(F&& f) const {
    g->for_each_vertex(std::forward<F>(f));
  }
  const G::list_type* neighbors(std::uint64_t u) const {
    ++lookups;
    return g->neighbors(u);
  }
};

// A graph whose lists are not one array (std::deque): a walk must look each vertex up.
struct deque_graph {
  using neighbor_type = G::neighbor_type;
  std::map<std::uint64_t, std::deque<neighbor_type>> lists;
  bool directed_ = true;
  static std::uint64_t dst_of(const neighbor_type& n) noexcept { return G::dst_of(n); }
  bool directed() const noexcept { return directed_; }
  std::uint64_t num_vertices() const noexcept { return lists.size(); }
  template <class F>
  void for_each_vertex(F&& f) const {
    for (const auto& [u, l] : lists) f(u, l);
  }
  const std::deque<neighbor_type>* neighbors(std::uint64_t u) const {
    auto it = lists.find(u);
    return it == lists.end() ? nullptr : &it->second;
  }
};

}  // namespace

// BFS over contiguous lists reads each list where the index's pass over the vertices found it:
// not one look-up during the walk (out of core, no fault on a vertex's hash node), and the
// result of the look-up walk (a graph whose lists are not one array) on every graph.
TEST(GraphAlgorithms, BfsOverContiguousListsLooksNoVertexUpAndGivesWhatTheLookUpWalkGives) {
  for (const auto& ng : graphs()) {
    const G g = build(ng);
    deque_graph dq;
    dq.directed_ = ng.directed;
    g.for_each_vertex([&](std::uint64_t u, const auto& l) { dq.lists[u].assign(l.begin(), l.end()); });
    const std::uint64_t s = ng.edges.front().src;
    counting_graph cg{&g};
    const auto by_span = bfs(cg, s);
    EXPECT_EQ(cg.lookups, 0u) << ng.name;
    const auto looked_up = bfs(dq, s);
    EXPECT_EQ(by_span.level, looked_up.level) << ng.name;
    EXPECT_EQ(by_span.parent, looked_up.parent) << ng.name;
    EXPECT_EQ(by_span.reached, looked_up.reached) << ng.name;
  }
}

// With walk_hints, BFS asks for the list of every vertex it visits exactly once, its exact
// bytes, and nothing else, as the walk goes (several calls, none for more than `window` lists,
// rounded up to a batch of 64); its result is the one without hints, for every window. A graph
// whose lists are not one array is walked without asking.
TEST(GraphAlgorithms, BfsWithHintsAsksForEveryVisitedListOnceInBatchesOfAtMostTheWindowAndChangesNoResult) {
  for (const auto& ng : graphs()) {
    const G g = build(ng);
    const std::uint64_t s = ng.edges.front().src;
    const auto plain = bfs(g, s);
    std::map<const void*, std::size_t> want;  // the list of every reached vertex with arcs
    for (std::size_t i = 0; i < plain.index.ids.size(); ++i) {
      const auto* l = g.neighbors(plain.index.ids[i]);
      if (plain.level[i] != kUnreached && l->size() != 0) want[&(*l)[0]] = l->size() * sizeof((*l)[0]);
    }
    for (std::size_t window : {std::size_t{1}, std::size_t{64}, std::size_t{100}, std::size_t{1} << 20}) {
      std::map<const void*, std::size_t> asked;
      std::size_t calls = 0, most = 0;
      walk_hints hints{[&](std::span<const std::pair<const void*, std::size_t>> r) {
                         ++calls;
                         most = std::max(most, r.size());
                         for (const auto& [p, n] : r) {
                           EXPECT_TRUE(asked.emplace(p, n).second) << ng.name << ": asked twice";
                         }
                       },
                       window};
      const auto hinted = bfs(g, s, hints);
      EXPECT_EQ(hinted.level, plain.level) << ng.name;
      EXPECT_EQ(hinted.parent, plain.parent) << ng.name;
      EXPECT_EQ(asked, want) << ng.name << ", window " << window;
      EXPECT_LE(most, std::max<std::size_t>(window, 64)) << ng.name;
      if (want.size() > 2 * std::max<std::size_t>(window, 64)) {
        EXPECT_GT(calls, 1u) << ng.name << ": asked in one call, not as the walk went";
      }
    }
    deque_graph dq;
    g.for_each_vertex([&](std::uint64_t u, const auto& l) { dq.lists[u].assign(l.begin(), l.end()); });
    std::size_t dq_calls = 0;
    const auto dq_r = bfs(dq, s, walk_hints{[&](auto) { ++dq_calls; }, 64});
    EXPECT_EQ(dq_r.level, plain.level) << ng.name;
    EXPECT_EQ(dq_calls, 0u) << ng.name;
  }
}

// CC over contiguous lists reads each list where the index's pass found it (no look-up) and, on
// an undirected graph, each edge from one end only; its components are those of the look-up
// walk over every arc (a graph whose lists are not one array, read as directed: both ends) and
// of the reference, on every graph.
TEST(GraphAlgorithms, CcOverContiguousListsLooksNoVertexUpAndGivesWhatTheWalkOverEveryArcGives) {
  for (const auto& ng : graphs()) {
    const G g = build(ng);
    counting_graph cg{&g};
    const auto by_span = connected_components(cg);
    EXPECT_EQ(cg.lookups, 0u) << ng.name;
    deque_graph every_arc;  // directed: no arc skipped
    g.for_each_vertex([&](std::uint64_t u, const auto& l) { every_arc.lists[u].assign(l.begin(), l.end()); });
    const auto walked = connected_components(every_arc);
    EXPECT_EQ(by_span.index.ids, walked.index.ids) << ng.name;
    EXPECT_EQ(by_span.component, walked.component) << ng.name;
    EXPECT_EQ(by_span.components, walked.components) << ng.name;
    EXPECT_EQ(by_span.largest, walked.largest) << ng.name;
    const auto want = reference_cc(reference_from_edges(ng.edges, ng.directed, false));
    for (std::size_t i = 0; i < by_span.index.ids.size(); ++i) {
      EXPECT_EQ(by_span.component[i], want.at(by_span.index.ids[i])) << ng.name;
    }
  }
}

// for_each_vertex_by_id calls f once per vertex, ids ascending, with the vertex's list (its
// arcs in stored order), looking no vertex up over contiguous lists, and returns the index.
TEST(GraphAlgorithms, ForEachVertexByIdGivesEveryListInIdOrderWithoutALookUpOverContiguousLists) {
  for (const auto& ng : graphs()) {
    const G g = build(ng);
    std::map<std::uint64_t, std::vector<std::uint64_t>> want;
    g.for_each_vertex([&](std::uint64_t u, const auto& l) {
      for (const auto& nb : l) want[u].push_back(G::dst_of(nb));
      want[u];
    });
    counting_graph cg{&g};
    std::vector<std::pair<std::uint64_t, std::vector<std::uint64_t>>> got;
    const vertex_index ix = for_each_vertex_by_id(cg, [&](std::uint64_t u, const auto& l) {
      got.emplace_back(u, std::vector<std::uint64_t>{});
      EXPECT_EQ(l.empty(), l.size() == 0);
      for (const auto& nb : l) got.back().second.push_back(G::dst_of(nb));
    });
    EXPECT_EQ(cg.lookups, 0u) << ng.name;
    using rows = std::vector<std::pair<std::uint64_t, std::vector<std::uint64_t>>>;
    EXPECT_EQ(got, rows(want.begin(), want.end())) << ng.name;
    ASSERT_EQ(ix.ids.size(), want.size()) << ng.name;
    for (std::size_t i = 0; i < ix.ids.size(); ++i) EXPECT_EQ(ix.index_of(ix.ids[i]), i);
    deque_graph dq;
    g.for_each_vertex([&](std::uint64_t u, const auto& l) { dq.lists[u].assign(l.begin(), l.end()); });
    std::vector<std::pair<std::uint64_t, std::vector<std::uint64_t>>> dq_got;
    for_each_vertex_by_id(dq, [&](std::uint64_t u, const auto& l) {
      dq_got.emplace_back(u, std::vector<std::uint64_t>{});
      for (const auto& nb : l) dq_got.back().second.push_back(G::dst_of(nb));
    });
    EXPECT_EQ(dq_got, got) << ng.name;
  }
}
