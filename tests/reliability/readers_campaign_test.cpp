// Readers beside a writer (sparse_store/FORMAT.md "Readers beside a writer"), the campaigns
// of issue 50, on the deterministic store workload (tests/store/store_test_util.hpp: a hot set
// rewritten in most epochs, discards every 4th epoch, so readers of older epochs need the
// writer's pinned copies all the time). Processes: rel_readers_child (writer / reader).
//
//   readers_view_vs_writer_log    a writer child commits every 2 ms; three reader children
//                                 open, hold 0..8 ms, read the whole view and print its CRC
//                                 (and check it byte for byte), refresh every 4th open; every
//                                 "view E CRC" must equal the writer's log line "epoch E CRC"
//                                 (≥ 1000 opens at CI size). No reader may go stale (the pin
//                                 limit is far above what they pin).
//   readers_killed_at_every_step  a reader child crashes (_exit) just before each I/O operation
//                                 of an open and a full read in turn (the fault engine: attach,
//                                 registration, directory, map blocks, pages); after each, the
//                                 writer (in this process) commits twice: the dead reader's
//                                 slot is gone, nothing stays pinned, a new reader reads exactly.
//   readers_sigkill_while_reading SIGKILL of reader children at random moments while the writer
//                                 child commits; afterwards no slot, no pinned byte, exact reads.
//   readers_writer_killed         the writer child is SIGKILLed at a random moment while readers
//                                 (in this process) hold watermarks of different ages: each still
//                                 reads its own exactly; a new writer opens at the last
//                                 acknowledged epoch or the one after (data lost otherwise) and
//                                 rewrites; the readers still read theirs exactly.
//   readers_power_cut             a power cut (the fault engine) after every sync point of a
//                                 writer running while a reader holds an older watermark: the
//                                 datastore opens at the last completed epoch or the one in
//                                 flight, exactly, and the next attach finds nothing pinned.
#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "common/test_util.hpp"
#include "reliability/reliability_util.hpp"
#include "store/store_test_util.hpp"
#include "support/fault_engine.hpp"

namespace pheap::test {
namespace {

constexpr std::uint64_t kSeed = 50, kPages = 256;
constexpr std::uint32_t kPage = 4096;

std::string child() { return sibling_binary("rel_readers_child"); }

store_options fresh_opts() {
  store_options o;
  o.capacity = kPages * kPage;
  o.page_size = kPage;
  o.segment_size = 64 * kPage;
  return o;
}

store_options ro_opts() {
  store_options o;
  o.read_only = true;
  return o;
}

// A writer child whose log lines ("epoch E CRC") a thread collects as they come (the child
// would block on a full pipe otherwise).
class writer_child {
 public:
  explicit writer_child(const std::string& dir, std::uint64_t interval_us = 2000)
      : p_({child(), "writer", dir, std::to_string(kSeed), std::to_string(kPages), std::to_string(interval_us)}),
        reader_([this] {
          while (auto line = p_.read_line()) {
            std::lock_guard lk(mu_);
            unsigned long long e = 0;
            char crc[16] = {};
            if (std::sscanf(line->c_str(), "epoch %llu %15s", &e, crc) == 2) {
              log_[e] = crc;
              last_ = e;
            }
          }
        }) {}
  ~writer_child() {
    if (!reader_.joinable()) return;  // kill_and_wait() ran
    p_.kill9();
    reader_.join();
  }
  // Waits until the writer acknowledged an epoch ≥ e (up to 60 s).
  bool wait_for(std::uint64_t e) {
    return eventually([&] { return acknowledged() >= e; }, std::chrono::seconds(60));
  }
  std::uint64_t acknowledged() {
    std::lock_guard lk(mu_);
    return last_;
  }
  std::map<std::uint64_t, std::string> log() {
    std::lock_guard lk(mu_);
    return log_;
  }
  child_result kill_and_wait() {
    p_.kill9();
    reader_.join();
    return p_.wait();
  }

