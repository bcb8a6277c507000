// Huge pages (pager_options::huge_pages = always, src/pager/huge_pool.hpp): that a fill of a
// 2 MiB page really is one PMD mapping (AnonHugePages of the region in /proc/self/smaps, not
// the pager's own word for it), that the bytes survive flush, eviction under a small buffer
// and reopen exactly, that a 4 KiB page present in a page makes its fill fall back (counted)
// with the same bytes, that concurrent faults fill each page once, that small pages fall back
// to 4 KiB and say why, and that a read-only open maps its fills with 2 MiB entries kept
// write-protected (its writes' SIGSEGV: pager_behaviour_test, PagerReadOnly). Part of pager_roundtrip_test (label
// concurrency: the TSan stage runs the concurrent one). The SIGKILL case is in
// pager_crash_test (PagerCrashHuge).
#include <fcntl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>
#include <span>
#include <thread>
#include <vector>

#include "pager/os/uffd.hpp"
#include "pager/test_access.hpp"
#include "pager_test_util.hpp"

namespace pheap::test {
namespace {

pager_options huge_options(std::size_t buffer_pages, dirty_tracking t = dirty_tracking::automatic) {
  pager_options o;
  o.buffer_size = buffer_pages * kHuge;
  o.tracking = t;
  o.huge_pages = huge_pages_mode::always;
  o.victim_cache = victim_caching::off;
  return o;
}

// The fault that filled `first` woke its thread once its own page was in: the pages it
// filled ahead may still be moving in. A read of each waits for its install (a fault on a
// page being filled sleeps until then; on one installed it is no fault at all).
void wait_for_pages(const pager& pg, std::size_t first, std::size_t n) {
  for (std::size_t p = first; p < first + n; ++p) {
    (void)*reinterpret_cast<volatile const std::uint8_t*>(pg.base() + p * kHuge);
  }
}

bool page_is_zero(const std::byte* p) {
  static const std::vector<std::byte> zeros(kHuge);
  return std::memcmp(p, zeros.data(), kHuge) == 0;
}

// `fills` pages were filled whole and are all resident: the page tables say what the pager
// says. Each fill is one PMD mapping, as /proc/self/smaps has it (not only the pager's own
// reading of the page tables, huge_mapped_bytes, which must agree), or the counted exception
// the kernel makes: a write fault that could not get a huge page of its own (memory short or
// fragmented; the fresh-clone CI's TSan stage saw it) leaves a page table behind, and the
// whole move then goes in as 4 KiB entries (huge_fallback_split).
void expect_fills_mapped(pager& pg, std::size_t fills) {
  const auto s = pg.stats();
  EXPECT_EQ(anon_huge_bytes(pg.base(), pg.size()), s.huge_mapped_bytes) << s;
  EXPECT_EQ(s.huge_fills + s.huge_fallback_split, fills) << s;
  EXPECT_EQ(s.huge_mapped_bytes, s.huge_fills * kHuge) << s;
}

TEST(HugePages, AFillOfA2MiBPageIsOnePmdMappingAndSurvivesFlushAndReopen) {
  PHEAP_REQUIRE_HUGE();
  backing bk("posix");
  constexpr std::size_t npages = 8, written = 4;
  {
    pager pg(bk.create(npages * kHuge, kHuge), huge_options(npages));
    ASSERT_TRUE(pg.stats().huge_pages) << pg.stats().huge_pages_why;
    EXPECT_EQ(anon_huge_bytes(pg.base(), pg.size()), 0u);
    for (std::size_t p = 0; p < written; ++p) fill_pattern(pg.base() + p * kHuge, kHuge, 3, p, 1);
    expect_fills_mapped(pg, written);
    const std::uint64_t mapped = pg.stats().huge_mapped_bytes;
    EXPECT_GT(mapped, 0u) << "no fill was PMD-mapped: " << pg.stats();
    pg.flush({});
    for (std::size_t p = 0; p < written; ++p) EXPECT_TRUE(page_is(pg.base() + p * kHuge, 3, p, 1)) << p;
    EXPECT_EQ(anon_huge_bytes(pg.base(), pg.size()), mapped) << "a flush split a page";
    const auto s = pg.stats();
    EXPECT_EQ(s.huge_fallback_fills, s.huge_fallback_split) << s;
    pg.flush({});
    paging::test_access::impl(pg).wait_evictor_idle();
    EXPECT_EQ(paging::test_access::impl(pg).check_invariants(), "");
  }
  pager pg(bk.reopen(), huge_options(npages));
  for (std::size_t p = 0; p < written; ++p) EXPECT_TRUE(page_is(pg.base() + p * kHuge, 3, p, 1)) << p;
  for (std::size_t p = written; p < npages; ++p) EXPECT_TRUE(page_is_zero(pg.base() + p * kHuge)) << p;
  // Read faults: the kernel's huge zero page path makes no page table, so no exception here.
  EXPECT_EQ(anon_huge_bytes(pg.base(), pg.size()), npages * kHuge) << pg.stats();
  EXPECT_EQ(pg.stats().huge_mapped_bytes, npages * kHuge) << pg.stats();
  EXPECT_EQ(pg.stats().huge_fills, npages) << pg.stats();
}

TEST(HugePages, EvictionUnderASmallBufferKeepsEveryByteAndRecyclesTheHugePages) {
  PHEAP_REQUIRE_HUGE();
  constexpr std::size_t npages = 24, buffer = 4;
  for (auto mode : {dirty_tracking::wp_async, dirty_tracking::wp_sync, dirty_tracking::all_resident}) {
    SCOPED_TRACE(to_string(mode));
    backing bk("posix");
    {
      pager pg(bk.create(npages * kHuge, kHuge), huge_options(buffer, mode));
      ASSERT_TRUE(pg.stats().huge_pages) << pg.stats().huge_pages_why;
      for (std::size_t p = 0; p < npages; ++p) fill_pattern(pg.base() + p * kHuge, kHuge, 5, p, 1);
      pg.flush({});
      for (std::size_t p = 0; p < npages; p += 2) fill_pattern(pg.base() + p * kHuge, kHuge, 5, p, 2);
      for (std::size_t p = 0; p < npages; ++p) {
        EXPECT_TRUE(page_is(pg.base() + p * kHuge, 5, p, p % 2 == 0 ? 2 : 1)) << p;
      }
      pg.flush({});
      const auto s = pg.stats();
      EXPECT_GT(s.huge_evictions, 0u) << s;
      EXPECT_GT(s.huge_recycled, 0u) << s;
      EXPECT_LT(s.huge_fresh, s.huge_fills) << "no fill took a recycled huge page: " << s;
      // Every fallback is one of the two counted kinds, and a refused move only ever follows
      // a page that was evicted split (pheap/pager_options.hpp: the fresh-clone CI's
      // unprivileged stage saw 1 of 59 fills refused under all_resident, which never
      // write-protects, after 1 page of 58 evicted split; the bytes were right).
      EXPECT_EQ(s.huge_fallback_fills, s.huge_fallback_split + s.huge_fallback_move) << s;
      EXPECT_LE(s.huge_fallback_move, s.huge_evicted_split) << s;
      EXPECT_LE(s.peak_resident_pages, buffer) << s;
      paging::test_access::impl(pg).wait_evictor_idle();
      EXPECT_EQ(paging::test_access::impl(pg).check_invariants(), "");
      // The pages resident now were last filled by the reading pass and only read since: each
      // is one PMD mapping, after every page went through writes, flushes and evictions.
      const auto after = pg.stats();
      EXPECT_EQ(anon_huge_bytes(pg.base(), pg.size()), after.huge_mapped_bytes) << after;
      // (A page whose move was refused, or that the kernel mapped at 4 KiB, is the counted
      // exception: pheap/pager_options.hpp, expect_fills_mapped above.)
      EXPECT_LE(after.huge_fallback_move, after.huge_evicted_split) << after;
      EXPECT_GE(after.huge_mapped_bytes + (after.huge_fallback_move + after.huge_fallback_split) * kHuge,
                after.resident_pages * kHuge) << after;
    }
    pager pg(bk.reopen(), huge_options(buffer, mode));
    for (std::size_t p = 0; p < npages; ++p) {
      EXPECT_TRUE(page_is(pg.base() + p * kHuge, 5, p, p % 2 == 0 ? 2 : 1)) << p;
    }
  }
}

TEST(HugePages, APageEvictedSplitIsFilledAsOnePmdMappingAgain) {
  PHEAP_REQUIRE_HUGE();
  constexpr std::size_t npages = 8, buffer = 2;
  backing bk("mem");
  pager pg(bk.create(npages * kHuge, kHuge), huge_options(buffer, dirty_tracking::wp_async));
  ASSERT_TRUE(pg.stats().huge_pages) << pg.stats().huge_pages_why;
  // Page 0 written, protected by a flush, written again: wp_async's resolution of that write
  // splits the 2 MiB mapping (pheap/pager_options.hpp), and its eviction leaves a page table.
  fill_pattern(pg.base(), kHuge, 6, 0, 1);
  pg.flush({});
  fill_pattern(pg.base(), kHuge, 6, 0, 2);
  for (std::size_t p = 1; p < npages; ++p) EXPECT_TRUE(page_is_zero(pg.base() + p * kHuge)) << p;
  paging::test_access::impl(pg).wait_evictor_idle();
  const auto before = pg.stats();
  ASSERT_GE(before.huge_evicted_split, 1u) << "page 0 was not evicted split: nothing to prove; " << before;
  // Read back (a read fault: the kernel makes no page table of its own on that path): the fill
  // frees the table left behind and moves the huge page in whole.
  EXPECT_TRUE(page_is(pg.base(), 6, 0, 2));
  // (That fill made the evictor take another page out: counted resident until its batch ends.)
  paging::test_access::impl(pg).wait_evictor_idle();
  const auto s = pg.stats();
  EXPECT_EQ(s.huge_fallback_split, before.huge_fallback_split) << "page 0 went in as 4 KiB entries: " << s;
  EXPECT_EQ(s.huge_mapped_bytes, s.resident_pages * kHuge) << s;
  EXPECT_EQ(anon_huge_bytes(pg.base(), pg.size()), s.huge_mapped_bytes) << s;
}

// Automatic tracking on a writable huge region is wp_sync (huge_pool.hpp, "Tracking"): a page
// written, flushed (write-protected again) and written again stays one PMD mapping, flush
// after flush, where wp_async's resolution of that write splits it (the test above); each
// write is in the store after its flush. With faulting-thread fills asked for it stays
// wp_async, which they need.
TEST(HugePages, AutomaticTrackingKeepsAPageWrittenAfterAFlushOnePmdMapping) {
  PHEAP_REQUIRE_HUGE();
  constexpr std::size_t npages = 4;
  backing bk("mem");
  {
    pager pg(bk.create(npages * kHuge, kHuge), huge_options(npages));
    ASSERT_TRUE(pg.stats().huge_pages) << pg.stats().huge_pages_why;
    EXPECT_EQ(pg.tracking(), dirty_tracking::wp_sync);
    // (The first write also fills pages 1-3 ahead, clean: the test below. Each fill is one
    // PMD mapping, page 0's too after every write after a flush.)
    for (std::uint64_t k = 1; k <= 3; ++k) {
      fill_pattern(pg.base(), kHuge, 13, 0, k);  // after the first round: a write after a flush
      wait_for_pages(pg, 1, npages - 1);
      pg.flush({});
      EXPECT_EQ(anon_huge_bytes(pg.base(), pg.size()), pg.stats().huge_fills * kHuge)
          << "round " << k << ": " << pg.stats();
    }
    const auto s = pg.stats();
    EXPECT_EQ(s.huge_fills, 1u + s.zero_ahead_pages) << s;
    EXPECT_EQ(s.huge_mapped_bytes, s.huge_fills * kHuge) << s;
    EXPECT_GE(s.wp_faults, 2u) << "the writes after the flushes were not seen: " << s;
    EXPECT_EQ(s.huge_fallback_fills, 0u) << s;
  }
  {
    pager pg(bk.reopen(), huge_options(npages));
    EXPECT_TRUE(page_is(pg.base(), 13, 0, 3));
  }
  pager_options o = huge_options(npages);
  o.fault_fill = fault_filling::faulting_thread;
  pager pg(bk.reopen(), o);
  EXPECT_EQ(pg.tracking(), dirty_tracking::wp_async);
  EXPECT_TRUE(pg.stats().huge_pages) << pg.stats().huge_pages_why;
}

// A write fault on a never-written page fills the never-written pages after it ahead
// (fault_service::claim_huge_zero_ahead: the kernel zeroes a huge page of its own for every
// missing write fault and throws it away, so a heap growing page by page pays that once per
// kHugeZeroAhead + 1 pages, not per page). They are installed clean and write-protected: a
// flush writes only the page written, the first write into one of them is a wp_sync fault
// that keeps its PMD mapping, and what was written is what reopens.
TEST(HugePages, AWriteFaultFillsTheNextNeverWrittenPagesAheadCleanAndTheirFirstWriteIsSeen) {
  PHEAP_REQUIRE_HUGE();
  constexpr std::size_t npages = 8;
  constexpr std::size_t ahead = paging::fault_service::kHugeZeroAhead;
  static_assert(ahead >= 2 && ahead + 1 < npages);
  backing bk("posix");
  {
    pager pg(bk.create(npages * kHuge, kHuge), huge_options(npages));
    ASSERT_TRUE(pg.stats().huge_pages) << pg.stats().huge_pages_why;
    ASSERT_EQ(pg.tracking(), dirty_tracking::wp_sync);
    fill_pattern(pg.base(), kHuge, 17, 0, 1);
    wait_for_pages(pg, 1, ahead);
    auto s = pg.stats();
    EXPECT_EQ(s.read_faults, 0u) << s;
    EXPECT_EQ(s.write_faults, 1u) << s;
    EXPECT_EQ(s.zero_ahead_pages, ahead) << s;
    expect_fills_mapped(pg, 1 + ahead);
    pg.flush({});
    s = pg.stats();
    EXPECT_EQ(s.dirty_pages_written, 1u) << "a page filled ahead and never written was written: " << s;
    // A page filled ahead: resident, so no missing fault; its first write is seen.
    const std::uint64_t wp_before = s.wp_faults;
    fill_pattern(pg.base() + 2 * kHuge, kHuge, 17, 2, 1);
    s = pg.stats();
    EXPECT_EQ(s.write_faults, 1u) << s;
    EXPECT_EQ(s.wp_faults, wp_before + 1) << "the write into a clean page filled ahead was not seen: " << s;
    EXPECT_EQ(anon_huge_bytes(pg.base(), pg.size()), (1 + ahead) * kHuge) << "the write split it: " << s;
    pg.flush({});
    s = pg.stats();
    EXPECT_EQ(s.dirty_pages_written, 2u) << s;
    // A read fault fills nothing ahead.
    EXPECT_TRUE(page_is_zero(pg.base() + (ahead + 1) * kHuge));
    EXPECT_EQ(pg.stats().zero_ahead_pages, ahead) << pg.stats();
    paging::test_access::impl(pg).wait_evictor_idle();
    EXPECT_EQ(paging::test_access::impl(pg).check_invariants(), "");
  }
  pager pg(bk.reopen(), huge_options(npages));
  for (std::size_t p = 0; p < npages; ++p) {
    if (p == 0 || p == 2) {
      EXPECT_TRUE(page_is(pg.base() + p * kHuge, 17, p, 1)) << p;
    } else {
      EXPECT_TRUE(page_is_zero(pg.base() + p * kHuge)) << p;
    }
  }
}

// The move maps a page filled ahead writable one ioctl before its protection: a thread that
// had not faulted on it could write it unseen in between. Such a page (here: a block that
// does not read as zeros, which is what that write leaves) is installed dirty, and its bytes
// reach the store; one that reads as zeros is installed clean and written by no flush.
TEST(HugePages, APageFilledAheadThatWasWrittenBeforeItsProtectionIsInstalledDirty) {
  PHEAP_REQUIRE_HUGE();
  constexpr std::size_t npages = 4;
  backing bk("posix");
  {
    pager pg(bk.create(npages * kHuge, kHuge), huge_options(npages));
    ASSERT_TRUE(pg.stats().huge_pages) << pg.stats().huge_pages_why;
    ASSERT_EQ(pg.tracking(), dirty_tracking::wp_sync);
    auto& core = paging::test_access::core(pg);
    for (const std::size_t p : {std::size_t{1}, std::size_t{2}}) {
      ASSERT_TRUE(core.budget.reserve());
      ASSERT_TRUE(core.table.claim_fill(p));
      std::byte* block = core.huge.take_full();
      ASSERT_NE(block, nullptr);
      std::memset(block, 0, kHuge);
      if (p == 2) block[4096 * 7 + 100] = std::byte{0x5a};  // the write in the window
      paging::test_access::install_huge_clean(pg, p, block);
    }
    EXPECT_EQ(static_cast<std::uint8_t>(pg.base()[2 * kHuge + 4096 * 7 + 100]), 0x5a);
    pg.flush({});
    EXPECT_EQ(pg.stats().dirty_pages_written, 1u) << "page 2 is dirty, page 1 clean: " << pg.stats();
    paging::test_access::impl(pg).wait_evictor_idle();
    EXPECT_EQ(paging::test_access::impl(pg).check_invariants(), "");
  }
  pager pg(bk.reopen(), huge_options(npages));
  EXPECT_EQ(static_cast<std::uint8_t>(pg.base()[2 * kHuge + 4096 * 7 + 100]), 0x5a);
  EXPECT_TRUE(page_is_zero(pg.base() + 1 * kHuge));
}

TEST(HugePages, AFourKiBPagePresentInAPageMakesItsFillFallBackWithTheSameBytes) {
  PHEAP_REQUIRE_HUGE();
  backing bk("mem");
  constexpr std::size_t npages = 4;
  {
    pager pg(bk.create(npages * kHuge, kHuge), huge_options(npages));
    ASSERT_TRUE(pg.stats().huge_pages) << pg.stats().huge_pages_why;
    // The last page, so that its write fault fills no page ahead of it.
    fill_pattern(pg.base() + 3 * kHuge, kHuge, 9, 3, 1);
    // A stray 4 KiB frame (zeros, as the never-written page 2 reads) in page 2, put there
    // behind the pager's back: the huge move of page 2's fill must be refused.
    auto& core = paging::test_access::core(pg);
    static const std::byte zeros[4096] = {};
    ASSERT_EQ(paging::uffd_copy(core.uffd, pg.base() + 2 * kHuge + 3 * 4096, zeros, 4096, 0), 0);
    EXPECT_TRUE(page_is_zero(pg.base() + 2 * kHuge));
    const auto s = pg.stats();
    EXPECT_EQ(s.huge_fallback_move, 1u) << s;
    EXPECT_EQ(s.huge_fallback_move_errno, EEXIST) << "the refusal's cause, kept: " << s;
    EXPECT_EQ(s.huge_fallback_fills, 1u + s.huge_fallback_split) << s;
    expect_fills_mapped(pg, 1);  // page 3 only
    fill_pattern(pg.base() + 2 * kHuge, kHuge, 9, 2, 1);
    pg.flush({});
  }
  pager pg(bk.reopen(), huge_options(npages));
  EXPECT_TRUE(page_is(pg.base() + 3 * kHuge, 9, 3, 1));
  EXPECT_TRUE(page_is(pg.base() + 2 * kHuge, 9, 2, 1));
  EXPECT_EQ(pg.stats().huge_fallback_move, 0u) << pg.stats();
  EXPECT_EQ(pg.stats().huge_fallback_move_errno, 0) << pg.stats();
}

// With no huge page to be had (THP disabled for this process with PR_SET_THP_DISABLE, as
// memory short or fragmented does it for a while), fills fall back to 4 KiB, counted, and after
// 8 in a row the pool backs off; once huge pages can be had again, a later fill gets one (the
// pool tries once per 64 fills meanwhile) and so does every fill after it: it never gives up
// for good (huge_pool.hpp, caveats).
TEST(HugePages, AfterTheKernelHadNoHugePagesThePoolTriesAgainAndLaterFillsAreHugeAgain) {
  PHEAP_REQUIRE_HUGE();
  constexpr std::size_t npages = 96, starved = 12;
  backing bk("mem");
  pager pg(bk.create(npages * kHuge, kHuge), huge_options(npages));
  ASSERT_TRUE(pg.stats().huge_pages) << pg.stats().huge_pages_why;
  struct thp_off {
    thp_off() { ok = ::prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) == 0; }
    ~thp_off() { (void)::prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0); }
    bool ok = false;
  };
  {
    thp_off off;
    ASSERT_TRUE(off.ok) << "prctl(PR_SET_THP_DISABLE): " << std::strerror(errno);
    for (std::size_t p = 0; p < starved; ++p) ASSERT_TRUE(page_is_zero(pg.base() + p * kHuge)) << p;
  }
  const auto s0 = pg.stats();
  ASSERT_EQ(s0.huge_fills, 0u) << "THP disabled, and yet a huge page: " << s0;
  ASSERT_EQ(s0.huge_fallback_no_block, starved) << s0;
  for (std::size_t p = starved; p < npages; ++p) ASSERT_TRUE(page_is_zero(pg.base() + p * kHuge)) << p;
  const auto s = pg.stats();
  EXPECT_GE(s.huge_fills, npages - starved - 64) << s;
  EXPECT_LE(s.huge_fallback_no_block, starved + 64) << s;
  // The last pages filled are one PMD mapping each.
  EXPECT_EQ(anon_huge_bytes(pg.base(), pg.size()), s.huge_mapped_bytes) << s;
  EXPECT_EQ(s.huge_mapped_bytes, s.huge_fills * kHuge) << s;
}

