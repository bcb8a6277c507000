// src/pager/pager_impl.hpp — internals of pheap::pager. One file per concept:
//   uffd.{hpp,cpp}           OS boundary: userfaultfd acquisition, feature probe, the ioctls,
//                            PAGEMAP_SCAN (pagemap_walk)
//   page_table.hpp           the page word, its invariants I1-I6 and its named transitions
//   buffer_budget.{hpp,cpp}  buffer slots, faults waiting for one, the evictor's wake-up (B1-B7)
//   staging.{hpp,cpp}        UFFDIO_MOVE staging: move out, read back what arrived, drop or
//                            move back
//   victim_cache.{hpp,cpp}   evicted pages kept where the kernel may take them back (MADV_FREE)
//   read_ahead.{hpp,cpp}     fault streams (sequential, strided) and the windows they earn
//   error_channel.hpp        store errors of background threads, for the next flush
//   fault_signals.{hpp,cpp}  the region registry and SIGBUS/SIGSEGV handlers: poisoned pages
//                            as errors in guard_faults, one line before a read-only write dies
//   anon_map.{hpp,cpp}       private anonymous mappings (region, staging, bounce buffers)
//   bounce_pool.hpp          the bounce buffers of fills on the faulting thread (P1-P3)
//   pager.cpp                options (PHEAP_* env), construction as named steps, teardown,
//                            pin, prefetch queue, statistics, the public facade
//   fault_workers.cpp        workers reading the uffd; fills (store read → bounce →
//                            UFFDIO_COPY of runs), read-ahead windows, prefetch steps,
//                            poisoning on read errors
//   evictor.cpp              the background evictor; evict_batch as named steps
//   resident_clock.hpp       the resident pages in install order and the evictor's hand
//   flush.cpp                flush(): the protocol, claim/copy/write per chunk, commit
//   dirty_tracker.cpp        per tracking mode: the pages to flush and their tear-free copy
//   invariants.cpp           check_invariants, the quiescent self-check
//   test_access.hpp          the white-box tests' way in
//
// Threads: `fault_threads` workers, one evictor, and whoever calls flush/pin/prefetch/stats.
// Lock order (never the other way): flush_mu_ → evict_batch_mu_ → scan_mu_ → the error
// channel's; the resident clock's, the buffer budget's and write_back_mu_ are leaves.
// Fault workers take none of these on the hot path (write_back_mu_ only to fill a page whose
// write-back is in flight); they only wait for a buffer slot (buffer_budget), which the
// evictor frees without ever waiting on a worker, a flush or a fault (after a failed
// write-back it waits for the fills of its own victims, which copy from its bounce buffer and
// hold their slots already), so no cycle exists:
//   worker → (waits for) evictor → store I/O
//   flush  → evictor (batch in progress) → store I/O;  flush → filling pages → store I/O
#pragma once

#include <time.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "pager/anon_map.hpp"
#include "pager/bounce_pool.hpp"
#include "pager/buffer_budget.hpp"
#include "pager/error_channel.hpp"
#include "pager/fault_signals.hpp"
#include "pager/limit_pool.hpp"
#include "pager/memory_limit.hpp"
#include "pager/page_table.hpp"
#include "pager/read_ahead.hpp"
#include "pager/resident_clock.hpp"
#include "pager/staging.hpp"
#include "pager/uffd.hpp"
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
      flush_write_back_waits{0}, poisoned_pages{0}, fault_ns{0}, flush_ns{0}, evict_ns{0};
};

inline std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

// The victims of one eviction batch, sorted by page once claimed.
struct victim_batch {
  std::vector<std::size_t> pages;
  std::vector<bool> dirty;  // dirty as judged at claim time
  std::vector<bool> moved;  // arrived whole in the staging range (step 3)
  std::vector<bool> write;  // to be written back, as judged at step 4 (victims_to_write)
  std::size_t size() const noexcept { return pages.size(); }
};

class pager_impl {
 public:
  pager_impl(std::unique_ptr<sparse_store> store, const pager_options& opt);
  ~pager_impl();

