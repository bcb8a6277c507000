// src/pager/fault_service.hpp — the fault service: the fault workers that read the uffd, the
// fills (store read → bounce → UFFDIO_COPY of runs; on the faulting thread too, from the SIGBUS
// handler), the read-ahead windows and the prefetch queue whose read steps the workers take
// (fault_workers.cpp). Owns its threads, the queue and its lock (pf_mu_, a leaf), the
// read-ahead streams and the faulting threads' bounce slots. Shares the page table, the
// budget, the resident clock, the victim cache, the store and the error channel through
// pager_core; a fill of a page whose eviction's write is in flight copies it from the evictor
// (evictor::copy_from_write_back, I8). It takes none of the pager's locks on the hot path: it
// only waits for a buffer slot, which the evictor frees without waiting on it.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <span>
#include <thread>
#include <utility>
#include <vector>

#include "pager/bounce_pool.hpp"
#include "pager/lock_rank.hpp"
#include "pager/pager_core.hpp"
#include "pager/read_ahead.hpp"

namespace pheap::paging {

class evictor;

class fault_service {
 public:
  fault_service(pager_core& core, evictor& evictions) noexcept : core_(core), evictions_(evictions) {}

  static constexpr std::size_t kMaxZeroAhead = 16;  // pages of one fault's zero fill, at most
  // Huge pages: never-written pages a write fault fills after its own (claim_huge_zero_ahead);
  // only under wp_sync tracking, which sees a clean page's first write (install_huge).
  static constexpr std::size_t kHugeZeroAhead = 3;
  static_assert(kHugeZeroAhead + 1 <= kMaxZeroAhead);
  // Bytes of one claimed read-ahead batch (a read step's share of a window), and of the
  // automatic read-ahead ceiling (pager_options::read_ahead_auto): a window is read by
  // several workers at once, each installing its batch while the others' reads are in flight.
  static constexpr std::size_t kReadBatchBytes = std::size_t{1} << 20;
  static constexpr std::size_t kAutoReadAheadBytes = std::size_t{8} << 20;
  // set_geometry, the page size known: the read steps' depth, the read-ahead windows
  // (`read_ahead`: pager_options::read_ahead) and the zero fills' unit.
  void configure(unsigned read_ahead);
  // set_geometry, the buffer chosen: the prefetch queue's bound on fill ranges.
  void bound_queue(std::size_t buffer_pages) noexcept;
  std::size_t zero_ahead_pages() const noexcept { return zero_ahead_pages_; }
  // Pages of one fault worker's bounce buffer: a read step (prefetch range or read-ahead
  // batch, which is never larger: queue_claimed).
  std::size_t worker_bounce_pages() const noexcept { return prefetch_depth_; }
  // Pages of a faulting-thread fill's bounce slot: the faulting page and its zero-ahead pages
  // (claim_zero_ahead stays within the fault's unit of zero_ahead_pages_). A zero-ahead page
  // whose first eviction's write is still in flight comes from the write-back (I8) into its
  // own bounce page, so each needs one; the fault's read-ahead is read by the workers.
  std::size_t thread_bounce_pages() const noexcept { return zero_ahead_pages_; }
  // register_region, faults filling on the faulting thread: their bounce slots, before any
  // fill can run (bounce_pool.hpp).
  void open_thread_bounce();
  // start_threads: `fault_threads` workers (pheap-fault<i>), returned for their CPU clocks;
  // join: stop_threads, once the stop flag is set and the wake-up written; claimed batches
  // nobody will read go back to absent then.
  std::vector<std::thread>& start(unsigned fault_threads);
  void join() noexcept;

  // Public API backends (pheap::pager::prefetch, prefetch_stored).
  void prefetch(std::span<const std::pair<std::size_t, std::size_t>> ranges);
  void prefetch_stored(std::span<const std::pair<std::size_t, std::size_t>> ranges);
  bool fill_on_this_thread(std::uintptr_t addr, bool write);  // false: poisoned, not filled
  // The evictor's side: wakes the fault workers if a prefetch step waits for room.
  void wake_prefetch_if_waiting();
  // No read step (read-ahead, prefetch) queued or running (wait_evictor_idle).
  bool read_steps_idle() const noexcept { return pf_queued_.load() == 0 && pf_active_.load() == 0; }
  read_ahead::counts read_ahead_totals() const { return read_ahead_.totals(); }
  bounce_pool& thread_bounce() noexcept { return thread_bounce_; }  // white-box tests