TEST(HugePages, ConcurrentFaultsFromSeveralThreadsFillEachPageOnceAsOnePmdMapping) {
  PHEAP_REQUIRE_HUGE();
  constexpr std::size_t npages = 12;
  constexpr unsigned threads = 6;
  for (auto fill : {fault_filling::workers, fault_filling::faulting_thread}) {
    SCOPED_TRACE(to_string(fill));
    backing bk("mem");
    pager_options o = huge_options(npages, dirty_tracking::wp_async);
    o.fault_fill = fill;
    {
      pager pg(bk.create(npages * kHuge, kHuge), o);
      ASSERT_TRUE(pg.stats().huge_pages) << pg.stats().huge_pages_why;
      std::atomic<unsigned> ready{0};
      std::atomic<std::size_t> bad{0};
      std::vector<std::thread> ts;
      for (unsigned t = 0; t < threads; ++t) {
        ts.emplace_back([&, t] {
          std::vector<std::size_t> order(npages);
          for (std::size_t p = 0; p < npages; ++p) order[p] = p;
          std::shuffle(order.begin(), order.end(), std::mt19937_64(t + 1));
          ready.fetch_add(1);
          while (ready.load() < threads) std::this_thread::yield();
          for (const std::size_t p : order) {
            auto* w = reinterpret_cast<volatile std::uint64_t*>(pg.base() + p * kHuge + t * 4096 * 7);
            if (*w != 0) ++bad;  // nobody else writes this word
            *w = (p << 8) | t;
          }
        });
      }
      for (auto& th : ts) th.join();
      EXPECT_EQ(bad.load(), 0u);
      const auto s = pg.stats();
      EXPECT_EQ(s.huge_fallback_fills, s.huge_fallback_split) << s;
      EXPECT_GT(s.huge_fills, 0u) << "no fill was PMD-mapped: " << s;
      expect_fills_mapped(pg, npages);
      pg.flush({});
    }
    pager pg(bk.reopen(), o);
    std::size_t wrong = 0;
    for (std::size_t p = 0; p < npages; ++p) {
      for (unsigned t = 0; t < threads; ++t) {
        std::uint64_t v;
        std::memcpy(&v, pg.base() + p * kHuge + t * 4096 * 7, 8);
        wrong += v != ((p << 8) | t);
      }
    }
    EXPECT_EQ(wrong, 0u);
  }
}

