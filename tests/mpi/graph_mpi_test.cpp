// pheap-graph on a distributed datastore (graph/mpi/FORMAT.md): `mpirun -np N pheap-graph
// ingest` against the single-process tool on the same input, queries with and without mpirun
// (stats, bfs, cc, export),
// kills of one rank during the ingestion and inside the collective flush, and the usage errors.
// Every comparison is with what the plain tool makes of the same input in this test.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "mpi_runner.hpp"
#include "pheap/mpi/manifest.hpp"

namespace pheap::test {
namespace {

using nlohmann::json;

class GraphMpi : public ::testing::Test {
 protected:
  void SetUp() override {
    PHEAP_REQUIRE_MPIRUN();
    input_ = dir_ / "edges.txt";
    ok(plain({"generate", "--scale", "10", "--edge-factor", "8", "--seed", "18", "--output", input_, "-q"}));
  }

  job_result plain(const std::vector<std::string>& args, const std::string& program = PHEAP_GRAPH_TOOL) {
    return run_program(program, args, dir_ / ("log-" + std::to_string(++logs_)));
  }
  job_result mpi(int np, const std::vector<std::string>& args, const env_list& env = {},
                 const std::string& program = PHEAP_GRAPH_TOOL) {
    return run_mpi(np, program, args, dir_ / ("log-" + std::to_string(++logs_)), env);
  }
  static void ok(const job_result& r) { ASSERT_EQ(r.status, 0) << r.output; }

  // `ingest --datastore d <flags> input` arguments.
  std::vector<std::string> ingest_args(const std::string& d, std::vector<std::string> flags) const {
    std::vector<std::string> a = {"ingest", "--datastore", d, "-q"};
    a.insert(a.end(), flags.begin(), flags.end());
    a.push_back(input_);
    return a;
  }
  // The edges of d's graph, read by the plain tool (one process, also for a distributed d),
  // sorted: the edge set with its multiplicities.
  std::vector<std::string> edges(const std::string& d) {
    const std::string out = dir_ / ("export-" + std::to_string(++logs_));
    const auto r = plain({"export", "--datastore", d, "--output", out, "-q"});
    EXPECT_EQ(r.status, 0) << r.output;
    std::vector<std::string> lines;
    std::istringstream in(slurp(out));
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    std::sort(lines.begin(), lines.end());
    return lines;
  }
  // The single-process reference of `flags` on the input.
  std::vector<std::string> reference(const std::vector<std::string>& flags) {
    const std::string d = dir_ / ("ref-" + std::to_string(++logs_));
    ok(plain(ingest_args(d, flags)));
    return edges(d);
  }
  static json parse(const job_result& r) {
    const auto at = r.output.find('{');
    EXPECT_NE(at, std::string::npos) << r.output;
    return at == std::string::npos ? json() : json::parse(r.output.substr(at, r.output.rfind('}') - at + 1));
  }
  // What a query says about the graph itself (not where it is stored).
  static json graph_part(json j) {
    for (const char* k : {"datastore", "watermark", "ingestion", "ranks", "output"}) j.erase(k);
    return j;
  }