  // --- construction steps (pager.cpp), in order; then teardown ------------------------------
  void set_geometry(const pager_options& opt);
  // The buffer's size from the options or the memory limit (`limit`: automatic), then the
  // budget configured; the debug line. Steps of set_geometry.
  void choose_buffer(const pager_options& opt, const std::optional<memory_sample>& limit, bool clamped);
  std::uint64_t bytes_the_limit_leaves(const memory_sample& limit, std::string& why) const;
  bool exceeds_memory_cgroup(std::uint64_t bytes) const;
  std::uint64_t own_bytes_outside_buffer() const;
  // An automatic buffer's follower (memory_limit.hpp), attached to the budget by
  // follow_memory_limit after choose_tracking; null with a buffer_size option.
  std::shared_ptr<limit_follower> follower_;
  std::shared_ptr<limit_pool> limit_pool_;  // with follower_: the buffers sharing its limit
  static constexpr std::chrono::milliseconds kFollowPeriod{10};
  void follow_memory_limit(const uffd_features& f, bool debug);
  // Bytes of pheap's own bookkeeping per buffer page, an upper bound (the resident clock's
  // ring and published list, the page word is counted with the page table).
  static constexpr std::uint64_t kBookkeeping = 64;
  std::string buffer_source_;  // pager_stats::buffer_source (written once, at construction)
  unsigned fault_threads_ = 0;
  void choose_tracking(dirty_tracking asked, const uffd_features& f);
  void open_descriptors(const uffd_features& f);
  void map_region();
  void register_region();
  void map_buffers(const uffd_features& f);
  void start_threads(unsigned fault_threads);
  void stop_threads() noexcept;
  // CPU-time clocks of the pager's threads (pager_stats::fault_cpu_ns / evict_cpu_ns); the
  // vectors are written only by start_threads/stop_threads, with no stats() running.
  std::vector<clockid_t> worker_clocks_, evict_clocks_;
  static void add_cpu_clock(std::thread& t, std::vector<clockid_t>& to);
  static std::uint64_t cpu_ns(const std::vector<clockid_t>& clocks);
  void close_descriptors() noexcept;

  // --- public API backends -------------------------------------------------------------------
  std::uint64_t flush(std::span<const std::byte> root);
  std::uint64_t flush_if_changed(std::span<const std::byte> root);
  std::uint64_t prepare(std::span<const std::byte> root);  // flush, ending in store prepare()
  std::uint64_t confirm();
  void prefetch(std::span<const std::pair<std::size_t, std::size_t>> ranges);
  void prefetch_stored(std::span<const std::pair<std::size_t, std::size_t>> ranges);
  void pin(std::size_t offset, std::size_t len);
  void unpin(std::size_t offset, std::size_t len);
  pager_stats stats() const;

  // Quiescent self-check (no faults, flushes or evictions in flight): returns "" when the page
  // table agrees with the counters and the page tables (invariants I1, I2, I6 of
  // page_table.hpp), else a description of the first violation.
  std::string check_invariants() const;
  // Waits until the evictor has nothing to do (occupancy ≤ high watermark and no batch in
  // flight) and no read step (read-ahead, prefetch) is queued or running, whose fills would
  // have it evict again. For tests that measure residency or check the invariants.
  void wait_evictor_idle();
  uffd_source source() const noexcept { return source_; }

  // --- geometry ---------------------------------------------------------------------------------
  std::unique_ptr<sparse_store> store_;
  std::string name_;  // store path, for messages
  std::size_t ps_ = 0, npages_ = 0, cap_ = 0;
  std::byte* base_ = nullptr;
  bool ro_ = false;
  bool debug_ = false;  // pager_options::debug: a line at open and the statistics at close
  fault_filling fill_asked_ = fault_filling::workers;  // pager_options::fault_fill
  bool thread_fill_ = false;  // resolved (choose_tracking): fills on the faulting thread (UFFD_FEATURE_SIGBUS)
  dirty_tracking mode_ = dirty_tracking::all_resident;
  bool wp_registered_ = false;  // region registered with MODE_WP
  bool have_poison_ = false;  // UFFDIO_POISON (else read errors are signalled with tgkill)
  read_ahead read_ahead_;  // the fault streams and their windows (configured by set_geometry)

  std::byte* page_addr(std::size_t p) const noexcept { return base_ + p * ps_; }
  // The pages [first, last] covering [offset, offset+len) (len > 0); throws invalid_argument
  // naming `op` when the range leaves the region.
  std::pair<std::size_t, std::size_t> pages_covering(std::size_t offset, std::size_t len,
                                                     const char* op) const;
  // The pages [first, last] that a PAGEMAP_SCAN region of the region covers.
  std::pair<std::size_t, std::size_t> pages_of(const page_region& r) const noexcept {
    const auto b = reinterpret_cast<std::uintptr_t>(base_);
    return {(r.start - b) / ps_, (r.end - 1 - b) / ps_};
  }