TEST(HugePages, SmallPagesFallBackToFourKiBFillsAndSayWhy) {
  PHEAP_REQUIRE_HUGE();
  {
    backing bk("mem");
    pager_options o;
    o.buffer_size = 16 * 65536;
    o.huge_pages = huge_pages_mode::always;
    pager pg(bk.create(16 * 65536, 65536), o);
    std::memset(pg.base(), 1, 65536);
    const auto s = pg.stats();
    EXPECT_FALSE(s.huge_pages);
    EXPECT_NE(s.huge_pages_why.find("64 KiB"), std::string::npos) << s.huge_pages_why;
    EXPECT_GE(s.huge_fallback_fills, 1u) << s;
    EXPECT_EQ(s.huge_fills, 0u) << s;
  }
  // Off by default, and spelled as PHEAP_HUGE_PAGES takes it.
  EXPECT_EQ(pager_options{}.huge_pages, huge_pages_mode::off);
  EXPECT_STREQ(to_string(huge_pages_mode::always), "always");
  ::setenv("PHEAP_HUGE_PAGES", "always", 1);
  EXPECT_EQ(pager_options::from_env().huge_pages, huge_pages_mode::always);
  ::setenv("PHEAP_HUGE_PAGES", "sometimes", 1);
  EXPECT_THROW(pager_options::from_env(), error);
  ::unsetenv("PHEAP_HUGE_PAGES");
}

