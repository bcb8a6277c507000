// src/pager/pager_core.hpp — what the pager's actors share (the fault service, the evictor,
// the flusher: pager_impl.hpp lists them): the geometry and the resolved mode, the store, the
// descriptors, and the objects that already guard their own state — the page table (lock-free
// words, page_table.hpp I1-I9), the buffer budget (buffer_budget.hpp B1-B7), the resident
// clock (resident_clock.hpp C1-C3), the victim cache, the error channel and the counters.
// pager_impl owns one and hands it to each actor by reference; it is written only by
// pager_impl's construction steps, before any thread starts, and read-only after (but for
// those guarded objects, the stop flag and the page wake-ups below).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "pager/os/memory.hpp"
#include "pager/buffer_budget.hpp"
#include "pager/error_channel.hpp"
#include "pager/fault_signals.hpp"
#include "pager/huge_pool.hpp"
#include "pager/lock_rank.hpp"
#include "pager/page_table.hpp"
#include "pager/resident_clock.hpp"
#include "pager/os/uffd.hpp"
#include "pager/victim_cache.hpp"
#include "pheap/pager.hpp"

namespace pheap::paging {

struct counters {
  std::atomic<std::uint64_t> read_faults{0}, write_faults{0}, wp_faults{0}, zero_fills{0},
      pages_read{0}, read_ahead_pages{0}, zero_ahead_pages{0}, prefetched_pages{0},
      prefetch_dropped{0}, read_steps{0}, read_step_pages{0}, evictions{0},
      evicted_dirty{0}, evict_runs{0}, evict_verify_reads{0}, victims_kept{0}, evict_waits{0},
      victim_hits{0}, write_back_hits{0}, thread_fills{0}, thread_fill_retries{0},
      dirty_pages_written{0}, bytes_written{0}, flushes{0}, flush_retakes{0},
      flush_write_back_waits{0}, poisoned_pages{0}, fault_ns{0}, flush_ns{0}, evict_ns{0},
      huge_fills{0}, huge_recycled{0}, huge_fallback_fills{0}, huge_fallback_no_block{0},
      huge_fallback_move{0}, huge_fallback_move_errno{0}, huge_fallback_split{0}, huge_evictions{0}, huge_evicted_split{0},
      huge_promotions{0}, huge_promote_failed{0}, huge_promote_ns{0}, huge_promote_rounds{0},
      refreshes{0}, invalidated_pages{0}, unpoisoned_pages{0},
      released_pages_dropped{0}, write_behind_pages{0}, write_behind_rounds{0}, write_behind_ns{0};
};

inline std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

struct pager_core {
  explicit pager_core(std::unique_ptr<sparse_store> s) : store(std::move(s)), budget(stop) {}
  pager_core(const pager_core&) = delete;
  pager_core& operator=(const pager_core&) = delete;

  // --- geometry (pager_impl::set_geometry) and what choose_tracking resolved ------------------
  std::unique_ptr<sparse_store> store;
  std::string name;  // store path, for messages
  std::size_t ps = 0, npages = 0, cap = 0;
  std::byte* base = nullptr;
  bool ro = false;
  dirty_tracking mode = dirty_tracking::all_resident;
  bool wp_registered = false;  // region registered with MODE_WP
  bool thread_fill = false;    // fills on the faulting thread (UFFD_FEATURE_SIGBUS)
  bool have_poison = false;    // UFFDIO_POISON (else read errors are signalled with tgkill)
  // pager_options::huge_pages: asked for (always or auto), and in force (huge_pool.hpp: the
  // pool, huge staging and eviction; huge_why says why not when asked but not in force). Where
  // in force, huge_fill (always: fills move 2 MiB pages in whole) or promote (auto: fills are
  // 4 KiB, the promoter moves the pages that stay in core into huge pages; promoter.hpp).
  bool huge_asked = false, huge_on = false, huge_fill = false, promote = false;
  std::string huge_why;
  // Huge pages on a read-only open (huge_pool.hpp, "Read-only opens"): the region is mapped
  // writable, as UFFDIO_MOVE needs, registered MODE_WP (synchronous, never WP_ASYNC) and every
  // fill is write-protected (I10); a write fault is refused by making its page PROT_READ and
  // retrying it, so the access dies of the kernel's SIGSEGV as in a region mapped read-only.
  bool ro_wp = false;
  // Fills are installed write-protected where the region is registered MODE_WP: read fills of
  // a tracking mode (I5), every fill of a read-only region kept so (I10).
  bool wp_fills(bool write) const noexcept { return ro_wp || (wp_registered && !write); }

