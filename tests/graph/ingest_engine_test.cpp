// The exactly-once ingestion engine, heap-independent: a "watermark" is a deep copy of graph +
// state taken in the flush callback, and a "crash" throws from inside the grouped insertion of
// a batch (before one of its add_arcs) and rolls the working copy back to the last watermark —
// exactly what a reopen after kill -9 sees.
#include <pheap/graph/adjacency_list.hpp>
#include <pheap/graph/edge_io.hpp>
#include <pheap/graph/ingest.hpp>
#include <pheap/graph/rmat.hpp>

#include "common/test_util.hpp"
#include "graph_reference.hpp"
#include "hooked_graph.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <random>

using namespace pheap::graph;
using pheap::graph::test::hooked_graph;
using pheap::graph::test::lists_of;
using pheap::graph::test::reference_from_edges;
using pheap::graph::test::reference_in_input_order;
using pheap::graph::test::reference_of;
using pheap::graph::test::rmat_edges;

namespace {
using A = std::allocator<std::byte>;
using S = ingest_state<A>;

struct simulated_crash {};

// g, throwing simulated_crash before its add_arcs once `budget` groups have been inserted.
template <class G>
hooked_graph<G> crashing(G* g, std::atomic<std::int64_t>& budget) {
  return {g, [&budget](std::uint64_t, std::size_t) {
            if (budget.fetch_sub(1) <= 0) throw simulated_crash{};
          }};
}


std::string write_edges(const std::string& path, const std::vector<edge>& es, input_format f,
                        weight_kind w) {
  edge_writer wr(path, f, w);
  wr.write(es.data(), es.size());
  wr.close();
  return path;
}

ingest_options opts(std::size_t batch, std::uint64_t flush_every, unsigned threads = 2) {
  ingest_options o;
  o.batch_size = batch;
  o.flush_every_edges = flush_every;
  o.threads = threads;
  return o;
}

template <class W>
void crash_and_resume_until_done(input_format fmt, bool directed, unsigned threads) {
  using G = adjacency_list<W, A>;
  pheap::test::temp_dir d;
  // Three inputs; the middle one has comments and (with skip) bad lines to count.
  const auto e1 = rmat_edges(10, 4, G::kind, 1), e2 = rmat_edges(9, 4, G::kind, 2),
             e3 = rmat_edges(9, 4, G::kind, 3);
  std::vector<std::string> inputs{write_edges(d / "1", e1, fmt, G::kind), d / "2",
                                  write_edges(d / "3", e3, fmt, G::kind)};
  std::uint64_t expected_bad = 0;
  if (fmt == input_format::text) {
    std::ofstream o(inputs[1]);
    o << std::setprecision(9) << "# generated\n";
    for (std::size_t i = 0; i < e2.size(); ++i) {
      if (i % 97 == 0) {
        o << "not an edge\n";
        ++expected_bad;
      }
      o << e2[i].src << ' ' << e2[i].dst;
      if (G::kind == weight_kind::u64) o << ' ' << e2[i].weight;
      if (G::kind == weight_kind::f32) o << ' ' << f32_from_bits(e2[i].weight);
      o << '\n';
    }
  } else {
    write_edges(inputs[1], e2, fmt, G::kind);
  }
  std::vector<edge> all = e1;
  all.insert(all.end(), e2.begin(), e2.end());
  all.insert(all.end(), e3.begin(), e3.end());
  const auto want = reference_from_edges(all, directed, G::kind != weight_kind::none);

  G durable_g(directed, 64, {});
  S durable_s{A{}};
  std::uint64_t epoch = 0;
  std::mt19937_64 rng(12345);
  ingest_options o = opts(/*batch=*/113, /*flush_every=*/300, threads);
  o.format = fmt;
  o.skip_bad_lines = true;
  int crashes = 0;
  for (int attempt = 0;; ++attempt) {
    ASSERT_LT(attempt, 400) << "no progress";
    G work_g = durable_g;  // reopen at the last watermark
    S work_s = durable_s;
    std::atomic<std::int64_t> budget{static_cast<std::int64_t>(rng() % 700)};
    if (attempt >= 150) budget = std::int64_t{1} << 40;  // let it finish
    auto cg = crashing(&work_g, budget);
    const bool was_active = durable_s.active != 0;
    try {
      const auto rep = ingest(cg, work_s, inputs, o, [&] {
        durable_g = work_g;
        durable_s = work_s;
        return ++epoch;
      });
      EXPECT_EQ(rep.resumed, was_active);
      break;
    } catch (const simulated_crash&) {
      ++crashes;
    }
  }
  EXPECT_GE(crashes, 20);
  EXPECT_EQ(reference_of(durable_g), want) << "lost or duplicated edges after " << crashes << " crashes";
  EXPECT_EQ(lists_of(durable_g), reference_in_input_order(all, directed, G::kind != weight_kind::none))
      << "resumed ingestion differs from an uninterrupted one in the order within a list";
  EXPECT_EQ(durable_s.active, 0u);
  EXPECT_EQ(durable_s.edges, all.size());
  EXPECT_EQ(durable_s.bad_lines, expected_bad);
  EXPECT_EQ(durable_s.completed.size(), 1u);
}
}  // namespace

