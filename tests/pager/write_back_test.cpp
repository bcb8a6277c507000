// A victim whose write-back is in flight (page_table.hpp I8, evictor.cpp steps 5-6): a fault
// on it is filled from the evictor's copy without waiting for the write, and nothing is lost
// when that write fails or when a flush comes while it is in flight. The store double holds
// the evictor's write (mem_store hold_writes) so that the test acts while it is in flight.
#include <chrono>
#include <cstring>
#include <future>
#include <thread>
#include <vector>

#include "pager/test_access.hpp"
#include "pager_test_util.hpp"

// Under TSan, fills inside pheap's SIGBUS handler: tests/support/tsan_signal_fills.cpp.

namespace pheap::test {
namespace {

constexpr std::size_t kPs = 4096;
constexpr std::size_t kPages = 256;
constexpr std::chrono::seconds kHang{60};  // a wait this long is a hang, not a slow machine

struct wb_param {
  dirty_tracking mode;
  fault_filling fill;
};

class WriteBackInFlight : public ::testing::TestWithParam<wb_param> {
 protected:
  void SetUp() override {
    PHEAP_REQUIRE_UFFD(GetParam().mode);
    auto s = mem_store::create(kPages * kPs, kPs);
    st_ = s->state();
    // Every page has data in the store, so that no fault fills never-written pages ahead of
    // it (zero-ahead), which would take the slots the held batch frees.
    std::vector<std::byte> bytes(kPages * kPs);
    std::vector<page_write> ws;
    for (std::size_t p = 0; p < kPages; ++p) {
      const std::uint64_t v = value(p, 100);
      std::memcpy(bytes.data() + p * kPs, &v, sizeof v);
      ws.push_back({p, bytes.data() + p * kPs});
    }
    s->write_pages(ws);
    s->commit({});
    pager_options o;
    o.buffer_size = 64 * kPs;  // fixed: no victim cache, so no fill comes from a kept copy
    o.read_ahead = 0;  // a fault fills its page only: the store reads counted are its own
    o.tracking = GetParam().mode;
    o.fault_fill = GetParam().fill;
    pg_ = std::make_unique<pager>(std::move(s), o);
  }
  void TearDown() override {
    if (st_) st_->let_writes_go = true;  // never leave the evictor held
  }

  static std::uint64_t value(std::size_t p, std::uint64_t gen) { return p * 7 + 1 + gen; }
  std::uint64_t* word(std::size_t p) { return reinterpret_cast<std::uint64_t*>(pg_->base() + p * kPs); }
  std::uint64_t read(std::size_t p) { return *reinterpret_cast<volatile std::uint64_t*>(word(p)); }
  paging::pager_impl& impl() { return paging::test_access::impl(*pg_); }
  paging::pager_core& core() { return paging::test_access::core(*pg_); }
  bool writing(std::size_t p) { return (core().table.load(p) & paging::ps::writing) != 0; }