  temp_dir dir_;
  std::string input_;
  int logs_ = 0;
};

TEST_F(GraphMpi, IngestUnderTwoThreeAndFourRanksEqualsTheSingleProcessGraphEdgeForEdge) {
  const std::vector<std::vector<std::string>> kinds = {
      {"--batch-size", "500", "--flush-every", "1000"},
      {"--undirected", "--weighted", "u64", "--batch-size", "300", "--flush-every", "never"}};
  // A weighted input: the generator's u64 weights in a third column.
  const std::string weighted = dir_ / "weighted.txt";
  ok(plain({"generate", "--scale", "10", "--edge-factor", "8", "--seed", "18", "--weights", "u64", "--output", weighted, "-q"}));
  for (std::size_t k = 0; k < kinds.size(); ++k) {
    if (k == 1) input_ = weighted;
    const auto want = reference(kinds[k]);
    ASSERT_EQ(want.size(), 8192u);
    for (int np : {2, 3, 4}) {
      const std::string d = dir_ / ("d" + std::to_string(k) + "-" + std::to_string(np));
      const auto r = mpi(np, ingest_args(d, kinds[k]));
      ASSERT_EQ(r.status, 0) << r.output;
      EXPECT_NE(r.output.find("ranks " + std::to_string(np) + ":"), std::string::npos) << r.output;
      EXPECT_EQ(pheap::mpi::read_manifest(d).ranks.size(), static_cast<std::size_t>(np));
      EXPECT_EQ(edges(d), want) << "kind " << k << ", " << np << " ranks";
    }
  }
}

// The queries of a distributed graph, in one process (every rank read-only) and under mpirun
// with the same N (the algorithms across ranks), against the plain tool on the plain graph.
TEST_F(GraphMpi, StatsBfsCcAndExportInOneProcessAndUnderMpirunEqualTheSingleProcessTool) {
  for (const auto& flags : std::vector<std::vector<std::string>>{{"--batch-size", "700"}, {"--undirected", "--weighted", "u64"}}) {
    if (flags.size() == 3) {
      ok(plain({"generate", "--scale", "9", "--edge-factor", "8", "--seed", "7", "--weights", "u64", "--output", input_, "-q"}));
    }
    // Several (weak) components: R-MAT plus a few small islands.
    { std::ofstream(input_, std::ios::app) << "9000001 9000002 1\n9000003 9000002 2\n9000005 9000005 3\n8000000 9000004 4\n"; }
    const std::string ref = dir_ / ("ref" + std::to_string(flags.size())), d = dir_ / ("d" + std::to_string(flags.size()));
    ok(plain(ingest_args(ref, flags)));
    ok(mpi(3, ingest_args(d, flags)));
    // Each query: the plain tool on ref; on d in one process; on d under mpirun -np 3.
    auto all_three = [&](std::vector<std::string> args) {
      std::vector<job_result> r;
      args.insert(args.begin() + 1, {"--datastore", ref});
      r.push_back(plain(args));
      args[2] = d;
      r.push_back(plain(args));
      r.push_back(mpi(3, args));
      return r;
    };
    const auto stats = all_three({"stats", "--json", "--degrees"});
    for (std::size_t i = 1; i < 3; ++i) {
      ASSERT_EQ(stats[i].status, 0) << stats[i].output;
      const json got = parse(stats[i]), want = parse(stats[0]);
      EXPECT_EQ(graph_part(got), graph_part(want)) << i;
      EXPECT_EQ(got["ranks"], 3);
      EXPECT_EQ(got["ingestion"]["total_edges"], want["ingestion"]["total_edges"]);
      EXPECT_EQ(got["watermark"], pheap::mpi::read_manifest(d).epoch);
    }
    const std::string rows = dir_ / "rows";
    std::vector<std::string> cc_rows;
    const json want_cc = graph_part(parse(plain({"cc", "--json", "--datastore", ref})));
    EXPECT_GT(want_cc["components"].get<std::uint64_t>(), 1u);
    for (const auto& r : all_three({"cc", "--json", "--output", rows})) {
      ASSERT_EQ(r.status, 0) << r.output;
      EXPECT_EQ(graph_part(parse(r)), graph_part(want_cc));
      cc_rows.push_back(slurp(rows));  // vertex and smallest member id: canonical
    }
    EXPECT_EQ(cc_rows[1], cc_rows[0]);
    EXPECT_EQ(cc_rows[2], cc_rows[0]);
    for (const char* source : {"0", "1", "5", "9000003"}) {
      const auto bfs = all_three({"bfs", "--json", "--source", source});
      for (std::size_t i = 1; i < 3; ++i) {
        ASSERT_EQ(bfs[i].status, bfs[0].status) << bfs[i].output;
        if (bfs[0].status == 0) {
          EXPECT_EQ(graph_part(parse(bfs[i])), graph_part(parse(bfs[0]))) << "source " << source << ", form " << i;
        }
      }
    }
    // export under mpirun: the one-process export of d, byte for byte (same order).
    const std::string e1 = dir_ / "e1", e2 = dir_ / "e2";
    ok(plain({"export", "--datastore", d, "--output", e1, "-q"}));
    ok(mpi(3, {"export", "--datastore", d, "--output", e2, "-q"}));
    EXPECT_EQ(slurp(e2), slurp(e1));
    EXPECT_EQ(edges(d), edges(ref));
  }
}

// `pheap-graph stats` in one process beside an `mpirun pheap-graph ingest` that flushes every
// 200 edges: each run reads one global watermark whole (src/mpi/FORMAT.md "Readers beside a
// running job"). The edges the ranks hold together equal what the ingestion record says was
// consumed at that watermark — a rank read at another global epoch than the others would
// break that — and the watermarks only move forward.
TEST_F(GraphMpi, StatsBesideAnMpirunIngestReadsOneGlobalWatermarkWholeEachRun) {
  ok(plain({"generate", "--scale", "12", "--edge-factor", "8", "--seed", "3", "--output", input_, "-q"}));
  const std::string d = dir_ / "live", log = dir_ / "ingest-log";
  const pid_t ingest = spawn_mpi(2, PHEAP_GRAPH_TOOL, ingest_args(d, {"--batch-size", "100", "--flush-every", "200"}), log);
  ASSERT_TRUE(wait_until([&] {  // a few watermarks with edges in them
    try {
      return pheap::mpi::read_manifest(d).epoch >= 4;
    } catch (const pheap::error&) {
      return false;  // not created yet
    }
  }, "the ingest's first flushes")) << slurp(log);
  std::set<std::uint64_t> seen;
  std::uint64_t last = 0;
  int ingest_status = -1, runs = 0;
  while (ingest_status < 0) {
    int st = 0;
    if (::waitpid(ingest, &st, WNOHANG) == ingest) ingest_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    const auto r = plain({"stats", "--json", "--datastore", d});
    ASSERT_EQ(r.status, 0) << r.output;
    const json j = parse(r);
    ++runs;
    const std::uint64_t w = j["watermark"].get<std::uint64_t>();
    EXPECT_GE(w, last) << r.output;
    last = w;
    seen.insert(w);
    EXPECT_EQ(j["edges"], j["ingestion"]["total_edges"]) << "run " << runs << ": " << r.output;
  }
  EXPECT_EQ(ingest_status, 0) << slurp(log);
  std::printf("%d stats runs beside the ingest saw %zu global watermarks\n", runs, seen.size());
  EXPECT_GE(seen.size(), 3u) << runs << " runs";
  const json done = parse(plain({"stats", "--json", "--datastore", d}));
  EXPECT_EQ(done["edges"], 32768) << done;
}

// stats --follow on a distributed datastore: one line per global watermark it reaches while
// the mpirun ingest flushes, each line every rank at that G (edges = the ingestion record's
// total), until the job's last watermark; SIGTERM ends it with exit 0.
TEST_F(GraphMpi, StatsFollowBesideAnMpirunIngestPrintsOneWholeGlobalWatermarkPerLineUntilTheLast) {
  ok(plain({"generate", "--scale", "12", "--edge-factor", "8", "--seed", "3", "--output", input_, "-q"}));
  const std::string d = dir_ / "live", log = dir_ / "ingest-log", flog = dir_ / "follow-log";
  const pid_t ingest = spawn_mpi(2, PHEAP_GRAPH_TOOL, ingest_args(d, {"--batch-size", "100", "--flush-every", "200"}), log);
  ASSERT_TRUE(wait_until([&] {
    try {
      return pheap::mpi::read_manifest(d).epoch >= 2;
    } catch (const pheap::error&) {
      return false;  // not created yet
    }
  }, "the ingest's first flush")) << slurp(log);
  const pid_t follow = spawn_program({PHEAP_GRAPH_TOOL, "stats", "--follow", "--json", "--datastore", d}, flog);
  EXPECT_EQ(wait_status(ingest), 0) << slurp(log);
  const std::uint64_t last = pheap::mpi::read_manifest(d).epoch;
  const auto lines = [&] {
    std::vector<json> out;
    std::istringstream in(slurp(flog));
    for (std::string l; std::getline(in, l);) {
      if (!l.empty() && l.front() == '{') out.push_back(json::parse(l));
    }
    return out;
  };
  EXPECT_TRUE(wait_until([&] {
    const auto ls = lines();
    return !ls.empty() && ls.back()["watermark"].get<std::uint64_t>() == last;
  }, "the follower's line for the job's last watermark")) << slurp(flog);
  ::kill(follow, SIGTERM);
  EXPECT_EQ(wait_status(follow), 0) << slurp(flog);
  const auto ls = lines();
  ASSERT_FALSE(ls.empty()) << slurp(flog);
  std::uint64_t prev = 0;
  for (const json& j : ls) {
    const std::uint64_t w = j["watermark"].get<std::uint64_t>();
    EXPECT_GT(w, prev) << "one line per new global watermark: " << j;
    prev = w;
    EXPECT_EQ(j["edges"], j["ingestion"]["total_edges"]) << "every rank at watermark " << w << ": " << j;
  }
  EXPECT_EQ(ls.back()["edges"], 32768) << ls.back();
  std::printf("stats --follow printed %zu lines for global watermarks up to %llu\n", ls.size(),
              static_cast<unsigned long long>(last));
  EXPECT_GE(ls.size(), 3u) << slurp(flog);
}

TEST_F(GraphMpi, RerunWithAnotherRankCountIsAClearError) {
  const std::string d = dir_ / "d";
  ok(mpi(2, ingest_args(d, {"--batch-size", "1000", "--flush-every", "1000"})));
  const auto r = mpi(3, ingest_args(d, {"--batch-size", "1000", "--flush-every", "1000"}));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("created with 2 ranks, opened by a job of 3"), std::string::npos) << r.output;
  const auto p = plain(ingest_args(d, {}));
  EXPECT_EQ(p.status, 2) << p.output;
  EXPECT_NE(p.output.find("is a distributed datastore: ingest into it under mpirun"), std::string::npos) << p.output;
}

TEST_F(GraphMpi, MpirunIngestOfASingleProcessDatastoreOrOfCompressedInputIsAClearError) {
  const std::string d = dir_ / "plain";
  ok(plain(ingest_args(d, {})));
  const auto before = edges(d);
  const auto r = mpi(2, ingest_args(d, {"--reingest"}));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("is not a distributed datastore (it has no pheap.manifest)"), std::string::npos) << r.output;
  EXPECT_EQ(edges(d), before);
  // One rank ingests a single-process datastore as the plain tool does.
  ok(mpi(1, ingest_args(d, {"--reingest"})));
  EXPECT_EQ(edges(d).size(), 2 * before.size());
  // gzip cannot be split into byte ranges.
  ASSERT_EQ(std::system(("gzip -k " + input_).c_str()), 0);
  input_ += ".gz";
  const auto z = mpi(2, ingest_args(dir_ / "z", {}));
  EXPECT_NE(z.status, 0);
  EXPECT_NE(z.output.find("is compressed: with several ranks"), std::string::npos) << z.output;
}

