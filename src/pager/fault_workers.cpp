// The fault service (fault_service.hpp). Fault workers: each reads the uffd itself (epoll
// wait + batched read of uffd_msg), so a fault is handled by exactly one thread with no
// hand-off queue. Per-page state changes only through page_table's transitions (lock-free);
// two faults on one page are resolved once: the first claims `filling`, the later ones see
// `filling` and return (the filler's UFFDIO_COPY wakes every waiter on the range), or see
// `resident` and issue UFFDIO_WAKE (the fault raced with the install).
// With fault_fill = faulting_thread the same fill runs on the faulting thread instead, called
// from the SIGBUS handler (fill_on_this_thread); the workers then only take prefetch steps.
// The prefetch queue (prefetch, prefetch_stored, the read-ahead windows that got no slot) is
// read by the workers' read steps (prefetch_step), between faults.
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cassert>
#include <climits>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "pager/evictor.hpp"
#include "pager/fault_service.hpp"
#include "pager/os/memory.hpp"
#include "pager/os/threads.hpp"
#include "pheap/error.hpp"

namespace pheap::paging {

void fault_service::configure(unsigned read_ahead) {
  // A read step (prefetch, read-ahead) reads up to 2 MiB, at most 512 pages: the store makes
  // each run of consecutive pages one request (at most 1 MiB), so a step keeps a few large
  // requests in flight, or up to 512 small ones where the pages are scattered. Read-ahead
  // windows grow to kAutoReadAheadBytes unless read_ahead says otherwise, and are read in
  // batches of kReadBatchBytes by every free worker (queue_claimed): with the marker half-way,
  // half a window is still being read when the next one is planned, so the device always has
  // a few requests queued while the workers check and install what came in.
  prefetch_depth_ = std::clamp<std::size_t>((std::size_t{2} << 20) / core_.ps, 1, 512);
  read_batch_pages_ = std::clamp<std::size_t>(kReadBatchBytes / core_.ps, 1, prefetch_depth_);
  read_ahead_.configure(core_.npages, read_ahead == pager_options::read_ahead_auto
                                          ? std::clamp<std::size_t>(kAutoReadAheadBytes / core_.ps, 1,
                                                                    pager_options::read_ahead_max)
                                          : std::size_t{read_ahead});
  // Zero fills come 64 KiB at a time (claim_zero_ahead): the fault cost of
  // fresh memory at 4 KiB pages as at 64 KiB.
  zero_ahead_pages_ = std::clamp<std::size_t>((std::size_t{64} << 10) / core_.ps, 1, kMaxZeroAhead);
}

void fault_service::bound_queue(std::size_t buffer_pages) noexcept {
  pf_max_pages_ = std::max<std::size_t>(1, buffer_pages / 2);
}

void fault_service::open_thread_bounce() {
  thread_bounce_.open(thread_bounce_pages() * core_.ps);
}

std::vector<std::thread>& fault_service::start(unsigned fault_threads) {
  // Range steps at once: every worker where faults fill on the faulting thread (the workers
  // have nothing else to do), else all but one, which stays free for faults. Claimed
  // read-ahead batches: every worker (fault_service.hpp, the prefetch queue).
  pf_max_active_ = core_.thread_fill ? fault_threads : std::max(1u, fault_threads - 1);
  pf_scan_max_active_ = fault_threads;
  for (unsigned i = 0; i < fault_threads; ++i) {
    workers_.emplace_back([this, i] { worker_main(i); });
    ::pthread_setname_np(workers_.back().native_handle(), ("pheap-fault" + std::to_string(i)).c_str());
  }
  return workers_;
}

void fault_service::join() noexcept {
  for (auto& t : workers_) t.join();
  workers_.clear();
  drop_claimed();  // read-ahead batches no worker took
}

void fault_service::worker_main(unsigned index) {
  (void)index;
  anon_map bounce(worker_bounce_pages() * core_.ps, true);
  os::fault_wait waiter(core_.uffd, core_.wake_fd);  // threads.hpp: one idle worker per fault
  // Whoever consumed the wake-up may leave while others still sleep: pass it on (stop).
  struct pass_wake_on {
    const pager_core& core;
    ~pass_wake_on() { core.wake_workers(); }
  } on_exit{core_};
  uffd_msg msgs[32];
  // Read what faults are queued and handle them; then, with prefetch requests waiting, read
  // again (faults first) and take a prefetch step once none are queued; without, poll
  // straight away (it returns at once if more faults are queued): a stream of faults from one
  // thread costs poll + read + UFFDIO_COPY per fault, as the bare round trip does, where a
  // read that finds nothing before each poll was a fourth syscall.
  bool poll_next = false;
  while (!core_.stop.load(std::memory_order_acquire)) {
    const long n = poll_next ? 0 : uffd_read_events(core_.uffd, msgs, std::size(msgs));
    if (n > 0) {
      const std::size_t count = static_cast<std::size_t>(n);
      for (std::size_t i = 0; i < count; ++i) {
        const uffd_msg& m = msgs[i];
        if (m.event != UFFD_EVENT_PAGEFAULT) continue;  // no other events are enabled
        const auto addr = static_cast<std::uintptr_t>(m.arg.pagefault.address);
        const auto b = reinterpret_cast<std::uintptr_t>(core_.base);
        if (addr < b || addr >= b + core_.cap) {
          // A staging range: the pager itself never reads a missing staging page, so this is
          // a bug; resolve with zeros so nothing hangs, and say so.
          std::fprintf(stderr, "pheap: pager %s: unexpected fault at %p outside the region\n",
                       core_.name.c_str(), reinterpret_cast<void*>(addr));
          const std::uintptr_t a = addr & ~(std::uintptr_t(os_page_size()) - 1);
          (void)uffd_zeropage(core_.uffd, reinterpret_cast<void*>(a), os_page_size());
          continue;
        }
        const std::size_t page = (addr - b) / core_.ps;
        if (m.arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP) {
          handle_wp(page);
        } else {
          // (A write fault on a read-only region, kept so by write-protection, is filled as a
          // read: the retried write then faults again, write-protected, and is refused.)
          handle_missing(page, (m.arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WRITE) != 0 && !core_.ro,
                         m.arg.pagefault.feat.ptid, bounce.data());
        }
      }
      poll_next = pf_queued_.load(std::memory_order_relaxed) == 0;
      continue;
    }
    if (n < 0 && n != -EINTR) {
      std::fprintf(stderr, "pheap: pager %s: read(userfaultfd): %s; fault worker exits\n",
                   core_.name.c_str(), std::strerror(static_cast<int>(-n)));
      return;
    }
    if (!poll_next && prefetch_step(bounce.data())) continue;
    poll_next = false;
    if (waiter.wait()) os::wake_event_drain(core_.wake_fd);  // all look at the queue
  }
}

void fault_service::handle_wp(std::size_t page) {
  core_.c.wp_faults.fetch_add(1, std::memory_order_relaxed);
  if (core_.ro_wp) {  // a write into a read-only region: nothing to track, refused
    refuse_write(page);
    return;
  }
  switch (core_.table.on_wp_fault(page)) {
    case wp_fault::gone:  // moved out meanwhile: the retry faults as missing
      core_.wake_page(page);
      return;
    case wp_fault::owner_wakes:  // the owner wakes us when it lets go (I3)
    case wp_fault::in_progress:  // another worker is un-protecting it; its ioctl wakes us
      return;
    case wp_fault::unprotect:
      break;
  }
  // dirty is recorded before the page becomes writable (I5); wpclear keeps flush/evictor off
  // the page until the un-protect is done.
  const int rc = uffd_writeprotect(core_.uffd, core_.page_addr(page), core_.ps, false);
  if (rc != 0 && rc != ENOENT) {
    std::fprintf(stderr, "pheap: pager %s: UFFDIO_WRITEPROTECT clear page %zu: %s\n",
                 core_.name.c_str(), page, std::strerror(rc));
  }
  core_.release_owned(page, ps::wpclear);
  core_.wake_page(page);
}

// A write into a read-only region kept read-only by write-protection (pager_core::ro_wp,
// I10): the page becomes PROT_READ and the access is woken to retry, which then meets the
// kernel's SIGSEGV (SEGV_ACCERR) with the one line fault_signals.cpp writes for it, as in a
// region mapped read-only from the start. The 2 MiB mapping stays whole; a later fill of this
// page (after its eviction) finds the move refused there and copies 4 KiB frames instead.
void fault_service::refuse_write(std::size_t page) {
  const int rc = os::protect_read_only(core_.page_addr(page), core_.ps);
  if (rc != 0) {
    // Without it the retry would fault again for ever: the process ends here instead.
    std::fprintf(stderr, "pheap: pager %s: write into read-only page %zu, and mprotect failed: %s\n",
                 core_.name.c_str(), page, std::strerror(rc));
    std::abort();
  }
  core_.wake_page(page);
}

fault_service::missing_outcome fault_service::handle_missing(std::size_t page, bool write,
                                                       std::uint32_t tid, std::byte* bounce) {
  for (;;) {
    switch (core_.table.on_missing_fault(page)) {
      case missing_fault::being_filled:  // the filler's UFFDIO_COPY wakes this waiter
      case missing_fault::owner_wakes:   // the owner wakes it when it lets go (I3)
        return missing_outcome::wait;
      case missing_fault::evictor_wakes:  // as owner_wakes
        core_.c.evict_waits.fetch_add(1, std::memory_order_relaxed);
        return missing_outcome::wait;
      case missing_fault::poisoned:  // raced with the poisoning; the retry gets SIGBUS
        core_.wake_page(page);
        return missing_outcome::poisoned;
      case missing_fault::installed:  // installed after this fault was queued
        core_.wake_page(page);
        return missing_outcome::retry;
      case missing_fault::absent:
        break;
    }
    // absent: take a buffer slot, then claim the page.
    if (!core_.budget.reserve()) return missing_outcome::wait;  // stopping
    if (core_.table.claim_fill(page)) break;
    core_.budget.release(1);  // someone else got it; re-examine
  }
  const std::uint64_t t0 = now_ns();
  (write ? core_.c.write_faults : core_.c.read_faults).fetch_add(1, std::memory_order_relaxed);
  // A never-written page: the other never-written pages of its unit are claimed with it
  // (before the install wakes the faulting thread, whose next fault then waits for their
  // install instead of racing it) and filled in the same step.
  std::size_t pages[kMaxZeroAhead];
  pages[0] = page;
  const bool stored = core_.store->may_have_data(page);
  std::size_t n = 1;
  // A page of a queued range: the fault reads the range from here on (pull_queued), as many
  // pages as its bounce holds (huge fills: one page, nothing to pull).
  std::vector<std::size_t> run;
  const std::size_t pull_cap = core_.thread_fill ? thread_bounce_pages() : read_batch_pages_;
  const bool pulled = stored && pull_cap > 1 && pf_queued_.load(std::memory_order_relaxed) != 0 &&
                      pull_queued(page, pull_cap, run);
  if (pulled) {
    n = run.size();
  } else if (!stored && core_.huge_fill) {
    // Huge pages: only a write fills ahead, only under wp_sync (claim_huge_zero_ahead).
    if (write && core_.mode == dirty_tracking::wp_sync && !core_.ro) n += claim_huge_zero_ahead(page, pages + 1);
  } else if (!stored) {
    n += claim_zero_ahead(page, pages + 1);
  }
  // A faulting thread's bounce slot holds them all (huge fills read into pool blocks).
  assert(core_.huge_fill || n <= (core_.thread_fill ? thread_bounce_pages() : worker_bounce_pages()));
  // A page with data may continue a stream (read_ahead.hpp): its window is claimed before
  // this fill wakes the faulting thread (whose next access then waits for the window's read
  // instead of faulting on its pages one by one), and read by the workers while this thread
  // reads its own page.
  if (stored && !pulled && read_ahead_.on()) {
    if (const auto w = read_ahead_.on_fault(page, tid)) start_read_ahead(*w);
  }
  fill_pages(pulled ? run.data() : pages, n, write, true, tid, bounce);
  core_.c.fault_ns.fetch_add(now_ns() - t0, std::memory_order_relaxed);
  return missing_outcome::filled;
}

// Fills on the faulting thread (fault_fill = faulting_thread): called by the SIGBUS handler
// (fault_signals.hpp, "fill") on the thread whose access missed. The same fill as a worker's,
// into a bounce buffer held for the fill (bounce_pool.hpp; never mapped here: a thread's own
// buffer would leak when it ends); then the handler returns and the access is retried.
// Where a worker would leave the faulting thread asleep in the kernel until someone wakes it
// (another thread is filling the page, the evictor or a flush owns it), this thread sleeps on
// a futex that the same wake-up wakes (sleep_for_page), then returns and its retry faults
// again until the page is in; with every bounce slot held, it looks again every 20 µs.
// `write` is the signal frame's word on the access (fault_signals.cpp, was_write): a write
// fill is mapped writable, as a worker's is, and so spares the thread the write-protect fault
// its retry would take on a read fill (wp_async resolves that one in the kernel, but it is
// still a fault: the entry, do_wp_page, a TLB flush); the page tables then carry the write to
// the tracking as any write (note_written). Where the frame does not say (not x86-64), every
// fill is a read fill and the first write is seen by the tracking the same way.
// A poisoned page (its store read failed) is not filled: false, and the handler raises
// the store's error as it does with the workers (the kernel's SIGBUS for a poisoned page can
// carry BUS_ADRERR too).
bool fault_service::fill_on_this_thread(std::uintptr_t addr, bool write) {
  if (core_.ro_wp && write) {
    // UFFD_FEATURE_SIGBUS makes a write-protect fault a SIGBUS too: a write into a resident
    // page of a read-only region (I10) is refused as the workers refuse it (handle_wp).
    const std::size_t page = (addr - reinterpret_cast<std::uintptr_t>(core_.base)) / core_.ps;
    if (ps::kind(core_.table.load(page)) == ps::resident) {
      core_.c.wp_faults.fetch_add(1, std::memory_order_relaxed);
      refuse_write(page);
      return true;
    }
  }
  unsigned slot = 0;
  std::byte* bounce = thread_bounce_.acquire(slot);
  missing_outcome r = missing_outcome::wait;  // no slot free (P2): as if the page were owned
  if (bounce != nullptr) {
    const std::size_t page = (addr - reinterpret_cast<std::uintptr_t>(core_.base)) / core_.ps;
    r = handle_missing(page, write && !core_.ro, static_cast<std::uint32_t>(::gettid()), bounce);
    thread_bounce_.release(slot);
  }
  switch (r) {
    case missing_outcome::filled:
      core_.c.thread_fills.fetch_add(1, std::memory_order_relaxed);
      return true;
    case missing_outcome::retry:
      return true;
    case missing_outcome::poisoned:
      return false;
    case missing_outcome::wait:
      break;
  }
  core_.c.thread_fill_retries.fetch_add(1, std::memory_order_relaxed);
  // Filled elsewhere or owned: sleep until its filler or owner lets go (or it did already: the
  // retry then finds the page in, or absent and fills it). Without a bounce slot, or with the
  // pager stopping (no buffer slot will come), look again in 20 µs.
  if (bounce != nullptr && !core_.stop.load(std::memory_order_relaxed)) {
    core_.sleep_for_page((addr - reinterpret_cast<std::uintptr_t>(core_.base)) / core_.ps);
    return true;
  }
  const timespec ts{0, 20000};
  ::nanosleep(&ts, nullptr);
  return true;
}

void fault_service::start_read_ahead(const read_window& w) {
  std::vector<std::size_t> got;
  got.reserve(w.pages);
  std::size_t i = 0;
  for (; i < w.pages; ++i) {
    if (i == w.marker) continue;
    const std::size_t p = w.page(i);
    if (ps::kind(core_.table.load(p)) != ps::absent || !core_.store->may_have_data(p)) continue;
    if (!core_.budget.try_reserve_below_high()) break;
    if (!core_.table.claim_fill(p)) {
      core_.budget.release(1);  // a fault or another step has it
      continue;
    }
    got.push_back(p);
  }
  if (!got.empty()) {
    std::sort(got.begin(), got.end());  // page order: runs become single store requests
    queue_claimed(std::move(got));
  }
  if (i < w.pages) {
    // No slot for the rest now: it waits in the prefetch queue for the room the evictor makes.
    {
      std::lock_guard lk(pf_mu_);
      for (; i < w.pages; ++i) {
        if (i != w.marker) queue_range(w.page(i), w.page(i) + 1, pf_kind::read_ahead);
      }
    }
    core_.budget.kick_evictor();
  }
  core_.wake_workers();
}

void fault_service::queue_range(std::size_t first, std::size_t end, pf_kind kind) {
  // Consecutive requests of one kind for the same or the next page (a sorted plan) merge.
  if (!pf_q_.empty() && pf_q_.back().kind == kind && first >= pf_q_.back().first &&
      first <= pf_q_.back().end) {
    const std::size_t grow = end > pf_q_.back().end ? end - pf_q_.back().end : 0;
    pf_q_.back().end += grow;
    pf_queued_ += grow;
  } else {
    pf_q_.push_back({first, end, kind});
    pf_queued_ += end - first;
  }
}

void fault_service::prefetch(std::span<const std::pair<std::size_t, std::size_t>> ranges) {
  {
    std::lock_guard lk(pf_mu_);
    for (const auto& [off, len] : ranges) {
      if (len == 0 || off >= core_.cap) continue;
      const std::size_t end = std::min(core_.cap, off + std::min(len, core_.cap - off));
      queue_range(off / core_.ps, (end + core_.ps - 1) / core_.ps, pf_kind::fill);
    }
    // Bounded: the oldest fill requests give way (a hint the application has moved past).
    std::size_t fill = 0;
    for (const pf_range& r : pf_q_) fill += r.kind == pf_kind::fill ? r.end - r.first : 0;
    for (auto it = pf_q_.begin(); fill > pf_max_pages_ && it != pf_q_.end(); ++it) {
      if (it->kind != pf_kind::fill) continue;
      const std::size_t drop = std::min(it->end - it->first, fill - pf_max_pages_);
      it->first += drop;
      fill -= drop;
      pf_queued_ -= drop;
      core_.c.prefetch_dropped.fetch_add(drop, std::memory_order_relaxed);
    }
  }
  core_.wake_workers();
}

void fault_service::prefetch_stored(std::span<const std::pair<std::size_t, std::size_t>> ranges) {
  // The room below the low watermark now bounds what is queued; the steps stop at that
  // watermark too (claim_queued), whatever faults take meanwhile: a scan's hint never starts
  // an eviction round.
  const std::size_t room = core_.budget.room_below_low();
  std::size_t queued = 0, dropped = 0;
  {
    std::lock_guard lk(pf_mu_);
    for (const auto& [off, len] : ranges) {
      if (len == 0 || off >= core_.cap) continue;
      const std::size_t end = std::min(core_.cap, off + std::min(len, core_.cap - off));
      const std::size_t first = off / core_.ps, last = (end + core_.ps - 1) / core_.ps;
      // Runs of pages the store has data for (map blocks load once, then lock-free); past
      // the room, the pages with data are only counted (dropped).
      for (std::size_t p = first; p < last;) {
        if (!core_.store->may_have_data(p) || ps::kind(core_.table.load(p)) != ps::absent) {
          ++p;
          continue;
        }
        if (queued >= room) {
          ++dropped;
          ++p;
          continue;
        }
        std::size_t q = p + 1;
        while (q < last && queued + (q - p) < room && core_.store->may_have_data(q)) ++q;
        queue_range(p, q, pf_kind::scan);
        queued += q - p;
        p = q;
      }
    }
  }
  if (dropped) core_.c.prefetch_dropped.fetch_add(dropped, std::memory_order_relaxed);
  core_.wake_workers();
}

void fault_service::queue_claimed(std::vector<std::size_t>&& pages) {
  std::lock_guard lk(pf_mu_);
  pf_queued_ += pages.size();
  if (pages.size() <= read_batch_pages_) {
    ra_q_.push_back(std::move(pages));
    return;
  }
  for (std::size_t k = 0; k < pages.size(); k += read_batch_pages_) {
    const auto first = pages.begin() + static_cast<std::ptrdiff_t>(k);
    ra_q_.emplace_back(first, first + static_cast<std::ptrdiff_t>(std::min(read_batch_pages_, pages.size() - k)));
  }
}

void fault_service::drop_claimed() noexcept {
  std::deque<std::vector<std::size_t>> left;
  {
    std::lock_guard lk(pf_mu_);
    left.swap(ra_q_);
    pf_queued_ = 0;
    pf_q_.clear();
  }
  for (const auto& batch : left) {
    for (std::size_t p : batch) forget_fill(p);
  }
}

bool fault_service::pull_queued(std::size_t page, std::size_t cap, std::vector<std::size_t>& run) {
  std::lock_guard lk(pf_mu_);
  const std::size_t look = std::min(pf_q_.size(), kPullLook);
  for (std::size_t k = 0; k < look; ++k) {
    pf_range& r = pf_q_[k];
    if (page < r.first || page >= r.end) continue;
    const pf_kind kind = r.kind;
    run.reserve(cap);
    run.push_back(page);
    // Claimed as claim_queued claims a range step's pages; the first page that is not one
    // ends the pull (it stays queued, as does the rest of the range).
    std::size_t q = page + 1;
    for (; q < r.end && run.size() < cap; ++q) {
      if (ps::kind(core_.table.load(q)) != ps::absent) break;
      if (kind != pf_kind::fill && !core_.store->may_have_data(q)) break;
      const bool room = kind == pf_kind::scan ? core_.budget.try_reserve_below_low()
                                              : core_.budget.try_reserve_below_high();
      if (!room) break;
      if (!core_.table.claim_fill(q)) {
        core_.budget.release(1);
        break;
      }
      run.push_back(q);
    }
    // [page, q) leaves the range: its head moves past them, or it splits around them.
    pf_queued_ -= q - page;
    const std::size_t end = r.end;
    if (page == r.first) {
      r.first = q;
    } else {
      r.end = page;
      const auto after = pf_q_.begin() + static_cast<std::ptrdiff_t>(k) + 1;
      if (q < end) pf_q_.insert(after, pf_range{q, end, kind});
    }
    (kind == pf_kind::read_ahead ? core_.c.read_ahead_pages : core_.c.prefetched_pages)
        .fetch_add(run.size() - 1, std::memory_order_relaxed);
    return true;
  }
  return false;
}

fault_service::zero_claim fault_service::claim_for_zeros(std::size_t p) {
  if (ps::kind(core_.table.load(p)) != ps::absent) return zero_claim::skipped;
  if (core_.store->may_have_data(p)) return zero_claim::skipped;  // written once: in the store
  if (!core_.budget.try_reserve_below_target()) return zero_claim::no_room;
  if (core_.table.claim_fill(p)) return zero_claim::claimed;
  core_.budget.release(1);
  return zero_claim::skipped;
}

std::size_t fault_service::claim_huge_zero_ahead(std::size_t page, std::size_t* out) {
  const std::size_t end = std::min(core_.npages, page + 1 + kHugeZeroAhead);
  std::size_t n = 0;
  for (std::size_t p = page + 1; p < end && claim_for_zeros(p) == zero_claim::claimed; ++p) out[n++] = p;
  core_.c.zero_ahead_pages.fetch_add(n, std::memory_order_relaxed);
  return n;
}

std::size_t fault_service::claim_zero_ahead(std::size_t page, std::size_t* out) {
  const std::size_t first = page / zero_ahead_pages_ * zero_ahead_pages_;
  const std::size_t end = std::min(core_.npages, first + zero_ahead_pages_);
  std::size_t n = 0;
  for (std::size_t p = first; p < end && n + 1 < kMaxZeroAhead; ++p) {
    if (p == page) continue;
    const zero_claim c = claim_for_zeros(p);
    if (c == zero_claim::no_room) break;
    if (c == zero_claim::claimed) out[n++] = p;
  }
  core_.c.zero_ahead_pages.fetch_add(n, std::memory_order_relaxed);
  return n;
}

bool fault_service::prefetch_step(std::byte* bounce) {
  std::vector<std::size_t> got;
  got.reserve(prefetch_depth_);
  // Counted before the take, so that read_steps_idle never sees the work neither queued nor
  // running.
  pf_active_.fetch_add(1, std::memory_order_acquire);
  bool range_step = false;
  if (!take_claimed(got)) {
    // A range: at most pf_max_active_ such steps at once (one worker stays free for faults),
    // every worker for a scan's range.
    const unsigned limit = front_is_scan() ? pf_scan_max_active_ : pf_max_active_;
    unsigned active = pf_range_active_.load(std::memory_order_relaxed);
    while (active < limit &&
           !pf_range_active_.compare_exchange_weak(active, active + 1, std::memory_order_acquire,
                                                   std::memory_order_relaxed)) {
    }
    range_step = active < limit;
    if (!range_step) {
      pf_active_.fetch_sub(1, std::memory_order_seq_cst);
      return false;  // the others' (the look below is theirs)
    }
    claim_queued(got);
  }
  if (!got.empty()) {
    core_.c.read_steps.fetch_add(1, std::memory_order_relaxed);
    core_.c.read_step_pages.fetch_add(got.size(), std::memory_order_relaxed);
    fill_pages(got.data(), got.size(), false, false, 0, bounce);
  }
  if (range_step) pf_range_active_.fetch_sub(1, std::memory_order_seq_cst);
  pf_active_.fetch_sub(1, std::memory_order_seq_cst);
  if (!got.empty()) return true;
  // A range queued while this step ran may have had its worker turned away by the limit
  // above (that worker then sleeps). Look again after leaving: a queuer that saw this step
  // active pushed after this look's lock was released, so the look sees its work or its own
  // step saw pf_range_active_ down. A claimed batch is taken by whichever worker takes its
  // queuer's wake-up (never turned away), but a look costs nothing more. A range waiting for
  // room is the evictor's to wake (pf_wants_room_), not this look's.
  std::lock_guard lk(pf_mu_);
  return !ra_q_.empty() || (!pf_q_.empty() && !pf_wants_room_.load(std::memory_order_relaxed));
}

bool fault_service::front_is_scan() {
  std::lock_guard lk(pf_mu_);
  return !pf_q_.empty() && pf_q_.front().kind == pf_kind::scan;
}

bool fault_service::take_claimed(std::vector<std::size_t>& got) {
  std::lock_guard lk(pf_mu_);
  if (ra_q_.empty()) return false;
  got = std::move(ra_q_.front());
  ra_q_.pop_front();
  pf_queued_ -= got.size();
  core_.c.read_ahead_pages.fetch_add(got.size(), std::memory_order_relaxed);
  return true;
}

void fault_service::claim_queued(std::vector<std::size_t>& got) {
  std::uint64_t ahead = 0, fetched = 0;
  {
    std::lock_guard lk(pf_mu_);
    while (!pf_q_.empty() && got.size() < prefetch_depth_) {
      pf_range& r = pf_q_.front();
      if (r.first >= r.end) {
        pf_q_.pop_front();
        continue;
      }
      const std::size_t p = r.first;
      if (r.kind != pf_kind::fill &&
          (ps::kind(core_.table.load(p)) != ps::absent || !core_.store->may_have_data(p))) {
        ++r.first;  // in already, or nothing to read: a scan or a window skips it
        --pf_queued_;
        continue;
      }
      if (r.kind == pf_kind::scan && !core_.budget.try_reserve_below_low()) {
        // A scan's hint never has resident pages evicted for it: the rest of the range goes.
        core_.c.prefetch_dropped.fetch_add(r.end - r.first, std::memory_order_relaxed);
        pf_queued_ -= r.end - r.first;
        pf_q_.pop_front();
        continue;
      }
      if (r.kind != pf_kind::scan && !core_.budget.try_reserve_below_high()) {
        // At the high watermark: the queue waits for the room the evictor makes, and the
        // evictor wakes the workers then (wake_prefetch_if_waiting). The flag is raised before
        // a second look (the fences pair with the evictor's: either it sees the flag or this
        // sees its room), so no wake-up is lost.
        pf_wants_room_.store(true, std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_seq_cst);
        if (!core_.budget.try_reserve_below_high()) {
          core_.budget.kick_evictor();
          break;
        }
      }
      ++r.first;
      --pf_queued_;
      if (core_.table.claim_fill(p)) {
        got.push_back(p);
        ++(r.kind == pf_kind::read_ahead ? ahead : fetched);
      } else {
        core_.budget.release(1);  // resident, or a fault fills it
      }
    }
  }
  if (ahead) core_.c.read_ahead_pages.fetch_add(ahead, std::memory_order_relaxed);
  if (fetched) core_.c.prefetched_pages.fetch_add(fetched, std::memory_order_relaxed);
  // Claimed in queue order; the store reads runs in page order as one request each.
  std::sort(got.begin(), got.end());
}

void fault_service::wake_prefetch_if_waiting() {
  std::atomic_thread_fence(std::memory_order_seq_cst);  // after the batch's release of slots
  if (!pf_wants_room_.load(std::memory_order_relaxed)) return;
  if (!pf_wants_room_.exchange(false, std::memory_order_acq_rel)) return;
  core_.wake_workers();
}

void fault_service::fill_pages(const std::size_t* pages, std::size_t n, bool write, bool fault,
                            std::uint32_t tid, std::byte* bounce) {
  if (core_.huge_fill) {
    fill_huge(pages, n, write, fault, tid, bounce);
  } else {
    // Asked for but not possible here (pager_stats::huge_pages_why): counted as fallbacks.
    // (auto's fills are 4 KiB by design: its promoter maps them huge later.)
    if (core_.huge_asked && !core_.huge_on) core_.c.huge_fallback_fills.fetch_add(n, std::memory_order_relaxed);
    fill_small(pages, n, write, fault, tid, bounce);
  }
  core_.budget.note_peak();
}

// Huge fills (huge_pool.hpp): one page at a time, each read straight into a pool block (every
// byte of it: the store's page, the victim cache's or the write-back's copy, or zeros) and
// moved into the region whole, so that it is one PMD mapping. A huge fill is installed dirty
// whatever the access: the moved page carries no write-protection, so a wp_sync fault would
// never see its first write (and wp_async's scan reports it written anyway); the next flush
// or eviction writes it whole (pheap/pager_options.hpp, caveats).
void fault_service::fill_huge(const std::size_t* pages, std::size_t n, bool write, bool fault,
                              std::uint32_t tid, std::byte* bounce) {
  for (std::size_t i = 0; i < n; ++i) {
    const bool faulted = fault && i == 0;
    std::byte* block = core_.huge.take_full();
    if (!block) {
      core_.c.huge_fallback_fills.fetch_add(1, std::memory_order_relaxed);
      core_.c.huge_fallback_no_block.fetch_add(1, std::memory_order_relaxed);
      fill_small(pages + i, 1, write && i == 0, faulted, tid, bounce);
      continue;
    }
    const std::vector<const std::byte*> src = read_fills(pages + i, 1, faulted, tid, block);
    if (src[0] == nullptr) {  // the read failed: poisoned (the fault's page) or forgotten
      core_.huge.give_full(block);
      if (!faulted) forget_fill(pages[i]);
      continue;
    }
    const bool zero = src[0] == core_.zero.data();
    if (zero) {
      std::memset(block, 0, core_.ps);  // a recycled block holds an older page's bytes
      core_.c.zero_fills.fetch_add(1, std::memory_order_relaxed);
    }
    // A fault's pages after its own are zero-ahead pages (handle_missing), wp_sync only.
    install_huge(pages[i], block, fault && i > 0 && zero);
  }
}

namespace {
// Whether the n bytes at p (n a multiple of 64) are all zeros; reads each once. Not seen by
// ThreadSanitizer: it reads a page of the region, which the application may write as soon as
// the page's write-protect fault is resolved, an order made by the kernel that TSan cannot see
// (the read is of a page this worker owns, protected, before its install).
__attribute__((no_sanitize("thread"))) bool all_zero(const std::byte* p, std::size_t n) {
  const auto* w = reinterpret_cast<const std::uint64_t*>(p);
  for (std::size_t i = 0; i < n / 8; i += 8) {
    if ((w[i] | w[i + 1] | w[i + 2] | w[i + 3] | w[i + 4] | w[i + 5] | w[i + 6] | w[i + 7]) != 0) return false;
  }
  return true;
}
}  // namespace

void fault_service::install_huge(std::size_t p, std::byte* block, bool clean) {
  assert(!clean || (core_.mode == dirty_tracking::wp_sync && !core_.ro));
  const bool protect = core_.ro_wp || clean;
  // Counted before the move, which wakes the faulting thread (it may read the statistics at
  // once); taken back if the move is refused.
  core_.c.huge_fills.fetch_add(1, std::memory_order_relaxed);
  drop_page_table(p);
  std::size_t moved = 0;
  // A read-only region's page is moved in without waking its faults: they sleep on until it
  // is write-protected (protect_installed, I10), then wake_page below wakes them.
  const int rc = uffd_move_whole(core_.uffd, core_.page_addr(p), block, core_.ps, &moved, !protect);
  if (rc == 0) {
    core_.huge.give_empty(block);
    if (!is_pmd_mapped(p)) {
      // Moved whole, and mapped by 4 KiB entries all the same: the kernel had put a page table
      // there already (a fault on this page could not get a huge page of its own and fell back
      // to 4 KiB before it reached us), so the move went in entry by entry. Same bytes.
      core_.c.huge_fills.fetch_sub(1, std::memory_order_relaxed);
      core_.c.huge_fallback_fills.fetch_add(1, std::memory_order_relaxed);
      core_.c.huge_fallback_split.fetch_add(1, std::memory_order_relaxed);
    }
  } else {
    // Refused (a 4 KiB page present at the destination), or stopped half-way: the rest of
    // the page by 4 KiB copies, frame by frame (a frame present already is left as it is).
    core_.c.huge_fills.fetch_sub(1, std::memory_order_relaxed);
    core_.c.huge_fallback_fills.fetch_add(1, std::memory_order_relaxed);
    core_.c.huge_fallback_move.fetch_add(1, std::memory_order_relaxed);
    core_.c.huge_fallback_move_errno.store(static_cast<std::uint64_t>(rc),
                                           std::memory_order_relaxed);
    const std::size_t frame = os_page_size();
    const std::uint64_t mode = protect ? UFFDIO_COPY_MODE_WP : 0;  // I10, I5
    for (std::size_t off = moved / frame * frame; off < core_.ps; off += frame) {
      const int r = uffd_copy(core_.uffd, core_.page_addr(p) + off, block + off, frame, mode);
      if (r != 0 && r != EEXIST) {
        std::fprintf(stderr, "pheap: pager %s: UFFDIO_COPY page %zu (+%zu): %s\n",
                     core_.name.c_str(), p, off, std::strerror(r));
      }
    }
    if (moved == 0) {
      core_.huge.give_full(block);  // still holds its whole page
    } else {
      core_.huge.discard(block);
    }
  }
  if (core_.ro_wp) protect_installed(p);
  // A zero-ahead page is clean once protected (I5). Between the move and the protection it
  // was mapped writable: a thread that had not faulted on it could write it then without a
  // fault, so it is clean only if it still reads as zeros once protected (the protection's
  // TLB flush has made any such store visible; a store of zeros changes nothing). If the
  // protection is refused it stays writable: dirty, written back as any huge fill.
  if (clean && (uffd_writeprotect(core_.uffd, core_.page_addr(p), core_.ps, true) != 0 ||
                !all_zero(core_.page_addr(p), core_.ps))) {
    clean = false;
  }
  // A read-only region's page is never written back: clean.
  core_.table.install(p, ps::ref | (core_.ro || clean ? 0u : ps::dirty));
  core_.clock.publish(p);  // C1
  core_.wake_page(p);  // the copies woke their frames' faults; a fault on another frame too
  core_.wake_fill_sleepers(p);
}

// I10 holds once this returns. UFFDIO_MOVE maps the page writable (it needs a writable
// destination, and gives no way to move a page in protected: a protected source page arrives
// unprotected, seen on 6.18), so the protection comes after the move, before the page's
// faults are woken. In between, one ioctl long, a thread that had not faulted on the page
// could write it unseen: the caveat of huge_pool.hpp, "Read-only opens".
void fault_service::protect_installed(std::size_t p) {
  const int rc = uffd_writeprotect(core_.uffd, core_.page_addr(p), core_.ps, true);
  if (rc == 0) return;
  std::fprintf(stderr, "pheap: pager %s: UFFDIO_WRITEPROTECT page %zu: %s; the page is made PROT_READ\n",
               core_.name.c_str(), p, std::strerror(rc));
  refuse_write(p);
}

// A page table at the destination makes the kernel move a huge page in entry by entry (a
// 4 KiB mapping of it). One stays behind wherever the page was 4 KiB-mapped before — split
// by a write after a protect, evicted so, filled small, or the kernel's own 4 KiB fallback at
// a fault — and would make every later fill of that page split again. With nothing present,
// MADV_DONTNEED frees it (Linux's CONFIG_PT_RECLAIM; else it changes nothing): the page is
// this fill's (filling), no fault installs a frame behind the pager's back (userfaultfd), and
// a frame present is left for the move to refuse (the 4 KiB fallback below).
void fault_service::drop_page_table(std::size_t p) const {
  if (core_.pagemap_fd < 0) return;
  std::byte* a = core_.page_addr(p);
  if (pagemap_bytes(core_.pagemap_fd, a, a + core_.ps, page_is_present) == 0) os::drop(a, core_.ps);
}

bool fault_service::is_pmd_mapped(std::size_t p) const {
  if (core_.pagemap_fd < 0) return true;  // cannot tell: counted as asked
  std::byte* a = core_.page_addr(p);
  const long long huge = pagemap_bytes(core_.pagemap_fd, a, a + core_.ps, page_is_huge | page_is_present);
  return huge < 0 || static_cast<std::size_t>(huge) == core_.ps;
}

void fault_service::fill_small(const std::size_t* pages, std::size_t n, bool write, bool fault,
                               std::uint32_t tid, std::byte* bounce) {
  const std::vector<const std::byte*> src = read_fills(pages, n, fault, tid, bounce);
  for (std::size_t i = 0; i < n;) {
    // Zero fills of consecutive pages (a fault's zero-ahead, not its own write) in one ioctl.
    std::size_t j = i;
    while (j < n && j > 0 && j - i < zero_ahead_pages_ && !core_.ro && src[j] == core_.zero.data() &&
           (j == i || pages[j] == pages[j - 1] + 1)) {
      ++j;
    }
    if (j - i > 1) {
      install_zero_run(pages + i, j - i);
      i = j;
      continue;
    }
    // Read fills of consecutive pages from consecutive bounce slots: one UFFDIO_COPY.
    j = i + 1;
    while (j < n && src[i] != nullptr && src[i] != core_.zero.data() && !(write && i == 0) &&
           pages[j] == pages[j - 1] + 1 && src[j] == src[j - 1] + core_.ps) {
      ++j;
    }
    if (j - i > 1) {
      install_run(pages + i, src[i], j - i);
      i = j;
      continue;
    }
    if (src[i]) {
      install_fill(pages[i], src[i], write && i == 0);
    } else if (!(fault && i == 0)) {  // read-ahead/prefetch: forget it, a real fault retries
      forget_fill(pages[i]);
    }  // else: the faulting page, poisoned by read_fills
    ++i;
  }
}

std::vector<const std::byte*> fault_service::read_fills(const std::size_t* pages, std::size_t n,
                                                     bool fault, std::uint32_t tid,
                                                     std::byte* bounce) {
  // A page whose eviction's write is in flight comes from the evictor's bounce buffer (I8:
  // not the store, not zeros, which may be older), as long as the write has not landed.
  // Never-written pages come from the zero buffer; the others from the victim cache when it
  // kept them and the kernel has not taken them back (the page is ours, `filling`, so its
  // `kept` bit holds still: I7), else from the store, each into its bounce slot.
  std::vector<page_read> reads;
  std::vector<const std::byte*> src(n);
  std::uint64_t hits = 0, write_back_hits = 0;
  for (std::size_t i = 0; i < n; ++i) {
    std::byte* const b = bounce + i * core_.ps;
    const std::uint32_t w = core_.table.load(pages[i]);
    if ((w & ps::writing) && evictions_.copy_from_write_back(pages[i], b)) {
      src[i] = b;
      ++write_back_hits;
      core_.table.note_came_back(pages[i], evictor::kCameBackTurns);
      continue;
    }
    if (!core_.store->may_have_data(pages[i])) {
      src[i] = core_.zero.data();
      continue;
    }
    src[i] = b;
    if ((w & ps::kept) && core_.victims.take(pages[i], b)) {
      ++hits;
      core_.table.note_came_back(pages[i], evictor::kCameBackTurns);
    } else {
      reads.push_back({pages[i], b});
    }
  }
  if (hits) core_.c.victim_hits.fetch_add(hits, std::memory_order_relaxed);
  if (write_back_hits) core_.c.write_back_hits.fetch_add(write_back_hits, std::memory_order_relaxed);
  if (reads.empty()) return src;
  try {
    core_.store->read_pages(reads);
    core_.c.pages_read.fetch_add(reads.size(), std::memory_order_relaxed);
  } catch (...) {
    // Find out page by page which ones fail.
    for (const page_read& r : reads) {
      const std::size_t i = static_cast<std::size_t>(static_cast<std::byte*>(r.buf) - bounce) / core_.ps;
      page_read one{pages[i], bounce + i * core_.ps};
      try {
        core_.store->read_pages(std::span<const page_read>(&one, 1));
        core_.c.pages_read.fetch_add(1, std::memory_order_relaxed);
      } catch (const std::exception& e) {
        src[i] = nullptr;
        if (fault && i == 0) {
          core_.errors.record(std::current_exception());
          poison_page(pages[i], tid, std::current_exception());
        } else if (!said_read_ahead_failed_.exchange(true, std::memory_order_relaxed)) {
          // Read ahead of any access: the page is dropped and read again if it is accessed
          // (and poisoned then if that read fails too). A failing disk is said even when no
          // access ever needs the page; once per pager.
          std::fprintf(stderr,
                       "pheap: pager %s: page %zu (offset %zu) could not be read ahead: %s; it is read "
                       "again if accessed (further read-ahead failures are not reported)\n",
                       core_.name.c_str(), pages[i], pages[i] * core_.ps, e.what());
        }
      }
    }
  }
  return src;
}

void fault_service::install_fill(std::size_t p, const std::byte* src, bool write) {
  // Counted before the install: the install wakes the faulting thread, which may read the
  // statistics at once.
  // (Store reads and victim-cache hits are counted by read_fills, also before.)
  if (src == core_.zero.data()) core_.c.zero_fills.fetch_add(1, std::memory_order_relaxed);
  // Read fills are write-protected where tracking needs it, so the first write is seen
  // (wp_sync: as a fault; wp_async: in the page tables). Write fills are dirty at once.
  // A read-only region kept so by write-protection takes no zero-page entries either: a write
  // into one would be the kernel's copy-on-write, not a write-protect fault (I10).
  const std::uint64_t mode = core_.wp_fills(write) ? UFFDIO_COPY_MODE_WP : 0;
  int rc;
  if (core_.ro && !core_.ro_wp && src == core_.zero.data()) {
    rc = uffd_zeropage(core_.uffd, core_.page_addr(p), core_.ps);
  } else {
    rc = uffd_copy(core_.uffd, core_.page_addr(p), src, core_.ps, mode);
  }
  if (rc == EEXIST) {
    // Cannot happen while we own `filling` (I1); report instead of corrupting state.
    std::fprintf(stderr, "pheap: pager %s: page %zu already mapped while filling\n",
                 core_.name.c_str(), p);
    core_.wake_page(p);
  } else if (rc != 0) {
    std::fprintf(stderr, "pheap: pager %s: UFFDIO_COPY page %zu: %s\n", core_.name.c_str(), p,
                 std::strerror(rc));
    forget_fill(p);
    return;
  }
  core_.table.install(p, ps::ref | ((write && core_.mode == dirty_tracking::wp_sync) ? ps::dirty : 0u));
  core_.clock.publish(p);  // C1
  core_.wake_fill_sleepers(p);  // as the UFFDIO_COPY woke the kernel's waiters
}

void fault_service::install_zero_run(const std::size_t* pages, std::size_t n) {
  assert(n <= zero_ahead_pages_ && !core_.ro);  // the zero source holds zero_ahead_pages_ pages
  core_.c.zero_fills.fetch_add(n, std::memory_order_relaxed);
  const int rc = uffd_copy(core_.uffd, core_.page_addr(pages[0]), core_.zero.data(), n * core_.ps,
                           core_.wp_fills(false) ? UFFDIO_COPY_MODE_WP : 0);
  if (rc != 0) {
    // Not every page of the run installed: each page on its own, with install_fill's error
    // handling (one the failed copy did map is reported and installed, not mapped twice: I1).
    core_.c.zero_fills.fetch_sub(n, std::memory_order_relaxed);
    for (std::size_t i = 0; i < n; ++i) install_fill(pages[i], core_.zero.data(), false);
    return;
  }
  for (std::size_t i = 0; i < n; ++i) {
    core_.table.install(pages[i], ps::ref);
    core_.clock.publish(pages[i]);  // C1
    core_.wake_fill_sleepers(pages[i]);
  }
}

void fault_service::install_run(const std::size_t* pages, const std::byte* src, std::size_t n) {
  const int rc = uffd_copy(core_.uffd, core_.page_addr(pages[0]), src, n * core_.ps,
                           core_.wp_fills(false) ? UFFDIO_COPY_MODE_WP : 0);
  if (rc != 0) {
    // Not every page of the run installed: each on its own, with install_fill's handling.
    for (std::size_t i = 0; i < n; ++i) install_fill(pages[i], src + i * core_.ps, false);
    return;
  }
  for (std::size_t i = 0; i < n; ++i) {
    core_.table.install(pages[i], ps::ref);
    core_.clock.publish(pages[i]);  // C1
    core_.wake_fill_sleepers(pages[i]);
  }
}

void fault_service::forget_fill(std::size_t p) {
  core_.table.abandon_fill(p);
  core_.budget.release(1);
  // A fault on this page while we were filling it saw `filling` and waits for our install;
  // there is none, so wake it: its retry faults on the absent page and reads (and, if the read
  // fails again, gets the documented SIGBUS instead of a hang).
  core_.wake_page(p);
}

void fault_service::poison_page(std::size_t page, std::uint32_t tid, std::exception_ptr why) {
  core_.c.poisoned_pages.fetch_add(1, std::memory_order_relaxed);
  // The access gets SIGBUS: inside pheap::guard_faults it becomes this error, else the SIGBUS
  // handler prints it in one line (fault_signals.cpp) before the process dies of it.
  core_.registration.note_poisoned(core_.page_addr(page), why);
  if (core_.have_poison) {
    const int rc = uffd_poison(core_.uffd, core_.page_addr(page), core_.ps);
    if (rc == 0) {
      core_.table.mark_poisoned(page);
      core_.budget.release(1);
      return;
    }
    std::fprintf(stderr, "pheap: pager %s: UFFDIO_POISON page %zu: %s\n", core_.name.c_str(), page,
                 std::strerror(rc));
  }
  // Fallback: the page stays unfilled; the faulting thread gets SIGBUS directly, from tgkill
  // (whose SIGBUS names no address: the handler cannot say which page), so it is said here.
  std::string what;
  try {
    std::rethrow_exception(why);
  } catch (const std::exception& e) {
    what = e.what();
  }
  std::fprintf(stderr,
               "pheap: pager %s: page %zu (offset %zu) could not be read: %s; the access gets "
               "SIGBUS (an error inside pheap::guard_faults)\n",
               core_.name.c_str(), page, page * core_.ps, what.c_str());
  core_.table.abandon_fill(page);
  core_.budget.release(1);
  if (tid != 0) {
    os::signal_thread(static_cast<long>(tid), SIGBUS);
  } else {
    core_.wake_page(page);
  }
}

}  // namespace pheap::paging
