// The pool the automatic buffers of one process share (src/pager/limit_pool.hpp P1-P3) and
// a buffer budget that is a member (buffer_budget.hpp B6), without a pager: grants past the
// cap are refused and recorded, released slots come back, a budget gives back what it holds
// when it goes, pools are per limit, and a pool shared across processes (a memory cgroup's)
// gets back what a member that died without leaving held, and goes with its last member — or,
// when the last one died, with the next process's sweep (P5).
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "common/test_util.hpp"
#include "pager/buffer_budget.hpp"
#include "pager/limit_pool.hpp"

namespace pheap::paging {
namespace {

using clk = std::chrono::steady_clock;
using test::wait_until;

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
  p.give(40, b);
  EXPECT_FALSE(p.full_for(40));
  p.take_anyway(50, a);  // past the cap: B2's overflow must not fail
  EXPECT_EQ(p.held(), 110);
}

TEST(LimitPool, PagersFollowingTheSameLimitShareOnePoolAndOthersDoNot) {
  const auto a = limit_pool::of("cgroup v1 /test/a", false), a2 = limit_pool::of("cgroup v1 /test/a", false);
  const auto b = limit_pool::of("cgroup v1 /test/b", false);
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
    ASSERT_TRUE(budget.share(pool, 100, 50));
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
  ASSERT_TRUE(budget.share(pool, 100, 50));  // the fixed bytes alone pass the cap
  for (std::size_t i = 0; i < buffer_budget::min_pages; ++i) {
    EXPECT_TRUE(budget.try_reserve_below_target()) << i;
  }
  EXPECT_FALSE(budget.try_reserve_below_target());
  EXPECT_EQ(pool->held(), 50 + 100 * static_cast<std::int64_t>(buffer_budget::min_pages));
}

// P3 without a refusal: a newcomer whose target (what the others leave it) stops it before it
// asks the pool is never refused by P1, yet it is short of its fair share; a fault of it that
// waits for a slot must count as contention, so that the member that filled first comes down
// to cap / members at its next sample. And a budget at its own maximum is not short: its
// wait is no one else's doing.
TEST(LimitPool, AFaultWaitingBelowItsFairShareCountsAsContentionForTheOthers) {
  std::atomic<bool> stop{false};
  auto pool = std::make_shared<limit_pool>();
  pool->set_cap(100 * 100);  // room for 100 slots of 100 bytes
  buffer_budget first(stop), newcomer(stop);
  first.configure(1000, 90, 1.0, 0.9);
  newcomer.configure(1000, 90, 1.0, 0.9);
  ASSERT_TRUE(first.share(pool, 100, 0));
  ASSERT_TRUE(newcomer.share(pool, 100, 0));
  for (int i = 0; i < 80; ++i) ASSERT_TRUE(first.try_reserve_below_target()) << i;
  // The newcomer's sample leaves it what the first does not hold: 20 slots.
  newcomer.follow([](std::size_t) { return std::size_t{20}; }, std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(3));
  newcomer.follow_limit();
  ASSERT_EQ(newcomer.target_pages(), 20u);
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(newcomer.try_reserve_below_target()) << i;
  EXPECT_FALSE(pool->contended_by_other(newcomer.member(), clk::now()));  // nothing refused
  std::atomic<bool> waited{false};
  std::thread fault([&] { waited = newcomer.reserve(); });  // waits: no evictor frees a slot
  wait_until([&] { return pool->contended_by_other(first.member(), clk::now()); },
             "the waiting fault, 20 of 100 slots, to count as contention for the first");
  EXPECT_FALSE(pool->contended_by_other(newcomer.member(), clk::now()));
  stop = true;
  newcomer.notify_freed();
  fault.join();
  EXPECT_FALSE(waited.load());
}

TEST(LimitPool, AFaultWaitingAtItsOwnMaximumIsNoContention) {
  std::atomic<bool> stop{false};
  auto pool = std::make_shared<limit_pool>();
  pool->set_cap(100 * 100);
  buffer_budget first(stop), small(stop);
  first.configure(1000, 90, 1.0, 0.9);
  small.configure(1000, 20, 1.0, 0.9);  // a buffer of 20 slots at most, by its own option
  ASSERT_TRUE(first.share(pool, 100, 0));
  ASSERT_TRUE(small.share(pool, 100, 0));
  for (int i = 0; i < 80; ++i) ASSERT_TRUE(first.try_reserve_below_target()) << i;
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(small.try_reserve_below_target()) << i;
  std::thread fault([&] { (void)small.reserve(); });
  wait_until([&] { return small.waits() != 0; }, "the fault to wait for a slot");
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // rounds of its wait
  EXPECT_FALSE(pool->contended_by_other(first.member(), clk::now()));
  stop = true;
  small.notify_freed();
  fault.join();
}

// The name of a limit no other test uses, so that the shared pool is this test's own.
std::string unique_limit(const char* what) {
  return std::string("cgroup v1 /limit_pool_test/") + what + "/" + std::to_string(::getpid());
}

// P4: the child — forked after the parent joined, as a worker of a process that opened its
// datastore first — joins the shared pool and takes 1000 bytes; while it lives a reap leaves its
// hold alone; then it dies without leaving (as an OOM-killed MPI rank would) and the parent's
// next reap gets the hold back.
TEST(LimitPool, ALiveMemberKeepsItsHoldAndOneThatDiedWithoutLeavingGivesItBackAtTheNextReap) {
  const std::string name = unique_limit("reap");
  auto pool = limit_pool::of(name, true);
  ASSERT_TRUE(pool->shared()) << "/dev/shm is needed for a shared pool";
  const int me = pool->join();
  ASSERT_GE(me, 0);
  int up[2], down[2];
  ASSERT_EQ(::pipe(up), 0);
  ASSERT_EQ(::pipe(down), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    const int m = pool->join();
    if (m < 0 || !pool->take(1000, m)) ::_exit(1);
    char c = 1;
    if (::write(up[1], &c, 1) != 1) ::_exit(2);
    if (::read(down[0], &c, 1) != 1) ::_exit(3);  // until the parent has reaped once
    ::_exit(0);  // no leave()
  }
  char c = 0;
  ASSERT_EQ(::read(up[0], &c, 1), 1);
  EXPECT_EQ(pool->held(), 1000);
  EXPECT_EQ(pool->members(), 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(120));  // reap looks every 100 ms at most
  pool->reap();
  EXPECT_EQ(pool->held(), 1000) << "the child is alive: its hold stays";
  EXPECT_EQ(pool->members(), 2);
  ASSERT_EQ(::write(down[1], &c, 1), 1);
  int st = 0;
  ::waitpid(child, &st, 0);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << st;
  std::this_thread::sleep_for(std::chrono::milliseconds(120));
  pool->reap();
  EXPECT_EQ(pool->held(), 0);
  EXPECT_EQ(pool->members(), 1);
  pool->leave(me);
  for (int fd : {up[0], up[1], down[0], down[1]}) ::close(fd);
}

// The shared file goes with the last member; a member that joins after that (through the same
// object, which still maps the removed file) starts a fresh file with no cap and no holds.
TEST(LimitPool, TheSharedFileGoesWithItsLastMemberAndALaterJoinStartsAFreshOne) {
  const std::string name = unique_limit("file");
  auto pool = limit_pool::of(name, true);
  ASSERT_TRUE(pool->shared());
  struct stat sb {};
  const int a = pool->join(), b = pool->join();
  pool->set_cap(5000);
  ASSERT_TRUE(pool->take(3000, a));
  pool->leave(a);
  EXPECT_EQ(pool->held(), 0);
  EXPECT_EQ(::stat(pool->path().c_str(), &sb), 0) << "b is still a member";
  pool->leave(b);
  EXPECT_NE(::stat(pool->path().c_str(), &sb), 0) << "the last member left";
  const int c = pool->join();
  ASSERT_GE(c, 0);
  EXPECT_EQ(::stat(pool->path().c_str(), &sb), 0);
  EXPECT_EQ(pool->cap(), INT64_MAX);  // a fresh pool: no sample yet
  EXPECT_EQ(pool->members(), 1);
  pool->leave(c);
  EXPECT_NE(::stat(pool->path().c_str(), &sb), 0);
}

// P5: a process killed while it was the last member of its pool (the child: it joins and ends
// without leave()) leaves the file; the next process's sweep removes it, and leaves the file of
// a pool with a live member and a file of this user's prefix that is not a pool file.
TEST(LimitPool, APoolFileWhoseMembersAllDiedIsRemovedByTheNextSweepAndOthersAreLeftAlone) {
  auto kept = limit_pool::of(unique_limit("kept"), true);
  ASSERT_TRUE(kept->shared());
  const int me = kept->join();
  ASSERT_GE(me, 0);
  const std::string foreign =
      "/dev/shm/pheap-pool-" + std::to_string(::geteuid()) + "-not-a-pool-" + std::to_string(::getpid());
  {
    std::FILE* f = std::fopen(foreign.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("not a pool", f);
    std::fclose(f);
  }
  int up[2];
  ASSERT_EQ(::pipe(up), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    auto p = limit_pool::of(unique_limit("abandoned") + "/" + std::to_string(::getpid()), true);
    if (!p->shared() || p->join() < 0) ::_exit(1);
    const std::string path = p->path();
    if (::write(up[1], path.c_str(), path.size()) != static_cast<ssize_t>(path.size())) ::_exit(2);
    ::_exit(0);  // no leave(): killed as the last member
  }
  ::close(up[1]);
  char buf[256] = {};
  const ssize_t n = ::read(up[0], buf, sizeof buf - 1);
  ::close(up[0]);
  int st = 0;
  ::waitpid(child, &st, 0);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << st;
  ASSERT_GT(n, 0);
  const std::string abandoned(buf, static_cast<std::size_t>(n));
  struct stat sb {};
  ASSERT_EQ(::stat(abandoned.c_str(), &sb), 0) << "the dead member's file is left behind";
  EXPECT_GE(limit_pool::remove_abandoned(), 1);
  EXPECT_NE(::stat(abandoned.c_str(), &sb), 0) << abandoned << " should be gone";
  EXPECT_EQ(::stat(kept->path().c_str(), &sb), 0) << "a live member keeps its pool's file";
  EXPECT_EQ(kept->members(), 1);
  EXPECT_EQ(::stat(foreign.c_str(), &sb), 0) << "not a pool file: not the sweep's to remove";
  ::unlink(foreign.c_str());
  kept->leave(me);
  EXPECT_NE(::stat(kept->path().c_str(), &sb), 0);
}

}  // namespace
}  // namespace pheap::paging
