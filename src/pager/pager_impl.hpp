// src/pager/pager_impl.hpp — internals of pheap::pager: the three actors and what wires them.
// One file per concept:
//   pager_impl.hpp, pager.cpp  construction as named steps, teardown, pin, statistics, options
//                            (PHEAP_* env), the public facade; delegates the rest to the actors
//   pager_core.{hpp,cpp}     what the actors share: geometry, store, descriptors, page table,
//                            budget, resident clock, victim cache, errors, counters, page wake-ups
//   fault_service.hpp        actor: the fault service (fault_workers.cpp): workers reading the
//                            uffd; fills (store read → bounce → UFFDIO_COPY of runs), on the
//                            faulting thread too; read-ahead windows, the prefetch queue and its
//                            read steps; poisoning on read errors
//   evictor.hpp              actor: the background evictor (evictor.cpp; evict_batch as named
//                            steps) and the write-back in flight that fills copy from
//   flusher.hpp              actor: flush() (flush.cpp: the protocol, claim/copy/write per
//                            chunk, commit), with its dirty tracker
//   dirty_tracker.{hpp,cpp}  per tracking mode: the pages to flush and their tear-free copy
//   write_behind.{hpp,cpp}   actor: writes pages idle for a period into the working epoch in
//                            the background (wp_async), through the flusher
//   promoter.{hpp,cpp}       actor: huge_pages auto, moves pages that stay in core and were
//                            filled at 4 KiB into huge pages in the background
//   huge_pool.{hpp,cpp}      the recycled 2 MiB pages of huge fills, evictions and promotions
//   invariants.cpp           check_invariants, the quiescent self-check
//   refresh.cpp              a read-only region moved to a newer watermark: what changed dropped
//   lock_rank.hpp            the lock order below, checked in debug builds
//   os/                      the OS layer, the only files of the pager making system calls
//                            on memory and descriptors (os/memory.hpp says more):
//     uffd.{hpp,cpp}         userfaultfd acquisition, feature probe, events, the ioctls,
//                            PAGEMAP_SCAN (pagemap_walk)
//     memory.{hpp,cpp}       anonymous mappings (anon_map: staging, bounce buffers, zero page),
//                            the region's reservation, madvise and process_madvise
//     threads.{hpp,cpp}      the wake-up eventfd, futexes, the fault workers' wait, tgkill
//     files.{hpp,cpp}        /proc and cgroup files, the limit pool's shared file
//   page_table.hpp           the page word, its invariants I1-I10 and its named transitions
//   buffer_budget.{hpp,cpp}  buffer slots, faults waiting for one, the evictor's wake-up (B1-B7)
//   memory_limit.{hpp,cpp}   the memory the process may use (cgroup v2/v1, RAM), the follower
//   limit_pool.{hpp,cpp}     the limit the automatic buffers of one process share (P1-P4)
//   staging.{hpp,cpp}        UFFDIO_MOVE staging: move out, read back what arrived, drop or
//                            move back
//   victim_cache.{hpp,cpp}   evicted pages kept where the kernel may take them back (MADV_FREE)
//   resident_clock.hpp       the resident pages in install order and the evictor's hand
//   read_ahead.{hpp,cpp}     fault streams (sequential, strided) and the windows they earn
//   error_channel.hpp        store errors of background threads, for the next flush
//   fault_signals.{hpp,cpp}  the region registry and SIGBUS/SIGSEGV handlers: poisoned pages
//                            as errors in guard_faults, one line before a read-only write dies
//   bounce_pool.hpp          the bounce buffers of fills on the faulting thread (P1-P3)
//   test_access.hpp          the white-box tests' way in
//
// Threads: `fault_threads` workers (the fault service), one evictor, write-behind's where it
// is on, the promoter's where it is on, and whoever calls flush/pin/prefetch/stats.
// Write-behind takes the flusher's lock per chunk and then the locks a flush takes, in the
// same order; the promoter takes the flusher's lock (refresh's on a read-only region) per
// page and nothing under it but the huge pool's leaf.
// Lock order (never the other way): the flusher's mu_ → the evictor's batch_mu_ →
// pager_core::scan_mu → the error channel's; the resident clock's, the buffer budget's, the
// evictor's write_back_mu_ and the fault service's pf_mu_ are leaves. lock_rank.hpp gives
// each its rank; in debug builds a lock taken against the order aborts, naming both locks.
// Fault workers take none of these on the hot path (write_back_mu_ only to fill a page whose
// write-back is in flight); they only wait for a buffer slot (buffer_budget), which the
// evictor frees without ever waiting on a worker, a flush or a fault (after a failed
// write-back it waits for the fills of its own victims, which copy from its bounce buffer and
// hold their slots already), so no cycle exists:
//   worker → (waits for) evictor → store I/O
//   flush  → evictor (batch in progress) → store I/O;  flush → filling pages → store I/O
#pragma once

