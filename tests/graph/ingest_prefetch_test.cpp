// Ingestion prefetch reaches the pager: an ingest into a datastore whose graph is on the
// device and not in memory (reopened cold), with ingest_options::prefetch wired to
// manager::prefetch, has the pager fill the batch's adjacency lists before the inserting
// threads touch them (pager_stats::prefetched_pages), so fewer inserts stop on a missing-page
// fault than in the same ingest into a copy of the datastore without prefetch; same graph.
// The look-ahead's look-ups run on a thread of their own, guarded: a damaged page they meet is
// the store's error thrown from the insertion, not SIGBUS.
#include <pheap/graph/adjacency_list.hpp>
#include <pheap/graph/edge_io.hpp>
#include <pheap/graph/grouped_insert.hpp>
#include <pheap/graph/ingest.hpp>
#include <pheap/graph/rmat.hpp>
#include <pheap/graph/store.hpp>
#include <pheap/manager.hpp>

#include "common/damage.hpp"
#include "common/test_util.hpp"
#include "hooked_graph.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace pg = pheap::graph;

namespace {

struct run_result {
  pheap::pager_stats pager;
  std::uint64_t arcs = 0, vertices = 0;
};

pheap::options heap_options() {
  pheap::options o;
  o.capacity = 256ull << 20;
  o.page_size = 4096;
  o.backend = pheap::backend_kind::uffd;
  o.pager.buffer_size = 64ull << 20;  // room for the whole graph: prefetch is never refused
  return o;
}

// Ingests `input` (binary edges) into graph "g" of datastore `ds`, with or without prefetch.
run_result ingest_into(const std::string& ds, const std::string& input, bool prefetch) {
  auto m = pheap::manager::consistent(ds) ? pheap::manager(pheap::open_only, ds, heap_options())
                                          : pheap::manager(pheap::create_only, ds, heap_options());
  auto& g = pg::open_or_create_graph<void>(m, "g", false, 64);
  auto& st = *pg::find_ingest_state(m, "g");
  pg::ingest_options io;
  io.format = pg::input_format::binary;
  io.threads = 2;
  io.batch_size = 8192;
  if (prefetch) io.prefetch = [&m](auto ranges) { m.prefetch(ranges); };
  pg::ingest(g, st, {input}, io, [&m] { return m.flush(); });
  run_result r;
  r.pager = m.stats().pager;
  r.arcs = g.num_arcs();
  r.vertices = g.num_vertices();
  return r;
}

std::string write_edges(const std::string& path, const std::vector<pg::edge>& es) {
  pg::edge_writer w(path, pg::input_format::binary, pg::weight_kind::none);
  w.write(es.data(), es.size());
  w.close();
  return path;
}

TEST(IngestPrefetch, PagerReadsTheBatchListsAheadAndFewerInsertsFault) {
  pheap::test::temp_dir tmp;
  pg::rmat_params p;
  p.scale = 14;
  p.scramble = true;
  pg::rmat_generator gen(p);
  std::vector<pg::edge> es(gen.num_edges());
  gen.generate(0, es.size(), es.data());
  const std::size_t half = es.size() / 2;
  const std::string first = write_edges(tmp / "first.bin", {es.begin(), es.begin() + half});
  const std::string second = write_edges(tmp / "second.bin", {es.begin() + half, es.end()});
  try {
    ingest_into(tmp / "without", first, false);  // the graph's first half, on the device
  } catch (const pheap::error& e) {
    if (e.code() != pheap::errc::unavailable) throw;
    PHEAP_REQUIRE_FEATURE(std::string("userfaultfd: ") + e.what());
    return;
  }
  pheap::manager::copy(tmp / "without", tmp / "with");
  // Each reopened cold: every page of the first half is on the device only.
  const run_result without = ingest_into(tmp / "without", second, false);
  const run_result with = ingest_into(tmp / "with", second, true);
  std::printf("without prefetch: %s\nwith prefetch:    %s\n",
              (std::ostringstream() << without.pager).str().c_str(),
              (std::ostringstream() << with.pager).str().c_str());
  ASSERT_GT(without.pager.pages_read, 100u) << "nothing was read from the device: the test would prove nothing";
  EXPECT_EQ(without.pager.prefetched_pages, 0u);
  EXPECT_GT(with.pager.prefetched_pages, 0u) << "the plan never reached the pager";
  const auto faults = [](const run_result& r) { return r.pager.read_faults + r.pager.write_faults; };
  EXPECT_LT(faults(with), faults(without));
  EXPECT_EQ(with.arcs, without.arcs);
  EXPECT_EQ(with.vertices, without.vertices);
}

// A graph in DRAM whose look-ups (the look-ahead's only: insertion goes through add_arcs) first
// read a heap page the store cannot read — a datastore with one damaged page, opened read-only
// on the pager. The look-ahead thread meets it: the call must end with the store's error naming
// the segment file (rethrown once every thread stopped), on the calling thread; unguarded, the
// look-ahead's SIGBUS would end this test binary.
TEST(IngestPrefetch, DamagedPageMetByTheLookAheadThreadIsTheStoresErrorNotASignal) {
  pheap::test::temp_dir tmp;
  const std::string blob_ds = tmp / "blob";
  try {
    pheap::test::make_blob_heap(blob_ds, "blob", 'Z', 1 << 20);  // many pages: the damaged last one is not the header's
  } catch (const pheap::error& e) {
    if (e.code() != pheap::errc::unavailable) throw;
    PHEAP_REQUIRE_FEATURE(std::string("userfaultfd: ") + e.what());
    return;
  }
  const std::string seg = pheap::test::damage_block_of(blob_ds, 'Z', pheap::test::which_block::last);
  ASSERT_FALSE(seg.empty());
  pheap::options bo;
  bo.backend = pheap::backend_kind::uffd;
  pheap::manager bm(pheap::open_read_only, blob_ds, bo);
  const auto [blob, len] = bm.find<char>("blob");
  ASSERT_NE(blob, nullptr);

  using G = pg::adjacency_list<void, std::allocator<std::byte>>;
  G g{false, 16, {}};
  pg::rmat_params p;
  p.scale = 10;
  pg::rmat_generator gen(p);
  std::vector<pg::edge> es(gen.num_edges());
  gen.generate(0, es.size(), es.data());
  for (std::size_t i = 0; i < es.size() / 2; ++i) g.insert(es[i]);
  const std::vector<pg::edge> batch(es.begin() + static_cast<std::ptrdiff_t>(es.size() / 2), es.end());

  // The inserting thread waits in its first group until the look-ahead made a look-up (else
  // it could claim every bank before the look-ahead thread started, and nothing is looked up).
  std::atomic<bool> looked_up_elsewhere{false};
  const std::thread::id caller = std::this_thread::get_id();
  pg::test::hooked_graph<G> hg{&g,
                               [&](std::uint64_t, std::size_t) {
                                 // A guard against a hang only: the assertions below decide.
                                 const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
                                 while (!looked_up_elsewhere && std::chrono::steady_clock::now() < until) {
                                   std::this_thread::sleep_for(std::chrono::milliseconds(1));
                                 }
                               },
                               [&](std::uint64_t) {
                                 if (std::this_thread::get_id() != caller) looked_up_elsewhere = true;
                                 std::uint64_t sum = 0;
                                 for (std::size_t i = 0; i < len; i += 4096) sum += static_cast<const volatile char*>(blob)[i];
                                 (void)sum;
                               }};
  pg::grouped_insert_options o;
  o.threads = 1;
  o.prefetch = [](std::span<const std::pair<const void*, std::size_t>>) {};
  try {
    pg::insert_grouped(hg, batch, o);
    ADD_FAILURE() << "the insertion met the damaged page and did not say so";
  } catch (const pheap::error& e) {
    EXPECT_EQ(e.code(), pheap::errc::corrupt) << e.what();
    EXPECT_NE(std::string(e.what()).find(seg), std::string::npos) << e.what();
  }
  EXPECT_TRUE(looked_up_elsewhere.load()) << "the look-ups ran on the calling thread: the test proves nothing";
}

}  // namespace
