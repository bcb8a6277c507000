// src/pager/promoter.hpp — huge_pages = auto: a thread that maps the pages staying in core
// with 2 MiB (PMD) entries, after they were filled at 4 KiB (pager_options::huge_pages,
// huge_promote_ms; promoter.cpp has a round and a promotion as named steps).
//
// Why. `always` fills every page huge: each fill takes a pool huge page, and each missing
// write fault in its MADV_HUGEPAGE region makes the kernel zero a huge page it then throws
// away (bench/DECISIONS.md "huge zero-ahead"): in-core construction paid 0.85x of `off` for
// it. auto fills as `off` does (4 KiB copies into a region without THP advice) and promotes
// later, off the fault path, the pages that stayed: dense (every 4 KiB frame of the page
// present, none the shared zero page) and in core (4 KiB-mapped at two rounds in a row with
// no eviction in between). Out of core (the evictor evicted since the last round) a round
// promotes nothing: those pages may leave soon, and a promotion would cost more than their
// TLB misses. Split pages (written after a flush under wp_async, or by the kernel's own
// fallback) are dense and 4 KiB-mapped too: they are promoted again.
//
// Ownership. A promotion owns its page with the `flush` bit (page_table::claim_promote; I2,
// I3: faults on it set `wanted` and wait, the evictor passes it over) while holding the lock
// that excludes whatever else claims with that bit: the flusher's (writable regions: flush,
// prepare, write-behind) or refresh's (read-only regions, which never flush). It holds it
// for one page at a time, so a flush waits for one promotion at most (0.6-1.0 ms measured).
//
// Tracking. Under wp_sync a clean page is write-protected (I5): its writers fault and wait
// for the promotion; a dirty page is writable, and its writers' stores land until its frames
// are moved out (UFFDIO_MOVE of a present frame is atomic: a store lands before the move and
// travels with it, or faults after it and waits), so the copy is tear-free either way. The
// huge page arrives writable: a clean page is write-protected again and compared with its old
// frames (still in the scratch block): a store by a thread that had not faulted, in the one
// ioctl between the move and the protection, makes the page dirty (written at the next flush,
// not lost). A read-only region (I10) protects it the same way. Under wp_async (auto keeps
// the tracking automatic resolves to, wp_async where the kernel has it, and its
// faulting-thread fills) only dirty pages are promoted: a clean page's frames are protected,
// and a store the kernel resolves between the promoter's reading of the page tables and the
// move would leave no trace (the move does not carry the protection, and the old frames hold
// the stored byte). A dirty page arrives unprotected, "written" in the page tables, as it
// was; the next flush writes it. After that flush its first write splits the PMD mapping
// again (wp_async resolves it in the kernel, huge_pool.hpp "Tracking"), and a later round
// promotes it again.
//
// Policy. A clean page (read since its last flush, not written: queries, read-only opens) is
// promoted whenever a round finds it; scans and promotions of dirty pages take at most 5 % of
// a core (a credit, promoter.cpp step 3): on an in-core SCALE 22 build, where every page is
// being written and TLB misses are not what it waits for, promoting every page held them
// 1.3-1.7 s (1601-1603 promotions), the credit 0.15-0.23 s (107-121; bench/DECISIONS.md
// "auto's policy", results/2026-12-07-huge-auto/construct*-pager.log).
//
// Caveats:
//   * A promotion stalls the faults on its page for 0.6-1.0 ms (pager_stats::huge_promote_ns
//     over huge_promotions); a flush waits for at most one.
//   * Each round scans the region's page tables once (PAGEMAP_SCAN: O(resident frames)).
//   * The page comes from the huge pool (huge_pool.hpp): a fresh huge page costs ~0.2 ms of
//     CPU and milliseconds of wall time on this VM; a page that cannot be had leaves the page
//     small until a later round (counted in huge_promote_failed).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "pager/lock_rank.hpp"
#include "pager/pager_core.hpp"

namespace pheap::paging {

class promoter {
 public:
  explicit promoter(pager_core& core) noexcept : core_(core) {}

  // set_geometry: the period (pager_options::huge_promote_ms); after choose_tracking, the
  // lock that excludes the other owners of the `flush` bit (the flusher's, or refresh's on a
  // read-only region).
  void configure(unsigned period_ms) noexcept { period_ = std::chrono::milliseconds(period_ms); }
  void set_lock(ranked_mutex<lock_rank::flush>* owners) noexcept { owners_ = owners; }
  // start_threads: the thread (pheap-promote), where core_.promote and a period; join:
  // stop_threads, once the stop flag is set.
  void start();
  void join() noexcept;
  // One round (promoter.cpp steps 1-3): the thread's, every period; white-box tests run it by
  // hand (test_access) with a period of 0. Returns the pages promoted.
  std::size_t round();
  // One promotion of page p (steps P1-P6), if it is still a candidate; true when promoted.
  bool promote(std::size_t p);

 private:
  void main();
  // Step 2: the pages whose every frame is present, 4 KiB-mapped, none the zero page, sorted.
  std::vector<std::size_t> scan_small();
  // P2's and P4's fallback: [from, until) of the page back from `scratch` (moved, or copied
  // where a move is refused), protected again if `protect` on a read-only region; true when
  // a writable page must be counted dirty (its frames arrived unprotected).
  bool restore(std::size_t p, std::byte* scratch, std::size_t until, std::size_t from, bool protect);
  // A read-only region's page whose protection was refused: PROT_READ (I10), or abort.
  void refuse(std::size_t p, int err) noexcept;

  pager_core& core_;
  ranked_mutex<lock_rank::flush>* owners_ = nullptr;
  std::chrono::milliseconds period_{0};
  std::thread thread_;
  std::mutex mu_;  // the wait between rounds (a leaf, unranked: nothing is taken under it)
  std::condition_variable cv_;
  // Of each period, the share of a core that scans and promotions of dirty pages may take
  // (promoter.cpp step 3).
  static constexpr double kShare = 0.05;
  std::int64_t credit_ns_ = 0;          // what they may take now (the thread's rounds only)
  std::vector<std::size_t> seen_;      // what the last round's scan found, sorted
  std::uint64_t evictions_seen_ = 0;   // core_.c.evictions at the last round
};

}  // namespace pheap::paging