TEST(GraphIngestEngine, CrashesAtRandomInsertsThenResumeGiveExactlyTheReferenceText) {
  crash_and_resume_until_done<void>(input_format::text, false, 2);
}
TEST(GraphIngestEngine, CrashesAtRandomInsertsThenResumeGiveExactlyTheReferenceBinaryWeighted) {
  crash_and_resume_until_done<std::uint64_t>(input_format::binary, true, 3);
}
TEST(GraphIngestEngine, CrashesAtRandomInsertsThenResumeGiveExactlyTheReferenceF32SingleThread) {
  crash_and_resume_until_done<float>(input_format::text, true, 1);
}

TEST(GraphIngestEngine, FinishedJobRerunIsANoOpUnlessReingestIsGiven) {
  using G = adjacency_list<void, A>;
  pheap::test::temp_dir d;
  const auto es = rmat_edges(8, 4, weight_kind::none, 5);
  const auto in = write_edges(d / "in.txt", es, input_format::text, weight_kind::none);
  G g(true, 32, {});
  S s{A{}};
  std::uint64_t epoch = 0;
  auto flush = [&] { return ++epoch; };
  auto r1 = ingest(g, s, {in}, opts(100, 0), flush);
  EXPECT_FALSE(r1.already_done);
  EXPECT_EQ(r1.final.edges, es.size());
  EXPECT_EQ(r1.flushes, 1u);
  const auto after_first = reference_of(g);
  auto r2 = ingest(g, s, {in}, opts(100, 0), flush);
  EXPECT_TRUE(r2.already_done);
  EXPECT_EQ(reference_of(g), after_first);
  EXPECT_EQ(epoch, 1u) << "a no-op rerun must not flush";
  ingest_options again = opts(100, 0);
  again.reingest = true;
  ingest(g, s, {in}, again, flush);
  EXPECT_EQ(g.num_arcs(), 2 * es.size());
  EXPECT_EQ(s.total_edges, 2 * es.size());
}

TEST(GraphIngestEngine, FlushEveryEdgesFlushesAtBatchBoundaries) {
  using G = adjacency_list<void, A>;
  pheap::test::temp_dir d;
  const auto es = rmat_edges(8, 4, weight_kind::none, 5);  // 1024 edges
  const auto in = write_edges(d / "in.bin", es, input_format::binary, weight_kind::none);
  G g(false, 32, {});
  S s{A{}};
  std::vector<std::uint64_t> flushed_at;
  ingest_options o = opts(64, 256);
  o.format = input_format::binary;
  const auto r = ingest(g, s, {in}, o, [&] {
    flushed_at.push_back(s.edges);
    return flushed_at.size();
  });
  EXPECT_EQ(flushed_at, (std::vector<std::uint64_t>{256, 512, 768, 1024, 1024}));
  EXPECT_EQ(r.final.watermark, 5u);
  EXPECT_EQ(r.final.bytes_this_run, 1024u * 16);
}

