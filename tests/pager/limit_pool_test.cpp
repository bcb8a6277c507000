// The pool the automatic buffers of one process share (src/pager/limit_pool.hpp P1-P3) and
// a buffer budget that is a member (buffer_budget.hpp B6), without a pager: grants past the
// cap are refused and recorded, released slots come back, a budget gives back what it holds
// when it goes, and pools are per limit.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>

#include "pager/buffer_budget.hpp"
#include "pager/limit_pool.hpp"

namespace pheap::paging {
namespace {

using clk = std::chrono::steady_clock;

TEST(LimitPool, AGrantThatWouldPassTheCapIsRefusedAndCountsAsContentionForTheOthersOnly) {
  limit_pool p;
  const int a = p.join(), b = p.join();
  EXPECT_EQ(p.members(), 2);
  p.set_cap(100);
  EXPECT_TRUE(p.take(60, a));
  EXPECT_FALSE(p.take(41, b));  // 101 > 100
  EXPECT_EQ(p.held(), 60);
  EXPECT_TRUE(p.contended_by_other(a, clk::now()));   // b was refused: a should give way
  EXPECT_FALSE(p.contended_by_other(b, clk::now()));  // its own refusal is not contention for b
  EXPECT_FALSE(p.contended_by_other(a, clk::now() + 2 * limit_pool::kContention));  // faded
  EXPECT_TRUE(p.take(40, b));
  EXPECT_TRUE(p.full_for(1));
  p.give(40);
  EXPECT_FALSE(p.full_for(40));
  p.take_anyway(50);  // past the cap: B2's overflow must not fail
  EXPECT_EQ(p.held(), 110);
}

TEST(LimitPool, PagersFollowingTheSameLimitShareOnePoolAndOthersDoNot) {
  const auto a = limit_pool::of("cgroup v1 /test/a"), a2 = limit_pool::of("cgroup v1 /test/a");
  const auto b = limit_pool::of("cgroup v1 /test/b");
  EXPECT_EQ(a.get(), a2.get());
  EXPECT_NE(a.get(), b.get());
}

TEST(LimitPool, ABudgetTakesItsSlotsAndFixedBytesFromThePoolAndGivesThemBackWhenItGoes) {
  std::atomic<bool> stop{false};
  auto pool = std::make_shared<limit_pool>();
  pool->set_cap(10 * 100 + 50);  // the fixed 50 bytes and ten slots of 100
  {
    buffer_budget budget(stop);
    budget.configure(1000, 500, 1.0, 0.9);  // its own target (500 slots) is not what binds
    budget.share(pool, 100, 50);
    EXPECT_EQ(pool->members(), 1);
    EXPECT_EQ(pool->held(), 50);
    for (int i = 0; i < 10; ++i) EXPECT_TRUE(budget.try_reserve_below_target()) << i;
    EXPECT_FALSE(budget.try_reserve_below_target());  // the pool is full
    EXPECT_EQ(budget.occupied(), 10);                  // the refused slot was not kept
    EXPECT_EQ(pool->held(), 1050);
    budget.release(3);
    EXPECT_EQ(pool->held(), 750);
    EXPECT_TRUE(budget.try_reserve_below_target());
  }
  EXPECT_EQ(pool->held(), 0);
  EXPECT_EQ(pool->members(), 0);
}

// As the target never goes below the smallest working buffer (buffer_budget.hpp B4), the pool
// never refuses a slot within it: a pool whose cap the others (or the fixed bytes) already
// took must not leave a fault waiting for a slot no eviction can free.
TEST(LimitPool, ABudgetAlwaysGetsItsSmallestWorkingBufferEvenFromAFullPool) {
  std::atomic<bool> stop{false};
  auto pool = std::make_shared<limit_pool>();
  pool->set_cap(10);
  buffer_budget budget(stop);
  budget.configure(1000, 500, 1.0, 0.9);
  budget.share(pool, 100, 50);  // the fixed bytes alone pass the cap
  for (std::size_t i = 0; i < buffer_budget::min_pages; ++i) {
    EXPECT_TRUE(budget.try_reserve_below_target()) << i;
  }
  EXPECT_FALSE(budget.try_reserve_below_target());
  EXPECT_EQ(pool->held(), 50 + 100 * static_cast<std::int64_t>(buffer_budget::min_pages));
}

}  // namespace
}  // namespace pheap::paging
