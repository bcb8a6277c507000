// The pager's lock order as a checker (src/pager/lock_rank.hpp): a lock taken against the
// order aborts naming both locks; locks taken in the order, and released in any order, pass.
// The first tests use checked_mutex directly, so they run in every build; the pager's own
// mutexes are checked where NDEBUG is not defined (Debug: the ASan stage of scripts/test.sh),
// which the last test shows on a real pager (it exists only there: without the checker that
// flush would wait for the lock its own thread holds).
#include <mutex>
#include <type_traits>

#include "pager/lock_rank.hpp"
#include "pager/test_access.hpp"
#include "pager_test_util.hpp"

namespace pheap::test {
namespace {

using paging::checked_mutex;
using paging::lock_rank;

// Takes a lock of rank `first`, then one of rank `second` while holding it.
template <lock_rank first, lock_rank second>
void take_in_turn() {
  checked_mutex<first> one;
  checked_mutex<second> two;
  std::lock_guard a(one);
  std::lock_guard b(two);
}

TEST(LockRank, TakingALockThatRanksBelowOneHeldAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH((take_in_turn<lock_rank::scan, lock_rank::flush>()),
               "lock order violated.*taking flush .*while holding scan");
}

TEST(LockRank, TakingALeafWhileHoldingALeafAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH((take_in_turn<lock_rank::leaf, lock_rank::leaf>()),
               "lock order violated.*taking leaf while holding leaf");
}

TEST(LockRank, LocksTakenInTheOrderAndReleasedInAnyOrderPass) {
  checked_mutex<lock_rank::flush> flush;
  checked_mutex<lock_rank::evict_batch> batch;
  checked_mutex<lock_rank::scan> scan;
  checked_mutex<lock_rank::errors> errors;
  checked_mutex<lock_rank::leaf> leaf;
  {
    std::lock_guard a(flush);
    std::lock_guard b(batch);
    std::lock_guard c(scan);
    std::lock_guard d(errors);
    std::lock_guard e(leaf);
  }
  {
    std::unique_lock a(flush);
    std::unique_lock b(batch);
    a.unlock();  // out of order: the batch lock is still held
    std::lock_guard c(scan);
    b.unlock();
    std::lock_guard d(leaf);
  }
  EXPECT_EQ(paging::lock_ranks::tls_held.n, 0);
  std::lock_guard again(flush);  // nothing held any more: the first rank again
  EXPECT_EQ(paging::lock_ranks::tls_held.n, 1);
}

TEST(LockRank, ThePagersMutexesAreCheckedExactlyWhereAssertionsAre) {
#ifdef NDEBUG
  EXPECT_FALSE(paging::kCheckLockRanks);
  EXPECT_TRUE((std::is_same_v<paging::ranked_mutex<lock_rank::flush>, std::mutex>));
#else
  EXPECT_TRUE(paging::kCheckLockRanks);
  EXPECT_TRUE((std::is_same_v<paging::ranked_mutex<lock_rank::flush>, checked_mutex<lock_rank::flush>>));
#endif
}

#ifndef NDEBUG
// flush → evict_batch is the order; a flush on a thread that holds the evictor's batch lock
// takes them the other way round.
TEST(LockRank, AFlushOnAThreadHoldingTheEvictorsBatchLockAbortsInDebugBuilds) {
  PHEAP_REQUIRE_UFFD(dirty_tracking::automatic);
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        pager pg(mem_store::create(64 * 4096, 4096), pager_options{});
        const auto between = paging::test_access::evictor(pg).hold_between_batches();
        pg.flush({});
      },
      "lock order violated.*taking flush .*while holding evict_batch");
}
#endif

}  // namespace
}  // namespace pheap::test
