// Grouped insertion (pheap/graph/grouped_insert.hpp): the graph it makes equals one-at-a-time
// insertion in input order entry for entry, for every weight kind, directedness, bank count,
// thread count and cut into batches; add_arcs grows lists geometrically; a throw mid-batch
// leaves whole groups; it shares bank locks with other writers.
#include <pheap/graph/adjacency_list.hpp>
#include <pheap/graph/grouped_insert.hpp>

#include "graph_reference.hpp"
#include "hooked_graph.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace pheap::graph;
using namespace pheap::graph::test;  // the DRAM references and the hooked graph

namespace {

using A = std::allocator<std::byte>;

// R-MAT edges plus repeated edges with other weights and self-loops, interleaved.
std::vector<edge> edges_with_duplicates_and_loops(weight_kind w) {
  std::vector<edge> es = rmat_edges(9, 8, w, 11);
  const std::size_t n = es.size();
  for (std::size_t i = 0; i < n; i += 37) {
    edge dup = es[i];
    dup.weight = w == weight_kind::f32 ? f32_bits(static_cast<float>(i) + 0.5f) : (w == weight_kind::u64 ? i * 3 : 0);
    es.insert(es.begin() + static_cast<std::ptrdiff_t>(i / 2), dup);
    es.push_back(edge{es[i].src, es[i].src, dup.weight});
  }
  return es;
}

// Every vertex lives in its bank, and num_arcs() (the sum of the bank counters) counts the
// stored entries.
template <class G>
void expect_invariants(const G& g) {
  std::uint64_t entries = 0;
  for (std::size_t b = 0; b < g.num_banks(); ++b) {
    for (const auto& [u, l] : g.bank(b)) {
      EXPECT_EQ(g.bank_of(u), b);
      entries += l.size();
    }
  }
  EXPECT_EQ(g.num_arcs(), entries);
}

// Grouped insertion of `es` into a fresh graph like `per_edge`, cut into batches at `cuts`
// through one reused inserter, checked against per_edge entry for entry.
template <class G>
void expect_grouped_equals(const G& per_edge, const std::vector<edge>& es, const std::vector<std::size_t>& cuts,
                           const grouped_insert_options& base, const std::string& where) {
  G g(per_edge.directed(), per_edge.num_banks(), {});
  grouped_inserter ins;
  std::atomic<std::uint64_t> progress{0};
  grouped_insert_options o = base;
  o.arcs_inserted = &progress;
  std::size_t at = 0;
  for (const std::size_t cut : cuts) {
    const std::size_t end = std::min(es.size(), std::max(at, cut));
    ins.insert(g, std::span<const edge>(es).subspan(at, end - at), o);
    at = end;
  }
  ASSERT_EQ(at, es.size());
  EXPECT_EQ(lists_of(g), lists_of(per_edge)) << where;
  EXPECT_EQ(g.num_arcs(), per_edge.num_arcs()) << where;
  EXPECT_EQ(g.num_vertices(), per_edge.num_vertices()) << where;
  EXPECT_EQ(progress.load(), g.num_arcs()) << where;
  expect_invariants(g);
}

template <class W>
void grouped_equals_per_edge(bool directed, std::size_t banks) {
  using G = adjacency_list<W, A>;
  const auto es = edges_with_duplicates_and_loops(G::kind);
  G per_edge(directed, banks, {});
  for (const edge& e : es) per_edge.insert(e);
  for (const unsigned threads : {1u, 2u, 4u}) {
    grouped_insert_options o;
    o.threads = threads;
    // One call for the whole stream, then uneven batches.
    for (const std::vector<std::size_t>& cuts :
         {std::vector<std::size_t>{es.size()}, std::vector<std::size_t>{1, 500, 3, es.size()}}) {
      expect_grouped_equals(per_edge, es, cuts, o,
                            "threads " + std::to_string(threads) + ", " + std::to_string(cuts.size()) + " batches");
    }
  }
}

}  // namespace

TEST(GraphGroupedInsert, GroupedInsertEqualsPerEdgeInsertEntryForEntryDirectedUnweighted) {
  grouped_equals_per_edge<void>(true, 1024);
}
TEST(GraphGroupedInsert, GroupedInsertEqualsPerEdgeInsertEntryForEntryUndirectedUnweighted) {
  grouped_equals_per_edge<void>(false, 64);
}
TEST(GraphGroupedInsert, GroupedInsertEqualsPerEdgeInsertEntryForEntryDirectedU64) {
  grouped_equals_per_edge<std::uint64_t>(true, 3);
}
TEST(GraphGroupedInsert, GroupedInsertEqualsPerEdgeInsertEntryForEntryUndirectedF32) {
  grouped_equals_per_edge<float>(false, 1024);
}
TEST(GraphGroupedInsert, GroupedInsertEqualsPerEdgeInsertEntryForEntryOneBank) {
  grouped_equals_per_edge<std::uint64_t>(false, 1);
}

