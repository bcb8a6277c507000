// Write-error campaigns (issue 7, campaign 4): what a failing disk write or sync does to a
// process running the mixed heap workload (heap_mix_workload.hpp) and to its datastore. The
// victim is rel_heap_child with --fault-engine: its datastore's engine is the fault-injecting
// engine, and PHEAP_FAULT_EIO_AT / PHEAP_FAULT_ENOSPC_AT=<kind>:N[:sticky] (pheap/io.hpp)
// fail its N-th write (or sync) request with EIO / ENOSPC once or from then on.
// sparse_store/FORMAT.md "Failure rules": any failed write or sync poisons the store (also a
// transient one: a failed fsync is never retried and trusted), reads keep working, the
// previous epoch stays durable (or the new one, when the failure was the superblock's own
// fdatasync).
//
// fault_write_error_during_eviction_and_flush
//   A datastore at step K (created cleanly) is copied, and the victim runs M more steps on a
//   512 KiB buffer (working set several MiB: the evictor writes pages back all the time),
//   each flushed and acknowledged, snapshotting to DIR.snap-S after every 7th step
//   (--snapshot-every 7), with the N-th write failing. N sweeps the writes of a clean run of
//   the same work (calibrated first), evenly with jitter; EIO and ENOSPC alternate, 3 in 4
//   sticky; io_uring and posix inner engines alternate.
// fault_sync_error
//   The same with the N-th sync (fdatasync and directory syncs) failing.
// fault_metadata_error
//   The same with the N-th metadata operation (open/create of segments, rename, truncate,
//   punch_hole of the homes a commit freed, clone_file of a snapshot, remove) failing.
// fault_write_error_during_recovery
//   Crash states are made by killing the victim inside a flush; for each, the writes, syncs
//   and metadata operations of a clean recovery open, one step with its flush (the first
//   commit after the crash; a close with nothing dirty writes nothing) and the close are
//   counted and N sweeps them (the three kinds in turn, EIO/ENOSPC, once/sticky).
//
// Accepted outcomes of a faulty run, nothing else:
//   * exit 1 with one specific pheap::error on stdout: errc::io with EIO (EIO injected),
//     errc::no_space with ENOSPC (ENOSPC injected), or errc::poisoned — the message naming the
//     datastore (or, for a failure inside snapshot(), the snapshot's temporary directory
//     ".<dst>.creating-XXXXXX", its destination, or for the final directory sync the
//     destination's parent directory) and carrying the injected cause;
//   * completion of every step — only when the injected failure was never reached, or it was
//     reported on stderr (the destructor's final flush logs "final flush failed"): a failed
//     write or sync is never swallowed silently (a failed metadata operation is reported too:
//     a failed punch after a commit poisons the store);
//   * death by SIGBUS only after the pager printed "pheap: pager <datastore>: page ... could
//     not be read ..." (counted separately; none is expected, since reads keep working on a
//     poisoned store).
//   Never a hang: every line is awaited with a 60 s watchdog. Afterwards the datastore opens
//   read-only at step W or W+1 (W = last acknowledged step) with the exact digest of the
//   reference, manager::check() clean, `pheap check` exit 0 on every 4th run, and a clean rerun
//   opens it, runs a step and acknowledges it (verified again). Every acknowledged snapshot
//   opens at exactly its step with the exact digest; an unacknowledged one is absent or just
//   as exact.
//
// CI size: 40 + 32 + 20 + 4 x 12 runs; PHEAP_LONG=1: 400 + 320 + 200 + 12 x 40.
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>

#include <gtest/gtest.h>

#include "common/test_util.hpp"
#include "pheap/io.hpp"
#include "support/fault_engine.hpp"
#include "pheap/sparse_store.hpp"
#include "reliability/fault_mix_campaign.hpp"
#include "reliability/heap_mix_workload.hpp"
#include "reliability/reliability_util.hpp"

