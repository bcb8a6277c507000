// The degree index (pheap/graph/degree_index.hpp): what a refresh writes is every vertex in
// ascending order with its out-degree, durable with the next watermark; any insertion after it
// makes it match nothing, so a reader walks instead of reading a stale index; an ingestion job
// commits it with the watermark that ends the job, without a flush of its own.
#include <pheap/graph/degree_index.hpp>
#include <pheap/graph/edge_io.hpp>
#include <pheap/graph/ingest.hpp>
#include <pheap/graph/store.hpp>
#include <pheap/manager.hpp>

#include "common/test_util.hpp"
#include "graph_reference.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

// Under TSan, fills inside pheap's SIGBUS handler: tests/support/tsan_signal_fills.cpp.

namespace pg = pheap::graph;

namespace {

pheap::options small_options() {
  pheap::options o = pg::datastore_options();
  o.capacity = 256ull << 20;
  return o;
}

// The (ids, degrees) the edges make, from the reference graph (ids ascending: a std::map).
void expected_degrees(const std::vector<pg::edge>& es, bool directed, std::vector<std::uint64_t>& ids,
                      std::vector<std::uint64_t>& deg) {
  ids.clear();
  deg.clear();
  for (const auto& [u, l] : pg::test::reference_in_input_order(es, directed, false)) {
    ids.push_back(u);
    deg.push_back(l.size());
  }
}

template <class V>
std::vector<std::uint64_t> copy_of(const V& v) {
  return std::vector<std::uint64_t>(v.begin(), v.end());
}

TEST(DegreeIndex, ARefreshWritesEveryVertexAscendingWithItsDegreeAndTheNextWatermarkHoldsIt) {
  pheap::test::temp_dir tmp;
  const std::vector<pg::edge> es = pg::test::rmat_edges(11, 8, pg::weight_kind::none, 3);
  {
    pheap::manager m(pheap::create_only, tmp / "ds", small_options());
    auto& g = pg::open_or_create_graph<void>(m, "g", true, 64);
    EXPECT_EQ(pg::find_degree_index(m, "g", g), nullptr) << "a new graph has no index";
    for (const auto& e : es) g.insert(e);
    pg::refresh_degree_index(m, "g", g);
    ASSERT_NE(pg::find_degree_index(m, "g", g), nullptr);
    m.flush();
  }
  pheap::manager m(pheap::open_read_only, tmp / "ds", small_options());
  pg::visit_graph(m, "g", [&](const auto& g) {
    const pg::persistent_degree_index* idx = pg::find_degree_index(m, "g", g);
    ASSERT_NE(idx, nullptr) << "the watermark after the refresh holds the index";
    std::vector<std::uint64_t> ids, deg;
    expected_degrees(es, true, ids, deg);
    EXPECT_EQ(copy_of(idx->ids), ids);
    EXPECT_EQ(copy_of(idx->degrees), deg);
    EXPECT_EQ(idx->vertices, g.num_vertices());
    EXPECT_EQ(idx->arcs, g.num_arcs());
  });
}

TEST(DegreeIndex, AnArcOrAVertexInsertedAfterTheRefreshMakesTheIndexMatchNothingUntilTheNext) {
  pheap::test::temp_dir tmp;
  pheap::manager m(pheap::create_only, tmp / "ds", small_options());
  auto& g = pg::open_or_create_graph<void>(m, "g", false, 16);
  g.insert(1, 2);
  g.insert(2, 3);
  pg::refresh_degree_index(m, "g", g);
  ASSERT_NE(pg::find_degree_index(m, "g", g), nullptr);
  g.insert(1, 3);  // an arc between existing vertices: the vertex count stays
  EXPECT_EQ(pg::find_degree_index(m, "g", g), nullptr) << "a new arc between old vertices";
  pg::refresh_degree_index(m, "g", g);
  ASSERT_NE(pg::find_degree_index(m, "g", g), nullptr);
  g.ensure_vertex(99);  // a vertex without arcs: the arc count stays
  EXPECT_EQ(pg::find_degree_index(m, "g", g), nullptr) << "a new vertex without arcs";
  pg::refresh_degree_index(m, "g", g);
  const pg::persistent_degree_index* idx = pg::find_degree_index(m, "g", g);
  ASSERT_NE(idx, nullptr);
  EXPECT_EQ(copy_of(idx->ids), (std::vector<std::uint64_t>{1, 2, 3, 99}));
  EXPECT_EQ(copy_of(idx->degrees), (std::vector<std::uint64_t>{2, 2, 2, 0}));
}

TEST(DegreeIndex, SparseIdsFarApartAreOrderedAscendingToo) {
  pheap::test::temp_dir tmp;
  pheap::manager m(pheap::create_only, tmp / "ds", small_options());
  auto& g = pg::open_or_create_graph<void>(m, "g", true, 16);
  const std::vector<std::uint64_t> big{1ull << 60, 7, 1ull << 40, 123456789012ull, 0};
  for (std::size_t i = 0; i < big.size(); ++i) g.insert(big[i], big[(i + 1) % big.size()]);
  g.insert(7, 0);
  pg::refresh_degree_index(m, "g", g);
  const pg::persistent_degree_index* idx = pg::find_degree_index(m, "g", g);
  ASSERT_NE(idx, nullptr);
  EXPECT_EQ(copy_of(idx->ids), (std::vector<std::uint64_t>{0, 7, 123456789012ull, 1ull << 40, 1ull << 60}));
  EXPECT_EQ(copy_of(idx->degrees), (std::vector<std::uint64_t>{1, 2, 1, 1, 1}));
}

TEST(DegreeIndex, AnIngestionJobCommitsItsIndexWithTheWatermarkThatEndsItAndNoFlushOfItsOwn) {
  pheap::test::temp_dir tmp;
  const std::vector<pg::edge> es = pg::test::rmat_edges(10, 8, pg::weight_kind::none, 5);
  const std::string input = tmp / "edges.bin";
  {
    pg::edge_writer w(input, pg::input_format::binary, pg::weight_kind::none);
    w.write(es.data(), es.size());
    w.close();
  }
  std::uint64_t flushes = 0, calls = 0;
  {
    pheap::manager m(pheap::create_only, tmp / "ds", small_options());
    auto& g = pg::open_or_create_graph<void>(m, "g", false, 32);
    pg::ingest_options io;
    io.format = pg::input_format::binary;
    io.batch_size = 1000;
    io.flush_every_edges = 3000;
    io.on_finish = [&] {
      ++calls;
      pg::refresh_degree_index(m, "g", g);
    };
    std::uint64_t n = 0;
    const pg::ingest_report r = pg::ingest(g, *pg::find_ingest_state(m, "g"), {input}, io, [&] {
      ++n;
      return m.flush();
    });
    flushes = r.flushes;
    EXPECT_EQ(n, r.flushes);
    EXPECT_EQ(r.flushes, (es.size() + 2999) / 3000) << "the index adds no watermark of its own";
    // A rerun of the finished job does nothing and does not call on_finish.
    const pg::ingest_report again = pg::ingest(g, *pg::find_ingest_state(m, "g"), {input}, io, [&] { return m.flush(); });
    EXPECT_TRUE(again.already_done);
  }
  EXPECT_EQ(calls, 1u);
  ASSERT_GT(flushes, 1u);
  pheap::manager m(pheap::open_read_only, tmp / "ds", small_options());
  pg::visit_graph(m, "g", [&](const auto& g) {
    const pg::persistent_degree_index* idx = pg::find_degree_index(m, "g", g);
    ASSERT_NE(idx, nullptr);
    std::vector<std::uint64_t> ids, deg;
    expected_degrees(es, false, ids, deg);
    EXPECT_EQ(copy_of(idx->ids), ids);
    EXPECT_EQ(copy_of(idx->degrees), deg);
  });
}

}  // namespace