  // --- descriptors ------------------------------------------------------------------------------
  // wake_fd_: an eventfd the fault workers wait on beside the uffd (fault_workers.cpp);
  // written at stop and when prefetch work arrives (or the evictor made room for it).
  int uffd_ = -1, pagemap_fd_ = -1, wake_fd_ = -1;
  uffd_source source_ = uffd_source::syscall;
  anon_map region_map_;  // the region (exactly cap_ bytes at base_)
  anon_map zero_;        // zero_ahead_pages_ pages of zeros (source for zero fills)
  // The region in the SIGBUS/SIGSEGV registry (fault_signals.hpp); declared after region_map_
  // so that it is released before the region is unmapped.
  region_registration registration_;

  // --- page state and buffer --------------------------------------------------------------------
  std::atomic<bool> stop_{false};  // set once, at teardown: every thread and wait ends
  page_table table_;
  buffer_budget budget_;

  // --- fault workers (fault_workers.cpp) ------------------------------------------------------
  std::vector<std::thread> workers_;
  void worker_main(unsigned index);
  // What a missing fault came to: this call filled the page (or poisoned it: its read
  // failed); the page is in already, so the access may be retried now; someone else fills or
  // owns it (the faulting thread waits: woken by them, or, filling on the faulting thread, it
  // sleeps and retries); the page is poisoned (the retry gets SIGBUS).
  enum class missing_outcome { filled, retry, wait, poisoned };
  missing_outcome handle_missing(std::size_t page, bool write, std::uint32_t tid, std::byte* bounce);
  bool fill_on_this_thread(std::uintptr_t addr, bool write);  // false: poisoned, not filled
  // A faulting-thread fill that must wait for a page's filler or owner sleeps on a futex word
  // (of the page's hash) instead of in the kernel's userfaultfd queue: every point that wakes
  // a worker's faulting thread — wake_page, and the implicit wake of an install — also bumps
  // the page's word and wakes its sleepers (wake_fill_sleepers). fill_sleepers_ counts the
  // threads between announcing a sleep and its end: with none, a wake is one fence and a load.
  // (Dekker: a sleeper counts itself, then looks at the page; a waker changes the page, then
  // looks at the count; seq_cst fences between, so one of the two sees the other.)
  static constexpr std::size_t kFillWaitWords = 256;
  std::array<std::atomic<std::uint32_t>, kFillWaitWords> fill_wait_{};
  std::atomic<std::uint32_t> fill_sleepers_{0};
  void wake_fill_sleepers(std::size_t page) noexcept;
  // Sleeps until wake_fill_sleepers(page) or 100 ms, unless the page needs no waiting any more.
  void sleep_for_page(std::size_t page) noexcept;
  void handle_wp(std::size_t page);
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
  // Claimed pages → one batch of ra_q_ (they are filling, with slots; a worker fills them).
  void queue_claimed(std::vector<std::size_t>&& pages);
  // A fault on a never-written page fills the other never-written pages of its
  // zero_ahead_pages_-page unit with zeros too (no I/O; a 4 KiB region fills new memory 64 KiB
  // per fault, whichever end of a unit is touched first). Claims them (slots below the target,
  // never waiting; skips pages the store has data for and pages not absent) into out[], in
  // page order, and returns how many.
  std::size_t claim_zero_ahead(std::size_t page, std::size_t* out);
  static constexpr std::size_t kMaxZeroAhead = 16;  // pages of one fault's zero fill, at most
  std::size_t zero_ahead_pages_ = 1;  // set_geometry: 64 KiB / page size, 1..kMaxZeroAhead
  // One read step of a worker: a claimed read-ahead batch (ra_q_) if one waits, else up to
  // prefetch_depth_ pages of the prefetch queue (below) claimed; read with one store batch
  // (runs of consecutive pages are one request each) and installed a run per UFFDIO_COPY.
  // False when it filled nothing (nothing queued, pf_max_active_ steps running already, or no
  // room below the high watermark: then the evictor is asked for room and wakes the workers
  // when it made some) and nothing it could take waits: work queued while the step ran, whose
  // worker the limit turned away, is taken by the next step of this one.
  bool prefetch_step(std::byte* bounce);
  bool take_claimed(std::vector<std::size_t>& got);  // a batch of ra_q_, if any
  void claim_queued(std::vector<std::size_t>& got);  // pages of pf_q_
  // Pages of one fault worker's bounce buffer: a read step (prefetch or read-ahead batch).
  std::size_t worker_bounce_pages() const noexcept {
    return std::max<std::size_t>(prefetch_depth_, read_ahead_.ceiling());
  }
  // Pages of a faulting-thread fill's bounce slot: the faulting page and its zero-ahead pages
  // (claim_zero_ahead stays within the fault's unit of zero_ahead_pages_). A zero-ahead page
  // whose first eviction's write is still in flight comes from the write-back (I8) into its
  // own bounce page, so each needs one; the fault's read-ahead is read by the workers.
  std::size_t thread_bounce_pages() const noexcept { return zero_ahead_pages_; }
  // `why`: the store's error, logged with the registration for guard_faults.
  void poison_page(std::size_t page, std::uint32_t tid, std::exception_ptr why);
  // Clears `bits` on a page and wakes its faulting range if `wanted` was set.
  void release_owned(std::size_t page, std::uint32_t clear_bits, std::uint32_t set_bits = 0);
  void wake_page(std::size_t page) noexcept;

