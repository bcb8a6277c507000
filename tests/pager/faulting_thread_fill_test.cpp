// Fills on the faulting thread (pager_options::fault_fill = faulting_thread, pheap/pager.hpp):
// a missing page is filled by the thread that touched it, in pheap's SIGBUS handler, with the
// same results as a worker's fill — bytes through eviction, a store read error as the guard's
// error — and with the documented costs: a system call on a missing page fails with EFAULT,
// and wp_sync tracking is refused (automatic gives the fills to the workers there instead). (Round trips through eviction and flushes with many threads,
// and the tiny-buffer watchdog, run with faulting-thread fills too: pager_roundtrip_test.)
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "pager/bounce_pool.hpp"
#include "pager/test_access.hpp"
#include "pager_test_util.hpp"
#include "pheap/fault_guard.hpp"

// Under TSan, fills inside pheap's SIGBUS handler: tests/support/tsan_signal_fills.cpp.

namespace pheap::test {
namespace {

constexpr std::size_t kPs = 4096;
constexpr std::size_t kPages = 256;

pager_options thread_fills(std::size_t buffer_pages) {
  pager_options o;
  o.buffer_size = buffer_pages * kPs;
  o.tracking = dirty_tracking::wp_async;
  o.fault_fill = fault_filling::faulting_thread;
  return o;
}

std::uint64_t* word(pager& pg, std::size_t p) {
  return reinterpret_cast<std::uint64_t*>(pg.base() + p * kPs);
}

TEST(FaultingThreadFill, EveryMissingPageIsFilledByTheThreadThatTouchedIt) {
  PHEAP_REQUIRE_UFFD(dirty_tracking::wp_async);
  auto s = mem_store::create(kPages * kPs, kPs);
  auto sh = s->state();
  pager pg(std::move(s), thread_fills(32));
  std::vector<std::thread> ts;
  for (unsigned t = 0; t < 2; ++t) {
    ts.emplace_back([&, t] {
      for (std::size_t p = t; p < kPages; p += 2) *word(pg, p) = p * 7 + 1;
    });
  }
  for (auto& t : ts) t.join();
  std::size_t bad = 0;
  for (int pass = 0; pass < 2; ++pass) {
    for (std::size_t p = 0; p < kPages; ++p) {
      bad += *reinterpret_cast<volatile std::uint64_t*>(word(pg, p)) != p * 7 + 1;
    }
  }
  EXPECT_EQ(bad, 0u);
  const pager_stats st = pg.stats();
  ASSERT_GT(st.evictions, kPages) << st;
  ASSERT_GT(sh->reads.load(), 0u) << "no page came back from the store: " << st;
  // Every missing fault went through the SIGBUS handler; none reached a worker as a message.
  // The first access to each page is a write: on x86-64 the signal frame says so and the fills
  // of the first loop are write fills (elsewhere every fill is a read fill).
  EXPECT_EQ(st.thread_fills, st.read_faults + st.write_faults) << st;
#if defined(__x86_64__)
  EXPECT_GT(st.write_faults, 0u) << st;
#else
  EXPECT_EQ(st.write_faults, 0u) << st;
#endif
  // Every store read was a fill of a missing page by the thread that touched it, or a
  // read-ahead window a worker read before the page was touched.
  EXPECT_GE(st.thread_fills + st.read_ahead_pages, st.pages_read) << st;
  paging::test_access::impl(pg).wait_evictor_idle();
  EXPECT_EQ(paging::test_access::impl(pg).check_invariants(), "");
}

#if defined(__x86_64__)
// Minor faults this thread has taken so far (a write-protect fault resolved by the kernel is
// one; a SIGBUS fault is not counted, nor is a page this thread installs with UFFDIO_COPY).
long thread_minor_faults() {
  rusage u{};
  ::getrusage(RUSAGE_THREAD, &u);
  return u.ru_minflt;
}

// x86-64's signal frame carries the page fault's error code (fault_signals.cpp, was_write): a
// first write to a missing page is filled for a write, mapped writable, and the retried write
// takes no second fault; a first read is a read fill, write-protected, and the write after it
// is a write-protect fault. Both writes reach the store by the next flush (the page tables
// carry a write fill's write to the tracking as any other).
TEST(FaultingThreadFill, AFirstWriteIsFilledWritableAndTakesNoWriteProtectFaultAfterIt) {
  PHEAP_REQUIRE_UFFD(dirty_tracking::wp_async);
  constexpr std::size_t kHalf = 32;
  auto s = mem_store::create(2 * kHalf * kPs, kPs);
  auto sh = s->state();
  {  // every page written once and committed: the fills below read the store (no zero-ahead)
    pager pg(std::move(s), thread_fills(4 * kHalf));
    for (std::size_t p = 0; p < 2 * kHalf; ++p) *word(pg, p) = p + 1;
    pg.flush({});
  }
  pager_options o = thread_fills(4 * kHalf);  // the buffer holds every page
  o.read_ahead = 0;  // every page is filled by its own first access, read or write
  pager pg(mem_store::reopen(sh), o);
  const long f0 = thread_minor_faults();
  for (std::size_t p = 0; p < kHalf; ++p) *word(pg, p) = p + 100;  // first access: a write
  const long f1 = thread_minor_faults();
  std::uint64_t sum = 0;
  for (std::size_t p = kHalf; p < 2 * kHalf; ++p) sum += *reinterpret_cast<volatile std::uint64_t*>(word(pg, p));
  const long f2 = thread_minor_faults();
  for (std::size_t p = kHalf; p < 2 * kHalf; ++p) *word(pg, p) = p + 100;  // then written
  const long f3 = thread_minor_faults();
  EXPECT_EQ(sum, (kHalf + 1 + 2 * kHalf) * kHalf / 2);
  const pager_stats st = pg.stats();
  EXPECT_EQ(st.write_faults, kHalf) << st;
  EXPECT_EQ(st.read_faults, kHalf) << st;
  EXPECT_EQ(st.thread_fills, 2 * kHalf) << st;
  // A few faults of the thread's own (its stack, the statistics) may fall in either window;
  // a write-protect fault per page may not. (Under a sanitizer the accesses also fault in the
  // sanitizer's shadow of the region, which these counts cannot tell apart: there the
  // statistics above carry the claim.)
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  EXPECT_LT(f1 - f0, static_cast<long>(kHalf / 4)) << "first writes took a second fault";
  EXPECT_GE(f3 - f2, static_cast<long>(kHalf)) << "writes after read fills took no fault";
#else
  (void)f0, (void)f1, (void)f2, (void)f3;
#endif
  pg.flush({});
  auto again = mem_store::reopen(sh);
  std::size_t bad = 0;
  for (std::size_t p = 0; p < 2 * kHalf; ++p) {
    std::uint64_t v = 0;
    std::vector<std::byte> b(kPs);
    page_read r{p, b.data()};
    again->read_pages(std::span<const page_read>(&r, 1));
    std::memcpy(&v, b.data(), sizeof v);
    bad += v != p + 100;
  }
  EXPECT_EQ(bad, 0u) << "writes lost by the flush";
}
#endif

TEST(FaultingThreadFill, ASystemCallOnAMissingPageFailsWithEfaultAndOnAResidentOneWorks) {
  PHEAP_REQUIRE_UFFD(dirty_tracking::wp_async);
  pager pg(mem_store::create(kPages * kPs, kPs), thread_fills(32));
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  // The kernel reads the missing page for write(2): no thread to fill it, so EFAULT.
  errno = 0;
  EXPECT_EQ(::write(fds[1], pg.base() + 100 * kPs, 8), -1);
  EXPECT_EQ(errno, EFAULT);
  *word(pg, 100) = 0x1234;  // filled on this thread
  EXPECT_EQ(::write(fds[1], pg.base() + 100 * kPs, 8), 8);
  std::uint64_t got = 0;
  EXPECT_EQ(::read(fds[0], &got, 8), 8);
  EXPECT_EQ(got, 0x1234u);
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST(FaultingThreadFill, AnUnreadablePageIsTheStoresErrorInsideTheGuardAndOtherPagesWork) {
  PHEAP_REQUIRE_UFFD(dirty_tracking::wp_async);
  auto s = mem_store::create(16 * kPs, kPs);
  s->state()->fail_read.insert(5);
  pager pg(std::move(s), thread_fills(8));
  if (!paging::test_access::core(pg).have_poison) {
    PHEAP_REQUIRE_FEATURE("UFFDIO_POISON (Linux 6.6): without it a read error is a tgkill SIGBUS");
  }
  try {
    guard_faults([&] { return *reinterpret_cast<volatile char*>(pg.base() + 5 * kPs + 7); });
    ADD_FAILURE() << "no error for an unreadable page";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::io) << e.what();
    EXPECT_NE(std::string(e.what()).find("injected"), std::string::npos) << e.what();
  }
  *word(pg, 4) = 44;
  EXPECT_EQ(*word(pg, 4), 44u);
  EXPECT_EQ(pg.stats().poisoned_pages, 1u);
  EXPECT_THROW(pg.flush({}), error);  // the read error, once
  pg.flush({});
}

// bounce_pool.hpp P1-P3: each slot once until released, the lowest free slot first, none when
// all are held.
TEST(FaultingThreadFill, TheBouncePoolGivesEachSlotToOneFillAndTheLowestFreeFirst) {
  paging::bounce_pool pool;
  pool.open(kPs);
  std::vector<std::byte*> got;
  for (unsigned i = 0; i < paging::bounce_pool::kSlots; ++i) {
    unsigned slot = 99;
    got.push_back(pool.acquire(slot));
    ASSERT_NE(got.back(), nullptr);
    EXPECT_EQ(slot, i);
    EXPECT_EQ(got.back(), got.front() + std::size_t{i} * kPs);
  }
  unsigned slot = 99;
  EXPECT_EQ(pool.acquire(slot), nullptr) << "a 65th slot";
  pool.release(17);
  pool.release(3);
  EXPECT_EQ(pool.acquire(slot), got[3]);
  EXPECT_EQ(slot, 3u);
  EXPECT_EQ(pool.acquire(slot), got[17]);
  EXPECT_EQ(pool.acquire(slot), nullptr);
}

// The documented wait of a faulting-thread fill (pheap/pager.hpp): with every bounce slot held,
// a thread that touches a missing page sleeps 20 µs and retries, counted in
// thread_fill_retries, for as long as no slot is free, and fills the page once one is.
TEST(FaultingThreadFill, WithEveryBounceSlotHeldAFaultRetriesCountedUntilASlotIsFree) {
  PHEAP_REQUIRE_UFFD(dirty_tracking::wp_async);
  auto s = mem_store::create(8 * kPs, kPs);
  auto sh = s->state();
  {
    pager pg(std::move(s), thread_fills(8));
    *word(pg, 5) = 55;
    pg.flush({});
  }
  pager pg(mem_store::reopen(sh), thread_fills(8));
  paging::bounce_pool& pool = paging::test_access::faults(pg).thread_bounce();
  std::vector<unsigned> held;
  for (unsigned slot = 0; pool.acquire(slot) != nullptr;) held.push_back(slot);
  ASSERT_EQ(held.size(), paging::bounce_pool::kSlots);
  std::atomic<bool> done{false};
  std::uint64_t got = 0;
  std::thread t([&] {
    got = *reinterpret_cast<volatile std::uint64_t*>(word(pg, 5));
    done = true;
  });
  eventually([&] { return pg.stats().thread_fill_retries >= 10; });
  EXPECT_GE(pg.stats().thread_fill_retries, 10u) << pg.stats();
  EXPECT_FALSE(done.load()) << "filled without a bounce slot";
  EXPECT_EQ(pg.stats().thread_fills, 0u) << pg.stats();
  pool.release(held.back());
  t.join();
  EXPECT_EQ(got, 55u);
  const pager_stats st = pg.stats();
  EXPECT_EQ(st.thread_fills, 1u) << st;
  EXPECT_EQ(st.read_faults, 1u) << st;
  held.pop_back();
  for (unsigned slot : held) pool.release(slot);
}

// A second thread that touches a page while the first one's fill of it is reading the store
// sleeps until the install wakes it (pager_impl::sleep_for_page), as a worker's faulting thread
// sleeps in the kernel until the UFFDIO_COPY: it has its bytes about when the first thread
// does, not at the sleep's 100 ms bound, and sleeps once, not once per 20 µs. The read takes
// 20 ms, so a sleeper that is not woken finishes at least 80 ms after the first thread; the
// bound of 50 ms leaves room for a late wake-up on a loaded machine (the suite runs two tests
// at a time on two cores) and for the first thread's own late finish.
TEST(FaultingThreadFill, AThreadThatFindsThePageBeingFilledSleepsUntilTheInstallWakesIt) {
  PHEAP_REQUIRE_UFFD(dirty_tracking::wp_async);
  using clk = std::chrono::steady_clock;
  auto s = mem_store::create(8 * kPs, kPs);
  auto sh = s->state();
  {
    pager pg(std::move(s), thread_fills(8));
    *word(pg, 5) = 55;
    pg.flush({});
  }
  pager pg(mem_store::reopen(sh), thread_fills(8));
  sh->read_delay_ms = 20;
  const std::uint64_t batches = sh->read_batches.load();
  std::uint64_t first = 0, second = 0;
  clk::time_point first_done, second_done;
  std::thread a([&] {
    first = *reinterpret_cast<volatile std::uint64_t*>(word(pg, 5));
    first_done = clk::now();
  });
  while (sh->read_batches.load() == batches) std::this_thread::yield();  // a's read has begun
  std::thread b([&] {
    second = *reinterpret_cast<volatile std::uint64_t*>(word(pg, 5));
    second_done = clk::now();
  });
  a.join();
  b.join();
  EXPECT_EQ(first, 55u);
  EXPECT_EQ(second, 55u);
  const pager_stats st = pg.stats();
  EXPECT_EQ(st.thread_fills, 1u) << st;
  EXPECT_EQ(sh->read_batches.load() - batches, 1u) << "the page was read twice";
  EXPECT_LE(st.thread_fill_retries, 2u) << st;
  EXPECT_LT(second_done - first_done, std::chrono::milliseconds(50))
      << "the second thread was not woken by the install";
}

// More threads than bounce slots fault at once through a small buffer: every page right, no
// thread stuck (P2: a thread without a slot retries).
TEST(FaultingThreadFill, MoreThreadsThanBounceSlotsFaultingAtOnceAllFinishWithTheirBytes) {
  PHEAP_REQUIRE_UFFD(dirty_tracking::wp_async);
  constexpr unsigned kThreads = paging::bounce_pool::kSlots + 16;
  constexpr std::size_t kMany = kThreads * 8;
  pager pg(mem_store::create(kMany * kPs, kPs), thread_fills(kThreads));
  for (std::size_t p = 0; p < kMany; ++p) *word(pg, p) = p ^ 0x5a5a;
  pg.flush({});
  std::atomic<std::size_t> bad{0};
  std::vector<std::thread> ts;
  for (unsigned t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] {
      for (int pass = 0; pass < 3; ++pass) {
        for (std::size_t p = t; p < kMany; p += kThreads) {
          bad += *reinterpret_cast<volatile std::uint64_t*>(word(pg, p)) != (p ^ 0x5a5a);
        }
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(bad.load(), 0u);
  const pager_stats st = pg.stats();
  ASSERT_GT(st.pages_read, kMany) << st;
  EXPECT_EQ(st.thread_fills, st.read_faults + st.write_faults) << st;
}

// Threads that fault once and end leave nothing of pheap's behind: the fills borrow a slot of
// the pool mapped at open (bounce_pool.hpp), where a buffer mapped per thread would stay
// mapped after each thread ended.
//
// Every page has data in the store, so each thread's touch is one fill of its own (no zero-ahead
// fills a neighbour for it). The warm-up runs the evictor (its first allocations) before the
// count: glibc gives a thread its first malloc arena from those that ended threads left, and a
// pager thread taking one during the count would have the next thread map a new 64 MiB arena.
TEST(FaultingThreadFill, ThreadsThatFaultAndEndLeaveNoMemoryBehind) {
  PHEAP_REQUIRE_UFFD(dirty_tracking::wp_async);
  auto s = mem_store::create(kPages * kPs, kPs);
  auto sh = s->state();
  {
    pager pg(std::move(s), thread_fills(kPages));
    for (std::size_t p = 0; p < kPages; ++p) *word(pg, p) = p;
    pg.flush({});
  }
  pager pg(mem_store::reopen(sh), thread_fills(16));
  auto vm_kib = [] {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("VmSize:", 0) == 0) return std::stoull(line.substr(7));
    }
    return 0ull;
  };
  auto one = [&](std::size_t p) { std::thread([&] { *word(pg, p) = p; }).join(); };
  constexpr std::size_t kWarm = 48;  // three buffers' worth: the evictor has run
  for (std::size_t p = 0; p < kWarm; ++p) one(p);  // and the thread stack glibc then reuses
  ASSERT_GT(pg.stats().evictions, 0u) << pg.stats();
  const std::uint64_t fills0 = pg.stats().thread_fills;
  const auto before = vm_kib();
  constexpr std::size_t kEnded = 200;
  for (std::size_t i = 0; i < kEnded; ++i) one(kWarm + i % (kPages - kWarm));
  const auto after = vm_kib();
  EXPECT_EQ(pg.stats().thread_fills - fills0, kEnded) << pg.stats();
  // 200 leaked buffers would be 800 KiB.
  EXPECT_LT(after, before + 200) << "VmSize grew from " << before << " to " << after << " KiB";
}

TEST(FaultingThreadFill, WpSyncTrackingIsRefusedNamingWhy) {
  PHEAP_REQUIRE_UFFD(dirty_tracking::wp_sync);
  pager_options o = thread_fills(8);
  o.tracking = dirty_tracking::wp_sync;
  try {
    pager pg(mem_store::create(16 * kPs, kPs), o);
    ADD_FAILURE() << "wp_sync accepted with faulting-thread fills";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::unavailable) << e.what();
    EXPECT_NE(std::string(e.what()).find("wp_sync"), std::string::npos) << e.what();
  }
}

// fault_fill = automatic under `tracking`: 64 pages written and read back through a buffer of
// 16; the pager's statistics after.
pager_stats automatic_round_trip(dirty_tracking tracking) {
  pager_options o = thread_fills(16);
  o.tracking = tracking;
  o.fault_fill = fault_filling::automatic;
  o.read_ahead = 0;  // each page by its own fault: who filled it is the question
  pager pg(mem_store::create(64 * kPs, kPs), o);
  for (std::size_t p = 0; p < 64; ++p) *word(pg, p) = p + 3;
  std::size_t bad = 0;
  for (std::size_t p = 0; p < 64; ++p) bad += *reinterpret_cast<volatile std::uint64_t*>(word(pg, p)) != p + 3;
  EXPECT_EQ(bad, 0u);
  return pg.stats();
}

TEST(FaultingThreadFill, AutomaticFillsOnTheFaultingThreadUnderWpAsync) {
  PHEAP_REQUIRE_UFFD(dirty_tracking::wp_async);
  const pager_stats st = automatic_round_trip(dirty_tracking::wp_async);
  EXPECT_TRUE(st.thread_fill) << st;
  ASSERT_GT(st.pages_read, 0u) << st;
  EXPECT_EQ(st.thread_fills, st.read_faults + st.write_faults) << st;
}

TEST(FaultingThreadFill, AutomaticLeavesTheFillsToTheWorkersUnderWpSyncInsteadOfRefusing) {
  PHEAP_REQUIRE_UFFD(dirty_tracking::wp_sync);
  const pager_stats st = automatic_round_trip(dirty_tracking::wp_sync);
  EXPECT_FALSE(st.thread_fill) << st;
  // The round trip did fault: 64 pages read back through a buffer of 16 miss at least 48
  // times (the writes' count varies: a write fault's zero-ahead fills the next pages, whose
  // writes are then write-protect faults).
  ASSERT_GE(st.read_faults, 48u) << st;
  EXPECT_EQ(st.thread_fills, 0u) << st;
}

TEST(FaultingThreadFill, PheapFaultFillSelectsItAndABadValueNamesTheVariable) {
  ::setenv("PHEAP_FAULT_FILL", "faulting_thread", 1);
  EXPECT_EQ(pager_options::from_env().fault_fill, fault_filling::faulting_thread);
  ::setenv("PHEAP_FAULT_FILL", "workers", 1);
  EXPECT_EQ(pager_options::from_env().fault_fill, fault_filling::workers);
  ::setenv("PHEAP_FAULT_FILL", "automatic", 1);
  EXPECT_EQ(pager_options::from_env().fault_fill, fault_filling::automatic);
  ::setenv("PHEAP_FAULT_FILL", "thread", 1);
  try {
    (void)pager_options::from_env();
    ADD_FAILURE() << "bad value accepted";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("PHEAP_FAULT_FILL"), std::string::npos) << e.what();
  }
  ::unsetenv("PHEAP_FAULT_FILL");
  EXPECT_EQ(pager_options::from_env().fault_fill, fault_filling::workers);
}

}  // namespace
}  // namespace pheap::test
