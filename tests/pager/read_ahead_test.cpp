// The read-ahead state machine (src/pager/read_ahead.hpp, rules R1-R4), driven the way the
// pager drives it: one call per missing fault on a page with data. A simulated application
// walks pages; pages a window planned (all but its marker) count as read ahead: the walk
// passes them without a fault, as it would once the workers installed them.
#include <gtest/gtest.h>

#include <cstddef>
#include <set>
#include <vector>

#include "pager/read_ahead.hpp"

namespace pheap::paging {
namespace {

// An application touching `order` once each: faults only on pages no window read ahead.
struct walk_result {
  std::size_t faults = 0;
  std::size_t read_ahead = 0;  // pages read by windows (resident before the walk got there)
  std::vector<read_window> windows;
};

walk_result walk(read_ahead& ra, const std::vector<std::size_t>& order) {
  walk_result r;
  std::set<std::size_t> resident;
  for (std::size_t p : order) {
    if (resident.count(p)) continue;
    ++r.faults;
    resident.insert(p);
    if (const auto w = ra.on_fault(p)) {
      r.windows.push_back(*w);
      for (std::size_t i = 0; i < w->pages; ++i) {
        if (i == w->marker) continue;
        if (resident.insert(w->page(i)).second) ++r.read_ahead;
      }
    }
  }
  return r;
}

std::vector<std::size_t> range(std::size_t first, std::size_t end, std::ptrdiff_t stride = 1) {
  std::vector<std::size_t> v;
  if (stride > 0) {
    for (std::size_t p = first; p < end; p += static_cast<std::size_t>(stride)) v.push_back(p);
  } else {
    for (std::size_t p = end; p-- > first;) v.push_back(p);
  }
  return v;
}

TEST(ReadAhead, ASequentialScanFaultsOncePerWindowAndItsWindowsDoubleToTheCeiling) {
  read_ahead ra;
  ra.configure(100000, 512);
  const walk_result r = walk(ra, range(0, 20000));
  // Three faults start the stream; then one per window (its marker, or the page after it).
  ASSERT_GE(r.windows.size(), 8u);
  EXPECT_EQ(r.windows[0].pages, read_ahead::kFirstWindow);
  for (std::size_t i = 1; i < r.windows.size(); ++i) {
    EXPECT_EQ(r.windows[i].pages, std::min<std::size_t>(512, 2 * r.windows[i - 1].pages)) << i;
  }
  EXPECT_LE(r.faults, 3 + r.windows.size() + 1);
  EXPECT_LT(r.faults, 20000u / 100);
  // Every window after the first starts where the one before it ended: no gaps, no overlap.
  for (std::size_t i = 1; i < r.windows.size(); ++i) {
    EXPECT_EQ(r.windows[i].start, r.windows[i - 1].start + r.windows[i - 1].pages) << i;
  }
  const auto t = ra.totals();
  EXPECT_EQ(t.windows, r.windows.size());
  EXPECT_EQ(t.planned, r.read_ahead);
  // All but the last window (still ahead of the walk's end) were passed.
  EXPECT_GE(t.passed, t.planned - 2 * 512);
}

TEST(ReadAhead, TheMarkerIsHalfWayThroughEachWindowSoTheNextIsPlannedWhileHalfIsStillAhead) {
  read_ahead ra;
  ra.configure(100000, 64);
  const walk_result r = walk(ra, range(0, 2000));
  ASSERT_GE(r.windows.size(), 3u);
  for (std::size_t i = 0; i < r.windows.size(); ++i) {
    const read_window& w = r.windows[i];
    ASSERT_GE(w.pages, read_ahead::kMinMarked);
    EXPECT_EQ(w.marker, w.pages / 2) << i;
  }
  // The second window was planned on the first one's marker: its start is the first's end.
  EXPECT_EQ(r.windows[1].start, r.windows[0].start + r.windows[0].pages);
}

TEST(ReadAhead, ABackwardScanEarnsWindowsGoingDown) {
  read_ahead ra;
  ra.configure(10000, 128);
  const walk_result r = walk(ra, range(0, 5000, -1));
  ASSERT_GE(r.windows.size(), 3u);
  EXPECT_EQ(r.windows[0].stride, -1);
  EXPECT_LT(r.faults, 5000u / 20);
  for (const read_window& w : r.windows) EXPECT_LT(w.page(w.pages - 1), 5000u);
}

TEST(ReadAhead, AStridedScanEarnsWindowsOfItsStride) {
  read_ahead ra;
  ra.configure(100000, 256);
  const walk_result r = walk(ra, range(0, 60000, 5));
  ASSERT_GE(r.windows.size(), 3u);
  EXPECT_EQ(r.windows[0].stride, 5);
  EXPECT_LT(r.faults, 12000u / 20);
}

TEST(ReadAhead, RandomFaultsEarnAlmostNoWindow) {
  read_ahead ra;
  ra.configure(1u << 20, 512);
  std::vector<std::size_t> order;
  std::uint64_t x = 88172645463325252ull;  // xorshift: a fixed pseudo-random order
  for (int i = 0; i < 50000; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    order.push_back(static_cast<std::size_t>(x % (1u << 20)));
  }
  const walk_result r = walk(ra, order);
  EXPECT_LE(r.read_ahead, r.faults / 100) << r.windows.size() << " windows";
}

TEST(ReadAhead, AWindowIsClippedToTheRegion) {
  read_ahead ra;
  ra.configure(100, 512);
  const walk_result r = walk(ra, range(0, 100));
  ASSERT_FALSE(r.windows.empty());
  for (const read_window& w : r.windows) EXPECT_LT(w.page(w.pages - 1), 100u);
  EXPECT_EQ(r.windows.back().start + r.windows.back().pages, 100u);  // the last one ends there
  read_ahead down;
  down.configure(100, 512);
  const walk_result back = walk(down, range(0, 100, -1));
  ASSERT_FALSE(back.windows.empty());
  EXPECT_EQ(back.windows.back().page(back.windows.back().pages - 1), 0u);  // and down to 0
}

TEST(ReadAhead, AScanKeepsItsStreamWhileAnotherThreadsRandomFaultsComeBetweenItsWindows) {
  read_ahead ra;
  ra.configure(1u << 20, 512);
  // A scan of pages 0.. by thread 1 with 20 random faults of thread 2 after each of its faults.
  std::set<std::size_t> resident;
  std::size_t scan_faults = 0, windows = 0;
  std::uint64_t x = 2463534242ull;
  for (std::size_t p = 0; p < 50000; ++p) {
    if (resident.count(p)) continue;
    ++scan_faults;
    resident.insert(p);
    if (const auto w = ra.on_fault(p, 1)) {
      ++windows;
      for (std::size_t i = 0; i < w->pages; ++i) {
        if (i != w->marker) resident.insert(w->page(i));
      }
    }
    for (int k = 0; k < 20; ++k) {
      x ^= x << 13;
      x ^= x >> 17;
      x ^= x << 5;
      (void)ra.on_fault(100000 + static_cast<std::size_t>(x % 900000), 2);
    }
  }
  EXPECT_GT(windows, 50u);
  EXPECT_LT(scan_faults, 50000u / 50);
}

// Random faults with a bounded resident set (the pager's buffer) in a region that is not much
// larger fall a stride apart, and on old markers, by chance: expiry and the gate keep what is
// read ahead for them below a tenth of the faults. A scan that starts afterwards still gets its
// windows (a sampled first window is followed, and its round opens the gate again).
TEST(ReadAhead, RandomFaultsThroughASmallBufferReadLittleAheadAndAScanAfterwardsStillDoes) {
  read_ahead ra;
  ra.configure(4096, 512);
  std::set<std::size_t> resident;
  std::vector<std::size_t> fifo;  // install order: the oldest goes when 512 are resident
  auto install = [&](std::size_t p) {
    if (!resident.insert(p).second) return false;
    fifo.push_back(p);
    if (fifo.size() > 512) {
      resident.erase(fifo.front());
      fifo.erase(fifo.begin());
    }
    return true;
  };
  std::uint64_t x = 99991;
  std::size_t faults = 0, ahead = 0;
  for (int i = 0; i < 100000; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    const std::size_t p = static_cast<std::size_t>(x % 4096);
    if (!install(p)) continue;
    ++faults;
    if (const auto w = ra.on_fault(p)) {
      for (std::size_t k = 0; k < w->pages; ++k) {
        if (k != w->marker && install(w->page(k))) ++ahead;
      }
    }
  }
  EXPECT_LE(ahead, faults / 10) << ra.totals().windows << " windows, " << ra.totals().gated << " gated";
  // Then a scan of the region through the same state: at most a sampling period of faults
  // before its first window, then a fault per window.
  const walk_result scan = walk(ra, range(0, 4096));
  EXPECT_GE(scan.windows.size(), 4u);
  EXPECT_LT(scan.faults, 4096u / 20) << ra.totals().gated << " gated";
}

// A scan's next own fault is its marker; a thread that faults elsewhere more than
// kExpireStrays times has left its window, and a later fault on the marker (random, by
// chance) is no follow. Up to kExpireStrays strays (a scan that also walks other data) keep it.
TEST(ReadAhead, AWindowExpiresWhenItsThreadFaultsElsewhereMoreThanAFewTimes) {
  for (const unsigned strays : {read_ahead::kExpireStrays, read_ahead::kExpireStrays + 1}) {
    read_ahead ra;
    ra.configure(1u << 20, 512);
    EXPECT_FALSE(ra.on_fault(0, 1));
    EXPECT_FALSE(ra.on_fault(1, 1));
    const auto w = ra.on_fault(2, 1);
    ASSERT_TRUE(w);
    ASSERT_NE(w->marker, read_window::npos);
    for (unsigned k = 0; k < strays; ++k) EXPECT_FALSE(ra.on_fault(500000 + 1000 * k, 1));
    (void)ra.on_fault(900000, 2);  // another thread's fault is no stray of thread 1's window
    const auto next = ra.on_fault(w->page(w->marker), 1);
    EXPECT_EQ(next.has_value(), strays <= read_ahead::kExpireStrays) << strays << " strays";
  }
}

TEST(ReadAhead, OffPlansNothing) {
  read_ahead ra;
  ra.configure(1000, 0);
  EXPECT_FALSE(ra.on());
  const walk_result r = walk(ra, range(0, 1000));
  EXPECT_EQ(r.faults, 1000u);
  EXPECT_TRUE(r.windows.empty());
}

}  // namespace
}  // namespace pheap::paging
