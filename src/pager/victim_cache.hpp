// src/pager/victim_cache.hpp — evicted pages kept where the kernel may take them back: the
// pager's page cache of last resort.
//
// The kernel's page cache holds the file pages a process dropped until memory is needed;
// a pager that reads its store with O_DIRECT has none, so every page it evicts costs a
// device read when it comes back, however much memory the process still has. The victim
// cache gives that memory back to the pager without taking it from anyone: when a page has
// left the region and its bytes are in the store, a copy is kept in a private mirror of the
// region (mirror page p for region page p) and handed to the kernel with MADV_FREE. The
// kernel drops such a page, without I/O, whenever it needs the memory (the pages sit on the
// file LRU, so a memory cgroup counts them as reclaimable: inactive_file), and until then a
// fault on the page copies it back instead of reading the store.
//
// Protocol (the page word's `kept` bit, page_table.hpp, says a copy was kept):
//   1. keep(p, bytes): the evictor, owning the page (`evict`), once it has moved the page out
//      and judged it: copies its bytes to mirror page p. A page the kernel dropped is
//      re-allocated first, for the whole batch at once, by prepare() (one process_madvise
//      with MADV_POPULATE_WRITE: zeroed frames, present and not the zero page, so a take()
//      between prepare(p) and keep(p) would accept them; none can run: take(p) needs the
//      word's `kept`, which it gets only after the keep), or by the copy's page fault where
//      the kernel refuses that advice. The page's word says `kept` only after those bytes
//      reached the store (finish_eviction, or write_landed for a page written back); a copy
//      whose write-back failed is never read, nor one of a page that a fault filled again
//      from the evictor's bounce buffer while its write was in flight (page_table.hpp I8),
//      and the page's next eviction keeps a new one.
//   2. give_back(pages, n): MADV_FREE on the mirror pages just kept, all of them with one
//      process_madvise (one TLB flush for the batch).
//   3. take(p, dst): a fault worker, owning the page (`filling`, kept set), asks the page
//      tables (PAGEMAP_SCAN) whether every 4 KiB frame of mirror page p is still the page the
//      evictor wrote — present and not the shared zero page, which a read of a dropped frame
//      maps —, copies it to dst and asks again. Only when both say so are the bytes used;
//      otherwise the fill reads the store. The check after the copy catches a frame dropped
//      during it; the one before keeps a dropped copy from being read at all.
//   4. The copy take() used is then dropped (MADV_DONTNEED): the page is resident again and
//      its next eviction keeps a new copy, so the old one would only hold room in the cgroup
//      that reclaim takes from the victims not yet taken (the kernel drops lazily freed pages
//      oldest first, and a copy that came back is younger than most). S18 graph construction
//      at a quarter of its datastore: 1.76-1.78 M store reads instead of 2.14-2.18 M
//      (bench/DECISIONS.md, "the victim cache drops what it hands back"). take() only notes the page (up to kPendingDrops of them; past
//      that it drops the copy itself); the evictor drops the noted copies with one
//      process_madvise, one TLB flush, at the start of each batch's keeps (drop_taken), not the
//      faulting thread with a madvise and a TLB shootdown per hit. The order is what makes it
//      safe: a MADV_DONTNEED of mirror page p during keep(p)'s copy would leave p a frame that
//      is present and not the zero page, yet zero up to where the copy was, and take() would
//      accept it. drop_taken() and keep() run on one thread at a time (the evictor, under
//      its batch_mu_), drop_taken() before the batch's keep()s; and a page noted by take(p)
//      was noted before its fill installed it, so before any later eviction of p could claim
//      it (one noted by came_back(p), by the evictor in the batch that kept it, so before any
//      later batch). A later take() of the page finds no copy and reads the store.
// Mirror page p is written only by keep(p) (and zero-filled by prepare(p) where the kernel
// took it), read only by take(p) and dropped only by take(p) or drop_taken(); the page's
// owner bit (evict, filling) orders keep and take, step 4 the drops, so only the list of
// noted pages needs a lock (give_back's MADV_FREE of a copy dropped first is a no-op). Which
// victims are kept at all: wants() (the policy below: all of them while enough come back,
// else a sample).
//
// Caveats:
//   * The kept copies count as the process's resident memory until the kernel takes them:
//     the cache is on only where a memory limit bounds it (an automatic buffer under a memory
//     cgroup) unless pager_options::victim_cache says otherwise.
//   * Needs PAGEMAP_SCAN with PAGE_IS_PFNZERO (Linux 6.7+); open() fails without it and the
//     pager runs without a cache.
//   * A PAGEMAP_SCAN error in take() is a miss (the store has the bytes).
//   * prepare() needs process_madvise to take MADV_POPULATE_WRITE for the caller itself
//     (Linux 6.13+; probed at open()); without it keep() takes a page fault per mirror page
//     the kernel took back: S18 graph construction at 1/8 of its datastore, about 2 µs of
//     the evictor's CPU per eviction (bench/DECISIONS.md, "mirror pages mapped per batch").
//   * Up to kPendingDrops taken copies wait for the next eviction batch to be dropped; while
//     nothing is evicted (everything fits) they stay, lazily freed, for the kernel to take.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "pager/os/memory.hpp"
#include "pager/lock_rank.hpp"