  // Writes pages 0, 1, ... (value(p, 0)) until an eviction batch has let its victims go
  // `writing`, holds that batch's write in the store, and returns those victims. The writes
  // stop at the first page that sees them, before the batch gives back the slots it freed,
  // so every fault below finds a free slot while the evictor is held.
  std::vector<std::size_t> write_until_a_write_back_is_held() {
    st_->hold_writes = 1;
    std::size_t written = 0;
    std::vector<std::size_t> w;
    for (; written < kPages && w.empty(); ++written) {
      *word(written) = value(written, 0);
      for (std::size_t q = 0; q <= written; ++q) {
        if (writing(q)) w.push_back(q);
      }
    }
    written_ = written;
    const auto deadline = std::chrono::steady_clock::now() + kHang;
    while (st_->held_writes.load() == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_EQ(st_->held_writes.load(), 1u) << "the evictor's write never reached the store";
    w.clear();
    for (std::size_t q = 0; q < written; ++q) {
      if (writing(q)) w.push_back(q);
    }
    return w;
  }

  // Reads page p on another thread: its value, or nullopt when the read did not return within
  // kHang (it waited for the held write).
  std::optional<std::uint64_t> read_without_waiting_for_the_write(std::size_t p) {
    auto f = std::async(std::launch::async, [this, p] { return read(p); });
    if (f.wait_for(kHang) != std::future_status::ready) {
      ADD_FAILURE() << "page " << p << ": word 0x" << std::hex << core().table.load(p) << std::dec
                    << ", buffer slots used " << core().budget.occupied() << "; " << pg_->stats();
      st_->let_writes_go = true;  // let the read finish, so the test can end
      f.wait();
      return std::nullopt;
    }
    return f.get();
  }

  // A victim p of the held batch (of `w`, all of them) read back, so filled from the evictor's
  // copy, and written again: value(p, gen) is newer than the write in flight.
  void write_a_victim_again_while_its_write_is_held(std::uint64_t gen, std::vector<std::size_t>& w,
                                                    std::size_t& p) {
    w = write_until_a_write_back_is_held();
    ASSERT_FALSE(w.empty());
    p = w.front();
    ASSERT_TRUE(read_without_waiting_for_the_write(p).has_value());
    *word(p) = value(p, gen);
  }

  // Whether the store's current (uncommitted) copy of page p starts with v.
  bool store_holds(std::size_t p, std::uint64_t v) {
    std::lock_guard lk(st_->mu);
    const auto it = st_->current.find(p);
    if (it == st_->current.end()) return false;
    std::uint64_t got;
    std::memcpy(&got, it->second->data(), sizeof got);
    return got == v;
  }

  // The pages written so far, from a new handle on the last commit.
  void expect_committed(std::size_t changed, std::uint64_t gen_changed) {
    auto back = mem_store::reopen(st_);
    std::vector<std::byte> b(kPs);
    for (std::size_t p = 0; p < written_; ++p) {
      page_read r{p, b.data()};
      back->read_pages(std::span<const page_read>(&r, 1));
      std::uint64_t v;
      std::memcpy(&v, b.data(), sizeof v);
      EXPECT_EQ(v, value(p, p == changed ? gen_changed : 0)) << "page " << p;
    }
  }

  std::shared_ptr<mem_store::shared> st_;
  std::unique_ptr<pager> pg_;
  std::size_t written_ = 0;
};

TEST_P(WriteBackInFlight, AFaultOnAVictimWhoseWriteIsInFlightIsFilledFromTheEvictorsCopyWithoutWaitingForIt) {
  const std::vector<std::size_t> w = write_until_a_write_back_is_held();
  ASSERT_FALSE(w.empty());
  const std::size_t p = w.front();
  const std::uint64_t hits0 = pg_->stats().write_back_hits;
  const std::uint64_t reads0 = st_->reads.load();
  const auto v = read_without_waiting_for_the_write(p);
  ASSERT_TRUE(v.has_value()) << "the fault waited for the write: " << pg_->stats();
  EXPECT_EQ(*v, value(p, 0));
  EXPECT_EQ(st_->held_writes.load(), 1u) << "the write was still in flight";
  EXPECT_GE(pg_->stats().write_back_hits - hits0, 1u) << pg_->stats();
  EXPECT_EQ(st_->reads.load(), reads0) << "no store read";
  EXPECT_TRUE(writing(p)) << "filled again, still `writing` until the write lands (I8)";

  st_->let_writes_go = true;
  impl().wait_evictor_idle();
  EXPECT_FALSE(writing(p));
  EXPECT_EQ(impl().check_invariants(), "");
  for (std::size_t q = 0; q < written_; ++q) ASSERT_EQ(read(q), value(q, 0)) << "page " << q;
  pg_->flush({});
  expect_committed(kPages, 0);
}

TEST_P(WriteBackInFlight, WhenTheWriteFailsAVictimFilledAgainStaysDirtyAndTheOthersComeBackDirty) {
  std::vector<std::size_t> w;
  std::size_t p = 0;
  ASSERT_NO_FATAL_FAILURE(write_a_victim_again_while_its_write_is_held(5, w, p));
  ASSERT_GE(w.size(), 2u) << "no other victim in the batch to check";

  st_->fail_writes = true;
  st_->let_writes_go = true;
  const auto deadline = std::chrono::steady_clock::now() + kHang;
  while (st_->failed_write_batches.load() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_GE(st_->failed_write_batches.load(), 1u);
  {
    // Between batches (the evictor keeps trying, and failing, while the buffer is full).
    const auto between = paging::test_access::evictor(*pg_).hold_between_batches();
    for (const std::size_t q : w) {
      const std::uint32_t s = core().table.load(q);
      EXPECT_EQ(paging::ps::kind(s), paging::ps::resident) << "page " << q;
      EXPECT_TRUE(s & paging::ps::dirty) << "page " << q;
      EXPECT_FALSE(s & paging::ps::writing) << "page " << q;
    }
  }
  st_->fail_writes = false;
  (void)paging::test_access::evictor(*pg_).hold_between_batches();  // a batch that saw fail_writes has ended
  EXPECT_THROW(pg_->flush({}), error) << "the failed write-back is reported by the next flush";
  pg_->flush({});
  impl().wait_evictor_idle();  // the buffer was over its limit (the pages taken back): evicting
  EXPECT_EQ(impl().check_invariants(), "");
  expect_committed(p, 5);
}

TEST_P(WriteBackInFlight, AFlushWritesAVictimFilledAndWrittenAgainAfterItsOlderWriteLands) {
  std::vector<std::size_t> w;
  std::size_t p = 0;
  ASSERT_NO_FATAL_FAILURE(write_a_victim_again_while_its_write_is_held(9, w, p));

  // The flush must not write p before the held write of its older bytes lands (that write
  // would then overwrite it). Let go only once the flush has either set p aside to write after
  // the batch (flush_write_back_waits) or written it to the store (wrong): no time window.
  const std::uint64_t waits0 = pg_->stats().flush_write_back_waits;
  auto f = std::async(std::launch::async, [this] { return pg_->flush({}); });
  const auto hang = std::chrono::steady_clock::now() + kHang;
  bool hung = false;
  while (pg_->stats().flush_write_back_waits == waits0 && !store_holds(p, value(p, 9))) {
    if (std::chrono::steady_clock::now() > hang) {
      hung = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const bool written_early = store_holds(p, value(p, 9));
  const std::uint64_t waits = pg_->stats().flush_write_back_waits - waits0;
  st_->let_writes_go = true;
  ASSERT_FALSE(hung) << "the flush neither wrote page " << p << " nor waited: " << pg_->stats();
  EXPECT_FALSE(written_early) << "the flush wrote page " << p << " before its older write landed";
  EXPECT_EQ(waits, 1u);
  ASSERT_EQ(f.wait_for(kHang), std::future_status::ready);
  f.get();
  EXPECT_EQ(read(p), value(p, 9));
  expect_committed(p, 9);
  impl().wait_evictor_idle();
  EXPECT_EQ(impl().check_invariants(), "");
}

std::vector<wb_param> wb_params() {
  return {{dirty_tracking::wp_async, fault_filling::workers},
          {dirty_tracking::wp_async, fault_filling::faulting_thread},
          {dirty_tracking::wp_sync, fault_filling::workers},
          {dirty_tracking::all_resident, fault_filling::faulting_thread}};
}

INSTANTIATE_TEST_SUITE_P(all, WriteBackInFlight, ::testing::ValuesIn(wb_params()), [](const auto& i) {
  return std::string(to_string(i.param.mode)) + "_" + to_string(i.param.fill);
});

}  // namespace
}  // namespace pheap::test