// A datastore of `npages` 2 MiB pages, the first `written` of them with pattern (seed, page, 1),
// the rest never written (zeros).
void make_huge_datastore(backing& bk, std::size_t npages, std::size_t written, std::uint64_t seed) {
  pager pg(bk.create(npages * kHuge, kHuge), huge_options(npages));
  for (std::size_t p = 0; p < written; ++p) fill_pattern(pg.base() + p * kHuge, kHuge, seed, p, 1);
  pg.flush({});
}

// Huge pages on a read-only open (huge_pool.hpp, "Read-only opens"): the region is writable for
// UFFDIO_MOVE, and every fill — by a fault or by prefetch, from the store or of a
// never-written page — is one PMD mapping that the page tables show write-protected (I10).
TEST(HugePages, AReadOnlyOpenMapsEveryFillAsOnePmdMappingAndWriteProtectsIt) {
  PHEAP_REQUIRE_HUGE();
  constexpr std::size_t npages = 8, written = 5;
  backing bk("posix");
  make_huge_datastore(bk, npages, written, 11);
  for (auto fill : {fault_filling::workers, fault_filling::faulting_thread}) {
    SCOPED_TRACE(to_string(fill));
    pager_options o = huge_options(npages);
    o.fault_fill = fill;
    pager ro(bk.reopen(true), o);
    ASSERT_TRUE(ro.read_only());
    ASSERT_TRUE(ro.stats().huge_pages) << ro.stats().huge_pages_why;
    // Pages 0-3 by prefetch (the workers' read steps, as manager::prefetch_all), the rest by
    // faults.
    const std::pair<std::size_t, std::size_t> first_half{0, 4 * kHuge};
    ro.prefetch(std::span(&first_half, 1));
    wait_until([&] { return ro.stats().resident_pages >= 4; }, "4 prefetched pages");
    for (std::size_t p = 0; p < written; ++p) EXPECT_TRUE(page_is(ro.base() + p * kHuge, 11, p, 1)) << p;
    for (std::size_t p = written; p < npages; ++p) EXPECT_TRUE(page_is_zero(ro.base() + p * kHuge)) << p;
    expect_fills_mapped(ro, npages);
    const auto s = ro.stats();
    EXPECT_EQ(s.huge_fills, npages) << "read faults meet no page table of the kernel's: " << s;
    EXPECT_EQ(s.huge_fallback_fills, 0u) << s;
    EXPECT_EQ(mapped_bytes(ro.base(), ro.size()), npages * kHuge);
    EXPECT_EQ(writable_bytes(ro.base(), ro.size()), 0u) << "a page of a read-only region is writable";
    EXPECT_EQ(paging::test_access::impl(ro).check_invariants(), "");
    EXPECT_THROW(ro.flush({}), error);
  }
}

