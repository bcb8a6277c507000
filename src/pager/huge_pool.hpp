// src/pager/huge_pool.hpp — the huge pool: recycled 2 MiB-aligned transparent huge pages, in
// which huge fills are read and into which huge evictions are moved
// (pager_options::huge_pages = always), and which auto's promotions move in (promoter.hpp).
//
// Why. UFFDIO_COPY never makes a PMD mapping: a pheap page of 2 MiB filled by a copy is 512
// 4 KiB entries, and a heap larger than the TLB's reach pays a page walk per random access
// whatever its page size. A transparent huge page staged in a 2 MiB-aligned MADV_HUGEPAGE
// range and moved into the region with UFFDIO_MOVE stays PMD-mapped (measured on Linux 6.18:
// 8 of 8 moves, 0.7-0.8 us each; it resolves the missing fault directly), and moving it out
// again keeps it whole (0.5 us). The region is then MADV_HUGEPAGE (not NOHUGEPAGE, as 4 KiB
// regions are), and so are the eviction and flush staging ranges, 2 MiB-aligned, so that
// every move between them keeps the PMD entry.
//
// Design. A pool block is one mapping of a UPage (2 MiB or a multiple), aligned to the PMD
// size, MADV_HUGEPAGE, registered with the pager's userfaultfd in MISSING mode (UFFDIO_MOVE
// needs its destination registered with the same userfaultfd as the ioctl, and an eviction
// moves into a block). A block is either full (it holds a huge page) or empty (only address
// space):
//   fill      take_full(): a full block, else a fresh one (mapped, MADV_POPULATE_WRITE before
//             it is registered, so no userfault is raised, checked with PAGEMAP_SCAN to be
//             PMD-mapped, then registered); the fill writes every byte of the page into it
//             (store read, victim cache, write-back copy or zeros), moves it into the region
//             with uffd_move_whole, and gives the block back empty (give_empty).
//   zero-ahead a missing write fault on a never-written page (the heap growing) fills up to
//             fault_service::kHugeZeroAhead never-written pages after it as well, under
//             wp_sync only: the kernel zeroes a huge page of its own for every missing write
//             fault in a MADV_HUGEPAGE range and frees it again before the pager sees the
//             fault (do_huge_pmd_anonymous_page; 7 % of an in-core SCALE-20 build's CPU), so
//             the pages filled ahead save that and a fault round trip each. They are moved in
//             without waking, write-protected, installed clean and then woken, as a small read
//             fill is, so that a flush does not write 2 MiB of zeros for a page nobody wrote;
//             the first write is a wp_sync fault, which keeps the PMD mapping (below). The
//             move maps the page writable one ioctl before its protection, so a thread that
//             had not faulted on it could write it unseen in between: such a page is checked
//             to read as zeros once protected, and installed dirty if it does not.
//   eviction  the evictor's protocol is unchanged (evictor.cpp): victims are moved out whole
//             into its (huge) staging range, judged, written; when staging drops a slot, its
//             huge page is moved into an empty block (take_empty, one more 0.5 us move), which
//             goes back full (give_full), so that the next fill needs no fresh huge page.
//   promotion auto (promoter.hpp): the region stays MADV_NOHUGEPAGE and fills stay 4 KiB; a
//             promotion moves a page's frames into an empty block (take_scratch), copies
//             them into a full one (take_full) and moves that into the region whole (a move
//             keeps the PMD entry whatever the destination's advice), then drops the scratch.
// A fresh huge page costs ~0.2 ms of CPU to zero and 14-24 ms of wall time on this VM, whose
// balloon hands freed 2 MiB blocks back to the host: without the recycling, an out-of-core
// workload would pay that on every fill. At most `keep` full blocks stay in the pool; more go
// back to the kernel (MADV_DONTNEED).
//
// Tracking. A flush write-protects the pages it wrote, and the first write after that is where
// the two write-tracking modes part (measured on 6.18): wp_async's resolution of it, in the
// kernel, splits the 2 MiB mapping into 512 entries, which stay until the page's eviction
// (every flush epoch would demote the pages it wrote); wp_sync's fault comes to a worker, whose
// UFFDIO_WRITEPROTECT clears the whole page and leaves it one PMD mapping (3 of 3 protect /
// write / un-protect cycles stayed PMD-mapped in a throwaway program, and
// HugePages.AutomaticTrackingKeepsAPageWrittenAfterAFlushOnePmdMapping). So `automatic`
// resolves to wp_sync on a writable region with huge pages in force: the price is one fault
// round trip per page and flush epoch, tens of microseconds per 2 MiB. Where fault_fill asks
// for faulting_thread (which wp_sync's SIGBUS write faults rule out) it stays wp_async, splits
// and all. Under `auto` the promoter (promoter.hpp) maps a split page huge again; 4 KiB dirty
// tracking inside a huge page (a flush writes the whole 2 MiB page for one dirty word; the
// store's unit is the page, with one checksum) is not implemented.
//
// Read-only opens. UFFDIO_MOVE moves only between writable mappings (the kernel refuses a
// PROT_READ destination), so a read-only region with huge pages is mapped writable and kept
// read-only by userfaultfd write-protection instead (pager_core::ro_wp, page_table.hpp I10):
//   * the region is registered MISSING|WP (synchronous write-protection, never WP_ASYNC, which
//     would let writes through); a huge fill moves its page in without waking its faults
//     (UFFDIO_MOVE_MODE_DONTWAKE), write-protects it (UFFDIO_WRITEPROTECT keeps the PMD
//     mapping whole), then wakes them; 4 KiB fills (fallbacks) are UFFDIO_COPY_MODE_WP, and
//     never the zero page, whose write would be a copy-on-write the pager never sees;
//   * a write is a write-protect fault (to a worker, or, with faulting-thread fills, the
//     SIGBUS the handler passes to the fill with the frame's write bit: x86-64 only, else huge
//     pages stay off for such a region). The pager makes that page PROT_READ and lets the
//     access retry: it meets the kernel's SIGSEGV (SEGV_ACCERR), and fault_signals.cpp says
//     "write into the heap of datastore ..., which is open read-only" as it always has. A
//     write by a system call fails with EFAULT, as before (UFFD_USER_MODE_ONLY or SIGBUS
//     mode: at once; else after the same PROT_READ);
//   * eviction drops as for any read-only region, but moves each victim that is one PMD
//     mapping into an empty pool block first (evictor.cpp recycle_victims): a read-only region
//     has no staging range.
// The caveat: the move maps the page writable and the protection follows one ioctl later
// (a protected source page arrives unprotected, measured on 6.18; there is no way to move a
// page in protected). A thread that had not faulted on the page and writes it in that window
// (microseconds per 2 MiB fill) is not stopped: the write stays in this process's copy of
// the page (the store is read-only and nothing is ever written back) and goes unreported; any
// write after it is refused. The sound alternative, MADV_COLLAPSE of a read-only range filled
// at 4 KiB (it works on a PROT_READ registered range on 6.18), was measured at 4.4-12 ms per
// 2 MiB here (a fresh huge page, copied into under the mm write lock, so every fault of the
// process stalls meanwhile) against a move's microseconds and a pool's recycled pages: it would
// cost a 4 GiB graph query 9-25 s of stalls.
//
// Why not the alternatives:
//   * hugetlb (MAP_HUGETLB, hugetlbfs): needs an administrator's pool of reserved pages, has
//     no UFFDIO_MOVE (so no tear-free eviction or flush), and UFFDIO_COPY into it copies only
//     whole 2 MiB pages.
//   * shmem/memfd huge pages: they lose their PMD mapping as soon as they are write-protected,
//     which every tracking mode but all_resident does.
//   * MADV_COLLAPSE of 4 KiB-filled ranges: works on a registered range only when all 512
//     pages are present and none is write-protected, takes 0.5 ms per 2 MiB and the mm write
//     lock (every fault stalls meanwhile), and it refuses write-protected pages, which every
//     clean page under wp_sync is. `auto`'s promoter (promoter.hpp) moves the frames out and
//     a pool huge page in instead: two moves and a copy, holding only its own page.
//
// Caveats:
//   * Each full block is 2 MiB (a UPage) of pheap's own memory outside the buffer, at most
//     `keep` of them (counted in pager.cpp own_bytes_outside_buffer).
//   * A block that cannot be made (mmap, populate refused, or the kernel gave 4 KiB pages:
//     THP disabled for the process, no free 2 MiB block) is a 4 KiB fallback of that fill,
//     counted (huge_fallback_no_block); after 8 failures in a row the pool backs off, as
//     each attempt may cost milliseconds: it tries once per 64 fills until an attempt succeeds
//     (memory short or fragmented is a passing state: it used to give up for the pager's life,
//     and a graph query that met it at its start, page cache filling memory, then filled 1581
//     of 2039 pages at 4 KiB: bench/results/2026-12-04-huge-incore, walk.csv round 1).
//   * The lock is a leaf, held only to push or pop a block (never across a system call but
//     the MADV_DONTNEED of a full block beyond `keep`).
//   * A fault inside a block would be a bug (the pager never reads an empty block); the fault
//     workers resolve one with zeros and say so, as for the staging ranges.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace pheap::paging {

