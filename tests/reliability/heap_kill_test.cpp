// Mixed heap workload kill campaign. A real child (rel_heap_child mix) runs the workload of
// heap_mix_workload.hpp — a vector growing and shrinking, a map of small and large strings,
// named arrays of 16 B .. 512 KiB created and destroyed — on a 512 KiB pager buffer (the
// working set is several MiB: eviction runs all the time), with a flush() after every step;
// each returned flush is acknowledged on a pipe with the step number and the digest of the
// DRAM reference. SIGKILL lands
//   * 2 in 10: within 30 ms of the start (creation of a new datastore, open, recovery of the
//     previous kill's state, rebuilding of the reference),
//   * 4 in 10: 0..2 ms after a "flushing S" line (inside flush S),
//   * 4 in 10: 0..20 ms after the k-th acknowledgement (anywhere in the steps).
// After each kill the datastore is opened read-only: it must hold exactly step W or W+1
// (W = last acknowledged step), with the digest of the reference rebuilt from the seed for
// that step, and manager::check() must find it sound (every 4th kill also `pheap check`).
// The same datastore is reused across kills (each victim recovers the previous crash); every
// 25 kills a new datastore with a new seed starts, so creation is killed too.
//
// CI size: 200 kills (about 15 s); PHEAP_LONG=1: 2000 kills.
#include <poll.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "common/test_util.hpp"
#include "reliability/heap_mix_workload.hpp"
#include "reliability/reliability_util.hpp"

namespace pheap::test {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kVictimBuffer = 512u << 10;

// Reads complete lines from a child's stdout with a timeout (a hung child is a failure, not a
// hung test).
class line_reader {
 public:
  explicit line_reader(int fd) : fd_(fd) {}
  // nullopt on EOF; throws on timeout.
  std::optional<std::string> next(int timeout_ms = 120000) {
    for (;;) {
      const auto nl = buf_.find('\n');
      if (nl != std::string::npos) {
        std::string line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return line;
      }
      pollfd p{fd_, POLLIN, 0};
      const int r = ::poll(&p, 1, timeout_ms);
      if (r == 0) throw std::runtime_error("victim printed nothing for " + std::to_string(timeout_ms) + " ms");
      if (r < 0) {
        if (errno == EINTR) continue;
        throw std::runtime_error("poll failed");
      }
      char tmp[4096];
      const ssize_t n = ::read(fd_, tmp, sizeof tmp);
      if (n <= 0) return std::nullopt;
      buf_.append(tmp, static_cast<std::size_t>(n));
    }
  }

