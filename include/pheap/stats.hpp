// pheap/stats.hpp — what the store and the pager count: store_stats (sparse_store::stats()),
// pager_stats (pager::stats()). Both are embedded in manager_stats (pheap/manager.hpp), so
// they have a header of their own: an application that reads its heap's statistics does not
// pull in the store's or the pager's API.
// Counters are totals since the store or pager was opened (resident/pinned: current values).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

namespace pheap {

struct store_stats {
  std::uint64_t pages_read = 0;        // pages read from segment files (and verified)
  // Read requests those pages took: runs of pages consecutive on disk and in the caller's
  // memory are one request (pages_read / read_requests is the mean run).
  std::uint64_t read_requests = 0;
  std::uint64_t zero_pages_read = 0;   // pages without data served as zeros without I/O
  std::uint64_t pages_written = 0;     // page copies written to segment files
  std::uint64_t commits = 0;
  std::uint64_t map_bytes_written = 0; // map blocks and directories written by commits
  std::uint64_t freed_pages = 0;       // discarded pages whose homes commits punched out
  std::uint64_t commit_ns = 0;         // total time inside commit()
  std::uint64_t live_bytes = 0;        // pages with data x page size (newest versions)
  std::uint64_t disk_bytes = 0;        // bytes allocated on disk by the datastore's files
  // Readers beside a writer (sparse_store/FORMAT.md "Readers beside a writer"), as the
  // datastore's reader table says now (0 without one):
  std::uint64_t readers = 0;           // processes reading a watermark (this one included)
  std::uint64_t oldest_reader_epoch = 0;  // the oldest watermark one of them reads
  std::uint64_t pinned_bytes = 0;      // the writer's copies kept for readers of older epochs
  std::uint64_t pin_limit = 0;         // the most it keeps before it expires the oldest reader
  std::uint64_t readers_expired = 0;   // readers expired by that limit since the table was reset
  // This store's own work: copies it kept for readers (a writer), copies it read from
  // pheap.pinned instead of a page's home (a reader).
  std::uint64_t pins_made = 0;
  std::uint64_t pinned_reads = 0;
  // A writer's cost of its readers: bytes of those copies written to pheap.pinned, and the time
  // spent before overwrites deciding which homes a reader's watermark still names (the
  // readers' views of the map, read from disk) and copying them — the part of a writer's
  // slowdown with readers attached that the reader protocol itself causes (the rest is the
  // readers' share of the CPU and the disk). Both stay 0 while no reader of an older
  // watermark is attached.
  std::uint64_t pin_bytes_written = 0;
  std::uint64_t reader_protect_ns = 0;
};

struct pager_stats {
  std::uint64_t read_faults = 0;    // missing-page faults from reads
  std::uint64_t write_faults = 0;   // missing-page faults from writes
  std::uint64_t wp_faults = 0;      // write-protect faults (wp_sync)
  std::uint64_t zero_fills = 0;     // pages filled with zeros without store I/O
  std::uint64_t pages_read = 0;     // pages read from the store (faults, read-ahead, prefetch)
  // Pages filled from the victim cache instead (pheap/pager_options.hpp victim_cache): kept
  // copies of evicted pages that the kernel had not taken back. No store read.
  std::uint64_t victim_hits = 0;
  // Pages filled from the evictor's copy of a victim whose write-back was still in flight,
  // instead of waiting for the write to land. No store read.
  std::uint64_t write_back_hits = 0;
  // Missing-page faults filled by the faulting thread itself (pager_options::fault_fill =
  // faulting_thread); their CPU time is the application's, not in fault_cpu_ns.
  std::uint64_t thread_fills = 0;
  // Faulting-thread fills that found the page being filled by another thread, or owned by the
  // evictor or a flush (and slept until woken), or no bounce slot free (and slept 20 µs), before
  // the access was retried (each retry faults again; the sleeps are not in fault_ns).
  std::uint64_t thread_fill_retries = 0;
  // Missing pages are filled on the faulting thread (fault_fill faulting_thread, or automatic
  // resolved to it); false: by the fault workers.
  bool thread_fill = false;
  std::uint64_t bytes_read = 0;
  // Read-ahead (pheap/pager.hpp, "Read-ahead"): pages read from the store by read-ahead
  // windows; the windows runs of faults earned, their pages (markers not counted), and of
  // those the pages the application went past with a later fault of the same stream.
  // read_ahead_planned − read_ahead_passed bounds the pages read ahead in vain from above.
  std::uint64_t read_ahead_pages = 0;
  std::uint64_t read_ahead_windows = 0;
  std::uint64_t read_ahead_planned = 0;
  std::uint64_t read_ahead_passed = 0;
  // First windows not planned because too few first windows were followed lately (the gate
  // against random faults that fall a stride apart by chance, src/pager/read_ahead.hpp).
  std::uint64_t read_ahead_gated = 0;
  std::uint64_t zero_ahead_pages = 0;  // never-written pages zero-filled next to a zero-fill fault
  std::uint64_t prefetched_pages = 0;  // pages filled by prefetch() and prefetch_stored()
  // Requested pages a prefetch never filled: fill requests beyond half the buffer (the oldest
  // go), and the part of a prefetch_stored() that met the high watermark.
  std::uint64_t prefetch_dropped = 0;
  // The workers' read steps (read-ahead batches, prefetch) and the pages they filled: pages
  // per step is the depth the device saw (the store makes each run of them one request).
  std::uint64_t read_steps = 0;
  std::uint64_t read_step_pages = 0;
  std::uint64_t evictions = 0;      // pages evicted
  std::uint64_t evicted_dirty = 0;  // of which written back
  // Contiguous runs the evicted pages left in: one UFFDIO_MOVE (or MADV_DONTNEED) and one TLB
  // flush each, so evictions / evict_runs is the pages each flush paid for.
  std::uint64_t evict_runs = 0;
  std::uint64_t evict_verify_reads = 0;  // wp_async: clean victims read back (store without CRCs)
  // Resident pages of ranges released with pager::discard that left the region unwritten.
  std::uint64_t released_pages_dropped = 0;
  // Write-behind (pager_options::write_behind_ms): on (asked for, and the tracking is
  // wp_async); the pages it wrote into the working epoch (a flush did not have to), its
  // rounds and the time they took.
  bool write_behind = false;
  std::uint64_t write_behind_pages = 0;
  std::uint64_t write_behind_rounds = 0;
  std::uint64_t write_behind_ns = 0;
  std::uint64_t victims_kept = 0;  // evicted pages whose copy went to the victim cache
  // Missing-page faults that found their page in the middle of its eviction (moved out of the
  // region, not yet let go) and waited for the evictor to let it go.
  std::uint64_t evict_waits = 0;
  bool victim_cache = false;       // the victim cache is on
  // Huge pages (pheap/pager_options.hpp huge_pages, src/pager/huge_pool.hpp). huge_pages: in
  // force (always or auto asked, and the region, kernel and THP allow it); huge_pages_why: why not,
  // when asked ("" otherwise).
  bool huge_pages = false;
  std::string huge_pages_why;
  std::uint64_t huge_fills = 0;  // pages filled by moving a whole huge page in (PMD-mapped)
  // Fills at 4 KiB although huge pages were asked for: every fill of a region that cannot
  // have them (huge_pages_why), and per page those below.
  std::uint64_t huge_fallback_fills = 0;
  std::uint64_t huge_fallback_no_block = 0;  // the pool could not get a huge page
  std::uint64_t huge_fallback_move = 0;      // UFFDIO_MOVE refused (a 4 KiB page was present)
  // The errno of the last refused move (0: none): EEXIST, a page present at the destination;
  // EBUSY or EAGAIN, the pool's huge page pinned or being migrated, still so after retries.
  int huge_fallback_move_errno = 0;
  // Moved in whole but mapped by 4 KiB entries: the kernel had made a page table there (the
  // fault could not get a huge page of its own: memory short or fragmented).
  std::uint64_t huge_fallback_split = 0;
  // Bytes of the region mapped by 2 MiB (PMD) entries now, read from the page tables
  // (PAGEMAP_SCAN) when the statistics are taken: what the TLB sees, not what was asked for.
  // 0 when huge pages are off or the page tables cannot be read.
  std::uint64_t huge_mapped_bytes = 0;
  std::uint64_t huge_evictions = 0;   // pages of a huge region evicted
  std::uint64_t huge_recycled = 0;    // of which moved whole into the pool for the next fill
  // Of which found split into 4 KiB entries (written after a flush or the evictor's write scan
  // re-protected them, or mapped so by the kernel at the fill: huge_fallback_split; under
  // auto, every page evicted before it was promoted): dropped, not recycled.
  std::uint64_t huge_evicted_split = 0;
  std::uint64_t huge_fresh = 0;       // fresh huge pages the pool made (each ~0.2 ms CPU)
  std::uint64_t huge_pool_blocks = 0; // huge pages waiting in the pool now
  // auto (src/pager/promoter.hpp): pages filled at 4 KiB moved into huge pages by the
  // promoter and mapped by one PMD entry; promotions that could not be made or did not end
  // PMD-mapped (no huge page to be had, a move refused, a fault's page table in the way: the
  // page stays small, a later round tries again); the time the promotions held their pages
  // (faults on a page wait for its promotion); the promoter's rounds.
  std::uint64_t huge_promotions = 0;
  std::uint64_t huge_promote_failed = 0;
  std::uint64_t huge_promote_ns = 0;
  std::uint64_t huge_promote_rounds = 0;
  std::uint64_t dirty_pages_written = 0;  // by flushes
  std::uint64_t bytes_written = 0;        // eviction + flush
  std::uint64_t flushes = 0;
  std::uint64_t flush_retakes = 0;  // pages re-taken with MOVE because a write raced the copy
  // Dirty pages a flush found filled again while their eviction's write was in flight: each
  // was written after that older write landed, the flush waiting for its eviction batch.
  std::uint64_t flush_write_back_waits = 0;
  std::uint64_t buffer_waits = 0;   // faults that waited for the evictor
  std::uint64_t poisoned_pages = 0;
  // Read-only regions (pager::refresh, pheap/pager.hpp "Refresh"): refreshes; resident pages
  // they dropped because their copy changed (the next access reads the new watermark: each is
  // one store read more than a page that stayed); poisoned pages they made absent again.
  std::uint64_t refreshes = 0;
  std::uint64_t invalidated_pages = 0;
  std::uint64_t unpoisoned_pages = 0;
  std::uint64_t resident_pages = 0;
  std::uint64_t peak_resident_pages = 0;
  std::uint64_t pinned_pages = 0;
  // Time resolving missing faults (wall clock, I/O included), on the workers or, with
  // fault_fill = faulting_thread, on the faulting threads.
  std::uint64_t fault_ns = 0;
  std::uint64_t flush_ns = 0;
  std::uint64_t evict_ns = 0;  // wall clock of eviction batches
  // CPU time (user + system) the pager's own threads have used so far: the fault workers, and
  // the evictor. The cost per fault / eviction that the pager adds (the store's I/O threads,
  // e.g. io_uring workers, are not included).
  std::uint64_t fault_cpu_ns = 0;
  std::uint64_t evict_cpu_ns = 0;
  // The buffer and where its size came from: "buffer_size option", or the memory limit with
  // its numbers ("cgroup v1 /sys/fs/cgroup/memory/x: limit 64.0 MiB, in use 3.2 MiB, headroom
  // 16.0 MiB, pheap's own 9.1 MiB").
  std::uint64_t buffer_bytes = 0;
  std::string buffer_source;
  // An automatic buffer follows the memory limit at run time (pheap/pager.hpp, "Automatic
  // buffer"): the buffer in force now, the lowest it has been, how many times the limit was
  // sampled, and the last sample ("follows cgroup v1 …: limit 65.1 MiB, rest of the process
  // 27.9 MiB, reserve 8.0 MiB (bursts up to 4.0 MiB)"); "fixed at open" otherwise (target ==
  // buffer_bytes).
  std::uint64_t buffer_target_bytes = 0;
  std::uint64_t buffer_lowest_target_bytes = 0;
  std::uint64_t buffer_resamples = 0;
  std::string buffer_target_source;
};
// One line: faults, fills, evictions, flushes, bytes, residency, waits, time.
std::ostream& operator<<(std::ostream& os, const pager_stats& s);

}  // namespace pheap