class huge_pool {
 public:
  huge_pool() = default;
  ~huge_pool();
  huge_pool(const huge_pool&) = delete;
  huge_pool& operator=(const huge_pool&) = delete;

  // Blocks of `block` bytes (a UPage, a multiple of the PMD size), registered with `uffd`;
  // `pagemap_fd` (or -1) checks fresh blocks are PMD-mapped; at most `keep` full blocks kept.
  void open(int uffd, int pagemap_fd, std::size_t block, std::size_t keep, const std::string& name);
  bool is_open() const noexcept { return block_ != 0; }
  std::size_t block() const noexcept { return block_; }

  // A full block (its bytes stale: the caller overwrites all of them), or nullptr when none
  // can be had (counted by the caller as a fallback).
  std::byte* take_full();
  // A block whose page was moved away (into the region): kept as address space for evictions.
  void give_empty(std::byte* b) noexcept;
  // An empty block to move an evicted page into, or nullptr when the pool holds `keep` full
  // blocks already (the page is then dropped) or none can be mapped.
  std::byte* take_empty();
  // An empty block whatever the pool holds (address space registered with the uffd): the
  // promoter's scratch, into which a page's 4 KiB frames are moved out (promoter.hpp); given
  // back with give_empty once dropped.
  std::byte* take_scratch();
  // A block holding a huge page again (an eviction moved one in).
  void give_full(std::byte* b) noexcept;
  // A block in an unknown state (a move that failed half-way): unmapped.
  void discard(std::byte* b) noexcept;

  std::size_t full_blocks() const;
  std::uint64_t fresh() const noexcept { return fresh_.load(std::memory_order_relaxed); }

 private:
  std::byte* make_block(bool populate);
  // An empty block (a kept one, else fresh address space); `within_keep`: none while the pool
  // holds `keep` full blocks (take_empty).
  std::byte* empty_block(bool within_keep);

  int uffd_ = -1, pagemap_fd_ = -1;
  std::size_t block_ = 0, keep_ = 0;
  std::string name_;
  mutable std::mutex mu_;  // a leaf: guards full_ and empty_
  std::vector<std::byte*> full_, empty_;
  std::atomic<unsigned> failures_{0};  // fresh blocks that could not be made, in a row
  std::atomic<unsigned> skipped_{0};   // asks turned away while backing off (take_full)
  std::atomic<std::uint64_t> fresh_{0};
};

}  // namespace pheap::paging