TEST(GraphIngestEngine, OtherInputsWhileAJobIsUnfinishedAreRefusedUnlessAbandoned) {
  using G = adjacency_list<void, A>;
  pheap::test::temp_dir d;
  const auto a = write_edges(d / "a", rmat_edges(8, 4, weight_kind::none, 1), input_format::text, weight_kind::none);
  const auto b = write_edges(d / "b", rmat_edges(8, 4, weight_kind::none, 2), input_format::text, weight_kind::none);
  G g(true, 32, {});
  S s{A{}};
  std::atomic<std::int64_t> budget{500};
  auto cg = crashing(&g, budget);
  EXPECT_THROW(ingest(cg, s, {a}, opts(100, 100, 1), [] { return std::uint64_t{1}; }), simulated_crash);
  ASSERT_EQ(s.active, 1u);
  const auto edges_before = g.num_arcs();
  try {
    ingest(g, s, {b}, opts(100, 100), [] { return std::uint64_t{2}; });
    FAIL() << "expected ingest_usage_error";
  } catch (const ingest_usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("unfinished ingestion of different inputs"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(std::filesystem::absolute(a).string()), std::string::npos) << e.what();
  }
  EXPECT_EQ(g.num_arcs(), edges_before) << "a refused command inserts nothing";
  ingest_options o = opts(100, 100);
  o.abandon_incomplete = true;
  const auto r = ingest(g, s, {b}, o, [] { return std::uint64_t{3}; });
  EXPECT_FALSE(r.resumed);
  EXPECT_EQ(g.num_arcs(), edges_before + 1024);
  // Changing an input's size changes the fingerprint: it is a different job.
  std::ofstream(b, std::ios::app) << "1 2\n";
  EXPECT_NE(fingerprint_inputs({b}, input_format::text, weight_kind::none).value, s.fingerprint);
}

