// The limit follower's rule on its own (src/pager/memory_limit.hpp), with a sample double in
// place of the memory cgroup: the target is the limit less the rest of the process and a
// reserve, and the reserve learns the application's bursts (twice the largest growth of the
// rest of the process between two samples, capped at a quarter of the limit).
#include <gtest/gtest.h>

#include <cstdint>

#include "pager/memory_limit.hpp"

namespace pheap::paging {
namespace {

constexpr std::uint64_t MiB = 1ull << 20;
constexpr std::size_t kPage = 4096;

// A follower at 4 KiB pages, no bookkeeping per page, a 4 MiB base reserve, over a cgroup
// double whose limit and usage the test sets.
struct doubled {
  memory_sample now{100 * MiB, 0};
  limit_follower f{[this] { return now; }, "double", kPage, 0, 4 * MiB};
  // Target in MiB when `rest` MiB of the process and `buffer` MiB of buffer are in use.
  std::uint64_t target(std::uint64_t rest, std::uint64_t buffer) {
    now.used = (rest + buffer) * MiB;
    return f(static_cast<std::size_t>(buffer * MiB / kPage)) * kPage / MiB;
  }
};

TEST(LimitFollower, TargetIsTheLimitLessTheRestOfTheProcessAndTheBaseReserve) {
  doubled d;
  EXPECT_EQ(d.target(30, 0), 66u);
  EXPECT_EQ(d.f.reserve_now(), 4 * MiB);
}

TEST(LimitFollower, TheBufferFillingUpIsNoBurst) {
  doubled d;
  EXPECT_EQ(d.target(30, 0), 66u);
  EXPECT_EQ(d.target(30, 40), 66u);  // 40 MiB of the pager's own pages arrived: rest unchanged
  EXPECT_EQ(d.target(30, 66), 66u);
  EXPECT_EQ(d.f.reserve_now(), 4 * MiB);
}

TEST(LimitFollower, AfterABurstTheReserveIsTwiceTheLargestGrowthSeenInOneSample) {
  doubled d;
  EXPECT_EQ(d.target(30, 60), 66u);
  EXPECT_EQ(d.target(31, 60), 65u);  // +1 MiB: within the base reserve's 2 MiB × 2
  EXPECT_EQ(d.f.reserve_now(), 4 * MiB);
  EXPECT_EQ(d.target(39, 50), 45u);  // +8 MiB in one sample: reserve 16 MiB
  EXPECT_EQ(d.f.reserve_now(), 16 * MiB);
  EXPECT_EQ(d.target(31, 45), 53u);  // the burst freed again: its room stays reserved
  EXPECT_EQ(d.f.reserve_now(), 16 * MiB);
  EXPECT_NE(d.f.describe().find("bursts up to 8.0 MiB"), std::string::npos) << d.f.describe();
}

TEST(LimitFollower, SlowGrowthIsNoBurst) {
  doubled d;
  for (std::uint64_t rest = 30; rest <= 50; ++rest) (void)d.target(rest, 10);
  EXPECT_EQ(d.f.reserve_now(), 4 * MiB);  // 1 MiB per sample: twice that is below the base
  EXPECT_EQ(d.target(50, 10), 46u);
}

TEST(LimitFollower, TheBurstReserveIsCappedAtAQuarterOfTheLimit) {
  doubled d;
  (void)d.target(10, 0);
  (void)d.target(50, 0);  // +40 MiB at once: twice that would leave nothing
  EXPECT_EQ(d.f.reserve_now(), 25 * MiB);
  EXPECT_EQ(d.target(50, 0), 25u);
}

}  // namespace
}  // namespace pheap::paging
