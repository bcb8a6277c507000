// pheap/pager.hpp — a sparse_store mapped into memory by a userfaultfd pager.
//
// A `pager` reserves one contiguous region of `store().capacity()` bytes and lets the program
// read and write it with plain loads and stores. Missing pages are filled by fault workers
// from the store (never-written pages are zero-filled without I/O, together with the other
// never-written pages of their 64 KiB unit: fresh memory costs one fault per 64 KiB at any
// page size), at most `buffer_size` bytes stay resident, dirty pages are
// written back on eviction and by flush(), and flush(root) makes everything written before the
// call durable as one store commit. Eviction starts at the high watermark of the buffer (0.99
// by default) and stops at the low one (0.97): the buffer stays nearly full, because what it
// holds decides how often the application faults.
//
// Dirty tracking (chosen at run time, see dirty_tracking):
//   wp_async      UFFD_FEATURE_WP_ASYNC + PAGEMAP_SCAN (Linux ≥ 6.7) and UFFDIO_MOVE (≥ 6.8):
//                 first writes are resolved by the kernel (no round trip); flush collects and
//                 re-protects the written set atomically with one scan.
//   wp_sync       write-protect faults (Linux ≥ 5.7): the first write after a flush or a
//                 fill traps to a worker once.
//   all_resident  no write tracking: every resident page counts as dirty, so flush writes
//                 every resident page and eviction writes every victim.
//   automatic     the first of the above the kernel supports; wp_sync first on a writable
//                 region with huge pages in force (unless faulting-thread fills were asked
//                 for), where wp_async's kernel-resolved writes would split 2 MiB mappings.
// Forcing a mode the kernel lacks throws errc::unavailable.
//
// Guarantees:
//   * flush() returns the store epoch containing every write that completed before flush()
//     was called. Writes racing with a flush land in that epoch or the next; the copy of a
//     page taken for an epoch is never torn by a racing write (wp_sync: writers block on the
//     write-protect for the copy; wp_async: the copy is verified with PAGEMAP_SCAN and pages
//     written during it are re-taken atomically with UFFDIO_MOVE; all_resident: pages are
//     taken with UFFDIO_MOVE).
//   * Eviction never loses a write: a victim is moved out of the region atomically
//     (UFFDIO_MOVE into a private staging range) before its bytes are judged and written; an
//     access to it meanwhile waits in the fault handler until the evictor holds a copy of the
//     bytes to write, and is then filled from that copy while the write is in flight
//     (pager_stats::write_back_hits), or from the store once it has landed.
//   * Resident pages never exceed buffer pages plus pinned pages (fault workers wait for the
//     evictor when the buffer is full).
//   * Nothing on disk changes except through store().write_pages() (eviction, flush) and
//     store().commit() (flush). The destructor writes nothing: unflushed writes are lost, as
//     after a crash, and the store reopens at its last commit.
//
// Caveats and failure modes (read these):
//   * fork(): the region is MADV_DONTFORK. A child process does not inherit it; touching it in
//     the child raises SIGSEGV (after one line saying so). Open the datastore again in the
//     child if it needs the data.
//   * A store read error while filling a page: that page is poisoned (UFFDIO_POISON, Linux
//     ≥ 6.6): the access that faulted, and every later access to the page, gets SIGBUS; the
//     next flush() throws that error (once). Inside pheap::guard_faults (pheap/fault_guard.hpp)
//     the SIGBUS is thrown as that error instead, and nothing is printed; outside one, pheap's
//     SIGBUS handler prints one line naming the store path, page and error to stderr before
//     the process dies of it (of the last 8 pages poisoned per region; an older one gets a line
//     without the store's words). Without UFFDIO_POISON the faulting thread is sent SIGBUS with
//     tgkill (UFFD_FEATURE_THREAD_ID), the page stays unfilled, and the line is printed when
//     the read fails, guarded or not. Never silent zeros.
//   * A store write error during eviction keeps the pages resident and dirty (the buffer may
//     then exceed its size) and the next flush() throws it. A flush() that throws leaves the
//     previous epoch durable; pages it had collected stay dirty for the next attempt.
//   * Do not munmap, mremap, mprotect or madvise the region, and do not pass region addresses
//     to system calls (read(2) into the region, write(2) from it, io_uring buffers): with
//     UFFD_USER_MODE_ONLY, and with fills on the faulting thread (below), a system call that
//     meets a missing page fails with EFAULT. Copy through a private buffer instead.
//   * Destroying the pager while other threads still access the region is undefined.
//   * Read-only stores are mapped PROT_READ; a write raises SIGSEGV, after one line on stderr
//     naming the store path and the address (the pager's SIGSEGV handler, which passes every
//     other SIGSEGV on to the handler installed before it); flush() throws errc::read_only.
//   * The pager does not enable the uffd EVENT_* features, so a region accessed from a
//     process created with clone(CLONE_VM) without CLONE_THREAD is unsupported.
//   * userfaultfd is obtained with the userfaultfd(2) syscall, else the syscall with
//     UFFD_USER_MODE_ONLY, else /dev/userfaultfd. When none works the constructor throws
//     errc::unavailable naming the fix (vm.unprivileged_userfaultfd=1, access to
//     /dev/userfaultfd, or a seccomp profile that allows userfaultfd).
//   * Eviction of a writable region needs UFFDIO_MOVE (Linux ≥ 6.8) in every tracking mode;
//     without it the buffer must hold the whole region, else the constructor throws
//     errc::unavailable. Read-only regions evict with MADV_DONTNEED on any kernel.
//   * Where a page went after UFFDIO_MOVE is read back from the page tables (PAGEMAP_SCAN),
//     not from the ioctl's result: on Linux 6.18 the ioctl was seen to report EEXIST for a
//     page it had in fact moved while PAGEMAP_SCAN re-protected ptes concurrently.
//   * Pinned pages are outside the buffer budget; pin less than you have.
//   * Huge pages (pager_options::huge_pages = always; off by default): on a region of 2 MiB
//     pages (or a multiple) each fill is a transparent huge page moved in whole, one PMD
//     entry per 2 MiB, so a heap larger than the TLB's reach in 4 KiB entries walks fewer page
//     tables. A huge fill counts as written (the next flush or eviction writes it whole), a write
//     after a re-protect can split the mapping back into 4 KiB entries, and the pool of
//     recycled huge pages is pheap's memory outside the buffer. A read-only region is then
//     mapped writable and kept read-only by userfaultfd write-protection (a write dies of
//     SIGSEGV as before, with one window per fill): pheap/pager_options.hpp lists the caveats,
//     src/pager/huge_pool.hpp the design; pager_stats::huge_* count what happened.
//   * Fills on the faulting thread (pager_options::fault_fill = faulting_thread, or automatic
//     where the tracking allows it; default workers, graph datastores automatic). The
//     userfaultfd is opened with UFFD_FEATURE_SIGBUS: an access to a missing page raises
//     SIGBUS (BUS_ADRERR) on the thread that made it, and pheap's SIGBUS handler fills the page
//     there — the same steps as a worker's fill, store read included — and returns,
//     and the access is retried. It saves the two cross-CPU wake-ups of a worker's fill (the
//     fault wakes a worker, the worker's UFFDIO_COPY wakes the thread; on a VM each is an
//     IPI) and the fault workers' CPU; the fill's CPU time becomes the application thread's
//     (pager_stats::thread_fills counts these fills; fault_cpu_ns no longer covers them).
//     Where faults wait on store reads or wake-ups are dear, it is the faster of the two.
//     What it costs:
//       - A system call that reads or writes a missing page of the region (write(2) from the
//         heap, read(2) into it, a send, an io_uring buffer) fails with EFAULT instead of
//         waiting for the page: no thread runs the handler for the kernel. Touch the bytes
//         first or copy through a private buffer (the same as with UFFD_USER_MODE_ONLY, above).
//       - SIGBUS must reach pheap's handler: a thread that blocks SIGBUS, or a SIGBUS handler
//         installed after the first pager opened that does not pass on what it does not know,
//         turns a fault into the death of the process. pheap's handler passes every SIGBUS
//         that is not of its regions to the handler installed before it.
//       - The fill runs inside a signal handler: it takes the pager's locks, allocates and
//         reads the store. That is safe because a thread faults on the region only while
//         touching heap memory — never inside pheap or malloc — but a signal handler of the
//         application that touches a missing page of the region deadlocks if the signal
//         interrupted a fill (the same holds for any code reentering a fill).
//       - A thread that finds the page being filled by another thread, or owned by the
//         evictor or a flush, sleeps on a futex until they let go (at most 100 ms) and
//         retries, as a worker's fill would leave it asleep until woken
//         (pager_stats::thread_fill_retries counts these sleeps).
//       - wp_sync tracking, whose write-protect faults would be signals too, is refused
//         (errc::unavailable); wp_async sees the first write in the page tables. On x86-64 a
//         fill for a write is mapped writable (the signal frame carries the page fault's
//         error code), sparing the write-protect fault that follows a read fill; elsewhere
//         SIGBUS does not say whether the access was a write, and every fill is a read fill.
//       - The fills' bounce buffers come from 64 slots mapped at open (a page each; the
//         read-ahead a fill earns is read by the workers): resident are as many as fills ever
//         ran at once, outside the automatic buffer's accounting (the reserve covers them: at
//         4 KiB pages 256 KiB at most). A 65th thread filling at once sleeps 20 µs and retries.
//       - automatic picks the workers under wp_sync instead of refusing; it still needs one
//         of the SIGBUS handler's 64 region slots, and the 65th region open at once fails
//         (errc::unavailable) as with faulting_thread.
//   * Victim cache (pager_options::victim_cache; on by default only for an automatic buffer
//     under a memory cgroup): evicted pages are also kept, once their bytes are in the store,
//     in a private mirror of the region handed to the kernel with MADV_FREE, and a fault on
//     such a page copies it back instead of reading the store (pager_stats::victim_hits). A page
//     that comes back this way (or from its eviction's write in flight) was evicted while in
//     use — the evictor's clock sees writes, not reads — and the clock passes it over once
//     more before it may be evicted again.
//     The copies are the process's resident memory (RSS) until the kernel takes them, which it
//     does without I/O whenever memory is short (they count as inactive file pages, so the
//     automatic buffer treats them as reclaimable, as it does the page cache); they are not
//     bounded otherwise. A copy is used only when PAGEMAP_SCAN says, before and after it is
//     read, that every frame of it is still present and not the zero page (a dropped frame
//     reads as the zero page); else the store is read. A copy that was used is dropped (the
//     page is resident again), leaving its room to copies not yet back: by the evictor at its
//     next batch, up to 64 at once (while nothing is evicted, those stay for the kernel to
//     take), past that by the fill itself. While
//     fewer than 10 % of the kept copies come back (per 8192 evictions), only one page in 16
//     is kept, so that a workload that does not refault its victims soon (grouped graph
//     ingestion) does not pay a copy per eviction for nothing. Needs PAGEMAP_SCAN (Linux ≥ 6.7);
//     process_madvise on the caller itself (≥ 6.13) batches the MADV_FREE calls.
//   * Memory. The buffer bounds the region's resident pages. pheap's own memory outside it:
//     the page table, 4 bytes per page of the region, in a mapping whose memory is taken only
//     where pages are used (one 4 KiB page of words per 1 024 pages: 0.1 % of the heap's used
//     pages at 4 KiB pages, whatever the capacity; it used to be allocated and written whole at
//     construction, 64 MiB for 64 GiB at 4 KiB pages); ≤ 64 bytes per buffer page of
//     bookkeeping (the evictor's clock), and 1 byte per page of the region where the evictor
//     took a page along with a neighbouring victim (a mapping touched likewise); bounce
//     buffers of one flush batch (≤ 16 MiB) and one eviction batch (≤ 8 MiB), the evicted
//     pages' frames the eviction's UFFDIO_MOVE staging range keeps mapped between emptyings
//     (at most an eviction batch and at most 256 KiB: one TLB shootdown for several small
//     batches), one read step (2 MiB) per fault thread, with write-behind one more flush
//     batch, and 64 KiB of zeros; with an automatic
//     buffer each batch is at most 1/16 of the memory limit. Otherwise the staging ranges
//     hold buffer pages only (a page moved there keeps its slot until its bytes are out of
//     the buffer). The store's own: its page map
//     (sparse_store.hpp, ≈ 5-14 bytes per page of loaded map blocks) and, with the io_uring
//     engine, one ring per thread that does I/O (a few pages each) plus the kernel's io-wq
//     workers, which the kernel bounds per ring (IORING_REGISTER_IOWQ_MAX_WORKERS; pheap does
//     not lower the default) and which are charged to the process's memory cgroup.
//   * Automatic buffer (buffer_size 0): the memory cgroup's limit (v2 memory.max/memory.high of
//     the cgroup and its ancestors, v1 memory.limit_in_bytes), else 1/4 of RAM, minus what is
//     in use at construction (cgroup usage without reclaimable clean page cache, else the
//     process's anonymous RSS), minus a headroom of 1/8 of the limit (at least 16 MiB; or
//     pager_options::memory_headroom, PHEAP_MEMORY_HEADROOM, if more) and the
//     bounce buffers above: that is the buffer's maximum. Then it follows the limit: the
//     evictor re-reads limit and usage at most every 10 ms (and every 10 ms while idle) and
//     the buffer in force (its target) becomes limit − (usage − the pager's resident pages) −
//     a reserve (1/32 of the limit, at least 4 MiB; after the rest of the process grew faster
//     near the limit, twice that growth between two samples, halved every 10 s, at most 1/8 of
//     the limit), per page
//     of page size + 64 B, never above the maximum and never below 2 pages; the watermarks
//     are the same fractions of it. When the rest of the process grows, pheap evicts down to
//     the lower target before the kernel's OOM killer needs to act; when it shrinks, the
//     target rises back (at most to the maximum). Not followed: memory the rest of the
//     process takes faster than that (more than the reserve in force within 10 ms, or more
//     than the buffer holds), a move to another cgroup. At large pages a few faults fill
//     the buffer (2 MiB pages: 56 MiB in milliseconds), so an application that allocates
//     more than the headroom soon after the open meets it there, and must say so with
//     memory_headroom: `pheap-graph ingest` (its edge batches and their bank references,
//     ~60 MiB) of SCALE 18 at 2 MiB pages was OOM-killed within 1.5 s in every run in cgroups
//     of 96 to 192 MiB with the default headroom (automatic buffers, and explicit ones clamped
//     to follow the limit); at 4 KiB pages it completed. It now asks for its batches' memory
//     (pheap/graph/ingest.hpp, ingest_memory) and completes in 160 and 192 MiB. Not yet in 96
//     and 128 MiB, nor always out of core at SCALE 20 (a 333 MiB cgroup: killed at 47 s in 1
//     run of 2; bench/results/2026-12-07-headroom): there it runs for 10-20 s with the
//     cgroup's anonymous memory within 1-2 MiB of the limit (living on reclaimed page cache)
//     and is then killed; pheap's own memory beside the buffer, as smaps showed it (~28 MiB at
//     128 MiB), is more than the follower counts (16 MiB pooled beside the buffer, 8 MiB lent
//     by flushes) by about the reserve.
//     stats() names the source and its numbers at open (buffer_source), the target now and
//     the last sample (buffer_target_bytes, buffer_target_source); PHEAP_DEBUG=1 prints them at construction and whenever the
//     target moves by 1/8 of the maximum. A flush lends its bounce buffer out of the buffer: it
//     first waits for the evictor to lower occupancy by that many pages, and gives the memory
//     back to the kernel when it ends.
//   * Several automatic buffers that follow the same memory cgroup share it — in one process,
//     and across the processes of one user in that cgroup (MPI ranks of one node), through a
//     small file /dev/shm/pheap-pool-<uid>-<hash> that the last of them removes: each sizes
//     its maximum without the others' buffers (they are not "in use" for it), and every page
//     any of them takes in counts against one cap (the limit less the rest of the cgroup and
//     the reserve) at once, not at the next 10 ms sample, so together they stay within the
//     limit. A buffer that filled first keeps what it holds until another is refused a page;
//     then each is held to an equal share of the cap. What a process killed without closing
//     its pager held comes back within 100 ms, and the file of a pool whose members all died
//     is removed by the next process of the user that opens a shared pool. Not members:
//     fixed buffers, other users' processes, more than 64 pagers per cgroup (those follow it
//     alone), and under the RAM limit other processes (each has its own quarter of RAM).
//   * wp_async eviction cannot learn from the kernel whether a page judged clean was written
//     in the instant before it was moved out (the uffd-wp bit does not travel with
//     UFFDIO_MOVE), so such pages are compared with the store's copy after the move and
//     written if they differ: with zeros for never-written pages, else by CRC32C against
//     sparse_store::page_crc() (no I/O; a write in that instant that leaves the page with the
//     CRC of its stored copy — odds 2^-32 — would go unwritten). A store that cannot tell
//     without I/O (page_crc() == nullopt) has the page read back (evict_verify_reads).
//   * Read-ahead (pager_options::read_ahead; src/pager/read_ahead.hpp has the rules). The pager
//     sees an access only when it faults, so a stream of faults is what it follows: three
//     missing faults a stride apart (1 page, backwards, or up to 8 pages apart; pages the
//     store has data for) earn a window of 8 pages after the last one, which the fault
//     workers read in the background (claimed at once: an access to one of them waits for
//     that read instead of reading it again). One page half-way through each window, its
//     marker, is left out: the application's fault on it says the window is being followed,
//     and the next window — twice as large, up to the ceiling (8 MiB of pages by default) —
//     is claimed then, while the rest of the current one is still ahead. A window is read in
//     batches of 1 MiB by every fault worker that is free, so that one batch is checked and
//     installed while the next ones are read (with fills by the workers, a fault elsewhere
//     may wait for one batch). A window takes
//     buffer slots below the high watermark only; the part that gets none waits in the
//     prefetch queue for the room the evictor makes, so read-ahead never takes the buffer
//     past its size. Random faults earn nothing unless three of one thread fall a stride
//     apart by chance, and while too few first windows are followed (under a quarter in a
//     round of 32) only one in 8 is planned (pager_stats::read_ahead_gated counts the rest).
//     pager_stats: read_ahead_pages (read), read_ahead_windows, read_ahead_planned and
//     read_ahead_passed (planned pages the application then went past: the rest bounds
//     what was read in vain). Caveats: 8 streams at once (a ninth scan, or random faults
//     between a stream's, can replace a stream before its window is followed); each window
//     costs the application one synchronous read, its marker's.
//   * Write-behind (pager_options::write_behind_ms, off by default; src/pager/write_behind.cpp
//     has a round's steps). Every period a thread write-protects again the pages written
//     during the last one (PAGEMAP_SCAN, as a flush does) and writes into the working epoch,
//     through the flush's claim and tear-free copy, the dirty pages that were not written for
//     a whole period; a flush then writes what changed since. A page written in every period
//     is never written behind. Nothing is durable before a flush commits. In core only (no
//     round writes while the evictor evicts), wp_async tracking only. Costs: a write-protect
//     fault, resolved in the kernel, on the first write of a period to a page written in the
//     last one; a page written again after it was written behind is written twice (why it
//     is off by default: bench/DECISIONS.md, "write-behind, opt-in"). pager_stats:
//     write_behind, write_behind_pages, _rounds, _ns.
//
// Options (buffer, watermarks, tracking, threads, read-ahead, their PHEAP_* variables):
// pheap/pager_options.hpp. Statistics: pager_stats in pheap/stats.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>

