// adjacency_list: contents equal a DRAM reference (directed, undirected, weighted), concurrent
// inserts lose nothing, and the structure works inside a Boost.Interprocess mapped file that is
// closed and reopened (offset_ptr / scoped allocator nesting).
#include <pheap/graph/adjacency_list.hpp>
#include <pheap/graph/algorithms.hpp>
#include <pheap/graph/rmat.hpp>

#include "common/test_util.hpp"
#include "graph_reference.hpp"

#include <boost/interprocess/managed_mapped_file.hpp>
#include <gtest/gtest.h>

#include <cstddef>
#include <thread>
#include <vector>

using namespace pheap::graph;
using pheap::graph::test::reference_from_edges;
using pheap::graph::test::reference_of;
using pheap::graph::test::rmat_edges;

namespace {

template <class W>
void check_against_reference(bool directed, std::size_t banks) {
  using G = adjacency_list<W, std::allocator<std::byte>>;
  const auto es = rmat_edges(10, 8, G::kind, 7);
  G g(directed, banks, {});
  for (const edge& e : es) g.insert(e);
  const auto ref = reference_from_edges(es, directed, G::kind != weight_kind::none);
  EXPECT_EQ(reference_of(g), ref);
  std::uint64_t arcs = 0;
  for (const auto& [u, l] : ref) arcs += l.size();
  EXPECT_EQ(g.num_arcs(), arcs);
  EXPECT_EQ(g.num_vertices(), ref.size());
  EXPECT_EQ(g.directed(), directed);
}
}  // namespace

TEST(GraphAdjacency, DirectedUnweightedEqualsReference) { check_against_reference<void>(true, 1024); }
TEST(GraphAdjacency, UndirectedUnweightedEqualsReference) { check_against_reference<void>(false, 1024); }
TEST(GraphAdjacency, DirectedU64WeightsEqualReference) { check_against_reference<std::uint64_t>(true, 64); }
TEST(GraphAdjacency, UndirectedF32WeightsEqualReference) { check_against_reference<float>(false, 3); }
TEST(GraphAdjacency, SingleBankWorks) { check_against_reference<void>(false, 1); }

TEST(GraphAdjacency, UndirectedSelfLoopStoredOnceAndDirectedDestinationIsAVertex) {
  adjacency_list<void, std::allocator<std::byte>> u(false, 16, {});
  u.insert(5, 5);
  u.insert(5, 6);
  ASSERT_NE(u.neighbors(5), nullptr);
  EXPECT_EQ(u.neighbors(5)->size(), 2u);
  EXPECT_EQ(u.neighbors(6)->size(), 1u);
  EXPECT_EQ(u.num_arcs(), 3u);
  adjacency_list<void, std::allocator<std::byte>> d(true, 16, {});
  d.insert(1, 2);
  EXPECT_TRUE(d.contains(2));
  EXPECT_TRUE(d.neighbors(2)->empty());
  EXPECT_EQ(d.num_vertices(), 2u);
  EXPECT_EQ(d.num_arcs(), 1u);
  EXPECT_EQ(d.neighbors(3), nullptr);
  EXPECT_EQ(pheap::test::code_of([] { adjacency_list<void, std::allocator<std::byte>>(true, 0, {}); }),
            pheap::errc::invalid_argument);
}

TEST(GraphAdjacency, ConcurrentInsertsWithBankLocksLoseNothing) {
  using G = adjacency_list<std::uint64_t, std::allocator<std::byte>>;
  const auto es = rmat_edges(12, 16, weight_kind::u64, 7);
  G g(false, 1024, {});
  bank_locks locks(g.num_banks());
  std::vector<std::thread> ts;
  const unsigned n = 4;
  for (unsigned t = 0; t < n; ++t) {
    ts.emplace_back([&, t] {
      for (std::size_t i = t; i < es.size(); i += n) g.insert(es[i], &locks);
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(reference_of(g), reference_from_edges(es, false, true));
}

TEST(GraphAdjacency, BoostInterprocessMappedFileGraphSurvivesCloseAndReopen) {
  namespace bip = boost::interprocess;
  using alloc = bip::allocator<std::byte, bip::managed_mapped_file::segment_manager>;
  using G = adjacency_list<float, alloc>;
  pheap::test::temp_dir d;
  const std::string path = d / "g.bip";
  const auto es = rmat_edges(11, 8, weight_kind::f32, 7);
  const auto ref = reference_from_edges(es, true, true);
  {
    bip::managed_mapped_file mf(bip::create_only, path.c_str(), 64u << 20);
    G* g = mf.construct<G>("g")(true, 256, alloc(mf.get_segment_manager()));
    bank_locks locks(g->num_banks());
    std::thread t1([&] { for (std::size_t i = 0; i < es.size(); i += 2) g->insert(es[i], &locks); });
    std::thread t2([&] { for (std::size_t i = 1; i < es.size(); i += 2) g->insert(es[i], &locks); });
    t1.join();
    t2.join();
    mf.flush();
  }
  bip::managed_mapped_file mf(bip::open_only, path.c_str());
  const G* g = mf.find<G>("g").first;
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(reference_of(*g), ref);
  EXPECT_EQ(count(*g).vertices, ref.size());
}