 private:
  child_process p_;
  std::mutex mu_;
  std::map<std::uint64_t, std::string> log_;
  std::uint64_t last_ = 0;
  std::thread reader_;
};

// After readers died: no slot left, and once the writer commits, nothing pinned.
std::string after_readers_died(const std::string& dir, sparse_store& w, const workload& wl) {
  if (!sparse_store::readers(dir).empty()) return "a dead reader's slot is still listed";
  wl.run_epoch(w, w.epoch() + 1);
  const store_stats s = w.stats();
  if (s.readers != 0) return "the writer still counts " + std::to_string(s.readers) + " readers";
  if (s.pinned_bytes != 0) return std::to_string(s.pinned_bytes) + " bytes still pinned";
  auto r = sparse_store::open(dir, ro_opts());
  return wl.check(*r, r->epoch());
}

TEST(ReadersCampaign, EveryReaderViewEqualsTheWritersLogOfItsWatermark) {
  scenario_timer t;
  scratch_dir dir;
  const std::string ds = dir / "ds";
  sparse_store::create(ds, fresh_opts());
  const std::uint64_t per_reader = long_mode() ? 3400 : sanitized_or<std::uint64_t>(350, 60);
  std::uint64_t opens = 0, failures = 0;
  std::vector<std::string> views;
  {
    writer_child w(ds);
    ASSERT_TRUE(w.wait_for(1)) << "the writer acknowledged no epoch";
    std::vector<std::thread> readers;
    std::mutex mu;
    for (int k = 0; k < 3; ++k) {
      readers.emplace_back([&] {
        const child_result r = run_child({child(), "reader", ds, std::to_string(kSeed), std::to_string(kPages),
                                          std::to_string(per_reader), "8000"});
        std::lock_guard lk(mu);
        if (!r.exited(0)) {
          ADD_FAILURE() << "reader: " << r.describe();
          ++failures;
        }
        for (const std::string& v : lines_with(r.out, "view ")) views.push_back(v);
        for (const std::string& m : lines_with(r.out, "mismatch ")) {
          ADD_FAILURE() << "mismatch " << m;
          ++failures;
        }
        for (const std::string& s : lines_with(r.out, "stale ")) {
          ADD_FAILURE() << "stale " << s << " under a pin limit far above what readers pin";
          ++failures;
        }
        opens += lines_with(r.out, "done ").empty() ? 0 : per_reader;
      });
    }
    for (auto& th : readers) th.join();
    const std::uint64_t last = w.acknowledged();
    ASSERT_TRUE(w.wait_for(last + 1));  // every view's epoch is logged by now
    const auto log = w.log();
    for (const std::string& v : views) {
      unsigned long long e = 0;
      char crc[16] = {};
      ASSERT_EQ(std::sscanf(v.c_str(), "%llu %15s", &e, crc), 2) << v;
      auto it = log.find(e);
      if (it == log.end() || it->second != crc) {
        ADD_FAILURE() << "reader saw epoch " << e << " with CRC " << crc << ", the writer logged "
                      << (it == log.end() ? std::string("nothing") : it->second);
        ++failures;
      }
    }
    EXPECT_GE(views.size(), opens) << "a view line per open";
    EXPECT_GT(log.size(), 100u) << "the writer committed while the readers read";
  }
  print_result("readers_view_vs_writer_log", opens, failures, 0, t.seconds());
  EXPECT_GE(opens, sanitized_or<std::uint64_t>(1000, 180));
}

TEST(ReadersCampaign, AReaderCrashedAtAnyStepLeavesNothingBehind) {
  scenario_timer t;
  scratch_dir dir;
  const std::string ds = dir / "ds";
  const workload wl{kSeed, kPages};
  auto w = sparse_store::create(ds, fresh_opts());
  for (std::uint64_t e = 1; e <= 6; ++e) wl.run_epoch(*w, e);
  // How many I/O operations one open and full read take.
  const child_result dry = run_child({child(), "reader", ds, std::to_string(kSeed), std::to_string(kPages), "1", "0"});
  ASSERT_TRUE(dry.exited(0)) << dry.describe();
  const auto ops_lines = lines_with(dry.out, "ops ");
  ASSERT_EQ(ops_lines.size(), 1u);
  const std::uint64_t ops = std::stoull(ops_lines[0]);
  ASSERT_GE(ops, 4u);
  std::uint64_t iterations = 0, failures = 0;
  for (std::uint64_t n = 1; n <= ops; ++n) {
    const child_result r = run_child({child(), "reader", ds, std::to_string(kSeed), std::to_string(kPages), "1", "0"},
                                     {"PHEAP_FAULT_CRASH_AT=any:" + std::to_string(n)});
    ++iterations;
    if (!r.exited(86)) {
      ADD_FAILURE() << "crash at op " << n << " of " << ops << ": " << r.describe();
      ++failures;
      continue;
    }
    // The writer moves on twice (overwriting what the dead reader's epoch named), then checks.
    wl.run_epoch(*w, w->epoch() + 1);
    if (const std::string why = after_readers_died(ds, *w, wl); !why.empty()) {
      ADD_FAILURE() << "after a crash at op " << n << ": " << why;
      ++failures;
    }
  }
  print_result("readers_killed_at_every_step", iterations, failures, 0, t.seconds());
}

TEST(ReadersCampaign, ReadersKilledWhileReadingLeaveNothingBehind) {
  scenario_timer t;
  scratch_dir dir;
  const std::string ds = dir / "ds";
  const workload wl{kSeed, kPages};
  sparse_store::create(ds, fresh_opts());
  const int kills = long_mode() ? 300 : sanitized_or(30, 8);
  std::uint64_t failures = 0;
  std::mt19937_64 rng(kSeed);
  {
    writer_child w(ds);
    ASSERT_TRUE(w.wait_for(1));
    for (int k = 0; k < kills; ++k) {
      child_process r({child(), "reader", ds, std::to_string(kSeed), std::to_string(kPages), "1000000", "3000"});
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 60000));  // startup to mid-read
      r.kill9();
      const child_result got = r.wait();
      for (const std::string& m : lines_with(got.out, "mismatch ")) {
        ADD_FAILURE() << "mismatch " << m;
        ++failures;
      }
      if (!got.killed() && !got.exited(0)) {
        ADD_FAILURE() << got.describe();
        ++failures;
      }
    }
    (void)w.kill_and_wait();
  }
  auto w = sparse_store::open(ds, store_options{});
  if (const std::string why = after_readers_died(ds, *w, wl); !why.empty()) {
    ADD_FAILURE() << why;
    ++failures;
  }
  print_result("readers_sigkill_while_reading", static_cast<std::uint64_t>(kills), failures, 0, t.seconds());
}