 private:
  friend struct test_access;  // install_huge (the zero-ahead check's test), queue_range
  void worker_main(unsigned index);
  // What a missing fault came to: this call filled the page (or poisoned it: its read
  // failed); the page is in already, so the access may be retried now; someone else fills or
  // owns it (the faulting thread waits: woken by them, or, filling on the faulting thread, it
  // sleeps and retries); the page is poisoned (the retry gets SIGBUS).
  enum class missing_outcome { filled, retry, wait, poisoned };
  missing_outcome handle_missing(std::size_t page, bool write, std::uint32_t tid, std::byte* bounce);
  void handle_wp(std::size_t page);
  // A write fault into a read-only region kept so by write-protection (pager_core::ro_wp):
  // the page is made PROT_READ and the access retried, to die of the kernel's SIGSEGV.
  void refuse_write(std::size_t page);
  // Fills pages[0..n) (all claimed `filling` by the caller, with slots reserved) from the store
  // through `bounce` (n pages). Page 0 is the faulting page when `fault` is true: a read error
  // on it is poisoned; read errors on the others just return them to absent.
  void fill_pages(const std::size_t* pages, std::size_t n, bool write, bool fault,
                  std::uint32_t tid, std::byte* bounce);
  // fill_pages' steps. read_fills: per page, where its bytes are (the zero page or its bounce
  // slot), nullptr where the store read failed (the faulting page is then poisoned already).
  std::vector<const std::byte*> read_fills(const std::size_t* pages, std::size_t n, bool fault,
                                           std::uint32_t tid, std::byte* bounce);
  // UFFDIO_COPY (or ZEROPAGE) of one claimed page, then filling → resident.
  void install_fill(std::size_t page, const std::byte* src, bool write);
  // Read fills of claimed pages[0..n) (consecutive pages whose bytes are consecutive in
  // memory from src) with one UFFDIO_COPY; page by page (install_fill) if it fails.
  void install_run(const std::size_t* pages, const std::byte* src, std::size_t n);
  // Huge pages in force (huge_pool.hpp): each page read into a pool block and moved in whole
  // (install_huge); a page whose block cannot be had is filled at 4 KiB (fill_small).
  void fill_huge(const std::size_t* pages, std::size_t n, bool write, bool fault,
                 std::uint32_t tid, std::byte* bounce);
  // `clean`: a zero-ahead page under wp_sync (claim_huge_zero_ahead), moved in without
  // waking its faults, write-protected, then installed clean and woken, as a small read fill
  // is (its first write is a wp_sync fault, whose un-protect keeps the PMD mapping); without
  // it a page nobody writes would be written back whole by the next flush. Dirty otherwise.
  void install_huge(std::size_t p, std::byte* block, bool clean = false);
  // Read-only region (pager_core::ro_wp): write-protects page p, just installed and not yet
  // woken (I10); PROT_READ where the write-protection is refused.
  void protect_installed(std::size_t p);
  // Frees a page table left at page p when nothing of p is present (install_huge).
  void drop_page_table(std::size_t p) const;
  // Whether page p is one PMD mapping now (PAGEMAP_SCAN; true when that cannot be read).
  bool is_pmd_mapped(std::size_t p) const;
  void fill_small(const std::size_t* pages, std::size_t n, bool write, bool fault,
                  std::uint32_t tid, std::byte* bounce);
  // Zero fills of the claimed pages pages[i..j) (consecutive, not the faulting page's write)
  // with one UFFDIO_COPY; page by page (install_fill) if it fails.
  void install_zero_run(const std::size_t* pages, std::size_t n);
  // A claimed page that will not be installed: back to absent, slot released, waiters woken.
  void forget_fill(std::size_t page);
  // A window read_ahead earned (a missing fault on one of its stream's pages, before the
  // fault's own fill): its pages that are absent and hold data are claimed now, as far as
  // slots below the high watermark allow, and queued for the workers as claimed batches
  // (ra_q_: a fault on one of them then waits for that read instead of reading it again);
  // what gets no slot goes to the prefetch queue, to be read once the evictor made room. The
  // marker is left out (read_ahead.hpp).
  void start_read_ahead(const read_window& w);
  // Claimed pages (sorted) → batches of ra_q_ of at most read_batch_pages_ each (they are
  // filling, with slots; the workers fill them, several at once).
  void queue_claimed(std::vector<std::size_t>&& pages);
  // A fault on a never-written page fills the other never-written pages of its
  // zero_ahead_pages_-page unit with zeros too (no I/O; a 4 KiB region fills new memory 64 KiB
  // per fault, whichever end of a unit is touched first). Claims them (slots below the target,
  // never waiting; skips pages the store has data for and pages not absent) into out[], in
  // page order, and returns how many.
  std::size_t claim_zero_ahead(std::size_t page, std::size_t* out);
  // Huge fills (huge_pool.hpp): a write fault on a never-written page fills up to
  // kHugeZeroAhead never-written absent pages after it too, so that the heap's growth does
  // not fault on them: the kernel zeroes a 2 MiB page of its own for every missing write
  // fault in a MADV_HUGEPAGE range and throws it away before the pager sees the fault
  // (DECISIONS.md, "huge zero-ahead"). Stops at the first page that is not one.
  std::size_t claim_huge_zero_ahead(std::size_t page, std::size_t* out);
  // A fault on a page with data inside a queued range (the prefetch queue, below) takes that
  // range from its page on: the page and the range's next pages, up to `cap` (read_batch_pages_
  // where a worker fills, the bounce slot's pages where the faulting thread does), claimed as a
  // range step claims them (claim_queued: absent, with data unless a fill range, a slot below
  // the step's watermark) and cut out of the range, which goes on after them. A scan that
  // overtakes its own prefetch (manager::prefetch_all, then the pass) then reads a batch at
  // each fault at the range's head, in the range's runs, instead of a page plus a read-ahead
  // window claimed out of the middle of the range, whose holes split the range steps'
  // requests (bench/DECISIONS.md, "a scan's prefetch read at the disk's rate"). Appends
  // `page` (claimed by the fault) and those pages to `run`, in page order, and returns true; false
  // when the page is in no queued range (its fault may then start a read-ahead window: with
  // true, the range is its read-ahead). Looks at the first kPullLook ranges only: a scan's
  // fault is at the queue's head.
  static constexpr std::size_t kPullLook = 8;
  bool pull_queued(std::size_t page, std::size_t cap, std::vector<std::size_t>& run);
  // Both: page p claimed for a zero fill (absent, no data in the store, a slot below the
  // target taken), skipped (resident, being filled, or written once), or no slot below the
  // target (nothing further is claimed).
  enum class zero_claim { claimed, skipped, no_room };
  zero_claim claim_for_zeros(std::size_t p);
  // One read step of a worker: a claimed read-ahead batch (ra_q_) if one waits, on any worker;
  // else up to prefetch_depth_ pages of the prefetch queue (below) claimed, by at most
  // pf_max_active_ workers at once (pf_scan_max_active_ when a scan's range is at the queue's
  // head). Read with one store batch (runs of consecutive pages are one request each) and
  // installed a run per UFFDIO_COPY.
  // False when it filled nothing (nothing queued, the limit's range steps running already,
  // or no room below the high watermark: then the evictor is asked for room and wakes the
  // workers when it made some) and nothing it could take waits: a range queued while the step
  // ran, whose worker the limit turned away, is taken by the next step of this one. A claimed
  // batch is never turned away: the worker that takes the wake-up of its queuer reads it.
  bool prefetch_step(std::byte* bounce);
  bool take_claimed(std::vector<std::size_t>& got);  // a batch of ra_q_, if any
  bool front_is_scan();  // the queue's head is a scan's range (pf_scan_max_active_)
  void claim_queued(std::vector<std::size_t>& got);  // pages of pf_q_
  // `why`: the store's error, logged with the registration for guard_faults.
  void poison_page(std::size_t page, std::uint32_t tid, std::exception_ptr why);