// A stream is resumed by reading it again and comparing the checksum of what was read before
// (Ingest.* in tests/graph/tool_test.cpp); without a checksum (no input_check, or an older
// watermark) nothing says the new stream starts like the old one.
TEST(GraphIngestEngine, UnfinishedStdinJobWithoutAChecksumCannotBeResumed) {
  using G = adjacency_list<void, A>;
  G g(true, 8, {});
  S s{A{}};
  s.active = 1;
  s.from_stdin = 1;
  s.edges = 42;
  s.byte_offset = 420;
  s.fingerprint = fingerprint_inputs({"-"}, input_format::text, weight_kind::none).value;
  try {
    ingest(g, s, {"-"}, opts(10, 0), [] { return std::uint64_t{1}; });
    FAIL() << "expected ingest_usage_error";
  } catch (const ingest_usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("stdin"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cannot be resumed"), std::string::npos) << e.what();
  }
  EXPECT_THROW(fingerprint_inputs({"-", "-"}, input_format::text, weight_kind::none), ingest_usage_error);
}

TEST(GraphIngestEngine, BadLineCommitsThePrefixAndSkipRerunResumesAtThatLine) {
  using G = adjacency_list<std::uint64_t, A>;
  pheap::test::temp_dir d;
  const std::string in = d / "bad.txt";
  std::ofstream(in) << "1 2 10\n2 3 20\n3 4 30\n4 five 40\n5 6 50\n6 7 60\n";
  G g(false, 8, {});
  S s{A{}};
  G durable = g;
  std::uint64_t flushes = 0;
  auto flush = [&] {
    durable = g;
    return ++flushes;
  };
  try {
    ingest(g, s, {in}, opts(2, 0), flush);
    FAIL() << "expected input_error";
  } catch (const input_error& e) {
    EXPECT_EQ(e.line(), 4u);
    EXPECT_EQ(e.text(), "4 five 40");
  }
  EXPECT_EQ(flushes, 1u) << "edges before the bad line are committed before the error";
  EXPECT_EQ(durable.num_arcs(), 6u);
  EXPECT_EQ(s.edges, 3u);
  EXPECT_EQ(s.line, 3u);
  ingest_options o = opts(2, 0);
  o.skip_bad_lines = true;
  const auto r = ingest(g, s, {in}, o, flush);
  EXPECT_TRUE(r.resumed);
  EXPECT_EQ(s.edges, 5u);
  EXPECT_EQ(s.bad_lines, 1u);
  const auto want = reference_from_edges({{1, 2, 10}, {2, 3, 20}, {3, 4, 30}, {5, 6, 50}, {6, 7, 60}}, false, true);
  EXPECT_EQ(reference_of(durable), want);
}

TEST(GraphIngestEngine, IngestingTwoHalvesEqualsIngestingAllAtOnce) {
  using G = adjacency_list<void, A>;
  pheap::test::temp_dir d;
  const auto es = rmat_edges(10, 4, weight_kind::none, 8);
  const std::vector<edge> h1(es.begin(), es.begin() + es.size() / 2), h2(es.begin() + es.size() / 2, es.end());
  const auto f1 = write_edges(d / "h1", h1, input_format::text, weight_kind::none);
  const auto f2 = write_edges(d / "h2", h2, input_format::text, weight_kind::none);
  auto flush = [] { return std::uint64_t{1}; };
  G inc(false, 64, {}), once(false, 64, {});
  S si{A{}}, so{A{}};
  ingest(inc, si, {f1}, opts(500, 0), flush);
  ingest(inc, si, {f2}, opts(500, 0), flush);
  ingest(once, so, {f1, f2}, opts(500, 0), flush);
  EXPECT_EQ(reference_of(inc), reference_of(once));
  EXPECT_EQ(reference_of(once), reference_from_edges(es, false, false));
  EXPECT_EQ(si.total_edges, so.total_edges);
  EXPECT_EQ(si.jobs_completed, 2u);
}

// Grouped insertion (pheap/graph/grouped_insert.hpp) keeps every list in input order, so the
// engine's graph is, entry for entry, what one-at-a-time insertion in input order makes —
// whatever the thread count and the batch size.
TEST(GraphIngestEngine, ListsHoldTheirArcsInInputOrderWhateverTheThreadsAndBatchSize) {
  using G = adjacency_list<std::uint64_t, A>;
  pheap::test::temp_dir d;
  const auto es = rmat_edges(10, 8, weight_kind::u64, 4);
  const auto in = write_edges(d / "in.bin", es, input_format::binary, weight_kind::u64);
  const auto loops = static_cast<std::uint64_t>(std::count_if(es.begin(), es.end(), [](const edge& e) { return e.src == e.dst; }));
  for (const bool directed : {true, false}) {
    const auto want = reference_in_input_order(es, directed, true);
    const std::uint64_t arcs = directed ? es.size() : 2 * es.size() - loops;
    for (const unsigned threads : {1u, 3u}) {
      for (const std::size_t batch : {std::size_t{1}, std::size_t{97}, std::size_t{1} << 20}) {
        G g(directed, 16, {});
        S s{A{}};
        ingest_options o = opts(batch, 0, threads);
        o.format = input_format::binary;
        ingest(g, s, {in}, o, [] { return std::uint64_t{1}; });
        EXPECT_EQ(lists_of(g), want) << "directed " << directed << ", threads " << threads << ", batch " << batch;
        EXPECT_EQ(g.num_arcs(), arcs);
      }
    }
  }
}