TEST(ReadersCampaign, ReadersOutliveAKilledWriterAndTheNextWriterKeepsTheirWatermarks) {
  scenario_timer t;
  scratch_dir dir;
  const workload wl{kSeed, kPages};
  const int rounds = long_mode() ? 200 : sanitized_or(16, 4);
  std::uint64_t failures = 0, lost = 0;
  std::mt19937_64 rng(kSeed + 1);
  for (int round = 0; round < rounds; ++round) {
    const std::string ds = dir / ("ds" + std::to_string(round));
    sparse_store::create(ds, fresh_opts());
    std::vector<std::unique_ptr<sparse_store>> readers;
    std::uint64_t acknowledged = 0;
    {
      writer_child w(ds, 1000);
      for (int k = 0; k < 4; ++k) {  // four readers, a few epochs apart
        if (!w.wait_for(acknowledged + 2 + rng() % 6)) break;
        acknowledged = w.acknowledged();
        readers.push_back(sparse_store::open(ds, ro_opts()));
      }
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 20000));
      const child_result got = w.kill_and_wait();
      acknowledged = std::max(acknowledged, w.acknowledged());
      if (!got.killed()) {
        ADD_FAILURE() << "writer: " << got.describe();
        ++failures;
      }
    }
    auto check_readers = [&](const char* when) {
      for (auto& r : readers) {
        if (const std::string why = wl.check(*r, r->epoch()); !why.empty()) {
          ADD_FAILURE() << "round " << round << ", " << when << ": reader of epoch " << r->epoch() << ": " << why;
          ++failures;
        }
      }
    };
    check_readers("after the writer's death");
    auto w = sparse_store::open(ds, store_options{});
    if (w->epoch() < acknowledged) ++lost;
    if (w->epoch() < acknowledged || w->epoch() > acknowledged + 1) {
      ADD_FAILURE() << "round " << round << ": reopened at " << w->epoch() << ", acknowledged " << acknowledged;
      ++failures;
    } else if (const std::string why = wl.check(*w, w->epoch()); !why.empty()) {
      ADD_FAILURE() << "round " << round << ": the reopened writer: " << why;
      ++failures;
    }
    for (int k = 0; k < 6; ++k) wl.run_epoch(*w, w->epoch() + 1);
    check_readers("after the next writer's commits");
    readers.clear();
    if (const std::string why = after_readers_died(ds, *w, wl); !why.empty()) {
      ADD_FAILURE() << "round " << round << ": " << why;
      ++failures;
    }
  }
  print_result("readers_writer_killed", static_cast<std::uint64_t>(rounds), failures, lost, t.seconds());
}