  // --- prefetch queue ----------------------------------------------------------------------------
  // prefetch() appends page ranges; idle fault workers take them prefetch_depth_ pages at a
  // time (one store read batch: runs of consecutive pages are one request each, several in
  // flight), up to pf_max_active_ workers at once (all of them when faults fill on the faulting
  // thread, else all but one, which stays free for faults), and every worker for a scan's
  // range (pf_scan_max_active_): one worker's 2 MiB at a time left the disk idle while it
  // checked and installed them (a fault elsewhere then waits for one step: a scan's range is
  // runs of stored pages, a few large requests, not the scattered pages of a fill range's
  // step, whose 512 random reads would keep it waiting for milliseconds). Claimed read-ahead
  // batches are read by every worker that is free: they are the pages a followed stream
  // faults on next, and a window read by one worker at a time left the disk idle while each
  // batch was checked and installed (bench/DECISIONS.md "read-ahead windows read by every
  // worker").
  // With faults filled by the workers, a fault elsewhere may then wait for one batch's read
  // and install (kReadBatchBytes). Ranges are of three kinds:
  //   fill        prefetch(): every page (never-written ones as zeros); at the high watermark
  //               the queue waits (pf_wants_room_) until the evictor has made room and wakes
  //               the workers through pager_core::wake_fd;
  //   read_ahead  the part of a read-ahead window that got no slot when the fault claimed it:
  //               pages with data only; waits for room as fill does;
  //   scan        prefetch_stored(): pages with data only, as far as the buffer has room below
  //               the low watermark; at it the rest is dropped (a scan's hint never starts an
  //               eviction round).
  // The fill ranges hold at most pf_max_pages_ pages (half the buffer): older requests beyond
  // that are dropped, as a hint the application has moved past. Claimed read-ahead batches
  // (ra_q_) go before every range. A fault on a queued page takes the range from there on
  // (pull_queued): the access has caught up with the range.
  enum class pf_kind : unsigned char { fill, read_ahead, scan };
  struct pf_range {
    std::size_t first, end;  // [first page, end page)
    pf_kind kind;
  };
  void queue_range(std::size_t first, std::size_t end, pf_kind kind);  // under pf_mu_
  // Claimed batches nobody will read (teardown, workers joined) go back to absent.
  void drop_claimed() noexcept;

