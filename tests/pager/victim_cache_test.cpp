// The victim cache (src/pager/victim_cache.hpp): evicted pages come back from their kept copy
// without a store read while the kernel leaves the copy alone, from the store once it took
// it back, and the cache is on only where the options (or a memory cgroup) say.
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "pager/test_access.hpp"
#include "pager/victim_cache.hpp"
#include "pager_test_util.hpp"

namespace pheap::test {
namespace {

constexpr std::size_t kPs = 4096;
constexpr std::size_t kPages = 256;

std::uint64_t* word(pager& pg, std::size_t p) {
  return reinterpret_cast<std::uint64_t*>(pg.base() + p * kPs);
}

// Reads the first word of every page; returns the pages whose value is not p * 7 + 1 + gen.
std::size_t mismatches(pager& pg, std::uint64_t gen) {
  std::size_t bad = 0;
  for (std::size_t p = 0; p < kPages; ++p) {
    bad += *reinterpret_cast<volatile std::uint64_t*>(word(pg, p)) != p * 7 + 1 + gen;
  }
  return bad;
}

// The same, reading the pages resident now first (their count in *resident): the pass then
// evicts only pages it has read already, so a copy it keeps on the way comes back only for a
// page refaulted in the pass — one the evictor took between its fill and the read, on a loaded
// machine. (With the resident pages read last, those the evictor took before the pass reached
// them came back as hits too.)
std::size_t mismatches_resident_first(pager& pg, std::uint64_t gen, std::size_t* resident) {
  auto& core = paging::test_access::core(pg);
  std::vector<std::size_t> order, rest;
  for (std::size_t p = 0; p < kPages; ++p) {
    const bool in = paging::ps::kind(core.table.load(p)) == paging::ps::resident;
    (in ? order : rest).push_back(p);
  }
  *resident = order.size();
  order.insert(order.end(), rest.begin(), rest.end());
  std::size_t bad = 0;
  for (const std::size_t p : order) {
    bad += *reinterpret_cast<volatile std::uint64_t*>(word(pg, p)) != p * 7 + 1 + gen;
  }
  return bad;
}

pager_options with_cache(victim_caching v) {
  pager_options o;
  o.buffer_size = 32 * kPs;
  o.victim_cache = v;
  // Read-ahead off: every page comes back by its own fault, so hits and store reads count
  // what the cache did (read-ahead with the cache: PagerRoundTrip's victims variants).
  o.read_ahead = 0;
  return o;
}

// A pager of 64 KiB pages with the victim cache on, whose pages [0, written) were written,
// flushed and, as pages from 2 * written on (never written) took the buffer over, mostly
// evicted with their copies kept. 64 KiB: a zero fill is one page (a fault's zero fill ahead
// covers 64 KiB), so the stream of never-written pages turns the ring over one page per fault.
struct evicted_big_pages {
  static constexpr std::size_t kBig = 65536;
  static pager_options options(std::size_t buffer) {
    pager_options o = with_cache(victim_caching::on);
    o.buffer_size = buffer * kBig;
    return o;
  }
  evicted_big_pages(std::size_t region, std::size_t buffer, std::size_t written)
      : pg(mem_store::create(region * kBig, kBig), options(buffer)),
        impl(paging::test_access::impl(pg)),
        core(paging::test_access::core(pg)),
        next(2 * written) {
    for (std::size_t p = 0; p < written; ++p) *at(p) = p * 7 + 1;
    pg.flush({});  // the ones still resident are clean now, as every page below
    for (; next < 2 * written + 2 * buffer; ++next) (void)*at(next);
    impl.wait_evictor_idle();
  }
  volatile std::uint64_t* at(std::size_t p) {
    return reinterpret_cast<volatile std::uint64_t*>(pg.base() + p * kBig);
  }
  // (A fill wakes the faulting thread before its page's word says resident: `filling` is not
  // gone.)
  std::uint32_t kind(std::size_t p) const { return paging::ps::kind(core.table.load(p)); }
  // Evicted, with its copy in the victim cache.
  bool kept(std::size_t p) const {
    return kind(p) == paging::ps::absent && (core.table.load(p) & paging::ps::kept) &&
           core.victims.holds_copy_for_test(p);
  }
  pager pg;
  paging::pager_impl& impl;
  paging::pager_core& core;
  std::size_t next;  // the first page of the stream not touched yet
};

TEST(VictimCache, AnEvictedPageComesBackFromItsKeptCopyWithoutAStoreRead) {
  PHEAP_REQUIRE_UFFD(dirty_tracking::automatic);
  auto s = mem_store::create(kPages * kPs, kPs);
  auto sh = s->state();
  pager pg(std::move(s), with_cache(victim_caching::on));
  ASSERT_TRUE(pg.stats().victim_cache) << "PAGEMAP_SCAN cannot tell the zero page on this kernel";
  for (std::size_t p = 0; p < kPages; ++p) *word(pg, p) = p * 7 + 1;  // evicted dirty: written, kept
  const pager_stats s0 = pg.stats();
  const std::uint64_t reads0 = sh->reads;
  for (int pass = 0; pass < 3; ++pass) ASSERT_EQ(mismatches(pg, 0), 0u) << "pass " << pass;
  // (A batch counts its keeps before its evictions: read the counters between batches.)
  paging::test_access::impl(pg).wait_evictor_idle();
  const pager_stats s1 = pg.stats();
  ASSERT_GT(s1.evictions - s0.evictions, 2 * kPages) << s1;
  // Every victim with data is kept. The only ones not kept are pages with nothing to keep:
  // zero-filled ahead of the writes and evicted before the write reached them (on a loaded
  // machine, dozens), each of which came back as zeros once more.
  ASSERT_GE(s1.zero_fills, kPages) << s1;
  EXPECT_LE(s1.evictions - s1.victims_kept, s1.zero_fills - kPages) << s1;
  // Nothing presses on memory here, so the kernel keeps the copies: every refill is a hit.
  // (A little slack for a machine short of memory.)
  EXPECT_GE(s1.victim_hits - s0.victim_hits, (s1.evictions - s0.evictions) * 9 / 10) << s1;
  EXPECT_LE(sh->reads - reads0, (s1.evictions - s0.evictions) / 10) << s1;
  EXPECT_EQ(sh->reads - reads0, s1.pages_read - s0.pages_read) << "store reads other than fills";
  EXPECT_EQ(paging::test_access::impl(pg).check_invariants(), "");
}

// Step 4: the copy a fill used is dropped by the next eviction batch, so it holds no room that
// reclaim would otherwise take from the victims not yet back; the page's next eviction keeps a
// new one.
TEST(VictimCache, ACopyThatBroughtItsPageBackIsDroppedByTheNextBatchAndTheNextEvictionKeepsANewOne) {
  PHEAP_REQUIRE_UFFD(dirty_tracking::automatic);
  auto s = mem_store::create(kPages * kPs, kPs);
  pager pg(std::move(s), with_cache(victim_caching::on));
  ASSERT_TRUE(pg.stats().victim_cache);
  auto& impl = paging::test_access::impl(pg);
  auto& core = paging::test_access::core(pg);
  for (std::size_t p = 0; p < kPages; ++p) *word(pg, p) = p * 7 + 1;  // evicted, kept
  impl.wait_evictor_idle();
  std::vector<std::size_t> kept;  // out of memory, with a whole copy
  for (std::size_t p = 0; p < kPages && kept.size() < 8; ++p) {
    const auto w = core.table.load(p);
    if (paging::ps::kind(w) != paging::ps::resident && (w & paging::ps::kept) &&
        core.victims.holds_copy_for_test(p)) {
      kept.push_back(p);
    }
  }
  ASSERT_EQ(kept.size(), 8u) << pg.stats();
  const std::uint64_t hits = pg.stats().victim_hits;
  for (const std::size_t p : kept) {  // (a fill may bring a run of neighbours with it)
    ASSERT_EQ(*reinterpret_cast<volatile std::uint64_t*>(word(pg, p)), p * 7 + 1);
  }
  EXPECT_GE(pg.stats().victim_hits - hits, kept.size()) << "they came back from their copies";
  // Faults on pages not among them make the evictor run a batch (32-page buffer, full) that
  // begins after the last of those fills (a batch running during them may have dropped only
  // some of their copies).
  impl.wait_evictor_idle();
  const std::uint64_t ev0 = pg.stats().evictions;
  for (std::size_t p = kPages - 1; pg.stats().evictions == ev0 && p > kPages / 2; --p) {
    (void)*reinterpret_cast<volatile std::uint64_t*>(word(pg, p));
    impl.wait_evictor_idle();
  }
  ASSERT_GT(pg.stats().evictions, ev0);
  for (const std::size_t p : kept) {  // resident now, or evicted again with a new copy
    if (paging::ps::kind(core.table.load(p)) == paging::ps::resident) {
      EXPECT_FALSE(core.victims.holds_copy_for_test(p)) << "page " << p << "'s copy was used: dropped";
    }
  }
  // Writing every page again evicts them all again: each keeps a new copy.
  for (std::size_t p = 0; p < kPages; ++p) *word(pg, p) = p * 7 + 2;
  for (std::size_t p = 0; p < kPages; ++p) *word(pg, p) = p * 7 + 1;
  impl.wait_evictor_idle();
  std::size_t recopied = 0;
  for (const std::size_t p : kept) {
    recopied += paging::ps::kind(core.table.load(p)) != paging::ps::resident &&
                core.victims.holds_copy_for_test(p);
  }
  EXPECT_GE(recopied, 6u) << pg.stats();
  ASSERT_EQ(mismatches(pg, 0), 0u);
  impl.wait_evictor_idle();
  EXPECT_EQ(impl.check_invariants(), "");
}

// Step 4 on the cache alone: a fill notes the copy it took and the evictor drops the noted ones
// in one call before its next keeps; a fill that finds kPendingDrops noted drops its own.
TEST(VictimCache, TakenCopiesWaitForTheEvictorsNextBatchAndPastTheLimitAreDroppedAtOnce) {
  constexpr std::size_t n = paging::victim_cache::kPendingDrops + 1;
  const int pagemap = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(pagemap, 0);
  paging::victim_cache vc;
  if (!vc.open(pagemap, kPs, n + 1)) {
    ::close(pagemap);
    GTEST_FAIL() << "PAGEMAP_SCAN cannot tell the zero page on this kernel (Linux 6.7+ can)";
  }
  std::vector<std::byte> page(kPs), out(kPs);
  std::vector<std::size_t> given;
  for (std::size_t p = 0; p < n; ++p) {
    std::memset(page.data(), static_cast<int>(p + 1), kPs);
    vc.keep(p, page.data());
    given.push_back(p);
  }
  vc.give_back(given.data(), given.size(), given.size());
  for (std::size_t p = 0; p < n; ++p) {
    ASSERT_TRUE(vc.take(p, out.data())) << "page " << p;
    EXPECT_EQ(out[kPs - 1], static_cast<std::byte>(p + 1)) << "page " << p;
    if (p + 1 < n) {
      EXPECT_TRUE(vc.holds_copy_for_test(p)) << "page " << p << ": dropped by the fill, not noted";
    } else {
      EXPECT_FALSE(vc.holds_copy_for_test(p)) << "the note list was full: dropped at once";
    }
  }
  vc.drop_taken();
  for (std::size_t p = 0; p < n; ++p) {
    EXPECT_FALSE(vc.holds_copy_for_test(p)) << "page " << p << ": noted, not dropped";
    EXPECT_FALSE(vc.take(p, out.data())) << "page " << p << ": no copy left to take";
  }
  vc.drop_taken();  // nothing noted: nothing to do
  ::close(pagemap);
}

TEST(VictimCache, PrepareMapsABatchsMirrorPagesBeforeTheCopiesSoKeepTakesNoPageFault) {
  // The evictor's keep() into a mirror page the kernel took back (or never had) is a page
  // fault per page unless prepare() mapped the batch's pages first, with one system call. A
  // mirror page present and not the zero page (holds_copy_for_test) takes a write without a
  // fault; the page tables say so whatever a sanitizer's shadow memory does to a fault count.
  constexpr std::size_t n = 64;
  const int pagemap = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(pagemap, 0);
  paging::victim_cache vc;
  if (!vc.open(pagemap, kPs, 2 * n + 8)) {
    ::close(pagemap);
    GTEST_FAIL() << "PAGEMAP_SCAN cannot tell the zero page on this kernel (Linux 6.7+ can)";
  }
  // Two runs of pages (0..n/2 and n/2+8..n+8), as a batch's victims come; the pages between
  // and after are not prepared and must stay unmapped.
  std::vector<std::size_t> prepared;
  for (std::size_t p = 0; p < n / 2; ++p) prepared.push_back(p);
  for (std::size_t p = n / 2 + 8; p < n + 8; ++p) prepared.push_back(p);
  for (std::size_t p = 0; p < 2 * n + 8; ++p) ASSERT_FALSE(vc.holds_copy_for_test(p)) << "page " << p;
  vc.prepare(prepared.data(), prepared.size());
  std::vector<bool> is_prepared(2 * n + 8, false);
  for (const std::size_t p : prepared) is_prepared[p] = true;
  for (std::size_t p = 0; p < 2 * n + 8; ++p) {
    EXPECT_EQ(vc.holds_copy_for_test(p), is_prepared[p]) << "page " << p;
  }
  // The copies prepare() made room for are whole and come back byte for byte.
  std::vector<std::byte> page(kPs), out(kPs);
  for (const std::size_t p : prepared) {
    std::memset(page.data(), static_cast<int>(p + 1), kPs);
    vc.keep(p, page.data());
  }
  vc.give_back(prepared.data(), prepared.size(), prepared.size());
  for (const std::size_t p : prepared) {
    std::memset(page.data(), static_cast<int>(p + 1), kPs);
    ASSERT_TRUE(vc.take(p, out.data())) << "page " << p;
    EXPECT_EQ(std::memcmp(out.data(), page.data(), kPs), 0) << "page " << p;
  }
  ::close(pagemap);
}

TEST(VictimCache, APageWhoseCopyTheKernelTookBackIsReadFromTheStore) {
  PHEAP_REQUIRE_UFFD(dirty_tracking::automatic);
  auto s = mem_store::create(kPages * kPs, kPs);
  auto sh = s->state();
  pager pg(std::move(s), with_cache(victim_caching::on));
  ASSERT_TRUE(pg.stats().victim_cache);
  auto& impl = paging::test_access::impl(pg);
  auto& core = paging::test_access::core(pg);
  for (std::size_t p = 0; p < kPages; ++p) *word(pg, p) = p * 7 + 1;
  for (std::uint64_t gen = 0; gen < 3; ++gen) {
    impl.wait_evictor_idle();  // no batch keeps a copy after the drop
    core.victims.drop_for_test(0, kPages);  // as memory pressure would
    const pager_stats s0 = pg.stats();
    const std::uint64_t reads0 = sh->reads;
    std::size_t resident = 0;
    ASSERT_EQ(mismatches_resident_first(pg, gen, &resident), 0u) << "generation " << gen << ": " << pg.stats();
    const pager_stats s1 = pg.stats();
    // Pages not resident when the copies went are read from the store, not hits. (MADV_PAGEOUT
    // passes over a copy still in another CPU's LRU batch: a few may survive the drop — up to
    // 11 of the 256 in 300 generations since the evictor keeps 8 copies per round
    // (buffer_budget.hpp B7), where a bound of 8 held before; a drop that did nothing would
    // leave over 200.) A hit beyond those is a page refaulted in the pass, from the copy its
    // eviction in the pass kept: faults past one per page that was not resident.
    constexpr std::size_t kMayOutliveTheDrop = kPages / 16;
    const std::uint64_t faults = (s1.read_faults + s1.write_faults) - (s0.read_faults + s0.write_faults);
    const std::uint64_t refaults = faults - std::min<std::uint64_t>(faults, kPages - resident);
    EXPECT_GE(sh->reads - reads0, kPages - 32 - kMayOutliveTheDrop) << s1;
    EXPECT_LE(s1.victim_hits - s0.victim_hits, kMayOutliveTheDrop + refaults) << s1 << "; refaults " << refaults;
    // ...and writing a new generation into pages filled from the store keeps working.
    for (std::size_t p = 0; p < kPages; ++p) *word(pg, p) = p * 7 + 1 + gen + 1;
  }
  pg.flush({});
  impl.wait_evictor_idle();
  EXPECT_EQ(impl.check_invariants(), "");
  pager again(mem_store::reopen(sh), with_cache(victim_caching::off));
  EXPECT_EQ(mismatches(again, 3), 0u);
}

// The clock sees writes and fills, not reads, so a page the application only reads is an
// unreferenced clean page to it, chosen first. When such a page comes back from its copy soon
// after its eviction, the fill gives it kCameBackTurns more passes of the hand (page_table.hpp
// I9). The words: the turns survive the install and the clearing of the fill's reference, go
// one per pass of the hand, and neither a claim nor a fill that installs nothing leaves any.
TEST(VictimCache, APageThatCameBackKeepsItsTurnsThroughItsInstallAndLosesThemOnlyToTheHand) {
  namespace ps = paging::ps;
  paging::page_table t(3);
  ASSERT_TRUE(t.claim_fill(0));
  t.note_came_back(0, 2);
  t.install(0, ps::ref);
  std::uint32_t w = t.load(0);
  EXPECT_EQ(ps::kind(w), ps::resident);
  EXPECT_TRUE(w & ps::ref);
  EXPECT_EQ(ps::turns(w), 2u);
  t.clear_ref(0, w);  // the hand's first pass: the fill's reference
  EXPECT_EQ(ps::turns(t.load(0)), 2u);
  t.spend_turn(0, t.load(0));
  EXPECT_EQ(ps::turns(t.load(0)), 1u);
  EXPECT_EQ(t.load(0) & ~ps::turns_mask, ps::resident) << "nothing else changed";
  t.spend_turn(0, t.load(0));
  EXPECT_EQ(t.load(0), ps::resident);
  // A claim leaves no turns behind (a page that did not move out is published again as any).
  ASSERT_TRUE(t.claim_fill(1));
  t.note_came_back(1, ps::max_turns);
  t.install(1, ps::ref);
  std::uint32_t was = 0;
  ASSERT_TRUE(t.claim_evict(1, was));
  EXPECT_EQ(ps::turns(was), ps::max_turns);
  EXPECT_EQ(ps::turns(t.load(1)), 0u);
  // Nor does a fill that installed nothing (I9: turns only on filling and resident pages).
  ASSERT_TRUE(t.claim_fill(2));
  t.note_came_back(2, 1);
  t.abandon_fill(2);
  EXPECT_EQ(t.load(2), ps::absent);
}

// And in a pager: a page that came back from its copy has its turns, and the hand spends them:
// a stream of new pages turning the ring over takes it out within a few revolutions, as it
// does a page filled right after it from nothing.
TEST(VictimCache, APageThatCameBackFromItsCopyGetsItsTurnsAndStillLeavesAsTheRingTurns) {
  PHEAP_REQUIRE_UFFD(dirty_tracking::automatic);
  constexpr std::size_t kRegion = 512, kBuffer = 32, kWritten = 64;
  evicted_big_pages r(kRegion, kBuffer, kWritten);
  pager& pg = r.pg;
  ASSERT_TRUE(pg.stats().victim_cache);
  auto& impl = r.impl;
  auto& core = r.core;
  std::size_t a = kWritten;
  for (std::size_t p = 0; p < kWritten && a == kWritten; ++p) {
    if (r.kept(p)) a = p;
  }
  ASSERT_LT(a, kWritten) << "no evicted page with its copy: " << pg.stats();
  const std::uint64_t hits = pg.stats().victim_hits;
  ASSERT_EQ(*r.at(a), a * 7 + 1);
  ASSERT_EQ(pg.stats().victim_hits, hits + 1) << "page " << a << " came back from its copy";
  EXPECT_EQ(paging::ps::turns(core.table.load(a)), paging::evictor::kCameBackTurns);
  const std::size_t b = r.next;  // filled right after it, from nothing
  std::size_t b_gone = 0, a_gone = 0;
  for (; r.next < kRegion && (a_gone == 0 || b_gone == 0); ++r.next) {
    (void)*r.at(r.next);
    if (b_gone == 0 && r.kind(b) == paging::ps::absent) b_gone = r.next - b + 1;
    if (a_gone == 0 && r.kind(a) == paging::ps::absent) a_gone = r.next - b + 1;
  }
  ASSERT_GT(b_gone, 0u) << "the page filled after it never left: " << pg.stats();
  ASSERT_GT(a_gone, 0u) << "the page that came back never left: its turns were not spent; " << pg.stats();
  EXPECT_LE(a_gone, b_gone + (paging::evictor::kCameBackTurns + 2) * kBuffer)
      << "left " << a_gone << " pages into the stream, the page filled after it " << b_gone;
  impl.wait_evictor_idle();
  EXPECT_EQ(impl.check_invariants(), "");
}

// The hand's order (evictor.cpp step 1): a page that came back from its copy and one filled
// right after it from the store are the same to the clock but for the first one's turn, so the
// second leaves first and the first is still resident when it goes. A hand that ignored the
// turn would claim the first one before the second or with it (they are next to each other in
// the ring, both clean and unreferenced once the hand has passed them).
TEST(VictimCache, APageThatCameBackFromItsCopyOutlivesAPageFilledAfterItFromTheStore) {
  PHEAP_REQUIRE_UFFD(dirty_tracking::automatic);
  constexpr std::size_t kBuffer = 128, kWritten = 256, kRegion = 2 * kWritten + 6 * kBuffer;
  evicted_big_pages r(kRegion, kBuffer, kWritten);
  pager& pg = r.pg;
  ASSERT_TRUE(pg.stats().victim_cache);
  auto& impl = r.impl;
  auto& core = r.core;
  // a from the first quarter, c from the last: more than a run of neighbours apart
  // (claim_neighbours takes clean pages next to a victim). c's copy goes, as under memory
  // pressure, so c comes back from the store, without a turn. (MADV_PAGEOUT passes over a
  // copy still in another CPU's LRU batch: the first page whose copy did go is c.)
  std::size_t a = kWritten, c = kWritten;
  for (std::size_t p = 0; p < kWritten / 4 && a == kWritten; ++p) {
    if (r.kept(p)) a = p;
  }
  for (std::size_t p = kWritten; p-- > 3 * kWritten / 4 && c == kWritten;) {
    if (!r.kept(p)) continue;
    core.victims.drop_for_test(p, 1);
    if (!core.victims.holds_copy_for_test(p)) c = p;
  }
  ASSERT_LT(a, kWritten) << "no evicted page with its copy in the first quarter: " << pg.stats();
  ASSERT_LT(c, kWritten) << "no evicted page in the last quarter whose copy could be dropped: " << pg.stats();
  const std::uint64_t hits = pg.stats().victim_hits, reads = pg.stats().pages_read;
  ASSERT_EQ(*r.at(a), a * 7 + 1);
  ASSERT_EQ(*r.at(c), c * 7 + 1);
  ASSERT_EQ(pg.stats().victim_hits, hits + 1) << "page " << a << " came back from its copy";
  ASSERT_EQ(pg.stats().pages_read, reads + 1) << "page " << c << " came back from the store";
  ASSERT_EQ(paging::ps::turns(core.table.load(a)), paging::evictor::kCameBackTurns);
  ASSERT_EQ(paging::ps::turns(core.table.load(c)), 0u);
  bool c_gone = false;
  for (; r.next < kRegion && !c_gone; ++r.next) {
    (void)*r.at(r.next);
    c_gone = r.kind(c) == paging::ps::absent;
    if (c_gone) {
      const std::uint32_t w = core.table.load(a);
      EXPECT_TRUE(paging::ps::kind(w) == paging::ps::resident && !(w & paging::ps::evict))
          << "page " << a << " (came back from its copy) left with or before page " << c
          << " (filled after it from the store), " << r.next - 2 * kWritten - 2 * kBuffer
          << " pages into the stream";
    }
  }
  ASSERT_TRUE(c_gone) << "page " << c << " never left: " << pg.stats();
  impl.wait_evictor_idle();
  EXPECT_EQ(impl.check_invariants(), "");
}

TEST(VictimCache, APageWrittenAfterItCameBackFromItsCopyIsKeptAgainWithTheNewBytes) {
  PHEAP_REQUIRE_UFFD(dirty_tracking::automatic);
  auto s = mem_store::create(kPages * kPs, kPs);
  auto sh = s->state();
  pager pg(std::move(s), with_cache(victim_caching::on));
  ASSERT_TRUE(pg.stats().victim_cache);
  for (std::uint64_t gen = 0; gen < 4; ++gen) {
    // Each generation faults every page back (mostly from its copy) and overwrites it.
    for (std::size_t p = 0; p < kPages; ++p) *word(pg, p) = p * 7 + 1 + gen;
    ASSERT_EQ(mismatches(pg, gen), 0u) << "generation " << gen << ": " << pg.stats();
  }
  EXPECT_GT(pg.stats().victim_hits, 3 * kPages) << pg.stats();
  pg.flush({});
  pager again(mem_store::reopen(sh), with_cache(victim_caching::off));
  EXPECT_EQ(mismatches(again, 3), 0u);
}

// The policy (victim_cache.hpp): copies that do not come back cost the evictor for nothing.
TEST(VictimCache, WhenKeptCopiesDoNotComeBackOnlyASampleIsKeptUntilTheyDoAgain) {
  PHEAP_REQUIRE_UFFD(dirty_tracking::automatic);
  constexpr std::size_t n = 1024;
  auto s = mem_store::create(n * kPs, kPs);
  pager_options o = with_cache(victim_caching::on);
  pager pg(std::move(s), o);
  ASSERT_TRUE(pg.stats().victim_cache);
  auto& impl = paging::test_access::impl(pg);
  auto& core = paging::test_access::core(pg);
  for (std::size_t p = 0; p < n; ++p) *word(pg, p) = p + 1;
  impl.wait_evictor_idle();
  core.victims.drop_for_test(0, n);
  auto pass = [&](bool drop) {  // reads every page; returns (evictions, kept) of the pass
    const pager_stats a = pg.stats();
    std::size_t bad = 0;
    for (std::size_t p = 0; p < n; ++p) bad += *reinterpret_cast<volatile std::uint64_t*>(word(pg, p)) != p + 1;
    EXPECT_EQ(bad, 0u);
    impl.wait_evictor_idle();
    if (drop) core.victims.drop_for_test(0, n);  // memory pressure takes every copy
    const pager_stats b = pg.stats();
    return std::pair{b.evictions - a.evictions, b.victims_kept - a.victims_kept};
  };
  // No copy ever comes back: after a window (8192 evictions) only one page in 16 is kept.
  for (int i = 0; i < 17; ++i) (void)pass(true);
  const auto [ev, kept] = pass(true);
  ASSERT_GE(ev, n - 64);
  EXPECT_LE(kept, ev / 8) << pg.stats();
  // The copies stay: the sampled ones come back, and a window later every victim is kept again.
  for (int i = 0; i < 17; ++i) (void)pass(false);
  const auto [ev2, kept2] = pass(false);
  EXPECT_GE(kept2, ev2 - 64) << pg.stats();
}

TEST(VictimCache, IsOnWhenAskedOffWhenNotAndAutomaticLeavesItOffForAFixedBuffer) {
  PHEAP_REQUIRE_UFFD(dirty_tracking::automatic);
  for (auto [v, on] : {std::pair{victim_caching::on, true}, std::pair{victim_caching::off, false},
                       std::pair{victim_caching::automatic, false}}) {
    pager pg(mem_store::create(kPages * kPs, kPs), with_cache(v));
    EXPECT_EQ(pg.stats().victim_cache, on) << to_string(v);
    for (std::size_t p = 0; p < kPages; ++p) *word(pg, p) = p * 7 + 1;
    EXPECT_EQ(pg.stats().victims_kept > 0, on) << to_string(v) << ": " << pg.stats();
  }
  ::setenv("PHEAP_VICTIM_CACHE", "off", 1);
  EXPECT_EQ(pager_options::from_env(with_cache(victim_caching::on)).victim_cache, victim_caching::off);
  ::setenv("PHEAP_VICTIM_CACHE", "auto", 1);
  EXPECT_EQ(pager_options::from_env(with_cache(victim_caching::on)).victim_cache, victim_caching::automatic);
  ::setenv("PHEAP_VICTIM_CACHE", "sometimes", 1);
  try {
    (void)pager_options::from_env();
    ADD_FAILURE() << "PHEAP_VICTIM_CACHE=sometimes accepted";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("PHEAP_VICTIM_CACHE"), std::string::npos) << e.what();
  }
  ::unsetenv("PHEAP_VICTIM_CACHE");
}

TEST(VictimCache, AReadOnlyRegionKeepsItsDroppedPagesToo) {
  PHEAP_REQUIRE_UFFD(dirty_tracking::automatic);
  auto s = mem_store::create(kPages * kPs, kPs);
  auto sh = s->state();
  {
    pager pg(std::move(s), with_cache(victim_caching::off));
    for (std::size_t p = 0; p < kPages; ++p) *word(pg, p) = p * 7 + 1;
    pg.flush({});
  }
  pager ro(mem_store::reopen(sh, true), with_cache(victim_caching::on));
  ASSERT_TRUE(ro.read_only());
  ASSERT_TRUE(ro.stats().victim_cache);
  const std::uint64_t reads0 = sh->reads;
  for (int pass = 0; pass < 3; ++pass) ASSERT_EQ(mismatches(ro, 0), 0u) << "pass " << pass;
  const pager_stats st = ro.stats();
  EXPECT_GE(st.victim_hits, kPages) << st;
  EXPECT_LE(sh->reads - reads0, kPages + kPages / 10) << st;
}

}  // namespace
}  // namespace pheap::test
