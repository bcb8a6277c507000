// The limit follower's rule on its own (src/pager/memory_limit.hpp), with a sample double in
// place of the memory cgroup and the time given by the test: the target is the limit less the
// rest of the process and a reserve, and the reserve learns the application's bursts (twice
// the largest growth of the rest of the process between two samples near the limit, halved
// every kBurstHalfLife since, capped at an eighth of the limit).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>

#include "pager/memory_limit.hpp"

namespace pheap::paging {
namespace {

constexpr std::uint64_t MiB = 1ull << 20;
constexpr std::size_t kPage = 4096;
using clk = std::chrono::steady_clock;

// A follower at 4 KiB pages, no bookkeeping per page, a 4 MiB base reserve, over a cgroup
// double of 200 MiB whose usage the test sets; samples 10 ms apart unless the test waits.
struct doubled {
  memory_sample now{200 * MiB, 0};
  clk::time_point t{};
  limit_follower f{[this] { return now; }, "double", kPage, 0, 4 * MiB};
  // Target in MiB when `rest` MiB of the process and `buffer` MiB of buffer are in use.
  std::uint64_t target(std::uint64_t rest, std::uint64_t buffer) {
    now.used = (rest + buffer) * MiB;
    t += std::chrono::milliseconds(10);
    return f(static_cast<std::size_t>(buffer * MiB / kPage), t) * kPage / MiB;
  }
  // Target in MiB when the cgroup counts `used` MiB, `buffer` MiB of which are the buffer, and
  // `beside` MiB are pooled beside it (limit_pool.hpp), counted by the kernel or not.
  std::uint64_t target_beside(std::uint64_t used, std::uint64_t buffer, std::uint64_t beside) {
    now.used = used * MiB;
    t += std::chrono::milliseconds(10);
    return f(static_cast<std::size_t>(buffer * MiB / kPage), beside * MiB, t) * kPage / MiB;
  }
  void wait(clk::duration d) { t += d; }
};

TEST(LimitFollower, TargetIsTheLimitLessTheRestOfTheProcessAndTheBaseReserve) {
  doubled d;
  EXPECT_EQ(d.target(30, 0), 166u);
  EXPECT_EQ(d.f.reserve_now(), 4 * MiB);
}

TEST(LimitFollower, TheBufferFillingUpIsNoBurst) {
  doubled d;
  EXPECT_EQ(d.target(30, 0), 166u);
  EXPECT_EQ(d.target(30, 100), 166u);  // 100 MiB of the pager's own pages arrived: rest unchanged
  EXPECT_EQ(d.target(30, 166), 166u);
  EXPECT_EQ(d.f.reserve_now(), 4 * MiB);
}

TEST(LimitFollower, AfterABurstTheReserveIsTwiceTheGrowthSeenInOneSample) {
  doubled d;
  EXPECT_EQ(d.target(30, 160), 166u);
  EXPECT_EQ(d.target(31, 160), 165u);  // +1 MiB: twice that is within the base reserve
  EXPECT_EQ(d.f.reserve_now(), 4 * MiB);
  EXPECT_EQ(d.target(39, 150), 145u);  // +8 MiB in one sample: reserve 16 MiB
  EXPECT_EQ(d.f.reserve_now(), 16 * MiB);
  EXPECT_EQ(d.target(31, 145), 153u);  // freed again 10 ms later: its room stays reserved
  EXPECT_GE(d.f.reserve_now(), 15 * MiB);
  EXPECT_NE(d.f.describe().find("bursts up to 8.0 MiB"), std::string::npos) << d.f.describe();
}

TEST(LimitFollower, SlowGrowthIsNoBurst) {
  doubled d;
  for (std::uint64_t rest = 30; rest <= 50; ++rest) (void)d.target(rest, 10);
  EXPECT_EQ(d.f.reserve_now(), 4 * MiB);  // 1 MiB per sample: twice that is below the base
  EXPECT_EQ(d.target(50, 10), 146u);
}

TEST(LimitFollower, GrowthWithRoomToSpareIsNoBurst) {
  doubled d;
  (void)d.target(2, 0);
  EXPECT_EQ(d.target(26, 0), 170u);  // +24 MiB at start-up, the cgroup at 13 % of its limit
  EXPECT_EQ(d.f.reserve_now(), 4 * MiB);
}

TEST(LimitFollower, AnOldBurstFadesByHalfEveryHalfLife) {
  doubled d;
  (void)d.target(30, 150);
  (void)d.target(42, 140);  // +12 MiB: reserve 24 MiB
  EXPECT_EQ(d.f.reserve_now(), 24 * MiB);
  d.wait(limit_follower::kBurstHalfLife);
  (void)d.target(42, 140);
  EXPECT_NEAR(static_cast<double>(d.f.reserve_now()) / MiB, 12.0, 0.1);
  d.wait(3 * limit_follower::kBurstHalfLife);
  EXPECT_EQ(d.target(42, 140), 154u);  // 24 / 16 = 1.5 MiB of burst: the base reserve again
  EXPECT_EQ(d.f.reserve_now(), 4 * MiB);
}

TEST(LimitFollower, ARepeatedBurstKeepsItsReserve) {
  doubled d;
  for (int step = 0; step < 10; ++step) {  // a batch buffer of 10 MiB, taken and freed every 5 s
    (void)d.target(30, 150);
    (void)d.target(40, 145);
    d.wait(std::chrono::seconds(5));
  }
  (void)d.target(30, 150);  // just before the next burst
  EXPECT_GE(d.f.reserve_now(), 14 * MiB);  // 2 × 10 MiB × 2^-0.5
}

TEST(LimitFollower, TheBurstReserveIsCappedAtAnEighthOfTheLimit) {
  doubled d;
  (void)d.target(10, 180);
  (void)d.target(90, 100);  // +80 MiB at once: twice that would leave nothing
  EXPECT_EQ(d.f.reserve_now(), 25 * MiB);
  EXPECT_EQ(d.target(90, 100), 85u);
}

// Pooled memory beside the buffer (limit_pool.hpp: other pagers' buffers following the same
// limit, this pager's memory outside its buffer) is counted once, whether the kernel counts it
// yet or not: the memory in use plus the target is the limit less the reserve either way, and
// the cap (what all pooled memory may take together) includes what is pooled but not touched.
TEST(LimitFollower, TheTargetLeavesTheReserveWhetherMemoryBesideTheBufferIsTouchedYetOrNot) {
  doubled d;
  EXPECT_EQ(d.target_beside(30, 0, 20), 166u);  // 20 MiB pooled, not touched: 30 + 166 + 4 = 200
  EXPECT_EQ(d.f.cap(), 186 * MiB);     // the 166 and the 20
  EXPECT_EQ(d.target_beside(50, 0, 20), 146u);  // touched now: 50 + 146 + 4 = 200
  EXPECT_EQ(d.f.cap(), 166 * MiB);
}

TEST(LimitFollower, AnotherBuffersGrowthBesideThisOneIsNotABurst) {
  doubled d;
  (void)d.target_beside(180, 150, 0);  // near the limit
  EXPECT_EQ(d.target_beside(190, 140, 20), 146u);  // the other buffer took 20 MiB at once: 200-30-4-20
  EXPECT_EQ(d.f.cap(), 166 * MiB);
  EXPECT_EQ(d.f.reserve_now(), 4 * MiB);  // the base reserve: no burst learned
}

}  // namespace
}  // namespace pheap::paging