TEST(ReadersCampaign, APowerCutWithReadersAttachedKeepsTheLastWatermark) {
  scenario_timer t;
  const workload wl{kSeed, kPages};
  constexpr std::uint64_t first = 3, last = 9;
  // Dry run: the sync points of epochs first..last.
  std::uint64_t syncs = 0;
  {
    scratch_dir dir;
    const std::string ds = dir / "ds";
    { auto w = sparse_store::create(ds, fresh_opts()); for (std::uint64_t e = 1; e < first; ++e) wl.run_epoch(*w, e); }
    auto f = make_fault_engine(io::make_posix_engine());
    store_options o;
    o.engine = f;
    auto r = sparse_store::open(ds, ro_opts());
    auto w = sparse_store::open(ds, o);
    const std::uint64_t base = f->operations(op_kind::sync);
    for (std::uint64_t e = first; e <= last; ++e) wl.run_epoch(*w, e);
    syncs = f->operations(op_kind::sync) - base;
  }
  std::uint64_t iterations = 0, failures = 0, lost = 0;
  for (auto policy : {cut_policy::drop_all, cut_policy::keep_all, cut_policy::random}) {
    for (std::uint64_t n = 0; n <= syncs; ++n) {
      scratch_dir dir;
      const std::string ds = dir / "ds";
      { auto w = sparse_store::create(ds, fresh_opts()); for (std::uint64_t e = 1; e < first; ++e) wl.run_epoch(*w, e); }
      std::uint64_t last_ok = first - 1;
      {
        auto f = make_fault_engine(io::make_posix_engine());
        store_options o;
        o.engine = f;
        auto r = sparse_store::open(ds, ro_opts());  // holds epoch first-1 all along
        try {
          auto w = sparse_store::open(ds, o);
          f->add_rule({op_kind::sync, f->operations(op_kind::sync) + n + 1, fault_action::fail_eio, true});
          for (std::uint64_t e = first; e <= last; ++e) last_ok = wl.run_epoch(*w, e);
          if (const std::string why = wl.check(*r, first - 1); !why.empty()) {
            ADD_FAILURE() << "before the cut: " << why;
            ++failures;
          }
        } catch (const error& e) {
          if (e.code() != errc::io && e.code() != errc::poisoned) {
            ADD_FAILURE() << e.what();
            ++failures;
          }
        }
        f->power_cut(policy, n);
      }  // the reader and the writer die with the power
      ++iterations;
      auto w = sparse_store::open(ds, store_options{});
      const std::uint64_t hi = policy == cut_policy::drop_all ? last_ok : std::min(last_ok + 1, last);
      if (w->epoch() < last_ok) ++lost;
      if (w->epoch() < last_ok || w->epoch() > hi) {
        ADD_FAILURE() << "cut after sync " << n << ": opened at " << w->epoch() << ", last ok " << last_ok;
        ++failures;
        continue;
      }
      if (const std::string why = wl.check(*w, w->epoch()); !why.empty()) {
        ADD_FAILURE() << "cut after sync " << n << ": " << why;
        ++failures;
      }
      if (w->stats().pinned_bytes != 0 || !sparse_store::readers(ds).empty()) {
        ADD_FAILURE() << "cut after sync " << n << ": the reader table was not reset";
        ++failures;
      }
    }
  }
  print_result("readers_power_cut", iterations, failures, lost, t.seconds());
}

}  // namespace
}  // namespace pheap::test
