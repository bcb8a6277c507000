// Failure injection through the fault engine (test::make_fault_engine):
//   * a simulated power cut after every sync point of a small workload, under each cut policy;
//   * EIO, ENOSPC and short transfers at every single I/O operation of two epochs.
// Each time, a fresh open must yield the last completed epoch (or, when the failure hit the
// commit after its superblock was written, possibly the new one), byte for byte.
#include "store_test_util.hpp"
#include "support/fault_engine.hpp"

namespace pheap::test {
namespace {

// 64 pages of 4 KiB in 8-page segments: each epoch touches a few segments and creates some.
constexpr std::uint64_t kPages = 64;
constexpr std::uint64_t kSeed = 77;
constexpr std::uint64_t kEpochs = 4;

class StoreFault : public store_test {
 protected:
  std::string fresh_store(temp_dir& dir) {
    const std::string path = dir / "ds";
    sparse_store::create(path, opts(kPages * 4096, 4096, 8 * 4096)).reset();
    return path;
  }
  store_options with(std::shared_ptr<io::engine> eng) const {
    store_options o;
    o.engine = std::move(eng);
    return o;
  }
  // Opens `path` with the engine under test and checks it holds epoch `lo` or `hi` exactly.
  std::uint64_t expect_recovers(const std::string& path, std::uint64_t lo, std::uint64_t hi,
                                const std::string& what) {
    auto s = sparse_store::open(path, open_opts());
    const std::uint64_t e = s->epoch();
    EXPECT_TRUE(e >= lo && e <= hi) << what << ": opened at epoch " << e << ", expected " << lo
                                    << (hi != lo ? " or " + std::to_string(hi) : "");
    EXPECT_EQ((workload{kSeed, kPages}.check(*s, e)), "") << what;
    return e;
  }
};
PHEAP_STORE_SUITE(StoreFault);

TEST_P(StoreFault, PowerCutAfterEverySyncPointRecoversTheLastCompletedEpoch) {
  const workload w{kSeed, kPages};
  // Dry run: how many sync points (fdatasync + directory fsync) the workload has.
  std::uint64_t total_syncs;
  {
    temp_dir dir;
    const std::string path = fresh_store(dir);
    auto f = test::make_fault_engine(engine());
    {
      auto s = sparse_store::open(path, with(f));
      for (std::uint64_t e = 1; e <= kEpochs; ++e) w.run_epoch(*s, e);
    }
    total_syncs = f->operations(test::op_kind::sync);
    ASSERT_GE(total_syncs, 3 * kEpochs);
  }
  int cases = 0, on_new_epoch = 0;
  for (auto policy : {test::cut_policy::drop_all, test::cut_policy::keep_all, test::cut_policy::random}) {
    // Cut after sync n: sync n+1 fails (its data never becomes durable), the workload stops at
    // the error, and the power goes.
    for (std::uint64_t n = 0; n <= total_syncs; ++n) {
      const std::string what = "policy " + std::to_string(static_cast<int>(policy)) +
                               ", power cut after sync " + std::to_string(n);
      temp_dir dir;
      const std::string path = fresh_store(dir);
      auto f = test::make_fault_engine(engine());
      f->add_rule({test::op_kind::sync, n + 1, test::fault_action::fail_eio, true});
      std::uint64_t last_ok = 0;
      try {
        auto s = sparse_store::open(path, with(f));
        for (std::uint64_t e = 1; e <= kEpochs; ++e) last_ok = w.run_epoch(*s, e);
      } catch (const error& e) {
        EXPECT_TRUE(e.code() == errc::io || e.code() == errc::poisoned) << e.what();
      }
      f->power_cut(policy, n);
      // drop_all loses every unsynced write, so a failed commit can never surface.
      const std::uint64_t hi = policy == test::cut_policy::drop_all ? last_ok : last_ok + 1;
      const std::uint64_t got = expect_recovers(path, last_ok, std::min(hi, kEpochs), what);
      on_new_epoch += got != last_ok;
      ++cases;
      if (HasFailure()) return;
    }
  }
  std::printf("[ power ] %d power cuts over %llu sync points, %d recovered the in-flight epoch\n",
              cases, static_cast<unsigned long long>(total_syncs), on_new_epoch);
}

TEST_P(StoreFault, InjectedErrorAtEveryOperationSurfacesPoisonsAndKeepsAnEpoch) {
  const workload w{kSeed, kPages};
  constexpr std::uint64_t epochs = 2;
  std::uint64_t total_ops;
  {
    temp_dir dir;
    const std::string path = fresh_store(dir);
    auto f = test::make_fault_engine(engine());
    {
      auto s = sparse_store::open(path, with(f));
      const std::uint64_t base = f->operations();
      for (std::uint64_t e = 1; e <= epochs; ++e) w.run_epoch(*s, e);
      s.reset();  // joins the last checkpoint
      total_ops = f->operations() - base;
    }
    ASSERT_GT(total_ops, 20u);
  }
  std::printf("[ fault ] sweeping %llu operations per action\n",
              static_cast<unsigned long long>(total_ops));
  for (auto action : {test::fault_action::fail_eio, test::fault_action::fail_enospc,
                      test::fault_action::short_transfer}) {
    int surfaced = 0;
    for (std::uint64_t n = 1; n <= total_ops; ++n) {
      const std::string what = "action " + std::to_string(static_cast<int>(action)) +
                               " at operation " + std::to_string(n);
      temp_dir dir;
      const std::string path = fresh_store(dir);
      auto f = test::make_fault_engine(engine());
      std::uint64_t last_ok = 0;
      bool in_commit = false;
      {
        auto s = sparse_store::open(path, with(f));
        f->add_rule({test::op_kind::any, f->operations() + n, action, false});
        try {
          for (std::uint64_t e = 1; e <= epochs; ++e) {
            w.write_epoch(*s, e);
            in_commit = true;
            last_ok = s->commit(w.root(e));
            in_commit = false;
          }
        } catch (const error& e) {
          ++surfaced;
          if (action == test::fault_action::short_transfer) {
            ADD_FAILURE() << what << ": a short transfer must be completed, got " << e.what();
          } else {
            const errc want =
                action == test::fault_action::fail_eio ? errc::io : errc::no_space;
            // poisoned: the failure hit the background checkpoint and surfaced later.
            EXPECT_TRUE(e.code() == want || e.code() == errc::poisoned) << what << ": " << e.what();
            EXPECT_NE(std::string(e.what()).find("injected"), std::string::npos)
                << what << ": the cause must be in the message: " << e.what();
          }
          // Every later write, discard and commit is refused, naming the cause...
          for (int call = 0; call < 3; ++call) {
            try {
              if (call == 0) s->commit({});
              if (call == 1) write_one(*s, 1, 1, 1);
              if (call == 2) s->discard(1, 1);
              ADD_FAILURE() << what << ": call " << call << " on a poisoned store succeeded";
            } catch (const error& e2) {
              EXPECT_EQ(e2.code(), errc::poisoned) << what << ": " << e2.what();
              EXPECT_NE(std::string(e2.what()).find("injected"), std::string::npos)
                  << what << ": the cause must be in the message: " << e2.what();
            }
          }
          // ...but reads keep working (a failed write publishes nothing; the pager would
          // otherwise turn every later page fault into SIGBUS).
          EXPECT_NO_THROW(read_one(*s, 1)) << what;
        }
      }
      // Failures before commit() was called cannot have produced a new epoch.
      expect_recovers(path, last_ok, in_commit ? last_ok + 1 : last_ok, what);
      if (HasFailure()) return;
    }
    if (action != test::fault_action::short_transfer) {
      // Failures in the last checkpoint poison a store nobody calls again, and unlinking a
      // dead journal may fail harmlessly; everything else must surface.
      EXPECT_GE(surfaced, static_cast<int>(total_ops) / 2) << "action " << static_cast<int>(action);
    }
  }
}

}  // namespace
}  // namespace pheap::test