  std::byte* page_addr(std::size_t p) const noexcept { return base + p * ps; }
  // The pages [first, last] that a PAGEMAP_SCAN region of the region covers.
  std::pair<std::size_t, std::size_t> pages_of(const page_region& r) const noexcept {
    const auto b = reinterpret_cast<std::uintptr_t>(base);
    return {(r.start - b) / ps, (r.end - 1 - b) / ps};
  }

  // --- descriptors and mappings (pager_impl's construction steps) ----------------------------
  // wake_fd: an eventfd the fault workers wait on beside the uffd (fault_workers.cpp);
  // written at stop and when prefetch work arrives (or the evictor made room for it).
  int uffd = -1, pagemap_fd = -1, wake_fd = -1;
  anon_map region_map;  // the region (exactly cap bytes at base)
  // Zeros, the fault service's zero_ahead_pages() pages of them: the source of zero fills,
  // and what the evictor compares a victim with when the store has no data for it.
  anon_map zero;
  // The region in the SIGBUS/SIGSEGV registry (fault_signals.hpp); declared after region_map
  // so that it is released before the region is unmapped.
  region_registration registration;
  // Wakes every fault worker (the eventfd they poll beside the uffd).
  void wake_workers() const noexcept;

  // --- page state and buffer, each guarded by itself -----------------------------------------
  std::atomic<bool> stop{false};  // set once, at teardown: every thread and wait ends
  page_table table;
  buffer_budget budget;
  resident_clock clock;  // the resident pages and the evictor's hand (resident_clock.hpp, C1-C2)
  // Evicted pages kept where the kernel may take them back (victim_cache.hpp): kept by the
  // evictor, taken by fills; open per pager_options::victim_cache (map_buffers).
  victim_cache victims;
  // The huge pages of huge fills and evictions (huge_pool.hpp); open where huge_on.
  huge_pool huge;
  // wp_async: held across every PAGEMAP_SCAN that write-protects pages again together with
  // the recording of what it found (the evictor's harvest_writes, the dirty tracker's
  // collect_dirty) and across the tear-free copy (dirty_tracker::copy_and_verify), so no scan
  // re-protects a page between another's protect and check.
  ranked_mutex<lock_rank::scan> scan_mu;
  error_channel errors;  // store errors of fills and evictions, for the next flush
  mutable counters c;

  // --- page wake-ups (pager_core.cpp): whoever changes a page wakes who waits on it ----------
  // Wakes the faulting range of a page (UFFDIO_WAKE) and its faulting-thread sleepers.
  void wake_page(std::size_t page) noexcept;
  // Clears `bits` on a page and wakes its faulting range if `wanted` was set.
  void release_owned(std::size_t page, std::uint32_t clear_bits, std::uint32_t set_bits = 0);
  // wp_async, under scan_mu: a scan that write-protects pages again (the evictor's harvest,
  // write-behind's) failed, or found a written page neither resident nor filling, so writes
  // may have been protected without being recorded: every page counts as written (the next
  // flush writes them all), and `scan` (what failed) is said on stderr with `why`.
  void count_every_page_written(const char* scan, const char* why);
  // A faulting-thread fill that must wait for a page's filler or owner sleeps on a futex word
  // (of the page's hash) instead of in the kernel's userfaultfd queue: every point that wakes
  // a worker's faulting thread — wake_page, and the implicit wake of an install — also bumps
  // the page's word and wakes its sleepers (wake_fill_sleepers). fill_sleepers_ counts the
  // threads between announcing a sleep and its end: with none, a wake is one fence and a load.
  // (Dekker: a sleeper counts itself, then looks at the page; a waker changes the page, then
  // looks at the count; seq_cst fences between, so one of the two sees the other.)
  void wake_fill_sleepers(std::size_t page) noexcept;
  // Sleeps until wake_fill_sleepers(page) or 100 ms, unless the page needs no waiting any more.
  void sleep_for_page(std::size_t page) noexcept;

 private:
  static constexpr std::size_t kFillWaitWords = 256;
  std::array<std::atomic<std::uint32_t>, kFillWaitWords> fill_wait_{};
  std::atomic<std::uint32_t> fill_sleepers_{0};
};

}  // namespace pheap::paging