  // --- prefetch queue -----------------------------------------------------------------------------
  // prefetch() appends page ranges; idle fault workers take them prefetch_depth_ pages at a
  // time (one store read batch: runs of consecutive pages are one request each, several in
  // flight), up to pf_max_active_ workers at once (all of them when faults fill on the faulting
  // thread, else all but one, which stays free for faults). Ranges are of three kinds:
  //   fill        prefetch(): every page (never-written ones as zeros); at the high watermark
  //               the queue waits (pf_wants_room_) until the evictor has made room and wakes
  //               the workers through wake_fd_;
  //   read_ahead  the part of a read-ahead window that got no slot when the fault claimed it:
  //               pages with data only; waits for room as fill does;
  //   scan        prefetch_stored(): pages with data only, as far as the buffer has room below
  //               the low watermark; at it the rest is dropped (a scan's hint never starts an
  //               eviction round).
  // The fill ranges hold at most pf_max_pages_ pages (half the buffer): older requests beyond
  // that are dropped, as a hint the application has moved past. Claimed read-ahead batches
  // (ra_q_) go before every range.
  enum class pf_kind : unsigned char { fill, read_ahead, scan };
  struct pf_range {
    std::size_t first, end;  // [first page, end page)
    pf_kind kind;
  };
  std::mutex pf_mu_;  // pf_q_ and ra_q_; a leaf (claims under it take no other lock)
  std::deque<pf_range> pf_q_;
  std::deque<std::vector<std::size_t>> ra_q_;  // claimed read-ahead batches, in page order each
  std::atomic<std::size_t> pf_queued_{0};  // pages in pf_q_ and ra_q_ (written under pf_mu_)
  std::size_t prefetch_depth_ = 1, pf_max_pages_ = 1;     // set_geometry
  unsigned pf_max_active_ = 1;                            // start_threads
  std::atomic<unsigned> pf_active_{0};
  std::atomic<bool> pf_wants_room_{false};
  void queue_range(std::size_t first, std::size_t end, pf_kind kind);  // under pf_mu_
  // Teardown, workers joined: claimed batches nobody will read go back to absent.
  void drop_claimed() noexcept;
  // The evictor's side: wakes the fault workers if a prefetch step waits for room.
  void wake_prefetch_if_waiting();