#include "pheap/pager_options.hpp"
#include "pheap/sparse_store.hpp"
#include "pheap/stats.hpp"

namespace pheap {

namespace paging {
class pager_impl;
struct test_access;  // white-box tests only: src/pager/test_access.hpp
}

class pager {
 public:
  // Maps `store`. Throws errc::unavailable (no userfaultfd / forced mode missing),
  // errc::invalid_argument (bad options), errc::io (mmap failure).
  explicit pager(std::unique_ptr<sparse_store> store,
                 const pager_options& opt = pager_options::from_env());
  ~pager();  // flushes nothing; releases memory, threads and descriptors
  pager(const pager&) = delete;
  pager& operator=(const pager&) = delete;

  std::byte* base() const noexcept;        // region start, page_size() aligned
  // == store().capacity(), or less for a read-only pager (pager_options::read_only_map_bytes)
  std::size_t size() const noexcept;
  std::size_t page_size() const noexcept;  // == store().page_size()
  bool read_only() const noexcept;
  dirty_tracking tracking() const noexcept;  // the mode in use (never automatic)
  std::size_t buffer_pages() const noexcept;  // the buffer, in pages

  // Writes every dirty page to the store and commits `root`; returns the new epoch.
  // Throws the first store error since the last flush (poisoned fills, eviction write
  // failures) or of this flush's own writes/commit; errc::read_only on a read-only store.
  std::uint64_t flush(std::span<const std::byte> root);
  // flush(), except that when it finds nothing dirty, nothing was written back since the last
  // commit and `root` equals the last commit's, nothing is committed and the last epoch is
  // returned (sparse_store::commit_if_changed): a close with nothing dirty writes nothing.
  std::uint64_t flush_if_changed(std::span<const std::byte> root);
  // Two-phase commit (sparse_store::prepare/confirm, sparse_store/FORMAT.md): prepare() is
  // flush() ending in a *prepared* epoch — durable, but store().epoch() stays at the
  // watermark below it and an open picks it only if store_options::max_epoch accepts it;
  // returns the prepared epoch. confirm() makes it the watermark and returns it. Until
  // confirm(), flush() and prepare() throw invalid_argument, and an eviction of a page the
  // prepared epoch changed waits for confirm() (so confirm promptly). Errors as flush().
  std::uint64_t prepare(std::span<const std::byte> root);
  std::uint64_t confirm();

