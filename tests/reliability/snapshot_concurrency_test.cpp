// Snapshots while writers run (label `concurrency`: the TSan stage runs it; the ASan+UBSan
// stage runs it too). Writer threads construct and destroy named records holding containers,
// overwrite cells in place and churn raw allocations; a flusher thread flushes; snapshot
// threads call snapshot() repeatedly and verify each snapshot they took *while the writers keep
// running* (a second heap open in the same process). The acknowledgement protocol is the one of
// snapshot_workload.hpp: every flush/snapshot files the window (what each writer had finished
// before the call, what it had started when the call returned) of the epoch it produced, and
// a snapshot must hold exactly one state inside the window of its epoch, pass
// manager::check(), and stay independent of the source.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <thread>
#include <vector>

#include "common/test_util.hpp"
#include "reliability/reliability_util.hpp"
#include "reliability/snapshot_workload.hpp"

namespace pheap::test {
namespace {

namespace fs = std::filesystem;
using namespace pheap::test::snap;

bool sanitized() {
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  return true;
#else
  return false;
#endif
}

options concurrency_options() {
  options o;
  o.capacity = 256ull << 20;
  o.page_size = 16 << 10;          // many pages: eviction, flush and snapshot all overlap
  o.segment_size = 8ull << 20;
  o.chunk_size = 256 << 10;
  o.pager.buffer_size = 6ull << 20;  // smaller than the working set: constant eviction
  return o;
}

// Skips outside CI (fails in CI) when the pager cannot run here.
std::string pager_unavailable(const std::string& dir) {
  try {
    manager probe(create_only, dir + "/probe", concurrency_options());
  } catch (const error& e) {
    if (e.code() == errc::unavailable) return e.what();
    throw;
  }
  manager::remove(dir + "/probe");
  return {};
}

struct snapshot_outcome {
  std::uint64_t verified = 0, failures = 0, lost = 0;
};
// Diagnostics: snapshots holding a later watermark than snapshot() returned, and the widths
// of the windows they were checked against (sum over writers of hi - lo).
std::atomic<std::uint64_t> g_later{0}, g_width_sum{0}, g_width_max{0}, g_controls{0};

// Opens `path` read-only and checks it against the window of its epoch. `returned` is what
// snapshot() returned (the snapshot may hold a later watermark, never an earlier one).
std::string verify_snapshot(workload& w, const std::string& path, std::uint64_t returned,
                            std::uint64_t bound, bool* lost) {
  manager s(open_read_only, path);
  const std::uint64_t e = s.epoch();
  if (e < returned) {
    *lost = true;
    return path + " holds epoch " + std::to_string(e) + " < " + std::to_string(returned) + " returned by snapshot()";
  }
  if (e > bound) return path + " holds epoch " + std::to_string(e) + ", newer than any flush when it returned";
  const auto win = w.window_of(e);
  if (!win) return path + ": no flush produced epoch " + std::to_string(e);
  std::uint64_t width = 0;
  for (std::size_t t = 0; t < win->lo.size(); ++t) width += win->hi[t] - win->lo[t];
  g_width_sum += width;
  for (auto m = g_width_max.load(); width > m && !g_width_max.compare_exchange_weak(m, width);) {}
  if (e > returned) ++g_later;
  if (auto d = verify_state(s, w.config(), *win, w.base_version(), {}, lost); !d.empty()) {
    return path + " (epoch " + std::to_string(e) + "): " + d;
  }
  if (auto p = s.check(); !p.empty()) return path + ": check(): " + p.front();
  // Negative control: against the window of an older epoch that some writer had certainly
  // left behind (its hi below this window's lo), the same snapshot must be rejected — the
  // checker is not vacuous.
  for (std::uint64_t older = e; older-- > 1 && e - older <= 64;) {
    const auto ow = w.window_of(older, std::chrono::milliseconds(0));
    if (!ow) continue;
    bool disjoint = false;
    for (std::size_t t = 0; t < ow->hi.size(); ++t) disjoint = disjoint || ow->hi[t] < win->lo[t];
    if (!disjoint) continue;
    ++g_controls;
    if (verify_state(s, w.config(), *ow, w.base_version()).empty()) {
      return path + " (epoch " + std::to_string(e) + ") also passes as epoch " + std::to_string(older) +
             ": the check cannot tell watermarks apart";
    }
    break;
  }
  return {};
}

TEST(SnapshotConcurrency, SnapshotsTakenWhileWritersRunHoldOneWatermarkAndStayIndependent) {
  scenario_timer timer;
  scratch_dir dir;
  if (auto why = pager_unavailable(dir.path()); !why.empty()) {
    PHEAP_REQUIRE_FEATURE("userfaultfd pager: " + why);
  }
  const auto run_for = std::chrono::milliseconds(long_mode() ? 30000 : sanitized() ? 2500 : 3000);
  const std::string src = dir / "src";
  workload_config c;
  c.writers = 4;
  c.keep = 6;
  c.cells = 512;
  c.base_arrays = 2;
  c.base_bytes = 512 << 10;
  c.flush_every = 97;
  std::atomic<bool> stop{false};
  snapshot_outcome out;
  std::mutex out_mu;
  std::vector<std::string> errors;
  std::vector<std::pair<std::string, std::uint64_t>> kept;  // verified again at the end
  std::vector<u64> final_steps(c.writers);
  {
    manager m(create_only, src, concurrency_options());
    workload w(m, c);
    w.file_quiescent(w.recorded_flush());
    auto note = [&](const std::string& err, bool lost) {
      std::lock_guard lk(out_mu);
      ++out.verified;
      if (!err.empty()) {
        ++out.failures;
        if (errors.size() < 10) errors.push_back(err);
      }
      if (lost) ++out.lost;
    };
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < c.writers; ++t) threads.emplace_back([&, t] { w.run_writer(t, stop); });
    threads.emplace_back([&] {  // flusher
      try {
        while (!stop.load()) {
          w.recorded_flush();
          std::this_thread::sleep_for(std::chrono::milliseconds(7));
        }
      } catch (const std::exception& e) {
        w.fail(std::string("flusher: ") + e.what());
      }
    });
    for (int k = 0; k < 2; ++k) {
      threads.emplace_back([&, k] {  // snapshotter k: take, verify while writers run, remove
        for (int i = 0; !stop.load(); ++i) {
          const std::string dst = dir / ("snap-" + std::to_string(k) + "-" + std::to_string(i));
          bool lost = false;
          std::string err;
          try {
            const std::uint64_t e = w.recorded_snapshot(dst);
            const std::uint64_t bound = m.epoch();
            err = verify_snapshot(w, dst, e, bound, &lost);
            if (i % 4 == 0) {
              std::lock_guard lk(out_mu);
              kept.emplace_back(dst, e);
            } else {
              manager::remove(dst);
            }
          } catch (const std::exception& ex) {
            err = dst + ": " + ex.what();
          }
          note(err, lost);
        }
      });
    }
    std::this_thread::sleep_for(run_for);
    stop = true;
    for (auto& th : threads) th.join();
    for (const auto& e : w.errors()) ADD_FAILURE() << e;
    EXPECT_TRUE(m.check().empty()) << m.check().front();
    for (unsigned t = 0; t < c.writers; ++t) {
      final_steps[t] = w.steps(t);
      EXPECT_GT(final_steps[t], c.keep) << "writer " << t << " made no progress";
    }

    // Independence, source -> snapshot: the source moves on (its base data is overwritten and
    // flushed, so its segments get new page copies); every kept snapshot must still hold its
    // own watermark.
    const auto before = w.base_version();
    w.rewrite_base(0, 2);
    w.file_quiescent(w.recorded_flush());
    for (const auto& [path, e] : kept) {
      manager s(open_read_only, path);
      const auto win = w.window_of(s.epoch());
      ASSERT_TRUE(win.has_value()) << path;
      bool lost = false;
      EXPECT_EQ(verify_state(s, c, *win, before, {}, &lost), "") << path << " after the source moved on";
    }

    // Independence, snapshot -> source: write into the first kept snapshot (records of writer
    // 0 destroyed, base/1 overwritten, a marker constructed), then the source must not see it.
    ASSERT_FALSE(kept.empty()) << "no snapshot was kept";
    const std::string mod = kept.front().first;
    std::uint64_t mod_epoch = 0;
    window mod_win;
    {
      manager s(open_only, mod);
      mod_epoch = s.epoch();
      mod_win = *w.window_of(mod_epoch);
      for (u64 st = 1; st <= mod_win.hi[0] + 2; ++st) s.destroy<record>(record_name(0, st));
      ASSERT_TRUE(s.destroy<u64>(cells_name(0)));
      write_base(s, c, 1, 3);
      ASSERT_NE(s.construct<u64>("snapshot-mark")[2](7), nullptr);
      s.flush();
      EXPECT_TRUE(s.check().empty());
    }
    {
      manager s(open_read_only, mod);
      auto v = before;
      v[1] = 3;
      EXPECT_EQ(verify_state(s, c, mod_win, v, {true}), "") << "modified snapshot";
      EXPECT_NE(s.find<u64>("snapshot-mark").first, nullptr);
      EXPECT_NE(s.get_uuid(), m.get_uuid()) << "a snapshot must get a new uuid";
    }
    EXPECT_EQ(m.find<u64>("snapshot-mark").first, nullptr) << "a write to the snapshot reached the source";
    {
      auto [p, n] = m.find<u64>(base_name(1));
      ASSERT_NE(p, nullptr);
      EXPECT_EQ(p[0], base_value(1, 0, 1));
    }
  }
  // The source, reopened after its clean close: exactly the writers' final state.
  {
    manager m(open_read_only, src);
    window fin{final_steps, final_steps};
    std::vector<u64> v{2, 1};
    EXPECT_EQ(verify_state(m, c, fin, v), "") << "source after close";
    EXPECT_TRUE(m.check().empty());
  }
  for (const auto& e : errors) ADD_FAILURE() << e;
  EXPECT_GE(out.verified, 4u) << "too few snapshots were taken";
  EXPECT_GE(g_controls.load(), 1u) << "no snapshot could be checked against a wrong watermark";
  std::printf("negative controls (snapshot checked against an older, disjoint window: rejected): %llu\n",
              static_cast<unsigned long long>(g_controls.load()));
  EXPECT_EQ(out.failures, 0u);
  EXPECT_EQ(out.lost, 0u);
  std::printf("snapshots verified: %llu (%llu at a later watermark than returned); window width (sum over "
              "writers of hi - lo) mean %.1f max %llu; writer steps:",
              static_cast<unsigned long long>(out.verified), static_cast<unsigned long long>(g_later.load()),
              out.verified ? double(g_width_sum.load()) / double(out.verified) : 0.0,
              static_cast<unsigned long long>(g_width_max.load()));
  for (auto s : final_steps) std::printf(" %llu", static_cast<unsigned long long>(s));
  std::printf("\n");
  print_result("snapshot_concurrent_writers", out.verified, out.failures + (HasFailure() && out.failures == 0 ? 1 : 0),
               out.lost, timer.seconds());
}

// Two threads snapshot to the same destination at once while writers run: exactly one wins,
// the other gets already_exists, no temporary directory is left behind, and the winner's
// snapshot verifies.
TEST(SnapshotConcurrency, RacingSnapshotsToOneDestinationHaveExactlyOneWinner) {
  scenario_timer timer;
  scratch_dir dir;
  if (auto why = pager_unavailable(dir.path()); !why.empty()) {
    PHEAP_REQUIRE_FEATURE("userfaultfd pager: " + why);
  }
  workload_config c;
  c.writers = 2;
  c.keep = 4;
  c.cells = 128;
  const int rounds = sanitized() ? 6 : 12;
  std::uint64_t failures = 0, lost_n = 0;
  {
    manager m(create_only, dir / "src", concurrency_options());
    workload w(m, c);
    w.file_quiescent(w.recorded_flush());
    std::atomic<bool> stop{false};
    std::vector<std::thread> writers;
    for (unsigned t = 0; t < c.writers; ++t) writers.emplace_back([&, t] { w.run_writer(t, stop); });
    for (int r = 0; r < rounds; ++r) {
      const std::string dst = dir / ("race-" + std::to_string(r));
      std::atomic<int> wins{0}, exists{0};
      std::atomic<std::uint64_t> won_epoch{0};
      std::vector<std::string> other;
      std::mutex mu;
      // The loser's snapshot() flushed before it failed, and its epoch is not returned: the
      // window of the race as a whole (finished before either racer started, started before
      // both returned) covers whichever flush produced the winner's watermark, as no other
      // thread flushes here.
      const auto lo = w.finished();
      const std::uint64_t epoch_before = m.epoch();
      std::vector<std::thread> racers;
      for (int k = 0; k < 2; ++k) {
        racers.emplace_back([&] {
          try {
            won_epoch = w.recorded_snapshot(dst);
            ++wins;
          } catch (const error& e) {
            if (e.code() == errc::already_exists) {
              ++exists;
            } else {
              std::lock_guard lk(mu);
              other.push_back(e.what());
            }
          }
        });
      }
      for (auto& th : racers) th.join();
      const window race_win{lo, w.begun()};
      const std::uint64_t epoch_after = m.epoch();
      bool bad = wins != 1 || exists != 1 || !other.empty();
      EXPECT_EQ(wins.load(), 1) << dst;
      EXPECT_EQ(exists.load(), 1) << dst;
      for (const auto& o : other) ADD_FAILURE() << o;
      for (const auto& e : fs::directory_iterator(dir.path())) {
        const std::string n = e.path().filename();
        if (n.find(".creating-") != std::string::npos) {
          ADD_FAILURE() << "temporary left behind: " << n;
          bad = true;
        }
      }
      if (wins == 1) {
        bool lost = false;
        std::string err;
        {
          manager s(open_read_only, dst);
          const std::uint64_t e = s.epoch();
          if (e <= epoch_before || e > epoch_after || e < won_epoch) {
            err = dst + " holds epoch " + std::to_string(e) + ", not one of the race's flushes (" +
                  std::to_string(epoch_before) + ", " + std::to_string(epoch_after) + "]";
            lost = e <= epoch_before;
          } else {
            err = verify_state(s, c, race_win, w.base_version(), {}, &lost);
            if (err.empty() && !s.check().empty()) err = "check(): " + s.check().front();
          }
        }
        EXPECT_EQ(err, "") << dst;
        bad = bad || !err.empty();
        lost_n += lost ? 1 : 0;
      }
      failures += bad ? 1 : 0;
    }
    stop = true;
    for (auto& th : writers) th.join();
    for (const auto& e : w.errors()) ADD_FAILURE() << e;
  }
  print_result("snapshot_racing_same_destination", rounds, failures, lost_n, timer.seconds());
}

}  // namespace
}  // namespace pheap::test