TEST_F(GraphMpi, MalformedLineOnOneRankCommitsWhatPrecedesItOnEveryRankAndSkipResumes) {
  // A bad line near the end: it falls in the last rank's range.
  std::string text = slurp(input_);
  const auto cut = text.rfind('\n', text.size() - 2 - text.size() / 8);
  text.insert(cut + 1, "1 two\n");
  { std::ofstream(input_) << text; }
  const std::string d = dir_ / "d";
  const std::vector<std::string> flags = {"--batch-size", "200", "--flush-every", "400"};
  const auto r = mpi(3, ingest_args(d, flags));
  EXPECT_EQ(r.status, 3) << r.output;
  EXPECT_NE(r.output.find("bad destination id 'two'"), std::string::npos) << r.output;
  const auto prefix = edges(d);
  EXPECT_GT(prefix.size(), 0u);
  EXPECT_LT(prefix.size(), 8192u);
  auto skip = flags;
  skip.push_back("--skip-bad-lines");
  ok(mpi(3, ingest_args(d, skip)));
  auto want_flags = flags;
  want_flags.push_back("--skip-bad-lines");
  EXPECT_EQ(edges(d), reference(want_flags));
}

// Exactly-once means the same input. A job stopped part-way (by a malformed line near the end)
// is rerun over an input of the same path and size whose bytes changed inside the part rank 1
// had consumed: every rank refuses (exit 2), the message names the input and rank 1, and the
// graph keeps what the job committed. With the input as it was, the rerun finishes the job.
TEST_F(GraphMpi, AnInputChangedInsideTheConsumedPartOfOneRankIsRefusedAtResumeOnEveryRank) {
  std::string text = slurp(input_);
  text.insert(text.rfind('\n', text.size() - 2 - text.size() / 8) + 1, "1 two\n");
  { std::ofstream(input_) << text; }
  const std::string d = dir_ / "d";
  const std::vector<std::string> flags = {"--batch-size", "200", "--flush-every", "400", "--skip-bad-lines"};
  const std::vector<std::string> strict(flags.begin(), flags.end() - 1);
  ASSERT_EQ(mpi(3, ingest_args(d, strict)).status, 3);
  const auto committed = edges(d);
  ASSERT_GT(committed.size(), 0u);
  // Rank 1's part starts just after the first newline at or after a third of the input; swap
  // the two ids of a line a few lines into it (same size, other bytes).
  std::string changed = text;
  std::size_t at = changed.find('\n', changed.size() / 3 - 1) + 1;
  for (int skip = 0; skip < 3; ++skip) at = changed.find('\n', at) + 1;
  for (;; at = changed.find('\n', at) + 1) {
    const std::size_t sp = changed.find(' ', at), nl = changed.find('\n', at);
    const std::string a = changed.substr(at, sp - at), b = changed.substr(sp + 1, nl - sp - 1);
    if (a == b) continue;
    changed.replace(at, nl - at, b + " " + a);
    break;
  }
  ASSERT_EQ(changed.size(), text.size());
  { std::ofstream(input_) << changed; }
  const auto refused = mpi(3, ingest_args(d, flags));
  EXPECT_EQ(refused.status, 2) << refused.output;
  EXPECT_NE(refused.output.find("changed since its last watermark"), std::string::npos) << refused.output;
  EXPECT_NE(refused.output.find("(the part rank 1 reads)"), std::string::npos) << refused.output;
  EXPECT_EQ(edges(d), committed);
  { std::ofstream(input_) << text; }
  ok(mpi(3, ingest_args(d, flags)));
  EXPECT_EQ(edges(d), reference(flags));
}