 private:
  int fd_;
  std::string buf_;
};

TEST(HeapMixKill, Kill9AtRandomMomentsLeavesTheLastAcknowledgedStepOrTheNextAndASoundHeap) {
  {
    temp_dir probe_dir;
    try {
      manager probe(create_only, probe_dir / "probe", mix::heap_options(kVictimBuffer));
    } catch (const error& e) {
      if (e.code() == errc::unavailable) PHEAP_REQUIRE_FEATURE(std::string("userfaultfd pager: ") + e.what());
      throw;
    }
  }
  scenario_timer timer;
  scratch_dir work;
  const std::string ds = work / "h";
  const std::string bin = sibling_binary("rel_heap_child");
  const std::uint64_t target_kills = long_mode() ? 2000 : 200;
  std::mt19937_64 rng(std::random_device{}());

  std::uint64_t kills = 0, failures = 0, lost = 0, clean_exits = 0, flush_kills = 0,
                early_kills = 0, jobs = 0, max_step = 0, tool_checks = 0;
  std::uint64_t seed = 0;
  mix::model ref;
  std::vector<std::uint64_t> digests;
  std::int64_t W = -1;  // last acknowledged step of the current job; -1: none yet
  auto new_job = [&] {
    std::error_code ec;
    fs::remove_all(ds, ec);
    seed = rng();
    ref = mix::model{};
    digests = {ref.digest()};
    W = -1;
    ++jobs;
  };
  auto digest_at = [&](std::uint64_t s) {
    while (digests.size() <= s) {
      ref.next_step(seed);
      digests.push_back(ref.digest());
    }
    return digests[s];
  };
  auto fail = [&](const std::string& ctx, const std::string& what, bool data_lost) {
    ++failures;
    if (data_lost) ++lost;
    ADD_FAILURE() << ctx << " (seed " << seed << ", W " << W << "): " << what;
  };
  // Handles one line of the victim; returns the kind ("flushing", "ack", ...).
  auto on_line = [&](const std::string& line, const std::string& ctx) {
    unsigned long long s = 0, d = 0, e = 0;
    if (std::sscanf(line.c_str(), "ack %llu %llu %llu", &s, &d, &e) == 3) {
      if (d != digest_at(s)) fail(ctx, "victim's reference digest of step " + std::to_string(s) + " differs", false);
      if (static_cast<std::int64_t>(s) < W) fail(ctx, "acknowledged step went back to " + std::to_string(s), true);
      W = static_cast<std::int64_t>(s);
      max_step = std::max<std::uint64_t>(max_step, s);
      return std::string("ack");
    }
    return line.substr(0, line.find(' '));
  };

  // Opens the datastore read-only and checks it against the reference; "" when sound.
  auto verify = [&](const std::string& ctx) {
    if (!fs::exists(ds)) {
      if (W >= 0) fail(ctx, "datastore vanished", true);
      return;
    }
    try {
      manager m(open_read_only, ds, mix::heap_options(16u << 20));
      const auto objs = mix::find_objects(m);
      if (objs.step == nullptr) {
        // Created, workload not initialised: only before the first acknowledgement.
        if (W >= 0) fail(ctx, "heap holds no workload after step " + std::to_string(W) + " was acknowledged", true);
      } else {
        const std::uint64_t s = *objs.step;
        if (static_cast<std::int64_t>(s) < W || static_cast<std::int64_t>(s) > W + 1) {
          fail(ctx, "heap holds step " + std::to_string(s), static_cast<std::int64_t>(s) < W);
        } else {
          std::string problem;
          const std::uint64_t d = mix::heap_digest(m, problem);
          if (!problem.empty()) {
            fail(ctx, "step " + std::to_string(s) + ": " + problem, false);
          } else if (d != digest_at(s)) {
            fail(ctx, "step " + std::to_string(s) + ": content differs from the reference", false);
          }
        }
      }
      const auto problems = m.check();
      if (!problems.empty()) fail(ctx, "manager::check(): " + problems.front(), false);
    } catch (const error& e) {
      if (W < 0 && (e.code() == errc::not_a_datastore || e.code() == errc::not_found)) {
        // Killed while creating: nothing was acknowledged. Start the datastore again.
        std::error_code ec;
        fs::remove_all(ds, ec);
        return;
      }
      fail(ctx, std::string("open read-only: ") + to_string(e.code()) + ": " + e.what(), W >= 0);
      return;
    }
#ifdef PHEAP_TOOL_BIN
    if (kills % 4 == 0) {
      ++tool_checks;
      const auto c = run_child({PHEAP_TOOL_BIN, "check", ds});
      if (!c.exited(0)) fail(ctx, "pheap check: " + c.describe() + " " + c.out, false);
    }
#endif
  };

  new_job();
  while (kills < target_kills && failures < 3) {
    if (kills > 0 && kills % 25 == 0 && W >= 0) new_job();
    const unsigned mode = static_cast<unsigned>(rng() % 10);
    const std::string ctx = "kill " + std::to_string(kills + 1) +
                            (mode < 2 ? " (early)" : mode < 6 ? " (in flush)" : " (anywhere)");
    child_process c({bin, "mix", ds, std::to_string(seed), "1000000", std::to_string(kVictimBuffer)});
    line_reader lines(c.stdout_fd());
    bool eof = false;
    try {
      if (mode < 2) {
        std::this_thread::sleep_for(std::chrono::microseconds(rng() % 30000));
      } else {
        const std::string want = mode < 6 ? "flushing" : "ack";
        std::uint64_t k = 1 + rng() % (mode < 6 ? 4 : 8);
        while (k > 0) {
          const auto l = lines.next();
          if (!l) {
            eof = true;
            break;
          }
          if (on_line(*l, ctx) == want) --k;
        }
        if (!eof) {
          std::this_thread::sleep_for(std::chrono::microseconds(rng() % (mode < 6 ? 2000 : 20000)));
        }
      }
    } catch (const std::exception& e) {
      fail(ctx, e.what(), false);
    }
    c.kill9();
    // The rest of its output (acknowledgements printed before the kill landed).
    for (std::optional<std::string> l; (l = lines.next());) on_line(*l, ctx);
    const auto r = c.wait();
    if (r.exited(0)) {
      ++clean_exits;
    } else if (!r.killed()) {
      fail(ctx, "victim failed by itself: " + r.describe(), false);
    } else {
      ++kills;
      if (mode < 2) ++early_kills;
      if (mode >= 2 && mode < 6) ++flush_kills;
    }
    verify(ctx);
  }
  if (HasFailure() && failures == 0) ++failures;
  std::printf("%llu kills (%llu early, %llu in flush), %llu jobs, highest step %llu, %llu clean exits, "
              "%llu pheap check runs\n",
              static_cast<unsigned long long>(kills), static_cast<unsigned long long>(early_kills),
              static_cast<unsigned long long>(flush_kills), static_cast<unsigned long long>(jobs),
              static_cast<unsigned long long>(max_step), static_cast<unsigned long long>(clean_exits),
              static_cast<unsigned long long>(tool_checks));
  EXPECT_GE(kills, target_kills);
  EXPECT_EQ(lost, 0u);
  print_result("heap_mix_kill9", kills, failures, lost, timer.seconds());
}

}  // namespace
}  // namespace pheap::test