namespace pheap::test {
namespace {

namespace fs = std::filesystem;
using mixc::kTool;
using mixc::kVictimBuffer;
using mixc::outcome_counts;
using mixc::problem;
using mixc::tally;

constexpr std::uint64_t kSnapshotEvery = 7;

// One injected fault: the N-th operation of `kind` ("write" or "sync") fails with `err`.
struct fault_spec {
  std::string kind;
  std::uint64_t nth = 1;
  int err = EIO;
  bool sticky = false;
  std::string env() const {
    return std::string(err == ENOSPC ? "PHEAP_FAULT_ENOSPC_AT=" : "PHEAP_FAULT_EIO_AT=") + kind + ":" +
           std::to_string(nth) + (sticky ? ":sticky" : "");
  }
};

// One victim run (mixc::run_victim), the operation counts and the snapshots it printed.
struct run_outcome : mixc::victim_run {
  std::uint64_t writes = 0, syncs = 0, metadata = 0;  // "io writes N" / ... at the end
  std::uint64_t open_writes = 0, open_syncs = 0, open_metadata = 0;  // after the open
  std::map<std::uint64_t, bool> snapshots;  // step -> acknowledged
  std::uint64_t count(const std::string& kind) const {
    return kind == "sync" ? syncs : kind == "metadata" ? metadata : writes;
  }
  std::uint64_t open_count(const std::string& kind) const {
    return kind == "sync" ? open_syncs : kind == "metadata" ? open_metadata : open_writes;
  }
  void parse(const std::string& line) {
    const char* l = line.c_str();
    unsigned long long n = 0, e = 0;
    if (std::sscanf(l, "io writes %llu", &n) == 1) writes = n;
    if (std::sscanf(l, "io syncs %llu", &n) == 1) syncs = n;
    if (std::sscanf(l, "io open-writes %llu", &n) == 1) open_writes = n;
    if (std::sscanf(l, "io open-syncs %llu", &n) == 1) open_syncs = n;
    if (std::sscanf(l, "io metadata %llu", &n) == 1) metadata = n;
    if (std::sscanf(l, "io open-metadata %llu", &n) == 1) open_metadata = n;
    if (std::sscanf(l, "snapshotting %llu", &n) == 1) snapshots[n] = false;
    if (std::sscanf(l, "snapshot %llu %llu", &n, &e) == 2) snapshots[n] = true;
  }
};

// Checks that a faulty run ended in one of the documented ways (header comment).
void classify(const run_outcome& o, const std::string& ds, const fault_spec& f, std::int64_t expect_steps,
              const mixc::mix_tracker& t, outcome_counts& n, std::vector<problem>& ps) {
  if (o.hung) return;
  const child_result& r = o.r;
  const std::string& injected = mixc::kInjected;
  // Under ASan/UBSan a report in the victim is a failure whatever its exit status.
  if (r.err.find("Sanitizer") != std::string::npos || r.err.find("runtime error:") != std::string::npos) {
    ps.push_back({"sanitizer report in the victim: " + r.err.substr(0, 2000), false});
    return;
  }
  if (mixc::died_of_sigbus(r)) {
    ++n.sigbus;
    const std::string want = "pheap: pager " + ds + ": page ";
    const auto at = r.err.find(want);
    if (at == std::string::npos || r.err.find("could not be read", at) == std::string::npos) {
      ps.push_back({"SIGBUS without the pager's message naming the datastore and the page: " + r.describe(), false});
    }
    return;
  }
  if (r.exited(1)) {
    const auto e = mixc::one_error_line(r, ps);
    if (!e) return;
    const std::string& msg = e->msg;
    const int code = e->code, err = e->err;
    // The datastore, or — for a failure inside snapshot() — the temporary directory the
    // snapshot is built in (".<name>.creating-XXXXXX" next to the destination, FORMAT.md).
    bool names_ds = msg.find(ds + "/") != std::string::npos || msg.find(ds + ":") != std::string::npos;
    for (const auto& [step, acked] : o.snapshots) {
      const fs::path dst = ds + ".snap-" + std::to_string(step);
      const std::string tmp = (dst.parent_path() / ("." + dst.filename().string() + ".creating-")).string();
      // Its last step, the sync of the destination's directory after the rename, names only
      // that directory.
      const std::string dir_sync = "sync_dir " + dst.parent_path().string() + ":";
      if (!acked && (msg.find(tmp) != std::string::npos || msg.find(dst.string()) != std::string::npos ||
                     msg.find(dir_sync) != std::string::npos)) {
        names_ds = true;
      }
    }
    const bool has_cause = msg.find(injected) != std::string::npos &&
                           msg.find(std::strerror(f.err)) != std::string::npos;
    if (!names_ds || !has_cause) {
      ps.push_back({"error does not name the datastore and the injected cause (" + std::string(std::strerror(f.err)) +
                        "): " + msg,
                    false});
    } else if (f.err == EIO && code == static_cast<int>(errc::io) && err == EIO) {
      ++n.error_io;
    } else if (f.err == ENOSPC && code == static_cast<int>(errc::no_space) && err == ENOSPC) {
      ++n.error_no_space;
    } else if (code == static_cast<int>(errc::poisoned)) {
      ++n.error_poisoned;
    } else {
      ps.push_back({"not the specific error of the injected failure (" +
                        std::string(f.err == EIO ? "io/EIO" : "no_space/ENOSPC") + " or poisoned): " + msg,
                    false});
    }
    return;
  }
  if (r.exited(0)) {
    mixc::check_completed(o, expect_steps, t, n, ps);
    // A failed write or sync poisons the store: it is never swallowed silently. (A failed
    // metadata operation that completed unreported is counted apart; the verification and
    // clean rerun below still apply.)
    if (o.count(f.kind) >= f.nth) {
      if (r.err.find(injected) == std::string::npos && f.kind == "metadata") {
        ++n.completed_unreported;
      } else if (r.err.find(injected) == std::string::npos) {
        ps.push_back({f.kind + " " + std::to_string(f.nth) + " of " + std::to_string(o.count(f.kind)) +
                          " failed, yet the run completed without reporting it; stderr: " + r.err.substr(0, 500),
                      false});
      } else {
        ++n.completed_reported;
      }
    }
    return;
  }
  mixc::unexpected_end(r, ps);
}

// Every snapshot the run started: acknowledged ones hold exactly their step; others are absent
// or just as exact. Removes them (and leftovers of interrupted ones) afterwards.
void check_snapshots(const run_outcome& o, const std::string& ds, mixc::mix_tracker& t, outcome_counts& n,
                     std::vector<problem>& ps) {
  for (const auto& [step, acked] : o.snapshots) {
    const std::string dst = ds + ".snap-" + std::to_string(step);
    acked ? ++n.snapshots_acked : ++n.snapshots_failed;
    if (!fs::exists(dst)) {
      if (acked) ps.push_back({"acknowledged snapshot " + dst + " vanished", true});
      continue;
    }
    try {
      manager m(open_read_only, dst, mix::heap_options(16u << 20));
      const auto objs = mix::find_objects(m);
      std::string why;
      if (objs.step == nullptr || *objs.step != step) {
        ps.push_back({"snapshot " + dst + " does not hold step " + std::to_string(step), acked});
      } else if (const std::uint64_t d = mix::heap_digest(m, why); !why.empty() || d != t.digest_at(step)) {
        ps.push_back({"snapshot " + dst + ": content differs from the reference " + why, acked});
      } else if (const auto p = m.check(); !p.empty()) {
        ps.push_back({"snapshot " + dst + ": manager::check(): " + p.front(), false});
      }
    } catch (const error& e) {
      ps.push_back({"snapshot " + dst + " (" + (acked ? "acknowledged" : "failed") +
                        ") does not open: " + to_string(e.code()) + ": " + e.what(),
                    acked});
    }
  }
  // Remove snapshots and temporary ".<name>.creating-*" leftovers of failed ones.
  const fs::path parent = fs::path(ds).parent_path();
  const std::string base = fs::path(ds).filename().string() + ".snap-";
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(parent, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(base, 0) == 0 || name.rfind("." + base, 0) == 0) fs::remove_all(e.path(), ec);
  }
}

// The end of a faulty run (mixc::end_faulty_run): the datastore and the snapshots verify, a
// clean rerun works and verifies.
void end_faulty_run(const std::string& bin, const std::string& ds, const run_outcome& o, mixc::mix_tracker& t,
                    const std::vector<problem>& ps, bool tool, outcome_counts& n, tally& ta, std::uint64_t& tool_runs,
                    const std::string& ctx) {
  mixc::end_faulty_run(bin, ds, t, ps, tool, ta, tool_runs, ctx,
                       [&](std::vector<problem>& snaps) { check_snapshots(o, ds, t, n, snaps); });
}

void print_counts(const char* what, const tally& ta, const outcome_counts& n, std::uint64_t tool_runs) {
  std::printf("%s: %llu runs: %llu io/EIO, %llu no_space/ENOSPC, %llu poisoned, %llu completed (%llu of them "
              "reporting the failure on stderr, %llu metadata failures ignored by design), %llu SIGBUS with the pager's message; snapshots %llu "
              "acknowledged, %llu failed; %llu pheap check runs\n",
              what, static_cast<unsigned long long>(ta.iterations), static_cast<unsigned long long>(n.error_io),
              static_cast<unsigned long long>(n.error_no_space), static_cast<unsigned long long>(n.error_poisoned),
              static_cast<unsigned long long>(n.completed), static_cast<unsigned long long>(n.completed_reported),
              static_cast<unsigned long long>(n.completed_unreported), static_cast<unsigned long long>(n.sigbus), static_cast<unsigned long long>(n.snapshots_acked),
              static_cast<unsigned long long>(n.snapshots_failed), static_cast<unsigned long long>(tool_runs));
}

// ---- the env hook ----------------------------------------------------------------------------

struct env_guard {
  env_guard(const char* var, const char* v) : var_(var) { ::setenv(var, v, 1); }
  ~env_guard() { ::unsetenv(var_); }
  const char* var_;
};

TEST(FaultWriteError, EnospcAtEnvironmentVariableFailsTheNthWriteOrSyncOnceOrFromThenOn) {
  temp_dir d;
  const std::string path = d / "f";
  { io::make_posix_engine()->open(path, io::open_mode::create); }
  // Returns per operation '.' (worked) or 'x' (failed with no_space/ENOSPC naming the file).
  auto failing = [&](const char* spec, bool sync) {
    env_guard g("PHEAP_FAULT_ENOSPC_AT", spec);
    auto e = test::make_fault_engine(io::make_posix_engine());
    auto f = e->open(path, io::open_mode::read_write);
    std::string out;
    for (int i = 1; i <= 5; ++i) {
      char buf[64] = {static_cast<char>(i)};
      try {
        if (sync) {
          e->sync(*f);
        } else {
          e->write_at(*f, 0, buf, sizeof buf);
        }
        out += '.';
      } catch (const error& err) {
        mixc::expect_injected_error(err, errc::no_space, ENOSPC, path);
        out += 'x';
      }
    }
    // Reads are not affected by a write or sync rule.
    char rb[64];
    e->read_at(*f, 0, rb, sizeof rb);
    return out;
  };
  EXPECT_EQ(failing("write:3", false), "..x..");
  EXPECT_EQ(failing("write:2:sticky", false), ".xxxx");
  EXPECT_EQ(failing("sync:4", true), "...x.");
  EXPECT_EQ(failing("write:1", true), ".....");  // a write rule does not fail syncs
  // The failed write had no effect: the file holds the last successful write's byte.
  {
    env_guard g("PHEAP_FAULT_ENOSPC_AT", "write:2");
    auto e = test::make_fault_engine(io::make_posix_engine());
    auto f = e->open(path, io::open_mode::read_write);
    char one = 'a', two = 'b', got = 0;
    e->write_at(*f, 0, &one, 1);
    EXPECT_THROW(e->write_at(*f, 0, &two, 1), error);
    e->read_at(*f, 0, &got, 1);
    EXPECT_EQ(got, 'a');
  }
  for (const char* bad : {"write", "write:0", "writes:3", "write:3:stick", "write:3:sticky:1"}) {
    env_guard g("PHEAP_FAULT_ENOSPC_AT", bad);
    mixc::expect_rule_rejected("PHEAP_FAULT_ENOSPC_AT", bad);
  }
}

// ---- write / sync errors during a running workload -------------------------------------------

void sweep_running(const std::string& kind, const char* scenario, std::uint64_t iterations) {
  mixc::campaign c;
  auto& [timer, work, bin, ds, rng, ta, n, tool_runs] = c;
  constexpr std::uint64_t kBaseSteps = 10, kSteps = 20;

  const std::string base = work / "base";
  mixc::mix_tracker t0;
  ASSERT_NO_FATAL_FAILURE(mixc::make_base(bin, base, rng, t0, kBaseSteps));
  const auto argv = mixc::faulty_victim(bin, ds, t0, kSteps, {"--snapshot-every", std::to_string(kSnapshotEvery)});
  // Calibration: the operations of the same work without faults.
  std::uint64_t first = 0, total = 0;
  {
    mixc::mix_tracker t;
    std::vector<problem> ps;
    const auto o = mixc::run_on_copy<run_outcome>(base, ds, argv, {}, t0, t, ps);
    ASSERT_TRUE(o.r.exited(0) && ps.empty()) << "calibration run: " << o.r.describe();
    check_snapshots(o, ds, t, n, ps);
    ASSERT_TRUE(ps.empty()) << ps.front().what;
    ASSERT_EQ(o.snapshots.size(), 3u);
    n = {};
    first = o.open_count(kind);
    total = o.count(kind);
    ASSERT_GT(total, first + 20) << "the workload hardly does any " << kind << ": nothing to test";
    std::printf("%s calibration: %llu %ss, %llu of them in the open\n", scenario,
                static_cast<unsigned long long>(total), kind.c_str(), static_cast<unsigned long long>(first));
  }
  for (std::uint64_t i = 0; i < iterations && ta.failures < 5; ++i) {
    // Spread over the operations after the open (plus a few past the calibrated end: the
    // counts vary a little with eviction timing), jittered within each stride.
    const std::uint64_t span = total - first + 2;
    fault_spec f;
    f.kind = kind;
    f.nth = first + 1 + (i * span + rng() % span) / iterations;
    f.err = (i / 2) % 2 == 0 ? EIO : ENOSPC;
    f.sticky = i % 4 != 3;
    const std::string ctx = std::string(scenario) + " iteration " + std::to_string(i + 1) + " (" + f.env() +
                            " of " + std::to_string(total) + ")";
    mixc::mix_tracker t;
    std::vector<problem> ps;
    const auto o = mixc::run_on_copy<run_outcome>(base, ds, argv, mixc::victim_env(f.env(), i, false), t0, t, ps);
    classify(o, ds, f, static_cast<std::int64_t>(kBaseSteps + kSteps), t, n, ps);
    end_faulty_run(bin, ds, o, t, ps, i % 4 == 0, n, ta, tool_runs, ctx);
  }
  print_counts(scenario, ta, n, tool_runs);
  // Almost every N lies inside the run: the failure paths must have been exercised, both errnos.
  EXPECT_GE(n.error_io + n.error_no_space + n.error_poisoned + n.completed_reported, ta.iterations * 3 / 4);
  EXPECT_GT(n.error_io, 0u);
  EXPECT_GT(n.error_no_space, 0u);
  EXPECT_GT(n.snapshots_acked, 0u);
  EXPECT_EQ(ta.lost, 0u);
  print_result(scenario, ta.iterations, ta.failures, ta.lost, timer.seconds());
}

TEST(FaultWriteError, WriteErrorsDuringEvictionFlushAndSnapshotGiveASpecificErrorAndKeepTheWatermark) {
  if (!mixc::pager_available(kVictimBuffer)) PHEAP_REQUIRE_FEATURE("userfaultfd pager unavailable");
  sweep_running("write", "fault_write_error_during_eviction_and_flush", long_mode() ? 400 : 40);
}

// The same on 2 MiB pages mapped by 2 MiB entries: a failed write of an evicted huge page
// (moved out whole, judged, written) or of a flush keeps the page and the watermark.
TEST(FaultWriteError, WriteErrorsDuringHugePageEvictionFlushAndSnapshotGiveASpecificErrorAndKeepTheWatermark) {
  if (!mixc::pager_available(kVictimBuffer)) PHEAP_REQUIRE_FEATURE("userfaultfd pager unavailable");
  if (!mixc::huge_pages_possible()) PHEAP_REQUIRE_FEATURE("huge pages (UFFDIO_MOVE and transparent huge pages)");
  const mixc::huge_victims huge;
  sweep_running("write", "fault_write_error_during_eviction_and_flush_huge", long_mode() ? 200 : 20);
}

TEST(FaultWriteError, SyncErrorsDuringFlushAndSnapshotGiveASpecificErrorAndKeepTheWatermark) {
  if (!mixc::pager_available(kVictimBuffer)) PHEAP_REQUIRE_FEATURE("userfaultfd pager unavailable");
  sweep_running("sync", "fault_sync_error", long_mode() ? 320 : 32);
}

TEST(FaultWriteError, MetadataErrorsDuringFlushCheckpointAndSnapshotGiveASpecificErrorAndKeepTheWatermark) {
  if (!mixc::pager_available(kVictimBuffer)) PHEAP_REQUIRE_FEATURE("userfaultfd pager unavailable");
  sweep_running("metadata", "fault_metadata_error", long_mode() ? 200 : 20);
}

// ---- write / sync errors during recovery -----------------------------------------------------

TEST(FaultWriteError, WriteAndSyncErrorsDuringRecoveryGiveASpecificErrorAndTheNextOpenWorks) {
  if (!mixc::pager_available(kVictimBuffer)) PHEAP_REQUIRE_FEATURE("userfaultfd pager unavailable");
  mixc::campaign c;
  auto& [timer, work, bin, ds, rng, ta, n, tool_runs] = c;
  const std::uint64_t states = long_mode() ? 12 : 4;
  const std::uint64_t per_state = long_mode() ? 40 : 12;
  std::uint64_t in_open = 0, max_writes = 0, max_syncs = 0;

  const std::string crash = work / "crash";
  for (std::uint64_t st = 0; st < states && ta.failures < 5; ++st) {
    // A crash state: killed inside a flush.
    mixc::mix_tracker t0;
    ASSERT_NO_FATAL_FAILURE(mixc::make_crash_state(bin, crash, rng, t0, ta, st));
    // One step: its flush is the first commit after the crash (format 3's open writes only to
    // confirm a prepared epoch, and a close with nothing dirty writes nothing).
    const auto argv = mixc::faulty_victim(bin, ds, t0, 1);
    // Calibration: writes and syncs of a clean recovery open, step and close of this state.
    run_outcome cal;
    {
      mixc::mix_tracker t;
      std::vector<problem> ps;
      const auto o = mixc::run_on_copy<run_outcome>(crash, ds, argv, {}, t0, t, ps);
      ASSERT_TRUE(o.r.exited(0) && ps.empty()) << "calibration open: " << o.r.describe();
      cal = o;
      ASSERT_GT(o.syncs, 0u);
      ASSERT_GT(o.writes, 0u);
      ASSERT_GT(o.metadata, 0u);
      max_writes = std::max(max_writes, o.writes);
      max_syncs = std::max(max_syncs, o.syncs);
      std::printf("crash state %llu: open + step + close do %llu writes (%llu in the open), %llu syncs (%llu in the open), "
                  "%llu metadata operations (%llu in the open)\n",
                  static_cast<unsigned long long>(st), static_cast<unsigned long long>(o.writes),
                  static_cast<unsigned long long>(o.open_writes), static_cast<unsigned long long>(o.syncs),
                  static_cast<unsigned long long>(o.open_syncs), static_cast<unsigned long long>(o.metadata),
                  static_cast<unsigned long long>(o.open_metadata));
    }
    for (std::uint64_t i = 0; i < per_state && ta.failures < 5; ++i) {
      fault_spec f;
      f.kind = i % 3 == 0 ? "sync" : i % 3 == 1 ? "write" : "metadata";
      const std::uint64_t ops = cal.count(f.kind);
      const std::uint64_t slots = (per_state + 2) / 3, j = i / 3;
      // Every operation when they fit, else evenly spread with jitter.
      f.nth = ops <= slots ? 1 + j % ops : 1 + (j * ops + rng() % ops) / slots;
      f.err = (i / 3) % 2 == 0 ? EIO : ENOSPC;
      f.sticky = (i / 6) % 2 == 0;
      if (f.nth <= cal.open_count(f.kind)) ++in_open;
      const std::string ctx = "state " + std::to_string(st) + " (" + f.env() + " of " + std::to_string(ops) + ")";
      mixc::mix_tracker t;
      std::vector<problem> ps;
      const auto o = mixc::run_on_copy<run_outcome>(crash, ds, argv, mixc::victim_env(f.env(), i / 3, false), t0, t, ps);
      classify(o, ds, f, -1, t, n, ps);
      if (o.r.exited(0) && !o.opened) ps.push_back({"completed without opening", false});
      end_faulty_run(bin, ds, o, t, ps, i % 4 == 0, n, ta, tool_runs, ctx);
    }
  }
  print_counts("fault_write_error_during_recovery", ta, n, tool_runs);
  std::printf("%llu of the faults inside the recovery open (up to %llu writes, %llu syncs per open + step + close)\n",
              static_cast<unsigned long long>(in_open), static_cast<unsigned long long>(max_writes),
              static_cast<unsigned long long>(max_syncs));
  EXPECT_GT(in_open, 0u);
  EXPECT_GE(n.error_io + n.error_no_space + n.error_poisoned + n.completed_reported, ta.iterations * 3 / 4);
  EXPECT_EQ(ta.lost, 0u);
  print_result("fault_write_error_during_recovery", ta.iterations, ta.failures, ta.lost, timer.seconds());
}

}  // namespace
}  // namespace pheap::test
