// Graph ingestion kill campaign: `pheap-graph ingest --flush-every` (small batches, a 2 MiB
// buffer so the pager evicts all the time) is killed with SIGKILL at random moments — mostly
// anywhere in the run, one in five within its first milliseconds (creation, open, recovery) —
// and after every fourth kill the rerun is killed again during its own open and recovery.
// After each kill: `pheap check` passes, and the graph holds exactly the first N edges of the
// input, N being the committed count its persistent ingestion state reports (exactly-once:
// no edge lost, none duplicated) — and N never goes back (no acknowledged watermark lost).
// Each job is rerun until it completes, then it must equal the input exactly.
//
// CI size: 60 kills (well under a minute); PHEAP_LONG=1: 2000 kills.
//
// Changed inputs: an ingestion killed right after its first watermark, then its input changed
// — shuffled (same size), one byte changed before the committed position, one changed after
// it, truncated, or left alone — and the same command rerun. A change of the bytes the
// watermark consumed must be refused (exit 2 naming the input, the graph as it was, `pheap
// check` clean); a change the resume does not read again, or none, must resume to the graph of
// the input as it is now, exactly. CI size: 15 (3 of each); PHEAP_LONG=1: 100.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <thread>

#include <gtest/gtest.h>

#include "common/test_util.hpp"
#include "pheap/pheap.hpp"
#include "reliability/graph_util.hpp"
#include "reliability/reliability_util.hpp"

