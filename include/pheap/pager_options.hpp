// pheap/pager_options.hpp — how a pager is configured: buffer, watermarks, dirty tracking,
// fault threads, read-ahead. Apart from pheap/pager.hpp so that pheap/options.hpp (and so
// pheap/pheap.hpp) can hold pager options without the pager's class and the store's API.
//
// The modes of dirty_tracking and what each costs: pheap/pager.hpp.
//
// Environment (pager_options::from_env; kinds, ranges and defaults: pheap/env.hpp's table,
// README "Tuning"): PHEAP_BUFFER_SIZE, PHEAP_HIGH_WATERMARK, PHEAP_LOW_WATERMARK,
// PHEAP_DIRTY_TRACKING, PHEAP_FAULT_THREADS, PHEAP_READ_AHEAD, PHEAP_WRITE_BEHIND, PHEAP_VICTIM_CACHE,
// PHEAP_FAULT_FILL, PHEAP_HUGE_PAGES, PHEAP_DEBUG.
#pragma once

#include <cstddef>
#include <iosfwd>

namespace pheap {

enum class dirty_tracking { automatic, wp_async, wp_sync, all_resident };
const char* to_string(dirty_tracking t) noexcept;
std::ostream& operator<<(std::ostream& os, dirty_tracking t);

// Which thread fills a missing page (pager_options::fault_fill below).
enum class fault_filling { workers, faulting_thread, automatic };
const char* to_string(fault_filling f) noexcept;

// Whether evicted pages are kept where the kernel may take them back (pager_options below).
enum class victim_caching { automatic, on, off };
const char* to_string(victim_caching v) noexcept;

// Whether the region's pages are mapped with 2 MiB (PMD) entries (pager_options::huge_pages).
enum class huge_pages_mode { off, always, automatic };  // automatic spells "auto"
const char* to_string(huge_pages_mode h) noexcept;

struct pager_options {
  // Bytes of DRAM the region may hold, rounded down to whole pages, at most the capacity.
  // Below 2 pages (of a region of at least 2) the pager refuses it: error(invalid_argument)
  // naming the minimum in bytes. 0 → automatic: what the process's memory limit leaves at
  // construction (the memory cgroup's, v2 or v1, else 1/4 of RAM) after the memory already in
  // use, a headroom and pheap's own memory outside the buffer, then following the limit at
  // run time below that (pheap/pager.hpp, "Automatic buffer"); pager_stats::buffer_source
  // and buffer_target_source say where the numbers came from. A buffer of a few pages works
  // at the pace of its store reads, one per fault, plus one eviction per fault. Each eviction
  // is a TLB shootdown, an IPI on a VM, so it runs slower than the disk alone would do the
  // same I/O (bench/README.md, "Out of core", has the measured ratios).
  // Over the limit: an explicit size (PHEAP_BUFFER_SIZE, pheap-graph --buffer-size) larger
  // than what the process's memory cgroup (v2 or v1) leaves for it at construction (after the
  // memory in use, the headroom and pheap's own memory: its flush and eviction batches, a
  // sixteenth of the limit each, ~20 MiB at 2 MiB pages in a 96 MiB cgroup) is CLAMPED:
  // the buffer is what an automatic one would be — sized from the limit then, and following
  // it — with one line on stderr naming the size, the cgroup and the figures. The alternative
  // was an OOM kill once the buffer filled; refusing would end a job that can run, only
  // slower. An explicit size within the limit, or without a cgroup limit, is used as given.
  std::size_t buffer_size = 0;
  // Bytes of the memory limit that an automatic buffer (or an explicit one checked against a
  // memory cgroup, above) leaves free at construction for what the application allocates
  // after it, beside the heap: its batches, sort buffers, per-vertex arrays. 0 → 1/8 of the
  // limit, at least 16 MiB; a larger value than that replaces it (PHEAP_MEMORY_HEADROOM).
  // Why an application says it: the buffer follows the limit only at the pace of its samples
  // (every 10 ms) and of its evictions, so memory the application takes faster than that,
  // beyond the headroom, soon after the open, is over the limit before pheap has given any
  // back: an OOM kill. At large pages the buffer fills in milliseconds (2 MiB pages: 56 MiB
  // within a few faults), before the application's first allocations (pheap/pager.hpp,
  // "Automatic buffer"). `pheap-graph ingest` sets it to its batches' memory.
  std::size_t memory_headroom = 0;
  // Of buffer occupancy. Eviction keeps the buffer nearly full (what it holds decides how
  // often the application faults: the higher the watermarks, the fewer the faults) and frees
  // a few percent per round, enough for one batched write-back. A small buffer's watermarks are
  // at least 2 pages (or 1/8 of it) below the buffer and 8 pages (or half of it) apart, so
  // that it too evicts several pages per round before it is full (buffer_budget.hpp B7).
  double high_watermark = 0.99, low_watermark = 0.97;
  dirty_tracking tracking = dirty_tracking::automatic;
  unsigned fault_threads = 2;  // workers reading the uffd (1..64)
  // Read-ahead on faults (pheap/pager.hpp, "Read-ahead"): kTrigger missing faults in a row a
  // stride apart (sequential, backward, or up to 8 pages apart) earn a window of pages read
  // by the fault workers in the background, 8 pages at first, doubling each time the
  // application follows it, up to this ceiling in pages (≤ read_ahead_max). read_ahead_auto:
  // 8 MiB of pages (at least 1, at most read_ahead_max); 0: off. A window is read in batches
  // of 1 MiB by every free fault worker at once. Windows take buffer slots only below the high
  // watermark; the rest waits for the evictor's room, never beyond the buffer.
  static constexpr unsigned read_ahead_auto = ~0u;
  static constexpr unsigned read_ahead_max = 4096;
  unsigned read_ahead = read_ahead_auto;
  // Write-behind (pheap/pager.hpp, "Write-behind"), a period in milliseconds (0: off, at most
  // write_behind_max_ms): every period a thread write-protects again the pages written since
  // the last period and writes into the working epoch the dirty pages that were not written
  // during the whole last period, so that a flush has only what changed since to write (a
  // page written in every period is never written behind). Only in core: while the evictor
  // evicts, write-behind does nothing. Needs wp_async tracking (off otherwise:
  // pager_stats::write_behind); takes a flush batch of memory outside the buffer (4 MiB at
  // 4 KiB pages, at most 16 MiB or one larger page). Its costs: a write-protect fault
  // (resolved in the kernel) on the first write of each period to a page written in the last
  // one, and pages written twice when they are written again after being written behind.
  static constexpr unsigned write_behind_max_ms = 60000;
  unsigned write_behind_ms = 0;
  // The victim cache: a copy of each evicted page (once its bytes are in the store) handed to
  // the kernel with MADV_FREE, which drops it without I/O when it needs the memory; until then
  // a fault on the page copies it back instead of reading the store — the role the kernel's
  // page cache plays for mmap (only a sample of the victims while few copies come back:
  // pheap/pager.hpp, "Victim cache"). The copies count as the process's resident memory (and as
  // reclaimable file pages in its memory cgroup) until the kernel takes them. automatic: on
  // where a memory cgroup bounds them (an automatic buffer whose limit comes from a cgroup),
  // off otherwise. on needs PAGEMAP_SCAN (Linux 6.7+); without it the pager runs without
  // (pager_stats::victim_cache says which).
  victim_caching victim_cache = victim_caching::automatic;
  // Who fills a missing page. workers: the fault workers read the userfaultfd while the
  // faulting thread sleeps in the kernel (a fault costs two cross-CPU wake-ups: fault → worker,
  // worker → thread). faulting_thread: UFFD_FEATURE_SIGBUS, so the access raises SIGBUS and
  // pheap's handler fills the page on the thread that touched it, which then retries the access
  // — no wake-up, no hand-off. Needs wp_async or all_resident tracking (throws errc::unavailable
  // where tracking resolves to wp_sync, whose write faults would be signals too); its caveats
  // (system calls on missing pages fail with EFAULT, SIGBUS must not be blocked or taken over):
  // pheap/pager.hpp, "Fills on the faulting thread". automatic: faulting_thread where the
  // tracking resolves to wp_async or all_resident (or the region is read-only), else workers —
  // for code that never hands heap memory to a system call (the graph layer's datastores:
  // pheap/graph/store.hpp datastore_options). pager_stats::thread_fill says what was chosen.
  // The library's default stays workers: with fills on the faulting thread a read(2) into a
  // heap page that is not in memory fails with EFAULT, which code ported from mmap does not
  // expect.
  fault_filling fault_fill = fault_filling::workers;
  // Read-only pagers: of the store, the bytes the region must map, from offset 0 (rounded up
  // to whole pages; 0, or at least the capacity: all of it); a read-write pager maps its
  // whole capacity whatever this says. A read-only pager still maps the whole capacity where
  // the address space allows it (address space only: PROT_READ, MAP_NORESERVE, the page
  // table's words are backed where pages are used), so that a refresh() finds the part a
  // writer grew the heap into mapped already; only where reserving the capacity fails
  // (ENOMEM: an RLIMIT_AS below it) does it map this much, and an access past it is outside
  // the region. pheap::manager sets it on a read-only open to the part of the heap in use (its
  // metadata and every chunk ever used): under an RLIMIT_AS below the capacity (64 GiB by
  // default) a read-only open (`pheap check`, `pheap-graph stats`) works where a read-write
  // one cannot.
  std::size_t read_only_map_bytes = 0;
  // Huge pages (src/pager/huge_pool.hpp has the design). always: a region whose page size is
  // 2 MiB or a multiple of it maps every fill with 2 MiB (PMD) entries, one TLB entry per
  // 2 MiB instead of 512: the page is read into a recycled 2 MiB-aligned transparent huge page
  // of a pool and moved into the region whole (UFFDIO_MOVE); eviction moves it out whole and
  // recycles it. off (the default): 4 KiB entries, as before. auto (huge_pages_mode::automatic,
  // spelled "auto"): fills stay 4 KiB (as off: no huge page is zeroed or moved at a fault), and
  // a promoter thread moves a page that has stayed resident, whole and 4 KiB-mapped, for a
  // whole huge_promote_ms period without an eviction in between into a pool huge page, so
  // that what stays in core ends up one PMD mapping each (src/pager/promoter.hpp has the
  // protocol and its costs): a clean page whenever a round finds it (a query's heap, a
  // read-only open), a dirty one only within 5 % of a core (a heap being built is written all
  // over, and a promotion is a 2 MiB copy: promoting all of an in-core SCALE 22 build held
  // its pages 1.3-1.7 s, the credit 0.15-0.23 s).
  // Out of core (evictions since the last round) it promotes nothing.
  // Any tracking mode, read-only opens too; unlike always it leaves automatic tracking to
  // resolve as it would (wp_async where the kernel has it), and under wp_async it promotes
  // only dirty pages (a clean page would need its writers to fault, promoter.hpp): a
  // writable open that only reads promotes nothing there (dirty_tracking wp_sync does). It
  // promotes again the pages that writes after a flush split (wp_async).
  // Caveats of auto:
  //  * a promotion stalls the faults on that page for its duration (0.6-1.0 ms per 2 MiB: two
  //    moves and a 2 MiB copy; huge_promote_ns); other pages are not held up.
  //  * while it promotes, the application pays too: each move of a page's 512 small entries
  //    shoots down their TLB entries on every CPU, and the copies take a core. A SCALE 23 BFS
  //    that started as soon as its heap was in took 0.83x of off's time while its 4 GiB were
  //    promoted beside it (1.03x once they were; bench/README.md "huge-auto").
  //  * a clean page is compared with its old frames once protected again (a thread that had
  //    not faulted on it could write it in the one ioctl between its move and its
  //    protection): a page that differs is installed dirty, so nothing is lost and at worst a
  //    clean page is written once more.
  // Caveats of always:
  //  * It falls back to 4 KiB fills for the whole region, and says why in
  //    pager_stats::huge_pages_why, on a page size below 2 MiB or not a multiple of it, a
  //    kernel without UFFDIO_MOVE, or transparent huge pages set to `never`; per page
  //    (counted in huge_fallback_*) when the pool cannot get a huge page, the move is
  //    refused, or the kernel maps the moved page with 4 KiB entries (below). The data is the
  //    same either way; huge_mapped_bytes says how much of the region the page tables map
  //    with 2 MiB entries now.
  //  * The kernel's part of a write fault: before it hands a missing write fault to the pager
  //    it allocates (and zeroes) a huge page of its own and frees it again. When it cannot
  //    get one (memory short or fragmented), it falls back to 4 KiB and leaves a page table
  //    at that page, and the pager's whole move then goes in as 512 entries: counted in
  //    huge_fallback_split, and the page stays 4 KiB-mapped until it is evicted. Read faults
  //    take the kernel's huge zero page path and are not affected.
  //  * A huge fill counts as a write: the next flush or eviction writes the whole page back,
  //    even when it was only read (out of core, every eviction of a read page is a write;
  //    not on a read-only open, which writes nothing). Not the never-written pages a write
  //    fault fills ahead of the heap's growth under wp_sync (up to 3 after the faulting one:
  //    src/pager/huge_pool.hpp, "zero-ahead"): those are clean until written.
  //  * A write after the page was write-protected again (by a flush, or wp_async's write
  //    scan in the evictor) can split its 2 MiB mapping into 4 KiB entries: always under
  //    wp_async (the kernel's write-protect resolution; so automatic tracking resolves to
  //    wp_sync on a writable huge region, unless fault_fill asks for faulting_thread, which
  //    needs wp_async: src/pager/huge_pool.hpp, "Tracking"), at times under wp_sync (not
  //    explained yet; such a page can leave a 4 KiB frame behind, and the next fill of it is
  //    refused and falls back to 4 KiB copies: huge_fallback_move, 11 of 1022 fills once in
  //    PagerRoundTrip's wp_sync huge case; and once under all_resident, which never
  //    write-protects, in 1 of 59 fills of HugePages' eviction case, with other tests running
  //    beside it). The data stays correct; the page stays split
  //    until it is evicted (it is then dropped, not recycled: huge_evicted_split, which also
  //    counts the kernel's fallbacks above). The page table it leaves behind is freed by the
  //    next huge fill of that page (MADV_DONTNEED of the empty page, with the kernel's
  //    CONFIG_PT_RECLAIM; without it that fill too is 4 KiB-mapped: huge_fallback_split).
  //    Under `always` a split page is not promoted again (auto's promoter does that).
  //  * A read-only open maps its region writable (UFFDIO_MOVE needs it) and keeps it
  //    read-only with userfaultfd write-protection (src/pager/huge_pool.hpp, "Read-only
  //    opens"): a write still dies of SIGSEGV with the same line, but a write by a thread that
  //    had not faulted on a page, in the microseconds between that page's move and its
  //    protection, is not stopped (it changes only this process's copy: nothing of a read-only
  //    open is ever written to the store). Without userfaultfd write-protection (Linux 5.7),
  //    or where the kernel refuses a writable reservation (strict overcommit), a read-only open
  //    falls back to 4 KiB fills and says so.
  //  * The pool holds up to 4 huge pages outside the buffer (8 MiB at 2 MiB pages), counted in
  //    pheap's own memory; huge_pool_blocks says how many it holds now.
  huge_pages_mode huge_pages = huge_pages_mode::off;
  // auto: the promoter's period. A page 4 KiB-mapped at two rounds in a row, with no eviction
  // between them, is promoted at the second. 0: no promoter thread (white-box tests run
  // rounds by hand).
  unsigned huge_promote_ms = 100;
  bool debug = false;  // stderr: a line at construction (the buffer and its source), the statistics at close

  // Overrides fields of `base` from the PHEAP_* variables above that are set. A malformed or
  // out-of-range value, or a low watermark not below the high one, throws
  // error(invalid_argument) naming the variable and the value.
  static pager_options from_env(pager_options base);
  static pager_options from_env();  // == from_env(pager_options{})
};

}  // namespace pheap
