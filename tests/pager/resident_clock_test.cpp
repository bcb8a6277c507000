// The evictor's clock (src/pager/resident_clock.hpp): pages claimed out of the hand's order
// leave stale entries that the hand drops (C3), so every resident page keeps exactly one live
// entry (C1) and the stale ones stay at most a third of the live ones (C2).
#include <gtest/gtest.h>

#include <vector>

#include "pager/resident_clock.hpp"

namespace pheap::paging {
namespace {

std::vector<std::size_t> drain(resident_clock& c) {
  std::vector<std::size_t> out;
  std::size_t p = 0;
  while (c.next(p)) out.push_back(p);
  return out;
}

TEST(ResidentClock, APageClaimedOutOfOrderIsNeverHandedOutFromItsOldEntry) {
  resident_clock c;
  c.size_for(16);
  for (std::size_t p : {0, 1, 2, 3, 4, 5, 6, 7}) c.publish(p);
  c.take_published();
  ASSERT_TRUE(c.may_claim_out_of_order(5));
  c.claimed_out_of_order(5);  // the neighbour of a victim: its entry is stale now
  std::size_t p = 0;
  ASSERT_TRUE(c.next(p));
  EXPECT_EQ(p, 0u);
  EXPECT_EQ(drain(c), (std::vector<std::size_t>{1, 2, 3, 4, 6, 7}));
}

TEST(ResidentClock, APageInstalledAgainAfterAnOutOfOrderClaimHasOneLiveEntryTheNewest) {
  resident_clock c;
  c.size_for(16);
  for (std::size_t p : {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}) c.publish(p);
  c.take_published();
  c.claimed_out_of_order(2);
  c.publish(2);  // refilled: the live entry is appended behind the hand
  c.take_published();
  // Twice out of order before the hand reaches the first stale entry: both old entries stale.
  c.claimed_out_of_order(2);
  c.publish(2);
  c.take_published();
  EXPECT_EQ(drain(c), (std::vector<std::size_t>{0, 1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 2}));
}

TEST(ResidentClock, AnEntryPutBackInFrontAfterAnOutOfOrderClaimIsDropped) {
  // The evictor holds popped entries (dirty pages seen) and puts back those it did not claim;
  // one of them may have been claimed meanwhile as a neighbour.
  resident_clock c;
  c.size_for(16);
  for (std::size_t p : {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}) c.publish(p);
  c.take_published();
  std::size_t a = 0, b = 0;
  ASSERT_TRUE(c.next(a));
  ASSERT_TRUE(c.next(b));
  c.claimed_out_of_order(b);
  c.put_front({a, b});
  EXPECT_EQ(drain(c), (std::vector<std::size_t>{0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
}

TEST(ResidentClock, StaleEntriesStayAtMostAThirdOfTheLiveOnes) {
  resident_clock c;
  c.size_for(64);
  for (std::size_t p = 0; p < 64; ++p) c.publish(p);
  c.take_published();
  std::size_t claimed = 0;
  for (std::size_t p = 0; p < 64; ++p) {
    if (!c.may_claim_out_of_order(p)) continue;
    c.claimed_out_of_order(p);
    ++claimed;
  }
  EXPECT_GT(claimed, 0u);
  EXPECT_LE(claimed * 3, 64u - claimed) << "stale " << claimed << " of a ring of 64";
  EXPECT_EQ(drain(c).size(), 64u - claimed);
  // Dropped as the hand passed them: out-of-order claims are allowed again.
  c.publish(1);
  c.take_published();
  EXPECT_TRUE(c.may_claim_out_of_order(1));
}

TEST(ResidentClock, PagesARefreshForgetsLeaveNoEntryLiveOrStaleAndComeBackWithOneWhenInstalledAgain) {
  // A read-only region's refresh drops pages whose copy changed (pager_impl::invalidate): their
  // entries go wherever they are (ring, published list, stale ones), so the hand never meets
  // an entry of a page that is not resident (C1), and a page filled again has one entry.
  resident_clock c;
  c.size_for(16);
  for (std::size_t p : {0, 1, 2, 3, 4, 5, 6, 7}) c.publish(p);
  c.take_published();
  c.claimed_out_of_order(3);  // a stale entry of 3 ...
  c.publish(3);               // ... and its live one, still published
  c.publish(8);
  const std::vector<std::size_t> dropped{1, 3, 8};
  c.forget(dropped.data(), dropped.size());
  c.publish(3);  // filled again after the refresh
  c.take_published();
  EXPECT_EQ(drain(c), (std::vector<std::size_t>{0, 2, 4, 5, 6, 7, 3}));
}

// Pages the heap released leave without the hand (evictor::drop_released), as many as there
// are: past C2's bound the ring first drops its stale entries, so the stale ones stay at most
// a third of the live ones and every other page keeps its one live entry, in order.
TEST(ResidentClock, PagesClaimedAwayPastTheBoundOfStaleEntriesLeaveAndTheRestKeepTheirOrder) {
  resident_clock c;
  c.size_for(64);
  for (std::size_t p = 0; p < 64; ++p) c.publish(p);
  c.take_published();
  for (std::size_t p = 8; p < 56; ++p) c.claimed_away(p);  // 48 of 64: far past the bound
  std::vector<std::size_t> want;
  for (std::size_t p = 0; p < 8; ++p) want.push_back(p);
  for (std::size_t p = 56; p < 64; ++p) want.push_back(p);
  // 16 live entries; the stale ones a third of them, give or take the last claim (C2).
  EXPECT_LE(3 * (c.size() - 16), 16u + 4) << "stale entries: " << c.size() - 16;
  EXPECT_EQ(drain(c), want);
}

}  // namespace
}  // namespace pheap::paging