  // --- evictor (evictor.cpp) -----------------------------------------------------------------
  std::thread evictor_;
  // Held for the whole of every eviction batch, and only for one: the evictor lets go between
  // batches, and does not take it again while someone waits for it (batch_waiters_), so a
  // flush under constant eviction pressure is not starved (it was: the evictor once held it
  // for a whole round, and a round lasts as long as faults outpace it).
  std::mutex evict_batch_mu_;
  std::atomic<unsigned> batch_waiters_{0};
  // Waits until no eviction batch runs (the one in flight, if any, has landed or failed).
  void wait_for_eviction_batch();
  std::size_t evict_batch_pages_ = 1;
  resident_clock clock_;  // the resident pages and the hand (resident_clock.hpp, C1-C2)
  std::size_t examined_since_harvest_ = ~std::size_t(0) / 2;  // evictor only
  std::vector<std::pair<std::size_t, std::size_t>> harvest_runs_;  // evictor only: the walks
  std::size_t harvest_entries_ = 0;  // evictor only: the last harvest's cost, in entries walked
  // wp_async: held across every PAGEMAP_SCAN that write-protects pages again together with
  // the recording of what it found (harvest_writes, collect_dirty) and across the tear-free
  // copy (copy_and_verify), so no scan re-protects a page between another's protect and check.
  std::mutex scan_mu_;
  staging evict_staging_;  // victims are moved here, judged and written
  // Dropped victim frames the staging range may keep mapped (staging.hpp step 3): one
  // emptying for several small batches. At most a batch, and at most 256 KiB.
  std::size_t evict_retain_pages() const noexcept {
    return std::min(evict_batch_pages_, std::max<std::size_t>(1, (std::size_t{256} << 10) / ps_));
  }
  // The pages to write, copied out of the staging range (step 5); before that, in the same
  // batch, the pages read back to judge a victim (step 4, stores without page_crc).
  anon_map evict_bounce_;
  bounce_pool thread_bounce_;  // fills on the faulting thread (thread_fill_): a slot per fill
  void evictor_main();
  // Evicts up to `want` pages; returns how many were freed. The steps, in order:
  std::size_t evict_batch(std::size_t want);
  victim_batch claim_victims(std::size_t want);
  // wp_async, step 1's first part: written pages → dirty|ref in their words, write-protected
  // again (the clock's reference bit for written pages).
  void harvest_writes();
  // Claims page (popped by the hand) into v; false (put back behind the hand) if it changed.
  bool claim_victim(std::size_t page, bool dirty, victim_batch& v);
  // Claims up to kNeighbourRun pages on each side of victim `page` that are unreferenced
  // evictable pages too (dirty ones only if `dirty_ok`), while v holds fewer than want + a
  // 64th of the buffer (at most 2 * kNeighbourRun more, and the staging range's
  // evict_batch_pages_).
  void claim_neighbours(std::size_t page, std::size_t want, victim_batch& v, bool dirty_ok);
  static constexpr std::size_t kNeighbourRun = 15;
  // Turns of the hand owed to a page that came back from the victim cache or a write-back in
  // flight (page_table.hpp I9; evictor.cpp step 1).
  static constexpr std::uint32_t kCameBackTurns = 1;
  std::size_t drop_victims(const victim_batch& v);
  void move_out_victims(victim_batch& v);
  // Indexes into v of the pages to write back, sorted; v.write flags the same pages.
  std::vector<std::size_t> victims_to_write(victim_batch& v);
  // Adds to `out` those of `verify` (judged clean) whose staged bytes differ from the store's.
  void add_changed(const victim_batch& v, const std::vector<std::size_t>& verify,
                   std::vector<std::size_t>& out);
  // A page's bytes against the store's copy without I/O: zeros when the store has no data
  // for it, else CRC32C against page_crc(); unknown when the store cannot tell.
  enum class store_copy { same, differs, unknown };
  store_copy compare_with_store(std::size_t page, const std::byte* bytes);
  // Step 5: the staged bytes of the pages to write (indexes `out`) into evict_bounce_, which
  // is then published as the batch's write-back (write_back_pages_).
  void copy_out_victims(const victim_batch& v, const std::vector<std::size_t>& out);
  // Step 5: keeps the moved victims in the victim cache, drops the staging range and gives
  // their buffer slots back; per index into v, whether it was kept (for finish_eviction).
  std::vector<bool> lend_victim_slots(const victim_batch& v);
  // Step 5, once their bytes are in the bounce buffer: the victims of `out` absent and
  // `writing` (I8), their waiting faults woken.
  void lend_for_write(const victim_batch& v, const std::vector<std::size_t>& out);
  // Step 5, after lend_victim_slots: the other moved victims absent for good (with `kept`,
  // I7), their waiting faults woken.
  void let_clean_victims_go(const victim_batch& v, const std::vector<bool>& kept);
  // Step 6: the store write's error (write-back marked failing), or null when it landed.
  // Not recorded yet: evict_batch records it once restore_victims made the pages dirty again.
  std::exception_ptr write_victims(const victim_batch& v, const std::vector<std::size_t>& out);
  // After the write: `writing` cleared on the pages of `out` (absent ones `kept` per `kept`).
  void land_victims(const victim_batch& v, const std::vector<std::size_t>& out,
                    const std::vector<bool>& kept);
  // After a failed write: the pages of `out` back into the region, or marked dirty where a
  // fault filled them again; no longer `moved`.
  void restore_victims(victim_batch& v, const std::vector<std::size_t>& out);
  // Unpublishes the batch's write-back, after land_victims or restore_victims.
  void end_write_back();
  // The moved victims counted as evictions (and their runs); returns how many.
  std::size_t count_evictions(const victim_batch& v);
  // A fill of a `writing` page (I8): its bytes from the batch's bounce buffer into dst; false
  // when the write landed meanwhile (the store has them now).
  bool copy_from_write_back(std::size_t page, std::byte* dst);
  // The pages of the batch whose write is in flight, sorted; page write_back_pages_[k] is
  // slot k of evict_bounce_. Written by the evictor in steps 5 and 6, read by fills of
  // `writing` pages; both under write_back_mu_, which keeps the next batch's copy_out from
  // overwriting a slot a fill is copying.
  std::mutex write_back_mu_;
  std::vector<std::size_t> write_back_pages_;
  // Victim cache steps 1-2 for those of pages[0..n) (sorted; their bytes in the store, or
  // about to be where writing[k]) that the store has data for (or writing[k]) and the cache
  // wants, copied from staging slot slots[k], or from the region where slots is null
  // (read-only; writing null too): per page, whether it was kept (ps::kept for
  // finish_eviction). All false with no cache.
  std::vector<bool> keep_victims(const std::size_t* pages, const std::size_t* slots,
                                 const bool* writing, std::size_t n);
  // A victim has left the region: absent (with `kept`, I7), its waiting faults woken.
  void finish_eviction(std::size_t page, std::uint32_t kept);
  // Evicted pages kept where the kernel may take them back (victim_cache.hpp); open per
  // pager_options::victim_cache (map_buffers).
  victim_cache victims_;
  victim_caching victim_caching_ = victim_caching::automatic;  // the option
  bool limit_is_cgroup_ = false;  // an automatic buffer's limit comes from a memory cgroup

