// Two-phase commit (FORMAT.md "Two-phase commit"): prepare() makes an epoch durable without
// making it the watermark; confirm() makes it the watermark; at open, the caller's highest
// accepted epoch (store_options::max_epoch) chooses between a prepared epoch and the watermark
// below it — which stays whole: no write lands on a home it references while the prepared epoch
// is undecided.
#include <atomic>
#include <chrono>
#include <thread>

#include "store_test_util.hpp"
#include "support/fault_engine.hpp"

namespace pheap::test {
namespace {

class StoreTwoPhase : public store_test {
 protected:
  std::string path() const { return dir_ / "ds"; }
  store_options accepting(std::uint64_t max_epoch, bool read_only = false) const {
    store_options o = open_opts(read_only);
    o.max_epoch = max_epoch;
    return o;
  }
  // Epoch 1: pages 0..7 version 1 (home 0), root "w1". Returns the open store.
  std::unique_ptr<sparse_store> make() {
    auto s = sparse_store::create(path(), opts(64 * 4096, 4096, 16 * 4096));
    for (std::uint64_t p = 0; p < 8; ++p) write_one(*s, p, 3, 1);
    s->commit(bytes_of("w1"));
    return s;
  }
  // Epoch 2 prepared: pages 0..3 version 2 (home 1), page 5 discarded, root "p2".
  void prepare_two(sparse_store& s) {
    for (std::uint64_t p = 0; p < 4; ++p) write_one(s, p, 3, 2);
    s.discard(5, 1);
    EXPECT_EQ(s.prepare(bytes_of("p2")), 2u);
  }
  void expect_epoch1(sparse_store& s) {
    EXPECT_EQ(s.epoch(), 1u);
    EXPECT_EQ(s.root(), bytes_of("w1"));
    for (std::uint64_t p = 0; p < 8; ++p) EXPECT_EQ(read_one(s, p), pattern(4096, 3, p, 1)) << p;
  }
  void expect_epoch2(sparse_store& s) {
    EXPECT_EQ(s.epoch(), 2u);
    EXPECT_EQ(s.root(), bytes_of("p2"));
    for (std::uint64_t p = 0; p < 8; ++p) {
      if (p == 5) {
        EXPECT_TRUE(is_zero(read_one(s, p)));
      } else {
        EXPECT_EQ(read_one(s, p), pattern(4096, 3, p, p < 4 ? 2 : 1)) << p;
      }
    }
  }
  temp_dir dir_;
};
PHEAP_STORE_SUITE(StoreTwoPhase);

TEST_P(StoreTwoPhase, PreparedEpochIsDurableButNotTheWatermarkUntilConfirmed) {
  {
    auto s = make();
    EXPECT_FALSE(s->prepared());
    prepare_two(*s);
    EXPECT_TRUE(s->prepared());
    EXPECT_EQ(s->epoch(), 1u) << "the watermark is still epoch 1";
    for (auto call : {0, 1}) {
      try {
        if (call == 0) s->commit({});
        if (call == 1) s->prepare({});
        ADD_FAILURE() << "a second commit while an epoch is prepared";
      } catch (const error& e) {
        EXPECT_EQ(e.code(), errc::invalid_argument) << e.what();
        EXPECT_NE(std::string(e.what()).find("prepared"), std::string::npos) << e.what();
      }
    }
    EXPECT_EQ(s->confirm(), 2u);
    EXPECT_FALSE(s->prepared());
    expect_epoch2(*s);
    EXPECT_THROW(s->confirm(), error) << "nothing is prepared any more";
    EXPECT_EQ(s->commit(bytes_of("w3")), 3u);
  }
  auto s = sparse_store::open(path(), accepting(3, true));
  EXPECT_EQ(s->epoch(), 3u);
}

TEST_P(StoreTwoPhase, UndecidedPreparedEpochIsChosenOrDiscardedByTheCallersHighestAcceptedEpoch) {
  {
    auto s = make();
    prepare_two(*s);
  }  // closed undecided
  {
    auto ro = sparse_store::open(path(), accepting(1, true));
    expect_epoch1(*ro);
    auto ro2 = sparse_store::open(path(), accepting(2, true));
    expect_epoch2(*ro2);
  }
  {
    // Rejected: epoch 1 is whole, and a new epoch 2 replaces the prepared one.
    auto s = sparse_store::open(path(), accepting(1));
    expect_epoch1(*s);
    write_one(*s, 6, 3, 9);
    EXPECT_EQ(s->commit(bytes_of("other2")), 2u);
  }
  auto s = sparse_store::open(path(), open_opts(true));
  EXPECT_EQ(s->epoch(), 2u);
  EXPECT_EQ(s->root(), bytes_of("other2"));
  EXPECT_EQ(read_one(*s, 0), pattern(4096, 3, 0, 1)) << "the prepared version is gone";
  EXPECT_EQ(read_one(*s, 6), pattern(4096, 3, 6, 9));
  EXPECT_EQ(read_one(*s, 5), pattern(4096, 3, 5, 1)) << "the prepared discard is gone";
}

TEST_P(StoreTwoPhase, AcceptedPreparedEpochIsConfirmedByAReadWriteOpen) {
  {
    auto s = make();
    prepare_two(*s);
  }
  {
    auto s = sparse_store::open(path(), accepting(2));
    EXPECT_FALSE(s->prepared());
    expect_epoch2(*s);
  }
  // Confirmed: now even a caller accepting only epoch 2's predecessor... finds no epoch 1.
  auto s = sparse_store::open(path(), accepting(2, true));
  expect_epoch2(*s);
  s.reset();
  try {
    sparse_store::open(path(), accepting(1, true));
    ADD_FAILURE() << "epoch 1 survived the confirmation";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::corrupt) << e.what();
    EXPECT_NE(std::string(e.what()).find("no committed epoch at or below 1"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("holds epoch 2"), std::string::npos) << "what each slot holds: " << e.what();
  }
}

TEST_P(StoreTwoPhase, WritesWhileAnEpochIsPreparedWaitOnlyForPagesItChangedUntilConfirmed) {
  auto s = make();
  prepare_two(*s);
  // Page 7 is not in the prepared epoch: written at once (into a home neither epoch uses).
  write_one(*s, 7, 3, 3);
  // Page 0 is: its next copy would go to the home epoch 1 references, so it waits.
  std::atomic<bool> done{false};
  std::thread writer([&] {
    write_one(*s, 0, 3, 3);
    done = true;
  });
  // Page 5 was discarded by it: its homes are punched once it is confirmed, so it waits too.
  std::atomic<bool> freed_done{false};
  std::thread freed_writer([&] {
    write_one(*s, 5, 3, 3);
    freed_done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(done.load()) << "a write over the watermark's home did not wait";
  EXPECT_FALSE(freed_done.load()) << "a write into homes about to be punched did not wait";
  EXPECT_EQ(s->confirm(), 2u);
  writer.join();
  freed_writer.join();
  EXPECT_TRUE(done.load());
  EXPECT_EQ(read_one(*s, 0), pattern(4096, 3, 0, 3));
  EXPECT_EQ(read_one(*s, 5), pattern(4096, 3, 5, 3)) << "written after the punch, not under it";
  EXPECT_EQ(read_one(*s, 7), pattern(4096, 3, 7, 3));
  EXPECT_EQ(s->commit(bytes_of("w3")), 3u);
}

TEST_P(StoreTwoPhase, WritesAfterAnUndecidedPrepareLeaveTheWatermarkBelowItWhole) {
  {
    auto s = make();
    prepare_two(*s);
    write_one(*s, 7, 3, 3);  // pages the prepared epoch did not change
    write_one(*s, 6, 3, 3);
    s->discard(4, 1);
  }
  for (const std::uint64_t accept : {1ull, 2ull}) {
    auto s = sparse_store::open(path(), accepting(accept, true));
    if (accept == 1) {
      expect_epoch1(*s);
    } else {
      expect_epoch2(*s);
    }
  }
}

TEST_P(StoreTwoPhase, PowerCutAtEverySyncOfPrepareAndConfirmLeavesAnEpochTheRuleCanChoose) {
  std::uint64_t syncs = 0;
  {
    temp_dir d;
    sparse_store::create(d / "ds", opts(64 * 4096, 4096, 16 * 4096)).reset();
    auto f = make_fault_engine(engine());
    store_options o;
    o.engine = f;
    auto s = sparse_store::open(d / "ds", o);
    for (std::uint64_t p = 0; p < 8; ++p) write_one(*s, p, 3, 1);
    s->commit(bytes_of("w1"));
    const std::uint64_t base = f->operations(op_kind::sync);
    prepare_two(*s);
    s->confirm();
    syncs = f->operations(op_kind::sync) - base;
    ASSERT_GE(syncs, 3u);
  }
  int cases = 0;
  for (auto policy : {cut_policy::drop_all, cut_policy::keep_all, cut_policy::random}) {
    for (std::uint64_t n = 0; n <= syncs; ++n) {
      SCOPED_TRACE("policy " + std::to_string(static_cast<int>(policy)) + ", cut after sync " +
                   std::to_string(n));
      const std::string ds = dir_ / ("cut" + std::to_string(cases++));
      sparse_store::create(ds, opts(64 * 4096, 4096, 16 * 4096)).reset();
      auto f = make_fault_engine(engine());
      store_options o;
      o.engine = f;
      bool prepared = false, confirming = false;
      {
        auto s = sparse_store::open(ds, o);
        for (std::uint64_t p = 0; p < 8; ++p) write_one(*s, p, 3, 1);
        s->commit(bytes_of("w1"));
        f->add_rule({op_kind::sync, f->operations(op_kind::sync) + n + 1, fault_action::fail_eio, true});
        try {
          prepare_two(*s);
          prepared = true;
          confirming = true;  // from here on the decision is "commit": epoch 1 may go
          s->confirm();
        } catch (const error&) {
        }
      }
      f->power_cut(policy, n);
      auto open_at = [&](std::uint64_t accept) {
        store_options a = accepting(accept, true);
        return sparse_store::open(ds, a);
      };
      if (!confirming) {
        auto s = open_at(1);  // the caller that rejects epoch 2 finds epoch 1 whole
        expect_epoch1(*s);
      }
      auto s = open_at(2);
      if (prepared || s->epoch() == 2) {  // a completed prepare is durable
        expect_epoch2(*s);
      } else {
        expect_epoch1(*s);
      }
      if (HasFailure()) return;
    }
  }
}

}  // namespace
}  // namespace pheap::test
