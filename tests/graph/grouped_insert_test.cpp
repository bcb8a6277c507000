// Grouped insertion (pheap/graph/grouped_insert.hpp): the graph it makes equals one-at-a-time
// insertion in input order entry for entry, for every weight kind, directedness, bank count,
// thread count and cut into batches, with and without the look-ahead; add_arcs grows lists
// geometrically; a throw mid-batch leaves whole groups; it shares bank locks with other
// writers; the look-ahead hands over exactly the promised ranges, before their lists grow, and
// stays within its window.
#include <pheap/graph/adjacency_list.hpp>
#include <pheap/graph/grouped_insert.hpp>

#include "graph_reference.hpp"
#include "hooked_graph.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstddef>
#include <limits>
#include <map>
#include <mutex>
#include <random>
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
  for (const bool look_ahead : {false, true}) {
    for (const unsigned threads : {1u, 2u, 4u}) {
      grouped_insert_options o;
      o.threads = threads;
      // The plan's coverage and timing: GraphGroupedInsertLookAhead below.
      if (look_ahead) o.prefetch = [](std::span<const std::pair<const void*, std::size_t>>) {};
      // One call for the whole stream, then uneven batches.
      for (const std::vector<std::size_t>& cuts :
           {std::vector<std::size_t>{es.size()}, std::vector<std::size_t>{1, 500, 3, es.size()}}) {
        expect_grouped_equals(per_edge, es, cuts, o,
                              "threads " + std::to_string(threads) + ", " + std::to_string(cuts.size()) +
                                  " batches, look-ahead " + std::to_string(look_ahead));
      }
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

// Halves of edges (a rank of a partitioned graph, pheap/graph/mpi): each edge with a random
// half mask — src only, dst only, both — inserted grouped equals add_arc / ensure_vertex
// applied edge by edge in input order, entry for entry, loops and duplicates included, on 1
// and 2 threads, with and without the look-ahead.
template <class W>
void halves_equal_per_record(bool directed) {
  using G = adjacency_list<W, A>;
  using gi = grouped_inserter;
  const auto es = edges_with_duplicates_and_loops(G::kind);
  std::vector<std::uint8_t> halves(es.size());
  std::mt19937_64 rng(7);
  for (auto& h : halves) h = static_cast<std::uint8_t>(1 + rng() % 3);
  G per_record(directed, 64, {});
  for (std::size_t i = 0; i < es.size(); ++i) {
    const edge& e = es[i];
    if (halves[i] & gi::src_half) per_record.add_arc(e.src, e.dst, e.weight);
    if ((halves[i] & gi::dst_half) && (e.dst != e.src || !(halves[i] & gi::src_half))) {
      if (directed) {
        per_record.ensure_vertex(e.dst);
      } else {
        per_record.add_arc(e.dst, e.src, e.weight);
      }
    }
  }
  for (const bool look_ahead : {false, true}) {
    for (const unsigned threads : {1u, 2u}) {
      grouped_insert_options o;
      o.threads = threads;
      if (look_ahead) o.prefetch = [](std::span<const std::pair<const void*, std::size_t>>) {};
      G g(directed, 64, {});
      grouped_inserter ins;
      const std::size_t half = es.size() / 2;  // two batches through one inserter
      ins.insert(g, std::span<const edge>(es).first(half), std::span<const std::uint8_t>(halves).first(half), o);
      ins.insert(g, std::span<const edge>(es).subspan(half), std::span<const std::uint8_t>(halves).subspan(half), o);
      const std::string where = "threads " + std::to_string(threads) + ", look-ahead " + std::to_string(look_ahead);
      EXPECT_EQ(lists_of(g), lists_of(per_record)) << where;
      EXPECT_EQ(g.num_arcs(), per_record.num_arcs()) << where;
      EXPECT_EQ(g.num_vertices(), per_record.num_vertices()) << where;
      expect_invariants(g);
    }
  }
}

TEST(GraphGroupedInsert, HalvesOfEdgesEqualAddArcAndEnsureVertexRecordByRecordDirected) {
  halves_equal_per_record<std::uint64_t>(true);
}
TEST(GraphGroupedInsert, HalvesOfEdgesEqualAddArcAndEnsureVertexRecordByRecordUndirected) {
  halves_equal_per_record<float>(false);
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

// ---- the look-ahead (prefetch plan) -----------------------------------------------------------

namespace {

using range = std::pair<const void*, std::size_t>;

// A graph holding the first half of an R-MAT stream (inserted edge by edge, so its lists have
// all sorts of sizes and capacities) and the second half as the batch to insert grouped.
struct half_built {
  using G = adjacency_list<std::uint64_t, A>;
  std::vector<edge> batch;
  G g{false, 64, {}};
  std::vector<std::vector<range>> expected;  // per bank: the plan grouped_insert.hpp promises
  std::map<const void*, std::pair<std::uint64_t, std::size_t>> owner;  // range -> vertex, size before

  half_built() : expected(64) {
    const auto es = rmat_edges(10, 8, weight_kind::u64, 5);
    batch.assign(es.begin() + es.size() / 2, es.end());
    for (auto it = es.begin(); it != es.begin() + es.size() / 2; ++it) g.insert(*it);
    std::map<std::uint64_t, std::size_t> k;  // arcs each vertex gets from the batch
    for (const edge& e : batch) {
      ++k[e.src];
      if (e.dst != e.src) ++k[e.dst];
    }
    for (const auto& [u, n] : k) {
      const auto* l = g.neighbors(u);
      if (l == nullptr || l->capacity() == 0) continue;
      const auto* data = &*l->data();
      const range r = l->size() + n <= l->capacity() ? range(data + l->size(), n * sizeof(*data))
                                                     : range(data, l->size() * sizeof(*data));
      expected[g.bank_of(u)].push_back(r);
      owner[r.first] = {u, l->size()};
    }
  }
};

}  // namespace

// threads = 1: the inserting thread is held in its first bank (bank 0) until the look-ahead has
// handed over the plan of every other bank; meanwhile each handed range must be the promised one
// for a list that is still as it was before the batch.
TEST(GraphGroupedInsertLookAhead, PlanNamesTheSlotsEachListWillWriteBeforeItsBankIsInserted) {
  half_built h;
  std::size_t promised_elsewhere = 0;
  for (std::size_t b = 1; b < h.expected.size(); ++b) promised_elsewhere += h.expected[b].size();
  ASSERT_GT(promised_elsewhere, 100u);

  std::mutex m;
  std::condition_variable cv;
  std::map<const void*, std::size_t> received;  // range start -> times handed over
  std::size_t received_elsewhere = 0;
  grouped_insert_options o;
  o.threads = 1;
  o.prefetch_window_bytes = std::numeric_limits<std::size_t>::max();
  o.prefetch = [&](std::span<const range> rs) {
    std::lock_guard<std::mutex> lk(m);
    for (const range& r : rs) {
      const auto own = h.owner.find(r.first);
      ASSERT_NE(own, h.owner.end()) << "a range that is no list's";
      const auto& want = h.expected[h.g.bank_of(own->second.first)];
      EXPECT_NE(std::find(want.begin(), want.end(), r), want.end()) << "not the promised range";
      EXPECT_EQ(h.g.neighbors(own->second.first)->size(), own->second.second) << "handed after its list grew";
      if (++received[r.first] == 1 && h.g.bank_of(own->second.first) != 0) ++received_elsewhere;
    }
    cv.notify_all();
  };
  bool held = false;
  hooked_graph<half_built::G> hg{&h.g, [&](std::uint64_t u, std::size_t) {
                                   if (held) return;
                                   held = true;
                                   EXPECT_EQ(h.g.bank_of(u), 0u);
                                   std::unique_lock<std::mutex> lk(m);
                                   // A guard against a hang only: the assertions below decide.
                                   cv.wait_for(lk, std::chrono::seconds(60),
                                               [&] { return received_elsewhere == promised_elsewhere; });
                                 }};
  insert_grouped(hg, h.batch, o);
  EXPECT_EQ(received_elsewhere, promised_elsewhere) << "banks 1.. were not all planned while bank 0 was held";
  for (const auto& [p, n] : received) EXPECT_EQ(n, 1u) << "a range handed over twice";
  half_built fresh;
  for (const edge& e : fresh.batch) fresh.g.insert(e);
  EXPECT_EQ(lists_of(h.g), lists_of(fresh.g));
}

// With a zero window the look-ahead plans only the bank the inserting thread will claim next.
// The (single) inserting thread is held in each bank x until bank x + 1's plan has arrived;
// when bank b's plan arrives, exactly the banks before b - 1 are inserted: the look-ahead is
// one bank ahead, never two.
TEST(GraphGroupedInsertLookAhead, ZeroWindowKeepsTheLookAheadOneBankAheadOfTheInsertion) {
  half_built h;
  const std::size_t nb = h.g.num_banks();
  for (std::size_t b = 1; b < nb; ++b) ASSERT_FALSE(h.expected[b].empty()) << "bank " << b << " would have no plan";
  std::vector<std::uint64_t> before(nb + 1, 0);  // before[b]: the batch's arcs in banks [0, b)
  for (const edge& e : h.batch) {
    ++before[h.g.bank_of(e.src) + 1];
    if (e.dst != e.src) ++before[h.g.bank_of(e.dst) + 1];
  }
  for (std::size_t b = 1; b <= nb; ++b) before[b] += before[b - 1];

  std::mutex m;
  std::condition_variable cv;
  std::vector<bool> planned(nb, false);
  std::atomic<std::uint64_t> inserted{0};
  grouped_insert_options o;
  o.threads = 1;
  o.prefetch_window_bytes = 0;
  o.arcs_inserted = &inserted;
  o.prefetch = [&](std::span<const range> rs) {
    const std::size_t b = h.g.bank_of(h.owner.at(rs.front().first).first);
    EXPECT_EQ(inserted.load(), before[b == 0 ? 0 : b - 1]) << "bank " << b << "'s plan came too early or too late";
    std::lock_guard<std::mutex> lk(m);
    planned[b] = true;
    cv.notify_all();
  };
  hooked_graph<half_built::G> hg{&h.g, [&](std::uint64_t u, std::size_t) {
                                   const std::size_t x = h.g.bank_of(u);
                                   if (x + 1 == nb) return;
                                   std::unique_lock<std::mutex> lk(m);
                                   // A guard against a hang only: the assertions decide.
                                   cv.wait_for(lk, std::chrono::seconds(60), [&] { return planned[x + 1]; });
                                 }};
  insert_grouped(hg, h.batch, o);
  for (std::size_t b = 1; b < nb; ++b) EXPECT_TRUE(planned[b]) << "bank " << b << " was never planned";
  half_built fresh;
  for (const edge& e : fresh.batch) fresh.g.insert(e);
  EXPECT_EQ(lists_of(h.g), lists_of(fresh.g));
}