// Read-only eviction drops pages; with huge pages it first moves each whole one into the pool,
// so that the next fill needs no fresh huge page (a read-only region has no staging range).
TEST(HugePages, AReadOnlyOpenUnderASmallBufferRecyclesItsHugePagesAndReadsEveryByte) {
  PHEAP_REQUIRE_HUGE();
  constexpr std::size_t npages = 24, written = 20, buffer = 4;
  backing bk("posix");
  make_huge_datastore(bk, npages, written, 12);
  pager ro(bk.reopen(true), huge_options(buffer));
  ASSERT_TRUE(ro.stats().huge_pages) << ro.stats().huge_pages_why;
  for (int pass = 0; pass < 2; ++pass) {
    for (std::size_t p = 0; p < npages; ++p) {
      if (p < written) {
        EXPECT_TRUE(page_is(ro.base() + p * kHuge, 12, p, 1)) << "pass " << pass << " page " << p;
      } else {
        EXPECT_TRUE(page_is_zero(ro.base() + p * kHuge)) << "pass " << pass << " page " << p;
      }
    }
  }
  paging::test_access::impl(ro).wait_evictor_idle();
  const auto s = ro.stats();
  EXPECT_GT(s.huge_evictions, 0u) << s;
  EXPECT_GT(s.huge_recycled, 0u) << s;
  EXPECT_LT(s.huge_fresh, s.huge_fills) << "no fill took a recycled huge page: " << s;
  EXPECT_EQ(s.bytes_written, 0u) << s;
  EXPECT_LE(s.peak_resident_pages, buffer) << s;
  EXPECT_EQ(anon_huge_bytes(ro.base(), ro.size()), s.huge_mapped_bytes) << s;
  EXPECT_EQ(writable_bytes(ro.base(), ro.size()), 0u) << "a page of a read-only region is writable";
  EXPECT_EQ(paging::test_access::impl(ro).check_invariants(), "");
}

}  // namespace
}  // namespace pheap::test