namespace pheap::test {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kIngestOpts{"--buffer-size", "2M", "--flush-every", "2000"};

TEST(GraphIngestKill, Kill9AtRandomMomentsNeverLosesNorDuplicatesACommittedEdge) {
  scenario_timer timer;
  const graph_tools tools;
  scratch_dir work;
  const std::string input = work / "edges.txt";
  tools.generate(input, 12, 8, 4242);
  const edge_list all = read_edges(input);
  ASSERT_EQ(all.size(), 32768u);

  // An uninterrupted run: the reference result and the time scale of the kills.
  const auto t0 = std::chrono::steady_clock::now();
  {
    const auto r = tools.ingest(work / "ref", input, kIngestOpts);
    ASSERT_TRUE(r.exited(0)) << r.describe();
    ASSERT_EQ(tools.exported_edges(work / "ref"), sorted_prefix(all, all.size()));
    ASSERT_EQ(tools.committed_edges(work / "ref"), all.size());
  }
  const auto full_us = std::max<std::int64_t>(
      20000, std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count());

  const std::uint64_t target_kills = long_mode() ? 2000 : 60;
  std::mt19937_64 rng(std::random_device{}());
  std::uint64_t kills = 0, failures = 0, lost = 0, jobs_completed = 0, recovery_kills = 0;
  std::uint64_t prev = 0;
  const std::string ds = work / "g";

  // Verifies the datastore after a kill; returns false (and records) on a broken promise.
  auto verify = [&](const std::string& ctx) {
    std::string problem;
    std::uint64_t n = 0;
    try {
      if (fs::exists(ds)) {
        const auto c = tools.check(ds);
        if (!c.exited(0)) problem = "pheap check: " + c.describe() + " " + c.out;
      }
      n = tools.committed_edges(ds);
      if (problem.empty()) {
        if (auto d = diff_edges(tools.exported_edges(ds), sorted_prefix(all, n)); !d.empty()) {
          problem = "graph differs from the first " + std::to_string(n) + " input edges: " + d;
        }
      }
    } catch (const std::exception& e) {
      problem = e.what();
    }
    if (problem.empty() && n < prev) {
      ++lost;
      problem = "committed edges went back from " + std::to_string(prev) + " to " + std::to_string(n);
    }
    if (!problem.empty()) {
      ++failures;
      ADD_FAILURE() << ctx << ": " << problem;
      return false;
    }
    prev = n;
    return true;
  };

  while (kills < target_kills && failures < 3) {
    // One in five kills lands within the first 30 ms: creation, open, recovery.
    // Otherwise anywhere in what is left of the job (a rerun resumes: it has less to do).
    const double left = 1.0 - static_cast<double>(prev) / static_cast<double>(all.size());
    const auto span = static_cast<std::uint64_t>(30000 + static_cast<double>(full_us) * left * 1.1);
    const std::int64_t delay_us = rng() % 5 == 0 ? static_cast<std::int64_t>(rng() % 30000)
                                                 : static_cast<std::int64_t>(rng() % span);
    child_process c(tools.ingest_argv(ds, input, kIngestOpts));
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
    c.kill9();
    const auto r = c.wait();
    if (r.exited(0)) {
      // Finished before the kill: exact equality, then a new job.
      ++jobs_completed;
      if (verify("completed job") && prev != all.size()) {
        ++failures;
        ADD_FAILURE() << "completed job holds " << prev << " of " << all.size() << " edges";
      }
      fs::remove_all(ds);
      prev = 0;
      continue;
    }
    if (!r.killed()) {
      ++failures;
      ADD_FAILURE() << "ingest failed by itself: " << r.describe();
      continue;
    }
    ++kills;
    if (!verify("kill " + std::to_string(kills) + " after " + std::to_string(delay_us) + " us")) continue;
    if (kills % 4 == 0 && fs::exists(ds)) {
      // A second kill while the rerun opens and recovers the datastore.
      child_process again(tools.ingest_argv(ds, input, kIngestOpts));
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 15000));
      again.kill9();
      const auto r2 = again.wait();
      if (r2.killed()) {
        ++kills;
        ++recovery_kills;
        verify("kill during the rerun's recovery");
      } else if (!r2.exited(0)) {
        ++failures;
        ADD_FAILURE() << "rerun failed by itself: " << r2.describe();
      }
    }
  }
  // Finish the current job: the rerun completes and the graph equals the input exactly.
  const auto fin = tools.ingest(ds, input, kIngestOpts);
  EXPECT_TRUE(fin.exited(0)) << fin.describe();
  if (fin.exited(0)) {
    ++jobs_completed;
    EXPECT_EQ(tools.committed_edges(ds), all.size());
    EXPECT_EQ(diff_edges(tools.exported_edges(ds), sorted_prefix(all, all.size())), "");
    const auto c = tools.check(ds);
    EXPECT_TRUE(c.exited(0)) << c.describe();
  }
  if (HasFailure() && failures == 0) ++failures;
  std::printf("%llu kills (%llu during recovery), %llu jobs completed, run time %lld us\n",
              static_cast<unsigned long long>(kills), static_cast<unsigned long long>(recovery_kills),
              static_cast<unsigned long long>(jobs_completed), static_cast<long long>(full_us));
  EXPECT_GE(kills, target_kills);
  print_result("graph_ingest_kill9", kills, failures, lost, timer.seconds());
}

// The epoch of the last watermark of `ds` (its superblock, also while a writer holds it); 0
// before it exists.
std::uint64_t epoch_of(const std::string& ds) {
  try {
    return pheap::manager::peek(ds).epoch;
  } catch (const pheap::error&) {
    return 0;
  }
}

std::string slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