  // --- flush (flush.cpp) -----------------------------------------------------------------------
  std::mutex flush_mu_;
  std::size_t flush_batch_pages_ = 1;
  staging flush_staging_;  // pages are moved here for a tear-free copy, then back
  anon_map flush_bounce_;
  // Claims, copies out and writes one chunk of candidate pages; returns pages written.
  // flush() and prepare(): write every dirty page, then end the epoch with `finish`
  // (sparse_store::commit or sparse_store::prepare).
  std::uint64_t flush_ending(std::span<const std::byte> root, const char* op,
                             std::uint64_t (sparse_store::*finish)(std::span<const std::byte>));
  std::size_t flush_chunk(const std::size_t* cand, std::size_t n);
  // Writes the copies of the claimed pages with one write_pages(), then releases the claims
  // (marked dirty again if the write throws, which it passes on).
  void write_and_release(const std::vector<std::size_t>& claimed,
                         const std::vector<std::byte*>& copies);

  // --- dirty tracking (dirty_tracker.cpp) ---------------------------------------------------
  // The pages a flush must write, sorted (per tracking mode; no claims taken).
  std::vector<std::size_t> collect_dirty();
  // Copies claimed pages[0..n) into dst[0..n), each copy taken at one instant w.r.t. writers,
  // the way the tracking mode allows: copy_write_protected (wp_sync), copy_and_verify
  // (wp_async) or take_by_move (all_resident).
  void take_copies(const std::size_t* pages, std::size_t n, std::byte* const* dst);
  void copy_write_protected(const std::size_t* pages, std::size_t n, std::byte* const* dst);
  void copy_and_verify(const std::size_t* pages, std::size_t n, std::byte* const* dst);
  // Moves each run out to flush_staging_ and back, copying in between.
  void take_by_move(const std::size_t* pages, std::size_t n, std::byte* const* dst);
  // Per page of [first, first+count): written since last re-protected (wp_async; all true when
  // PAGEMAP_SCAN fails).
  void written_bitmap(std::size_t first, std::size_t count, std::vector<bool>& out);

  // --- errors ---------------------------------------------------------------------------------
  error_channel errors_;  // store errors of fills and evictions, for the next flush

  mutable counters c_;
};

}  // namespace pheap::paging
