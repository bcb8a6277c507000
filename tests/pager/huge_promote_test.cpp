// huge_pages = auto (src/pager/promoter.hpp): fills stay 4 KiB, and the promoter moves a page
// that stayed in core, dense and 4 KiB-mapped for a whole round into a huge page. What these
// tests hold it to: the page tables (AnonHugePages in /proc/self/smaps, not the pager's own
// word) show one PMD mapping per promoted page; every byte survives promotion, flush and
// reopen; a clean page stays clean (a flush writes nothing) and write-protected, and its next
// write is still seen (wp_sync); under wp_async only written pages are promoted, again after a
// flush's split; writes of threads that run during promotions are all kept; nothing is
// promoted while the evictor evicts; a read-only open promotes and stays write-protected; and
// auto says why where it cannot be on. Rounds run by hand (huge_promote_ms 0) but in the
// thread's test. Part of pager_roundtrip_test (label concurrency: the TSan stage runs it).
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "pager/os/uffd.hpp"
#include "pager/test_access.hpp"
#include "pager_test_util.hpp"

namespace pheap::test {
namespace {

pager_options auto_options(std::size_t buffer_pages, unsigned period_ms = 0) {
  pager_options o;
  o.buffer_size = buffer_pages * kHuge;
  o.huge_pages = huge_pages_mode::automatic;
  o.huge_promote_ms = period_ms;
  o.victim_cache = victim_caching::off;
  return o;
}

std::size_t promote_round(pager& pg) { return paging::test_access::promote_round(pg); }

// The pages promoted by a round and, until `want` are, by more rounds for up to 5 s: a round
// passes over a page whose fill is still being recorded (the worker that installed it woke
// the faulting thread first, and may not have run since: page_table "filling"), and misses
// one when the kernel has no huge page at hand for it (huge_promote_failed); a later round
// tries it again.
std::size_t promote_until(pager& pg, std::size_t want) {
  std::size_t n = promote_round(pg);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (n < want && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    n += promote_round(pg);
  }
  return n;
}

// wp_sync (asked for: automatic keeps wp_async under auto): clean pages too.
TEST(HugePromotion, AutoFillsAtFourKiBAndPromotesAPageThatStaysInCoreToOnePmdMapping) {
  PHEAP_REQUIRE_HUGE();
  constexpr std::size_t npages = 4;
  backing bk("posix");
  pager_options o = auto_options(2 * npages);
  o.tracking = dirty_tracking::wp_sync;
  {
    pager pg(bk.create(npages * kHuge, kHuge), o);
    ASSERT_TRUE(pg.stats().huge_pages) << pg.stats().huge_pages_why;
    EXPECT_EQ(pg.tracking(), dirty_tracking::wp_sync);
    for (std::size_t p = 0; p < npages; ++p) fill_pattern(pg.base() + p * kHuge, kHuge, 21, p, 1);
    EXPECT_EQ(anon_huge_bytes(pg.base(), pg.size()), 0u) << "auto filled huge: " << pg.stats();
    EXPECT_EQ(pg.stats().huge_fills, 0u);
    EXPECT_EQ(pg.stats().huge_fallback_fills, 0u) << "auto's 4 KiB fills are not fallbacks";
    pg.flush({});
    const std::uint64_t written = pg.stats().dirty_pages_written;
    // A page is promoted at the second round that finds it dense and small.
    EXPECT_EQ(promote_round(pg), 0u);
    EXPECT_EQ(promote_until(pg, npages), npages) << pg.stats();
    auto s = pg.stats();
    EXPECT_EQ(s.huge_promotions, npages) << s;
    EXPECT_EQ(anon_huge_bytes(pg.base(), pg.size()), npages * kHuge) << s;
    EXPECT_EQ(s.huge_mapped_bytes, npages * kHuge) << s;
    EXPECT_EQ(promote_round(pg), 0u) << "a PMD-mapped page is no candidate";
    // Clean pages stay clean and write-protected: a flush writes nothing.
    EXPECT_EQ(writable_bytes(pg.base(), pg.size()), 0u);
    pg.flush({});
    EXPECT_EQ(pg.stats().dirty_pages_written, written) << pg.stats();
    for (std::size_t p = 0; p < npages; ++p) EXPECT_TRUE(page_is(pg.base() + p * kHuge, 21, p, 1)) << p;
    // A later write is a wp_sync fault that keeps the PMD mapping, and is flushed.
    fill_pattern(pg.base() + kHuge, kHuge, 21, 1, 2);
    pg.flush({});
    s = pg.stats();
    EXPECT_EQ(s.dirty_pages_written, written + 1) << s;
    EXPECT_EQ(anon_huge_bytes(pg.base(), pg.size()), npages * kHuge) << s;
    paging::test_access::impl(pg).wait_evictor_idle();
    EXPECT_EQ(paging::test_access::impl(pg).check_invariants(), "");
  }
  pager pg(bk.reopen(), o);
  for (std::size_t p = 0; p < npages; ++p) EXPECT_TRUE(page_is(pg.base() + p * kHuge, 21, p, p == 1 ? 2 : 1)) << p;
}

// wp_async (what automatic tracking resolves to under auto, with faulting-thread fills):
// clean pages stay small (their writers would not wait), written ones are promoted; after a
// flush the first write splits a promoted page and a later round promotes it again.
TEST(HugePromotion, UnderWpAsyncOnlyWrittenPagesArePromotedAndPromotedAgainAfterAFlushSplitsThem) {
  PHEAP_REQUIRE_HUGE();
  constexpr std::size_t npages = 4;
  backing bk("posix");
  {
    pager pg(bk.create(npages * kHuge, kHuge), auto_options(2 * npages));
    ASSERT_TRUE(pg.stats().huge_pages) << pg.stats().huge_pages_why;
    ASSERT_EQ(pg.tracking(), dirty_tracking::wp_async);
    for (std::size_t p = 0; p < npages; ++p) fill_pattern(pg.base() + p * kHuge, kHuge, 26, p, 1);
    pg.flush({});
    fill_pattern(pg.base() + 2 * kHuge, kHuge, 26, 2, 2);  // page 2 written since the flush
    EXPECT_EQ(promote_round(pg), 0u);
    EXPECT_EQ(promote_until(pg, 1), 1u) << pg.stats();
    EXPECT_EQ(anon_huge_bytes(pg.base(), pg.size()), kHuge) << pg.stats();
    EXPECT_EQ(anon_huge_bytes(pg.base() + 2 * kHuge, kHuge), kHuge) << "not page 2 promoted";
    const std::uint64_t written = pg.stats().dirty_pages_written;
    pg.flush({});
    EXPECT_EQ(pg.stats().dirty_pages_written, written + 1) << "the promoted page is flushed once";
    // Its first write after the flush splits it (wp_async); two rounds later it is promoted again.
    fill_pattern(pg.base() + 2 * kHuge, kHuge, 26, 2, 3);
    EXPECT_EQ(anon_huge_bytes(pg.base(), pg.size()), 0u) << pg.stats();
    EXPECT_EQ(promote_round(pg), 0u);
    EXPECT_EQ(promote_until(pg, 1), 1u) << pg.stats();
    EXPECT_EQ(anon_huge_bytes(pg.base() + 2 * kHuge, kHuge), kHuge) << pg.stats();
    EXPECT_EQ(pg.stats().huge_promotions, 2u);
    pg.flush({});
    EXPECT_EQ(pg.stats().dirty_pages_written, written + 2) << pg.stats();
    EXPECT_EQ(paging::test_access::impl(pg).check_invariants(), "");
  }
  pager pg(bk.reopen(), auto_options(2 * npages));
  for (std::size_t p = 0; p < npages; ++p) EXPECT_TRUE(page_is(pg.base() + p * kHuge, 26, p, p == 2 ? 3 : 1)) << p;
}

// Under every tracking mode (all_resident never write-protects; wp_async's writes are
// resolved by the kernel).
TEST(HugePromotion, ADirtyPageIsPromotedDirtyAndItsWritesSurviveFlushAndReopen) {
  PHEAP_REQUIRE_HUGE();
  constexpr std::size_t npages = 3;
  for (auto mode : {dirty_tracking::wp_sync, dirty_tracking::all_resident, dirty_tracking::wp_async}) {
    SCOPED_TRACE(to_string(mode));
    backing bk("posix");
    pager_options o = auto_options(2 * npages);
    o.tracking = mode;
    {
      pager pg(bk.create(npages * kHuge, kHuge), o);
      ASSERT_TRUE(pg.stats().huge_pages) << pg.stats().huge_pages_why;
      for (std::size_t p = 0; p < npages; ++p) fill_pattern(pg.base() + p * kHuge, kHuge, 22, p, 1);
      EXPECT_EQ(promote_round(pg), 0u);
      EXPECT_EQ(promote_until(pg, npages), npages) << pg.stats();
      EXPECT_EQ(writable_bytes(pg.base(), pg.size()), npages * kHuge) << "a dirty page is writable (I5)";
      // Written again while promoted: no fault, still dirty.
      fill_pattern(pg.base(), kHuge, 22, 0, 2);
      pg.flush({});
      const auto s = pg.stats();
      EXPECT_EQ(s.dirty_pages_written, npages) << s;
      EXPECT_EQ(anon_huge_bytes(pg.base(), pg.size()), npages * kHuge) << s;
      EXPECT_EQ(paging::test_access::impl(pg).check_invariants(), "");
    }
    pager pg(bk.reopen(), o);
    for (std::size_t p = 0; p < npages; ++p) EXPECT_TRUE(page_is(pg.base() + p * kHuge, 22, p, p == 0 ? 2 : 1)) << p;
  }
}

// Threads write while rounds promote the pages (and flushes make them clean again, so that
// first writes are write-protect faults that meet the promotions): each thread writes a word
// of every 4 KiB frame of a page, page after page, each word once with its own value, so a
// store lost by a promotion cannot be covered by a later one. Every value is what the reopen
// reads.
TEST(HugePromotion, WritesOfThreadsRunningDuringPromotionsAreAllKept) {
  PHEAP_REQUIRE_HUGE();
  constexpr std::size_t npages = 12, frames = kHuge / 4096;
  constexpr unsigned threads = 3;
  constexpr std::size_t passes = 4096 / 8 / threads;  // a word of each frame per thread and pass
  constexpr std::uint64_t rounds = 40;
  auto word = [](std::byte* base, unsigned t, std::uint64_t k) {
    const std::uint64_t pass = k / (frames * npages), p = k / frames % npages, f = k % frames;
    return reinterpret_cast<std::uint64_t*>(base + p * kHuge + f * 4096 + 8 * (t + threads * pass));
  };
  for (auto mode : {dirty_tracking::wp_sync, dirty_tracking::wp_async}) {
    SCOPED_TRACE(to_string(mode));
    pager_options o = auto_options(2 * npages);
    o.tracking = mode;
    std::uint64_t written[threads] = {};  // each thread's words written (read after the join)
    backing bk("mem");
    {
      pager pg(bk.create(npages * kHuge, kHuge), o);
      ASSERT_TRUE(pg.stats().huge_pages) << pg.stats().huge_pages_why;
      for (std::size_t p = 0; p < npages; ++p) std::memset(pg.base() + p * kHuge, 0, kHuge);
      pg.flush({});
      std::atomic<bool> done{false};
      std::atomic<std::uint64_t> progress[threads] = {};  // words written so far, per thread
      std::vector<std::thread> ts;
      for (unsigned t = 0; t < threads; ++t) {
        ts.emplace_back([&, t] {
          std::uint64_t k = (frames * npages / threads) * t;  // threads start on different pages
          const std::uint64_t end = passes * frames * npages;
          std::uint64_t n = 0;
          for (; k < end && !done.load(std::memory_order_relaxed); ++k, ++n) {
            std::atomic_ref<std::uint64_t>(*word(pg.base(), t, k)).store(k + 1, std::memory_order_relaxed);
            for (int spin = 0; spin < 100; ++spin) asm volatile("" ::: "memory");  // pace
            if (n % 512 == 0) progress[t].store(n, std::memory_order_relaxed);
          }
          written[t] = n;
        });
      }
      // At least `rounds` rounds, and on until every thread has written a whole pass (a
      // loaded machine may not have run the writers yet), 20 s at most.
      auto behind = [&] {
        for (auto& n : progress) {
          if (n.load(std::memory_order_relaxed) < frames * npages) return true;
        }
        return false;
      };
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      std::size_t promoted = 0;
      for (std::uint64_t r = 0; r < rounds || (behind() && std::chrono::steady_clock::now() < deadline); ++r) {
        promoted += promote_round(pg);
        if (r % 8 == 7) pg.flush({});
        if (r >= rounds) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      done = true;
      for (auto& th : ts) th.join();
      if (mode == dirty_tracking::wp_sync) {
        EXPECT_EQ(promoted, npages) << pg.stats();
        EXPECT_EQ(anon_huge_bytes(pg.base(), pg.size()), npages * kHuge) << pg.stats();
      } else {
        // Only pages written since the last flush are candidates, so how many depends on
        // where the writers were at each flush; each flush's writes split pages, which later
        // rounds promote again.
        EXPECT_GT(promoted, 0u) << pg.stats();
      }
      pg.flush({});
    }
    pager pg(bk.reopen(), o);
    std::size_t wrong = 0, checked = 0;
    for (unsigned t = 0; t < threads; ++t) {
      const std::uint64_t first = (frames * npages / threads) * t;
      for (std::uint64_t k = first; k < first + written[t]; ++k, ++checked) {
        std::uint64_t v;
        std::memcpy(&v, word(pg.base(), t, k), 8);
        if (v != k + 1 && wrong++ < 5) ADD_FAILURE() << "thread " << t << " write " << k << " reads " << v;
      }
    }
    EXPECT_EQ(wrong, 0u);
    EXPECT_GT(checked, threads * frames * npages) << "the threads wrote less than a pass each";
  }
}

TEST(HugePromotion, NothingIsPromotedWhileTheEvictorEvicts) {
  PHEAP_REQUIRE_HUGE();
  constexpr std::size_t npages = 12, buffer = 4;
  backing bk("mem");
  pager_options o = auto_options(buffer);
  o.tracking = dirty_tracking::wp_sync;  // clean pages are candidates too (not under wp_async)
  pager pg(bk.create(npages * kHuge, kHuge), o);
  ASSERT_TRUE(pg.stats().huge_pages) << pg.stats().huge_pages_why;
  for (std::size_t p = 0; p < npages; ++p) fill_pattern(pg.base() + p * kHuge, kHuge, 23, p, 1);
  EXPECT_EQ(promote_round(pg), 0u);
  EXPECT_EQ(promote_round(pg), 0u);
  // Each pass evicts between two rounds: nothing is promoted.
  for (int pass = 0; pass < 3; ++pass) {
    for (std::size_t p = 0; p < npages; ++p) EXPECT_TRUE(page_is(pg.base() + p * kHuge, 23, p, 1)) << p;
    EXPECT_EQ(promote_round(pg), 0u) << pg.stats();
  }
  EXPECT_EQ(pg.stats().huge_promotions, 0u) << pg.stats();
  EXPECT_GT(pg.stats().evictions, 0u) << pg.stats();
  // In core again (no eviction for two rounds): the resident pages are promoted.
  paging::test_access::impl(pg).wait_evictor_idle();
  for (int r = 0; r < 10 && pg.stats().huge_promotions == 0; ++r) (void)promote_round(pg);
  EXPECT_GT(pg.stats().huge_promotions, 0u) << "nothing promoted once evictions stopped: " << pg.stats();
  EXPECT_LE(pg.stats().huge_promotions, buffer) << pg.stats();
  for (std::size_t p = 0; p < npages; ++p) EXPECT_TRUE(page_is(pg.base() + p * kHuge, 23, p, 1)) << p;
  paging::test_access::impl(pg).wait_evictor_idle();
  EXPECT_EQ(paging::test_access::impl(pg).check_invariants(), "");
}

// A read-only open (huge_pool.hpp, "Read-only opens": writable region kept read-only by
// write-protection, I10) promotes its pages and every byte of them stays write-protected.
TEST(HugePromotion, AReadOnlyOpenPromotesItsPagesAndKeepsThemWriteProtected) {
  PHEAP_REQUIRE_HUGE();
  constexpr std::size_t npages = 6, written = 4;
  backing bk("posix");
  {
    pager pg(bk.create(npages * kHuge, kHuge), auto_options(npages));
    for (std::size_t p = 0; p < written; ++p) fill_pattern(pg.base() + p * kHuge, kHuge, 24, p, 1);
    pg.flush({});
  }
  for (auto fill : {fault_filling::workers, fault_filling::faulting_thread}) {
    SCOPED_TRACE(to_string(fill));
    pager_options o = auto_options(npages);
    o.fault_fill = fill;
    pager ro(bk.reopen(true), o);
    ASSERT_TRUE(ro.read_only());
    ASSERT_TRUE(ro.stats().huge_pages) << ro.stats().huge_pages_why;
    for (std::size_t p = 0; p < written; ++p) EXPECT_TRUE(page_is(ro.base() + p * kHuge, 24, p, 1)) << p;
    for (std::size_t p = written; p < npages; ++p) {
      EXPECT_EQ(std::to_integer<int>(ro.base()[p * kHuge + 777]), 0) << p;
    }
    EXPECT_EQ(anon_huge_bytes(ro.base(), ro.size()), 0u);
    EXPECT_EQ(promote_round(ro), 0u);
    EXPECT_EQ(promote_until(ro, npages), npages) << ro.stats();
    EXPECT_EQ(anon_huge_bytes(ro.base(), ro.size()), npages * kHuge) << ro.stats();
    EXPECT_EQ(writable_bytes(ro.base(), ro.size()), 0u) << "a page of a read-only region is writable";
    for (std::size_t p = 0; p < written; ++p) EXPECT_TRUE(page_is(ro.base() + p * kHuge, 24, p, 1)) << p;
    EXPECT_EQ(ro.stats().bytes_written, 0u);
    EXPECT_EQ(paging::test_access::impl(ro).check_invariants(), "");
  }
}

TEST(HugePromotion, ThePromoterThreadPromotesOnItsOwnEveryPeriod) {
  PHEAP_REQUIRE_HUGE();
  constexpr std::size_t npages = 4;
  backing bk("mem");
  pager pg(bk.create(npages * kHuge, kHuge), auto_options(2 * npages, 5));
  ASSERT_TRUE(pg.stats().huge_pages) << pg.stats().huge_pages_why;
  for (std::size_t p = 0; p < npages; ++p) fill_pattern(pg.base() + p * kHuge, kHuge, 25, p, 1);
  wait_until([&] { return pg.stats().huge_promotions >= npages; }, "4 promotions by the thread");
  EXPECT_EQ(anon_huge_bytes(pg.base(), pg.size()), npages * kHuge) << pg.stats();
  EXPECT_GE(pg.stats().huge_promote_rounds, 2u);
  for (std::size_t p = 0; p < npages; ++p) EXPECT_TRUE(page_is(pg.base() + p * kHuge, 25, p, 1)) << p;
}

TEST(HugePromotion, AutoIsOffOnSmallPagesAndSaysWhyAndIsSpelledAuto) {
  PHEAP_REQUIRE_HUGE();
  {
    backing bk("mem");
    pager_options o = auto_options(4);
    o.buffer_size = 16 * 65536;
    pager pg(bk.create(16 * 65536, 65536), o);
    EXPECT_FALSE(pg.stats().huge_pages);
    EXPECT_NE(pg.stats().huge_pages_why.find("64 KiB"), std::string::npos) << pg.stats().huge_pages_why;
  }
  EXPECT_STREQ(to_string(huge_pages_mode::automatic), "auto");
  ::setenv("PHEAP_HUGE_PAGES", "auto", 1);
  EXPECT_EQ(pager_options::from_env().huge_pages, huge_pages_mode::automatic);
  ::unsetenv("PHEAP_HUGE_PAGES");
}

}  // namespace
}  // namespace pheap::test