#include <time.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "pager/evictor.hpp"
#include "pager/fault_service.hpp"
#include "pager/flusher.hpp"
#include "pager/limit_pool.hpp"
#include "pager/memory_limit.hpp"
#include "pager/pager_core.hpp"
#include "pager/os/uffd.hpp"
#include "pager/promoter.hpp"
#include "pager/write_behind.hpp"
#include "pheap/pager.hpp"

namespace pheap::paging {

class pager_impl {
 public:
  pager_impl(std::unique_ptr<sparse_store> store, const pager_options& opt);
  ~pager_impl();

  // --- public API backends: the actors' ------------------------------------------------------
  std::byte* base() const noexcept { return core_.base; }
  std::size_t size() const noexcept { return core_.cap; }
  std::size_t page_size() const noexcept { return core_.ps; }
  bool read_only() const noexcept { return core_.ro; }
  dirty_tracking tracking() const noexcept { return core_.mode; }
  std::size_t buffer_pages() const noexcept { return core_.budget.pages(); }
  sparse_store& store() noexcept { return *core_.store; }
  std::uint64_t flush(std::span<const std::byte> root) { return flusher_.flush(root); }
  std::uint64_t flush_if_changed(std::span<const std::byte> root) {
    return flusher_.flush_if_changed(root);
  }
  std::uint64_t prepare(std::span<const std::byte> root) { return flusher_.prepare(root); }
  std::uint64_t confirm() { return flusher_.confirm(); }
  void prefetch(std::span<const std::pair<std::size_t, std::size_t>> ranges) {
    faults_.prefetch(ranges);
  }
  void prefetch_stored(std::span<const std::pair<std::size_t, std::size_t>> ranges) {
    faults_.prefetch_stored(ranges);
  }
  void discard(std::size_t first_page, std::size_t count) {
    core_.store->discard(first_page, count);  // first: a refault of a dropped page reads zeros
    evictor_.drop_released(first_page, first_page + count);
  }
  void pin(std::size_t offset, std::size_t len);
  void unpin(std::size_t offset, std::size_t len);
  // Read-only regions (refresh.cpp): the store moved to its newest watermark, then the pages
  // whose copy changed dropped (invalidate), and every poisoned page made absent again.
  refresh_result refresh(std::optional<std::uint64_t> max_epoch);  // nullopt: the store's own limit
  // Drops the pages [first, end) of `ranges` wherever the pager holds them — resident, kept
  // in the victim cache, being read ahead, poisoned — so that the next access reads the
  // store: the protocol is refresh.cpp's.
  void invalidate(std::span<const std::pair<std::uint64_t, std::uint64_t>> ranges);
  pager_stats stats() const;
  // Bytes of the region mapped by PMD entries now (pager_stats::huge_mapped_bytes).
  std::uint64_t huge_mapped_bytes() const;

  // Quiescent self-check (no faults, flushes or evictions in flight): returns "" when the page
  // table agrees with the counters and the page tables (invariants I1, I2, I6 of
  // page_table.hpp), else a description of the first violation.
  std::string check_invariants() const;
  // Waits until the evictor has nothing to do (occupancy ≤ high watermark and no batch in
  // flight) and no read step (read-ahead, prefetch) is queued or running, whose fills would
  // have it evict again. For tests that measure residency or check the invariants.
  void wait_evictor_idle();
  uffd_source source() const noexcept { return source_; }

 private:
  friend struct test_access;

