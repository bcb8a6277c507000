// Write-behind (src/pager/write_behind.cpp; pager_options::write_behind_ms): pages written,
// then idle for a whole period, are written into the working epoch in the background, so a
// flush writes only what changed since; a page written in every period is never written
// behind; nothing happens while the evictor evicts; a failed write is the next flush's error
// and loses nothing; writers, rounds and flushes at once lose nothing.
// Most tests run rounds by hand (test_access::write_behind_round) with a period no round of
// the thread reaches, so what a round sees is the test's doing, not the scheduler's.
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "pager/test_access.hpp"
#include "pager_test_util.hpp"

// Under TSan, fills inside pheap's SIGBUS handler: tests/support/tsan_signal_fills.cpp.

namespace pheap::test {
namespace {

constexpr std::size_t kPs = 4096;
constexpr std::size_t kPages = 256;
constexpr unsigned kNoThreadRound = 60000;  // ms: the thread's first round never comes

class WriteBehind : public ::testing::Test {
 protected:
  void SetUp() override { PHEAP_REQUIRE_UFFD(dirty_tracking::wp_async); }
  void open(unsigned period_ms, std::size_t buffer_pages = 0) {
    auto s = st_ ? mem_store::reopen(st_) : mem_store::create(kPages * kPs, kPs);
    st_ = s->state();
    pager_options o;
    o.tracking = dirty_tracking::wp_async;
    o.write_behind_ms = period_ms;
    if (buffer_pages != 0) o.buffer_size = buffer_pages * kPs;
    pg_ = std::make_unique<pager>(std::move(s), o);
    ASSERT_TRUE(pg_->stats().write_behind) << pg_->stats();
  }
  void write(std::size_t p, std::uint64_t v) { std::memcpy(pg_->base() + p * kPs, &v, sizeof v); }
  std::uint64_t read(std::size_t p) {
    std::uint64_t v = 0;
    std::memcpy(&v, pg_->base() + p * kPs, sizeof v);
    return v;
  }
  void round() { paging::test_access::write_behind_round(*pg_); }
  std::shared_ptr<mem_store::shared> st_;
  std::unique_ptr<pager> pg_;
};

TEST_F(WriteBehind, LeavesTheFlushOnlyThePagesWrittenSince) {
  open(kNoThreadRound);
  for (std::size_t p = 0; p < 64; ++p) write(p, p + 1);
  round();  // finds the 64 written, and protects them again
  EXPECT_EQ(st_->writes.load(), 0u) << "a page written in the last period was written behind";
  round();  // untouched for a whole period: written behind
  EXPECT_EQ(pg_->stats().write_behind_pages, 64u) << pg_->stats();
  EXPECT_EQ(st_->writes.load(), 64u);
  for (std::size_t p = 0; p < 8; ++p) write(p, p + 1000);
  pg_->flush({});
  const pager_stats s = pg_->stats();
  EXPECT_EQ(s.dirty_pages_written, 8u) << s;
  EXPECT_EQ(st_->writes.load(), 72u);
  pg_.reset();
  open(kNoThreadRound);  // the last commit: what the flush made durable
  for (std::size_t p = 0; p < 64; ++p) ASSERT_EQ(read(p), p < 8 ? p + 1000 : p + 1) << p;
}

TEST_F(WriteBehind, APageWrittenInEveryPeriodIsNeverWrittenBehind) {
  open(kNoThreadRound);
  write(5, 1);
  write(9, 1);
  round();
  for (int period = 0; period < 5; ++period) {
    write(5, 2 + period);  // hot: written again before every round
    round();
  }
  EXPECT_EQ(pg_->stats().write_behind_pages, 1u) << "page 9 only: " << pg_->stats();
  EXPECT_EQ(st_->writes.load(), 1u);
  pg_->flush({});
  EXPECT_EQ(pg_->stats().dirty_pages_written, 1u) << "page 5: " << pg_->stats();
  pg_.reset();
  open(kNoThreadRound);
  EXPECT_EQ(read(5), 6u);
  EXPECT_EQ(read(9), 1u);
}

TEST_F(WriteBehind, WritesNothingWhileTheEvictorEvicts) {
  open(kNoThreadRound, 32);  // a buffer of 32 pages
  pg_->pin(0, 8 * kPs);  // pages 0-7 stay resident: written once, then idle for every round
  for (std::size_t p = 0; p < 8; ++p) write(p, p + 1);
  for (std::uint64_t k = 0; k < 4; ++k) {
    for (std::size_t p = 8; p < 128; ++p) write(p, p + k);  // through 24 slots: evictions
    round();
  }
  const pager_stats s = pg_->stats();
  EXPECT_GT(s.evictions, 0u) << s;
  EXPECT_EQ(s.write_behind_pages, 0u) << "pages 0-7 were written behind out of core: " << s;
  pg_->flush({});
  pg_->unpin(0, 8 * kPs);
  pg_.reset();
  open(kNoThreadRound);
  for (std::size_t p = 0; p < 128; ++p) ASSERT_EQ(read(p), p < 8 ? p + 1 : p + 3) << p;
}

TEST_F(WriteBehind, AFailedWriteIsTheNextFlushsErrorAndLosesNothing) {
  open(kNoThreadRound);
  for (std::size_t p = 0; p < 32; ++p) write(p, p + 1);
  pg_->flush({});
  for (std::size_t p = 0; p < 32; ++p) write(p, p + 100);
  round();
  st_->fail_writes = true;
  round();  // the write fails: its pages are dirty again, the error waits for the flush
  EXPECT_GT(st_->failed_write_batches.load(), 0u);
  st_->fail_writes = false;
  round();  // and write-behind waits for that flush too
  EXPECT_EQ(pg_->stats().write_behind_pages, 0u) << pg_->stats();
  EXPECT_THROW(pg_->flush({}), error);
  pg_->flush({});  // the pages, dirty again, are written now
  pg_.reset();
  open(kNoThreadRound);
  for (std::size_t p = 0; p < 32; ++p) ASSERT_EQ(read(p), p + 100) << p;
}

// Over a real sparse_store (FORMAT.md, "Write path"): a page written behind goes to the home
// the last commit does not use, and the watermark names the last commit's homes; a close with
// no flush (as a crash) reopens at that commit, byte for byte, though the store holds the
// newer copies.
TEST(WriteBehindStore, PagesWrittenBehindAreNoCommitBeforeTheFlush) {
  PHEAP_REQUIRE_UFFD(dirty_tracking::wp_async);
  backing b("posix");
  pager_options o;
  o.tracking = dirty_tracking::wp_async;
  o.write_behind_ms = kNoThreadRound;
  std::uint64_t e1 = 0;
  {
    pager pg(b.create(kPages * kPs, kPs), o);
    ASSERT_TRUE(pg.stats().write_behind) << pg.stats();
    for (std::size_t p = 0; p < 64; ++p) std::memset(pg.base() + p * kPs, 1, kPs);
    e1 = pg.flush({});
    for (std::size_t p = 0; p < 64; ++p) std::memset(pg.base() + p * kPs, 2, kPs);
    paging::test_access::write_behind_round(pg);
    paging::test_access::write_behind_round(pg);
    ASSERT_EQ(pg.stats().write_behind_pages, 64u) << pg.stats();
    EXPECT_EQ(pg.store().epoch(), e1) << "write-behind committed";
  }  // closed without a flush
  pager pg(b.reopen(), o);
  EXPECT_EQ(pg.store().epoch(), e1);
  for (std::size_t p = 0; p < 64; ++p) {
    for (std::size_t i = 0; i < kPs; i += 512) ASSERT_EQ(pg.base()[p * kPs + i], std::byte{1}) << p << " " << i;
  }
}

// While an epoch is prepared (two-phase commit) nothing is written behind (a write of a page
// the prepared epoch changed would wait for confirm()); the pages are the next flush's.
TEST(WriteBehindStore, NothingIsWrittenBehindWhileAnEpochIsPrepared) {
  PHEAP_REQUIRE_UFFD(dirty_tracking::wp_async);
  backing b("posix");
  pager_options o;
  o.tracking = dirty_tracking::wp_async;
  o.write_behind_ms = kNoThreadRound;
  std::uint64_t e3 = 0;
  {
    pager pg(b.create(kPages * kPs, kPs), o);
    for (std::size_t p = 0; p < 32; ++p) std::memset(pg.base() + p * kPs, 1, kPs);
    pg.flush({});
    for (std::size_t p = 0; p < 32; ++p) std::memset(pg.base() + p * kPs, 2, kPs);
    const std::uint64_t e2 = pg.prepare({});
    for (std::size_t p = 0; p < 32; ++p) std::memset(pg.base() + p * kPs, 3, kPs);
    paging::test_access::write_behind_round(pg);
    paging::test_access::write_behind_round(pg);  // idle for a period, but an epoch is prepared
    EXPECT_EQ(pg.stats().write_behind_pages, 0u) << pg.stats();
    EXPECT_EQ(pg.confirm(), e2);
    e3 = pg.flush({});
    EXPECT_EQ(pg.stats().dirty_pages_written, 96u) << "32 by each flush and the prepare: " << pg.stats();
  }
  pager pg(b.reopen(), o);
  EXPECT_EQ(pg.store().epoch(), e3);
  for (std::size_t p = 0; p < 32; ++p) ASSERT_EQ(pg.base()[p * kPs + 100], std::byte{3}) << p;
}

TEST_F(WriteBehind, IsOffWithoutWpAsyncTracking) {
  PHEAP_REQUIRE_UFFD(dirty_tracking::wp_sync);
  pager_options o;
  o.tracking = dirty_tracking::wp_sync;
  o.write_behind_ms = 10;
  pager pg(mem_store::create(kPages * kPs, kPs), o);
  EXPECT_FALSE(pg.stats().write_behind);
}

// Its own thread, every 5 ms, beside two writers and a flushing thread: every flush commits
// what was written before it, whatever write-behind took meanwhile. The writers write each page
// every 64 steps or so (a few always), so most pages stay idle for a few periods; the test runs
// until write-behind has written some (and 20 flushes ran), or fails after a minute.
TEST_F(WriteBehind, RoundsBesideWritersAndFlushesLoseNothing) {
  open(5);
  std::atomic<bool> stop{false};
  std::vector<std::thread> writers;
  for (std::size_t w = 0; w < 2; ++w) {
    writers.emplace_back([&, w] {
      for (std::uint64_t g = 1; !stop.load(); ++g) {
        for (std::size_t p = w; p < kPages; p += 2) {
          if ((p / 2 + g) % 64 == 0 || p < 8) write(p, g);
        }
        std::this_thread::sleep_for(std::chrono::microseconds(500));
      }
    });
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (int f = 0; f < 20 || pg_->stats().write_behind_pages == 0; ++f) {
    if (std::chrono::steady_clock::now() > deadline) {
      ADD_FAILURE() << "nothing written behind in a minute: " << pg_->stats();
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(15));
    pg_->flush({});
  }
  stop = true;
  for (auto& t : writers) t.join();
  std::vector<std::uint64_t> last(kPages);
  for (std::size_t p = 0; p < kPages; ++p) last[p] = read(p);
  pg_->flush({});
  pg_.reset();
  open(kNoThreadRound);
  for (std::size_t p = 0; p < kPages; ++p) ASSERT_EQ(read(p), last[p]) << p;
}

}  // namespace
}  // namespace pheap::test