  pager_core& core_;
  evictor& evictions_;
  // A read ahead of any access (read-ahead, prefetch) failed and was said on stderr: said once
  // per pager, so a failing disk is reported even when no access ever needs that page.
  std::atomic<bool> said_read_ahead_failed_{false};
  std::vector<std::thread> workers_;
  read_ahead read_ahead_;  // the fault streams and their windows (configured by set_geometry)
  std::size_t zero_ahead_pages_ = 1;  // set_geometry: 64 KiB / page size, 1..kMaxZeroAhead
  bounce_pool thread_bounce_;  // fills on the faulting thread (thread_fill): a slot per fill
  ranked_mutex<lock_rank::leaf> pf_mu_;  // pf_q_ and ra_q_; a leaf (claims under it take no other lock)
  std::deque<pf_range> pf_q_;
  std::deque<std::vector<std::size_t>> ra_q_;  // claimed read-ahead batches, in page order each
  std::atomic<std::size_t> pf_queued_{0};  // pages in pf_q_ and ra_q_ (written under pf_mu_)
  std::size_t prefetch_depth_ = 1, pf_max_pages_ = 1;     // set_geometry
  std::size_t read_batch_pages_ = 1;                      // set_geometry: kReadBatchBytes of pages
  unsigned pf_max_active_ = 1;       // start_threads: range steps at once
  unsigned pf_scan_max_active_ = 1;  // the same, a scan's range at the queue's head
  std::atomic<unsigned> pf_active_{0};        // read steps running (read_steps_idle)
  std::atomic<unsigned> pf_range_active_{0};  // of which range steps (at most pf_max_active_)
  std::atomic<bool> pf_wants_room_{false};
};

}  // namespace pheap::paging