TEST(GraphGroupedInsert, AddArcsAppendsInOrderAndGrowsCapacityByTheListsOwnFactor) {
  using G = adjacency_list<std::uint64_t, A>;
  G g(true, 8, {});
  std::vector<G::neighbor_type> want;
  std::uint64_t next = 0;
  for (const std::size_t k : {0, 1, 1, 1, 5, 1, 40, 3, 1000, 1, 0, 2, 700}) {
    std::vector<G::neighbor_type> arcs;
    for (std::size_t i = 0; i < k; ++i, ++next) arcs.push_back(G::make_neighbor(next, next * 7));
    const std::size_t size = want.size();
    const std::size_t cap = g.contains(42) ? g.neighbors(42)->capacity() : 0;
    g.add_arcs(42, arcs);
    want.insert(want.end(), arcs.begin(), arcs.end());
    const auto* l = g.neighbors(42);
    ASSERT_NE(l, nullptr) << "add_arcs makes its vertex a vertex, also with no arcs";
    EXPECT_EQ(std::vector<G::neighbor_type>(l->begin(), l->end()), want);
    EXPECT_EQ(l->capacity(), size + k > cap ? std::max(size + k, cap * 8 / 5) : cap) << "after adding " << k;
  }
  EXPECT_EQ(g.num_arcs(), want.size());
  EXPECT_EQ(g.num_vertices(), 1u);

  // One arc at a time: the capacity changes about log_1.6(n) times, not n times.
  G h(true, 8, {});
  std::size_t changes = 0, cap = 0;
  const std::size_t n = 20000;
  for (std::size_t i = 0; i < n; ++i) {
    const G::neighbor_type one = G::make_neighbor(i, 0);
    h.add_arcs(7, std::span<const G::neighbor_type>(&one, 1));
    if (h.neighbors(7)->capacity() != cap) ++changes, cap = h.neighbors(7)->capacity();
  }
  EXPECT_EQ(h.neighbors(7)->size(), n);
  EXPECT_LE(changes, static_cast<std::size_t>(std::log(static_cast<double>(n)) / std::log(1.6)) + 5);
}

TEST(GraphGroupedInsert, ThrowMidBatchLeavesWholeGroupsAndStopsEveryThread) {
  using G = adjacency_list<std::uint64_t, A>;
  const auto es = rmat_edges(10, 8, weight_kind::u64, 3);
  const std::vector<edge> first(es.begin(), es.begin() + es.size() / 2), second(es.begin() + es.size() / 2, es.end());
  G g(false, 64, {});
  for (const edge& e : first) g.insert(e);
  const auto before = lists_of(g);
  G complete = g;
  for (const edge& e : second) complete.insert(e);
  const auto after = lists_of(complete);

  struct injected : std::runtime_error {
    injected() : std::runtime_error("injected") {}
  };
  // One throw, at the 301st group; the other threads finish the bank they are in, then stop.
  std::atomic<int> budget{300};
  hooked_graph<G> hg{&g, [&](std::uint64_t, std::size_t) {
                       if (budget.fetch_sub(1) == 0) throw injected();
                     }};
  grouped_insert_options o;
  o.threads = 4;
  EXPECT_THROW(insert_grouped(hg, second, o), injected);
  // Each vertex of the batch holds its list from before, or that list and its whole group.
  const ref_graph::mapped_type none;
  std::size_t whole = 0, untouched = 0;
  const auto now = lists_of(g);
  for (const auto& [u, want] : after) {
    const auto b = before.find(u);
    const auto& old = b == before.end() ? none : b->second;
    if (want == old) continue;  // not in the batch
    const auto n = now.find(u);
    const auto& got = n == now.end() ? none : n->second;
    whole += got == want ? 1 : 0;
    untouched += got == old ? 1 : 0;
    EXPECT_TRUE(got == old || got == want) << "vertex " << u << " holds part of its group";
  }
  EXPECT_GE(whole, 300u);
  EXPECT_GT(untouched, 0u) << "the other threads did not stop";
  expect_invariants(g);
}

TEST(GraphGroupedInsert, ConcurrentGroupedAndPerEdgeInsertersSharingBankLocksLoseNothing) {
  using G = adjacency_list<float, A>;
  const auto es = rmat_edges(11, 8, weight_kind::f32, 9);
  const std::size_t third = es.size() / 3;
  const std::span<const edge> all(es);
  G g(true, 128, {});
  bank_locks locks(g.num_banks());
  grouped_insert_options o;
  o.threads = 2;
  std::thread a([&] { insert_grouped(g, all.subspan(0, third), o, &locks); });
  std::thread b([&] { insert_grouped(g, all.subspan(third, third), o, &locks); });
  for (const edge& e : all.subspan(2 * third)) g.insert(e, &locks);
  a.join();
  b.join();
  EXPECT_EQ(reference_of(g), reference_from_edges(es, true, true));
  expect_invariants(g);
}