namespace pheap::paging {

class victim_cache {
 public:
  victim_cache() = default;
  victim_cache(const victim_cache&) = delete;
  victim_cache& operator=(const victim_cache&) = delete;
  // Maps the mirror of a region of `pages` pages of `page_size` bytes (address space only).
  // False, and the cache stays closed, when the kernel's PAGEMAP_SCAN cannot tell a zero page.
  bool open(int pagemap_fd, std::size_t page_size, std::size_t pages);
  bool is_open() const noexcept { return map_.p != nullptr; }

  // Step 1 (evictor). wants(): whether to keep this page at all (the policy below).
  bool wants(std::size_t page) const noexcept;
  // Before the keep()s of a batch: maps the mirror pages of pages[0..n) (sorted) that the
  // kernel took back, all with one process_madvise(MADV_POPULATE_WRITE), so that keep()'s
  // copy does not trap once per such page. Best effort: where the kernel refuses, keep()
  // faults them in as before.
  void prepare(const std::size_t* pages, std::size_t n) noexcept;
  void keep(std::size_t page, const std::byte* bytes) noexcept;
  // Step 2 (evictor): pages[0..n) sorted, kept out of `evicted` victims (for the policy).
  void give_back(const std::size_t* pages, std::size_t n, std::size_t evicted) noexcept;
  // Steps 3 and 4 (the thread that fills the page): true when dst now holds the bytes keep()
  // was given; the copy is then noted for drop_taken() (or, with kPendingDrops noted already,
  // dropped here).
  bool take(std::size_t page, std::byte* dst) noexcept;
  // Steps 3 and 4 for a page kept while its write-back was in flight and filled again from
  // the evictor's bounce buffer meanwhile (evictor, when the write lands): counted as taken
  // and noted for drop_taken() (or dropped here), as take() would have.
  void came_back(std::size_t page) noexcept;
  // Step 4 (evictor, before the keep()s of a batch): drops the copies take() noted.
  void drop_taken() noexcept;

  // For tests: the kernel reclaims the kept copies of pages [first, first+count) now
  // (MADV_PAGEOUT), as memory pressure would.
  void drop_for_test(std::size_t first, std::size_t count) const noexcept;
  // For tests: whether mirror page `page` holds a whole copy now.
  bool holds_copy_for_test(std::size_t page) const noexcept { return map_.p && whole(mirror(page)); }
  static constexpr std::size_t kPendingDrops = 64;

 private:
  std::byte* mirror(std::size_t page) const noexcept { return map_.data() + page * ps_; }
  // Every 4 KiB frame of the mirror page at m is present and not the zero page.
  bool whole(const std::byte* m) const noexcept;
  // The policy: keeping costs the evictor a copy per eviction (and, at a memory limit, the
  // kernel a page reclaim), which pays only where enough kept pages are faulted again before
  // the kernel takes them (graph construction per edge: ~40 %; grouped by vertex, with the
  // look-ahead prefetch: ~3.5 %, and the copies cost more than they save). Per window of
  // kWindow evictions, the share of the pages kept in it that were taken decides the next
  // window: below kMinTaken only one page in kSample is kept (by page number), enough to see
  // the share rise again.
  static constexpr std::size_t kWindow = 8192, kSample = 16;
  static constexpr double kMinTaken = 0.10;
  std::size_t evicted_in_window_ = 0, kept_in_window_ = 0;  // evictor only
  std::uint64_t taken_at_window_start_ = 0;  // evictor only
  std::atomic<bool> sampling_{false};      // written by the evictor, read by wants()
  std::atomic<std::uint64_t> taken_{0};  // successful take()s
  // Step 4: pages whose copy take() used, for drop_taken(). Held for a push or a swap only.
  ranked_mutex<lock_rank::leaf> pending_mu_;  // a leaf (lock_rank.hpp)
  std::size_t pending_[kPendingDrops];
  std::size_t npending_ = 0;  // guarded by pending_mu_

  anon_map map_;
  int pagemap_fd_ = -1;
  // process_madvise for this process (without: madvise per run); whether it takes
  // MADV_POPULATE_WRITE decides prepare().
  os::vector_advice advice_;
  std::size_t ps_ = 0;
};

}  // namespace pheap::paging