  // Asynchronously fills the pages covering each (offset, len): idle fault workers read up to
  // 2 MiB of pages (at most 512) per store batch, each run of consecutive pages one request,
  // taking buffer slots below the high watermark; at it the queue waits for the evictor to
  // make room. At most half the buffer's pages wait in the queue: older requests beyond that
  // are dropped (pager_stats::prefetch_dropped). A hint: faults never wait for it (one worker
  // stays free for them); a fault on a page still queued reads it at once and, in the same
  // batch, the range's next pages, up to 1 MiB (the access has caught up with the range).
  // Never-written pages are filled with zeros. Out-of-range parts are ignored.
  void prefetch(std::span<const std::pair<std::size_t, std::size_t>> ranges);
  // A scan's prefetch: as prefetch(), but only the pages the store holds data for (nothing is
  // filled with zeros) and only as far as the buffer has room below its low watermark: what
  // does not fit is dropped, and no eviction round starts for it. For a walk over all of a
  // heap that fits the buffer (manager::prefetch_all). Its ranges are read by every fault
  // worker at once, at the disk's rate: a fault elsewhere meanwhile may wait for one worker's
  // step (up to 2 MiB of the range's runs, a few large reads).
  void prefetch_stored(std::span<const std::pair<std::size_t, std::size_t>> ranges);
  // Releases pages [first_page, first_page + count), which nothing may access until they are
  // written again: the store discards their data (sparse_store::discard: they read as zeros,
  // and the disk space goes at a later commit), and their resident copies nobody is using
  // leave the buffer without being written, as the kernel's MADV_REMOVE drops a file
  // mapping's pages (pager_stats::released_pages_dropped). A copy the evictor or a flush holds
  // at that moment may still be written, which costs space only. The heap calls it for the
  // chunks it frees. Errors as sparse_store::discard.
  void discard(std::size_t first_page, std::size_t count);
  // Fills and keeps resident the pages covering [offset, offset+len) until as many unpin()
  // calls; pins nest. Throws invalid_argument when out of range.
  void pin(std::size_t offset, std::size_t len);
  void unpin(std::size_t offset, std::size_t len);