// Kills of one rank: at random times (from outside, SIGKILL to its pid) and at each named
// step of the collective flush (the step hook, in pheap-graph-crashable), under 2, 3 and 4
// ranks. After each kill the job has ended (mpirun ends the others); the next run of the same
// command resumes at the global watermark. The finished graph equals the reference edge for
// edge: no edge lost, none twice.
TEST_F(GraphMpi, KillsOfOneRankDuringIngestAndInsideTheFlushResumeExactlyOnce) {
  const std::vector<std::string> flags = {"--batch-size", "40", "--flush-every", "80"};
  const auto want = reference(flags);
  std::mt19937 rng(0x18);
  const char* steps[] = {"begin", "prepared", "committed", "confirmed"};
  int kills = 0, finished_early = 0;
  const int kills_per_np = sanitized_or(18, 11);
  for (int np : {2, 3, 4}) {
    const std::string d = dir_ / ("k" + std::to_string(np)), pids = dir_ / ("pids" + std::to_string(np));
    std::filesystem::create_directories(pids);
    auto epoch_now = [&] { return std::filesystem::exists(d) ? pheap::mpi::read_manifest(d).epoch : 2; };
    auto job_done = [&](int status, const std::string& log) {
      // The run finished before the kill: check it, then start again from nothing.
      EXPECT_EQ(status, 0) << log;
      EXPECT_EQ(edges(d), want) << np << " ranks";
      std::filesystem::remove_all(d);
      ++finished_early;
    };
    // At each step of the flush, on rank 0 and on the last rank.
    for (const char* step : steps) {
      for (int victim : {0, np - 1}) {
        const std::uint64_t at = epoch_now() + 1 + rng() % 3;
        const auto r = mpi(np, ingest_args(d, flags),
                           {{"PHEAP_TEST_MPI_CRASH", std::string(step) + ":" + std::to_string(victim) + ":" + std::to_string(at)}},
                           PHEAP_GRAPH_CRASHABLE);
        if (r.status == 0) {
          job_done(r.status, r.output);
          continue;
        }
        ++kills;
        const std::uint64_t now = epoch_now();
        const bool after_commit = std::string(step) == "committed" || std::string(step) == "confirmed";
        EXPECT_EQ(now, after_commit ? at : at - 1) << step << " on rank " << victim << "\n" << r.output;
      }
    }
    // At random times, from outside, until this rank count has had 18 kills (11 under a
    // sanitizer, where each mpirun of instrumented ranks takes seconds to start).
    for (int k = 0; kills < kills_per_np * (np - 1) && k < 30; ++k) {
      clear_pids(pids);
      const int victim = static_cast<int>(rng() % static_cast<unsigned>(np));
      const std::string log = dir_ / ("klog-" + std::to_string(np) + "-" + std::to_string(k));
      const pid_t mpirun = spawn_mpi(np, PHEAP_GRAPH_CRASHABLE, ingest_args(d, flags), log,
                                     {{"PHEAP_TEST_MPI_PIDS", pids}, {"PHEAP_TEST_MPI_FLUSH_PAUSE_US", "4000"}});
      if (!kill_rank_after(pids, victim, std::chrono::milliseconds(50 + rng() % 400))) {
        job_done(wait_status(mpirun), slurp(log));
        continue;
      }
      ++kills;
      EXPECT_NE(wait_status(mpirun), 0) << slurp(log);
    }
    // The rerun finishes the job: the reference, edge for edge.
    ok(mpi(np, ingest_args(d, flags)));
    EXPECT_EQ(edges(d), want) << np << " ranks";
    const json st = parse(plain({"stats", "--json", "--datastore", d}));
    EXPECT_TRUE(st["ingestion"]["unfinished"].is_null()) << st.dump();
  }
  std::printf("%d kills, %d runs finished before their kill\n", kills, finished_early);
  EXPECT_GE(kills, 3 * kills_per_np - 4) << finished_early << " runs finished before their kill";
}

}  // namespace
}  // namespace pheap::test