  // --- construction steps (pager.cpp), in order; then teardown ------------------------------
  void set_geometry(const pager_options& opt);
  // The buffer's size from the options or the memory limit (`limit`: automatic), then the
  // budget configured; the debug line. Steps of set_geometry.
  void choose_buffer(const pager_options& opt, const std::optional<memory_sample>& limit, bool clamped);
  std::uint64_t bytes_the_limit_leaves(const memory_sample& limit, std::string& why) const;
  bool exceeds_memory_cgroup(const memory_sample& cg, std::uint64_t bytes) const;
  std::uint64_t own_bytes_outside_buffer() const;
  void follow_memory_limit(const uffd_features& f, bool debug);
  void choose_tracking(dirty_tracking asked, const uffd_features& f);
  void choose_huge_pages(const uffd_features& f);  // step of choose_tracking
  std::string huge_refusal(const uffd_features& f) const;  // why not, whatever the mode ("" : possible)
  void open_descriptors(const uffd_features& f);
  void map_region();
  void register_region();
  void map_buffers(const uffd_features& f);
  void start_threads(unsigned fault_threads);
  void stop_threads() noexcept;
  static void add_cpu_clock(std::thread& t, std::vector<clockid_t>& to);
  static std::uint64_t cpu_ns(const std::vector<clockid_t>& clocks);
  void close_descriptors() noexcept;
  // invalidate() holding refresh_mu_; `poisoned_too`: every poisoned page of the region as well.
  void invalidate_locked(std::span<const std::pair<std::uint64_t, std::uint64_t>> ranges, bool poisoned_too);
  // The pages [first, last] covering [offset, offset+len) (len > 0); throws invalid_argument
  // naming `op` when the range leaves the region.
  std::pair<std::size_t, std::size_t> pages_covering(std::size_t offset, std::size_t len,
                                                     const char* op) const;

  // What the actors share (pager_core.hpp); first, so that it outlives them.
  pager_core core_;
  // The actors. Each holds the core and the others it calls by reference (the fault service
  // the evictor's write-back, the evictor the fault service's wake-up for read steps waiting
  // for room, the flusher the evictor's batch), bound before they are constructed and used
  // only once start_threads has run.
  fault_service faults_{core_, evictor_};
  evictor evictor_{core_, faults_};
  flusher flusher_{core_, evictor_};
  write_behind write_behind_{core_, flusher_};
  promoter promoter_{core_};

  // --- configuration (set_geometry, choose_tracking) -------------------------------------------
  bool debug_ = false;  // pager_options::debug: a line at open and the statistics at close
  fault_filling fill_asked_ = fault_filling::workers;  // pager_options::fault_fill
  huge_pages_mode huge_mode_ = huge_pages_mode::off;   // pager_options::huge_pages
  victim_caching victim_caching_ = victim_caching::automatic;  // the option
  bool limit_is_cgroup_ = false;  // an automatic buffer's limit comes from a memory cgroup
  std::uint64_t headroom_asked_ = 0;  // pager_options::memory_headroom (bytes_the_limit_leaves)
  unsigned fault_threads_ = 0;
  uffd_source source_ = uffd_source::syscall;
  // An automatic buffer's follower (memory_limit.hpp), attached to the budget by
  // follow_memory_limit after choose_tracking; null with a buffer_size option.
  std::shared_ptr<limit_follower> follower_;
  std::shared_ptr<limit_pool> limit_pool_;  // with follower_: the buffers sharing its limit
  static constexpr std::chrono::milliseconds kFollowPeriod{10};
  // Bytes of pheap's own bookkeeping per buffer page, an upper bound (the resident clock's
  // ring and published list, the page word is counted with the page table).
  static constexpr std::uint64_t kBookkeeping = 64;
  // Full blocks the huge pool keeps (huge_pool.hpp): one eviction batch's worth at 2 MiB.
  static constexpr std::size_t kHugeKeep = 4;
  std::string buffer_source_;  // pager_stats::buffer_source (written once, at construction)
  // CPU-time clocks of the pager's threads (pager_stats::fault_cpu_ns / evict_cpu_ns); the
  // vectors are written only by start_threads/stop_threads, with no stats() running.
  std::vector<clockid_t> worker_clocks_, evict_clocks_;
  // Read-only regions: one refresh or invalidate at a time (the flush rank: a read-only pager
  // never flushes); the poisonings its last sweep of poisoned pages had seen.
  ranked_mutex<lock_rank::flush> refresh_mu_;
  std::uint64_t poisoned_seen_ = 0;  // guarded by refresh_mu_
};

}  // namespace pheap::paging