TEST(GraphIngestKill, AnInputChangedAfterAKillIsRefusedOrResumedExactlyWhenWhatWasReadIsUnchanged) {
  scenario_timer timer;
  const graph_tools tools;
  scratch_dir work;
  const std::string input = work / "edges.txt";
  tools.generate(input, 12, 8, 777);
  const std::string original = slurp(input);
  // The epoch a new graph datastore has before its first batch: an empty ingestion ends there.
  std::ofstream(work / "empty.txt").close();
  ASSERT_TRUE(tools.ingest(work / "empty", work / "empty.txt", kIngestOpts).exited(0));
  const std::uint64_t created = epoch_of(work / "empty");
  const std::regex offset_re("\"byte_offset\": ([0-9]+)");
  enum change { shuffled, byte_before, byte_after, truncated, unchanged };
  const char* names[] = {"shuffled", "a byte before the position", "a byte after the position",
                         "truncated", "unchanged"};
  const std::uint64_t rounds = long_mode() ? 100 : 15;
  std::mt19937_64 rng(0xC4A96E);
  std::uint64_t done = 0, failures = 0, lost = 0, not_interrupted = 0;
  while (done < rounds && failures < 3) {
    ASSERT_LT(not_interrupted, 20u) << "the ingestion keeps finishing before its first watermark is seen";
    const change kind = static_cast<change>(done % 5);
    const std::string ds = work / ("ds" + std::to_string(done));
    std::ofstream(input, std::ios::binary) << original;
    {
      child_process c(tools.ingest_argv(ds, input, kIngestOpts));
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
      while (epoch_of(ds) <= created && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      c.kill9();
      c.wait();
    }
    const auto st = run_child({tools.graph, "stats", "--json", "--datastore", ds});
    std::smatch m;
    if (!st.exited(0) || !std::regex_search(st.out, m, offset_re)) {  // finished first
      ++not_interrupted;
      fs::remove_all(ds);
      continue;
    }
    const std::uint64_t at = std::stoull(m[1]);
    const edge_list before = tools.exported_edges(ds);
    std::string now = original;
    auto digit_in = [&](std::uint64_t lo, std::uint64_t hi) {
      for (;;) {
        const std::uint64_t p = lo + rng() % (hi - lo);
        if (now[p] >= '0' && now[p] <= '9') return p;
      }
    };
    switch (kind) {
      case shuffled: {
        std::vector<std::string> lines;
        std::istringstream in(original);
        for (std::string l; std::getline(in, l);) lines.push_back(l + "\n");
        std::shuffle(lines.begin(), lines.end(), rng);
        now.clear();
        for (const auto& l : lines) now += l;
        break;
      }
      case byte_before: {
        const std::uint64_t p = digit_in(0, at);
        now[p] = static_cast<char>('0' + (now[p] - '0' + 1) % 10);
        break;
      }
      case byte_after: {
        const std::uint64_t p = digit_in(at, now.size());
        now[p] = static_cast<char>('0' + (now[p] - '0' + 1) % 10);
        break;
      }
      case truncated: now.resize(at / 2); break;
      case unchanged: break;
    }
    std::ofstream(input, std::ios::binary | std::ios::trunc) << now;
    const auto r = tools.ingest(ds, input, kIngestOpts);
    const std::string ctx = std::string(names[kind]) + " at byte " + std::to_string(at);
    std::string problem;
    if (kind == byte_after || kind == unchanged) {
      auto want = parse_edges(now);
      std::sort(want.begin(), want.end());
      if (!r.exited(0)) {
        problem = "the resume was refused: " + r.describe();
      } else if (auto d = diff_edges(tools.exported_edges(ds), want); !d.empty()) {
        ++lost;
        problem = "the resumed graph is not the input's: " + d;
      }
    } else {
      const std::string says = kind == truncated ? "unfinished ingestion of different inputs"
                                                 : "changed since its last watermark";
      if (!r.exited(2) || r.err.find(says) == std::string::npos || r.err.find(input) == std::string::npos) {
        problem = "not refused as a change of the input (" + says + "): " + r.describe();
      }
      if (tools.exported_edges(ds) != before) {
        ++lost;
        problem += "; the refused resume changed the graph";
      }
      if (const auto c = tools.check(ds); !c.exited(0)) problem += "; pheap check: " + c.describe();
    }
    if (!problem.empty()) {
      ++failures;
      ADD_FAILURE() << ctx << ": " << problem;
    }
    fs::remove_all(ds);
    ++done;
  }
  std::printf("%llu changed-input rounds (%llu runs finished before their kill and were redone)\n",
              static_cast<unsigned long long>(done), static_cast<unsigned long long>(not_interrupted));
  print_result("graph_ingest_changed_input", done, failures, lost, timer.seconds());
}

}  // namespace
}  // namespace pheap::test
