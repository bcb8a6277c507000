// A graph datastore's options (pheap::graph::datastore_options, what pheap-graph opens with):
// 4 KiB pages and missing pages filled on the faulting thread unless PHEAP_FAULT_FILL says
// otherwise; and with them an ingest whose graph outgrows a small buffer fills every missing
// page on the inserting threads (none through the fault workers) and builds exactly the graph
// the edges make — the graph layer never hands heap memory to a system call, which would fail
// with EFAULT on a page not in memory.
#include <pheap/graph/edge_io.hpp>
#include <pheap/graph/ingest.hpp>
#include <pheap/graph/store.hpp>
#include <pheap/manager.hpp>

#include "common/test_util.hpp"
#include "graph_reference.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

// Under TSan, fills inside pheap's SIGBUS handler: tests/support/tsan_signal_fills.cpp.

namespace pg = pheap::graph;

namespace {

TEST(DatastoreOptions, FourKibPagesAndFaultingThreadFillsUnlessPheapFaultFillSaysOtherwise) {
  ::unsetenv("PHEAP_FAULT_FILL");
  const pheap::options o = pg::datastore_options();
  EXPECT_EQ(o.page_size, 4096u);
  EXPECT_EQ(o.pager.fault_fill, pheap::fault_filling::automatic);
  EXPECT_EQ(pheap::options{}.pager.fault_fill, pheap::fault_filling::workers)
      << "the library's own default changed: a read(2) into the heap would fail with EFAULT";
  ::setenv("PHEAP_FAULT_FILL", "workers", 1);
  EXPECT_EQ(pg::datastore_options().pager.fault_fill, pheap::fault_filling::workers);
  ::unsetenv("PHEAP_FAULT_FILL");
}

TEST(DatastoreOptions, AnIngestOutOfCoreFillsOnTheInsertingThreadsAndBuildsTheGraphOfItsEdges) {
  ::unsetenv("PHEAP_FAULT_FILL");
  pheap::test::temp_dir tmp;
  const std::vector<pg::edge> es = pg::test::rmat_edges(13, 16, pg::weight_kind::none, 7);
  const std::string input = tmp / "edges.bin";
  {
    pg::edge_writer w(input, pg::input_format::binary, pg::weight_kind::none);
    w.write(es.data(), es.size());
    w.close();
  }
  pheap::options o = pg::datastore_options();
  o.capacity = 256ull << 20;
  o.backend = pheap::backend_kind::uffd;
  o.pager.buffer_size = 1ull << 20;  // 256 pages: a few percent of the graph
  pheap::pager_stats st;
  pg::test::ref_graph got;
  try {
    pheap::manager m(pheap::create_only, tmp / "ds", o);
    auto& g = pg::open_or_create_graph<void>(m, "g", false, 64);
    pg::ingest_options io;
    io.format = pg::input_format::binary;
    io.threads = 2;
    io.batch_size = 16384;
    pg::ingest(g, *pg::find_ingest_state(m, "g"), {input}, io, [&m] { return m.flush(); });
    got = pg::test::reference_of(g);  // read back through the small buffer as well
    st = m.stats().pager;
  } catch (const pheap::error& e) {
    if (e.code() != pheap::errc::unavailable) throw;
    PHEAP_REQUIRE_FEATURE(std::string("userfaultfd: ") + e.what());
    return;
  }
  const std::string stats = (std::ostringstream() << st).str();
  ASSERT_GT(st.evictions, 1000u) << "the graph stayed in memory: the test would prove nothing; " << stats;
  ASSERT_GT(st.pages_read, 1000u) << stats;
  EXPECT_TRUE(st.thread_fill) << stats;
  // Every missing fault was a SIGBUS on an inserting (or reading) thread.
  EXPECT_EQ(st.thread_fills, st.read_faults + st.write_faults) << stats;
  EXPECT_GT(st.thread_fills, st.pages_read / 2) << stats;
  EXPECT_TRUE(got == pg::test::reference_from_edges(es, false, false))
      << "the graph differs from its edges (" << got.size() << " vertices)";
}

}  // namespace