  // Read-only pagers over a store registered beside a writer (sparse_store.hpp): moves the
  // store to its newest watermark (sparse_store::refresh) and drops every page whose copy
  // changed wherever the pager holds it — resident, kept in the victim cache, being filled or
  // read ahead — so that the next access faults and reads the new copy; pages whose copy did
  // not change stay resident (no store read when they are used again). Pages whose read had
  // failed (poisoned: errc::stale, an I/O error) are made absent too: their next access reads
  // again. Returns the store's refresh_result. Caveats:
  //   * No other thread may access the region during the call (the caller's to prevent): a
  //     fault meanwhile is served, but may read either watermark.
  //   * The region keeps its address and size(): a read-only pager maps the store's whole
  //     capacity where the address space allows (pager_options::read_only_map_bytes), so the
  //     part a writer grows the heap into is mapped already; where it mapped less, pages
  //     past size() are not reachable through this pager (reopen).
  //   * errc::invalid_argument on a read-write pager, and from the store when it holds the
  //     datastore's shared flock instead of reading beside a writer (format 3, no write
  //     access to pheap.readers, store_options::beside_writer = false).
  //   * pager_stats::refreshes, invalidated_pages and unpoisoned_pages count what it did.
  refresh_result refresh();
  // refresh() with the store moved to its newest watermark at or below `max_epoch`
  // (sparse_store::refresh_to), the same caveats.
  refresh_result refresh_to(std::uint64_t max_epoch);
  // Read-only pagers: drops the pages [first, end) of `pages` as refresh() drops those that
  // changed (resident ones, victim-cache copies, fills in flight, poisoned ones), without
  // moving the store: their next access reads the store again. Pages past size() are
  // ignored. The same caveats as refresh(); errc::invalid_argument on a read-write pager.
  void invalidate(std::span<const std::pair<std::uint64_t, std::uint64_t>> pages);

  pager_stats stats() const;
  sparse_store& store() noexcept;


 private:
  friend struct paging::test_access;
  std::unique_ptr<paging::pager_impl> impl_;
};

}  // namespace pheap
