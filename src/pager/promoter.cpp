// The promoter (promoter.hpp; pager_options::huge_pages = auto, huge_promote_ms). Every period
// the thread runs a round:
//   1. in core only: when the evictor evicted since the last round, the round does nothing
//      and forgets what the last one found (those pages may leave soon).
//   2. scan_small: PAGEMAP_SCAN over the region lists the pages whose every 4 KiB frame is
//      present, none PMD-mapped and none the shared zero page; under wp_async only the dirty
//      ones (recorded so in their words, or with a frame written since its last protection).
//   3. the pages this scan and the last one both found (4 KiB-mapped for a whole period) are
//      promoted one at a time, while no eviction starts and the pager is not stopping: a clean
//      page always (data read, not written: what a query or a read-only open keeps in core),
//      a dirty one only while the thread's CPU credit lasts. The credit is kShare of each
//      period; scans (O(resident frames): ~13 ms a round for 2 GiB of 4 KiB-mapped heap) and
//      promotions of dirty pages spend it, and a round in debt is skipped: a heap still being
//      built is written all over, its TLB misses are not what it waits for, and the thread's
//      work is taken from the application's cores (bench/DECISIONS.md "auto's policy").
// A promotion of page p, with a scratch block (empty) and a full pool block H taken first
// (a fresh huge page may take milliseconds: never under the lock):
//   P1 claim: under the lock of the flush bit's other owners, page_table::claim_promote (the
//      page resident, unowned, unpinned); then, the page tables read again, still dense and
//      small — else released untouched. Under wp_async also dirty (its word, or a written frame,
//      read under scan_mu): a clean page's frames are protected, and a store resolved by the
//      kernel between that reading and the move would leave no trace, so none is promoted.
//   P2 move out: the page's frames into the scratch block (UFFDIO_MOVE: each frame atomically;
//      a store lands before and travels, or faults after and waits for the owner, I3).
//   P3 copy: scratch into H (2 MiB).
//   P4 move in: the page's empty page table dropped (CONFIG_PT_RECLAIM frees it, so the move
//      keeps the PMD entry), H moved into the region whole without waking (the faults that
//      wait sleep on until P6). Refused or partial: the rest of the page goes back from the
//      scratch (restore), and the page stays small.
//   P5 protect: a page that was protected (clean under wp_sync; every page of a read-only
//      region, I10) is write-protected again, whole (the PMD mapping stays). A clean page is
//      then compared with its old frames: one that differs (a store by a thread that had not
//      faulted, between the move and the protection) is made writable and dirty.
//   P6 release: the scratch dropped and given back, H's empty block given back, the page
//      released (dirty as decided) and its waiting faults woken.
#include "pager/promoter.hpp"

#include <pthread.h>

#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <iterator>

#include "pager/os/memory.hpp"
#include "pager/os/uffd.hpp"

namespace pheap::paging {

namespace {
// Whether the n bytes at a and b (n a multiple of 64) are equal. Not seen by ThreadSanitizer:
// `a` is a page of the region, which the application may write as soon as the promotion
// releases it, an order made by the kernel's write-protection that TSan cannot see (the read
// is of a page the promoter owns, protected).
__attribute__((no_sanitize("thread"))) bool same_bytes(const std::byte* a, const std::byte* b, std::size_t n) {
  const auto* x = reinterpret_cast<const std::uint64_t*>(a);
  const auto* y = reinterpret_cast<const std::uint64_t*>(b);
  for (std::size_t i = 0; i < n / 8; i += 8) {
    std::uint64_t d = 0;
    for (std::size_t k = 0; k < 8; ++k) d |= x[i + k] ^ y[i + k];
    if (d != 0) return false;
  }
  return true;
}
}  // namespace

void promoter::start() {
  if (!core_.promote || period_.count() == 0) return;
  evictions_seen_ = core_.c.evictions.load(std::memory_order_relaxed);
  thread_ = std::thread([this] { main(); });
  ::pthread_setname_np(thread_.native_handle(), "pheap-promote");
}

void promoter::join() noexcept {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lk(mu_);  // the stop flag is set: the wait sees it or gets this notify
  }
  cv_.notify_all();
  thread_.join();
}

void promoter::main() {
  for (;;) {
    {
      std::unique_lock lk(mu_);
      if (cv_.wait_for(lk, period_, [&] { return core_.stop.load(); })) return;
    }
    (void)round();
  }
}

std::size_t promoter::round() {
  core_.c.huge_promote_rounds.fetch_add(1, std::memory_order_relaxed);
  // 1. In core only.
  const std::uint64_t evictions = core_.c.evictions.load(std::memory_order_relaxed);
  if (evictions != evictions_seen_) {
    evictions_seen_ = evictions;
    seen_.clear();
    return 0;
  }
  // The thread's CPU credit (step 3): a share of each period, at most four periods' worth;
  // a round in debt is skipped. Rounds by hand (no period) have none and are never skipped.
  const auto grant = static_cast<std::int64_t>(std::chrono::nanoseconds(period_).count() * kShare);
  if (period_.count() > 0) {
    credit_ns_ = std::min(credit_ns_ + grant, 4 * grant);
    if (credit_ns_ <= 0) return 0;
  }
  // 2. Dense and small now.
  const std::uint64_t t_scan = now_ns();
  std::vector<std::size_t> now = scan_small();
  credit_ns_ -= static_cast<std::int64_t>(now_ns() - t_scan);
  // 3. Dense and small at the last round too.
  std::vector<std::size_t> both;
  std::set_intersection(seen_.begin(), seen_.end(), now.begin(), now.end(), std::back_inserter(both));
  seen_.swap(now);
  std::vector<std::size_t> promoted_pages;
  for (const std::size_t p : both) {
    if (core_.stop.load(std::memory_order_relaxed) ||
        core_.c.evictions.load(std::memory_order_relaxed) != evictions_seen_) {
      break;
    }
    // (Under wp_async every candidate is dirty: scan_small found its frames written.)
    const bool dirty = !core_.ro && (core_.mode == dirty_tracking::wp_async || (core_.table.load(p) & ps::dirty) != 0);
    if (dirty && period_.count() > 0 && credit_ns_ <= 0) continue;  // (by hand: no credit)
    const std::uint64_t t0 = now_ns();
    if (promote(p)) promoted_pages.push_back(p);
    if (dirty) credit_ns_ -= static_cast<std::int64_t>(now_ns() - t0);
  }
  // A page promoted is no longer small: split again later, it waits a whole period anew.
  std::vector<std::size_t> still;
  std::set_difference(seen_.begin(), seen_.end(), promoted_pages.begin(), promoted_pages.end(),
                      std::back_inserter(still));
  seen_.swap(still);
  return promoted_pages.size();
}

std::vector<std::size_t> promoter::scan_small() {
  std::vector<std::size_t> found;
  if (core_.pagemap_fd < 0) return found;
  // One walk over the present frames, each region with its categories: present bytes per
  // page, and the pages with a PMD mapping, a zero-page frame or (wp_async) a written frame.
  const bool async = core_.mode == dirty_tracking::wp_async && !core_.ro;
  std::vector<std::uint32_t> present(core_.npages, 0);
  std::vector<bool> excluded(core_.npages, false), written(core_.npages, false);
  const long r = pagemap_walk<512>(
      core_.pagemap_fd, core_.base, core_.base + core_.cap, 0, page_is_present, 0,
      [&](const page_region& reg) {
        const auto* s = reinterpret_cast<const std::byte*>(reg.start);
        const auto* e = reinterpret_cast<const std::byte*>(reg.end);
        while (s < e) {
          const std::size_t p = static_cast<std::size_t>(s - core_.base) / core_.ps;
          const std::byte* end = std::min<const std::byte*>(e, core_.page_addr(p) + core_.ps);
          present[p] += static_cast<std::uint32_t>(end - s);
          if (reg.categories & (page_is_huge | page_is_pfnzero)) excluded[p] = true;
          if (reg.categories & page_is_written) written[p] = true;
          s = end;
        }
      },
      page_is_present | page_is_huge | page_is_pfnzero | (async ? page_is_written : 0));
  if (r < 0) return found;  // nothing promoted this round; the next scans again
  for (std::size_t p = 0; p < core_.npages; ++p) {
    if (present[p] != core_.ps || excluded[p]) continue;
    if (async && !written[p] && !(core_.table.load(p) & ps::dirty)) continue;
    found.push_back(p);
  }
  return found;
}

bool promoter::promote(std::size_t p) {
  const std::size_t size = core_.ps;
  std::byte* const page = core_.page_addr(p);
  std::byte* scratch = core_.huge.take_scratch();
  std::byte* h = scratch ? core_.huge.take_full() : nullptr;
  if (!h) {
    if (scratch) core_.huge.give_empty(scratch);
    core_.c.huge_promote_failed.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  std::lock_guard lk(*owners_);
  const std::uint64_t t0 = now_ns();
  // P1 claim, and the page still dense and small.
  std::uint32_t was = 0;
  const int fd = core_.pagemap_fd;
  if (!core_.table.claim_promote(p, was)) {
    core_.huge.give_full(h);
    core_.huge.give_empty(scratch);
    return false;
  }
  if (pagemap_bytes(fd, page, page + size, page_is_present) != static_cast<long long>(size) ||
      pagemap_bytes(fd, page, page + size, page_is_present | page_is_huge) != 0 ||
      pagemap_bytes(fd, page, page + size, page_is_present | page_is_pfnzero) != 0) {
    core_.release_owned(p, ps::flush);
    core_.huge.give_full(h);
    core_.huge.give_empty(scratch);
    return false;
  }
  bool dirty = (was & ps::dirty) != 0;
  if (core_.mode == dirty_tracking::wp_async && !core_.ro && !dirty) {
    std::lock_guard scan(core_.scan_mu);  // a harvest records what it re-protects under it
    dirty = (core_.table.load(p) & ps::dirty) || pagemap_bytes(fd, page, page + size, page_is_present | page_is_written) > 0;
    if (!dirty) {
      core_.release_owned(p, ps::flush);
      core_.huge.give_full(h);
      core_.huge.give_empty(scratch);
      return false;
    }
  }
  const bool protect = core_.ro_wp || (!dirty && !core_.ro && core_.mode == dirty_tracking::wp_sync);
  // P2 move out.
  std::size_t moved = 0;
  if (const int rc = uffd_move(core_.uffd, scratch, page, size, &moved); rc != 0) {
    // Refused (a frame made PROT_READ by a refused write, fault_workers.cpp): what moved goes back.
    dirty = restore(p, scratch, moved, 0, protect) || dirty;
    os::drop(scratch, size);
    core_.huge.give_empty(scratch);
    core_.huge.give_full(h);
    core_.release_owned(p, ps::flush, dirty ? ps::dirty : 0);
    core_.c.huge_promote_failed.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  // P3 copy.
  std::memcpy(h, scratch, size);
  // P4 move in.
  if (pagemap_bytes(fd, page, page + size, page_is_present) == 0) os::drop(page, size);
  std::size_t in = 0;
  const int rc = uffd_move_whole(core_.uffd, page, h, size, &in, /*wake=*/false);
  bool promoted = rc == 0;
  if (rc != 0) {
    dirty = restore(p, scratch, size, in, protect) || dirty;
    if (in == 0) {
      core_.huge.give_full(h);
    } else {
      core_.huge.discard(h);
    }
  } else {
    core_.huge.give_empty(h);
    promoted = pagemap_bytes(fd, page, page + size, page_is_present | page_is_huge) == static_cast<long long>(size);
    // P5 protect, and a clean page checked against its old frames.
    if (protect) {
      const int wp = uffd_writeprotect(core_.uffd, page, size, true);
      if (core_.ro_wp) {
        if (wp != 0) refuse(p, wp);
      } else if (wp != 0 || !same_bytes(page, scratch, size)) {
        if (wp == 0) (void)uffd_writeprotect(core_.uffd, page, size, false);
        dirty = true;
      }
    }
  }
  // P6 release.
  os::drop(scratch, size);
  core_.huge.give_empty(scratch);
  core_.release_owned(p, ps::flush, dirty && !core_.ro ? ps::dirty : 0);
  if (promoted) {
    core_.c.huge_promotions.fetch_add(1, std::memory_order_relaxed);
  } else {
    core_.c.huge_promote_failed.fetch_add(1, std::memory_order_relaxed);
  }
  core_.c.huge_promote_ns.fetch_add(now_ns() - t0, std::memory_order_relaxed);
  return promoted;
}

// The page's frames back from the scratch into [from, until) of the page (moved, or copied
// frame by frame where a move is refused). Moved frames arrive writable: a protected page is
// protected again on a read-only region; on a writable one it is left writable and dirty
// (returns true), so that a store in between cannot be lost.
bool promoter::restore(std::size_t p, std::byte* scratch, std::size_t until, std::size_t from, bool protect) {
  std::byte* const page = core_.page_addr(p);
  const std::size_t frame = os_page_size();
  from = from / frame * frame;
  if (until > from) {
    std::size_t moved = 0;
    if (uffd_move(core_.uffd, page + from, scratch + from, until - from, &moved) != 0) {
      const std::uint64_t mode = protect ? UFFDIO_COPY_MODE_WP : 0;
      for (std::size_t off = from + moved / frame * frame; off < until; off += frame) {
        const int r = uffd_copy(core_.uffd, page + off, scratch + off, frame, mode);
        if (r != 0 && r != EEXIST) {
          std::fprintf(stderr, "pheap: pager %s: promotion of page %zu: UFFDIO_COPY (+%zu): %s\n",
                       core_.name.c_str(), p, off, std::strerror(r));
        }
      }
    }
  }
  if (!protect) return false;
  if (core_.ro_wp) {
    if (const int wp = uffd_writeprotect(core_.uffd, page, core_.ps, true); wp != 0) refuse(p, wp);
    return false;
  }
  return true;
}

// A read-only region's page that could not be write-protected again (I10): PROT_READ instead.
void promoter::refuse(std::size_t p, int err) noexcept {
  std::fprintf(stderr, "pheap: pager %s: UFFDIO_WRITEPROTECT of promoted page %zu: %s; the page is made PROT_READ\n",
               core_.name.c_str(), p, std::strerror(err));
  if (const int rc = os::protect_read_only(core_.page_addr(p), core_.ps); rc != 0) {
    // A write would go through unseen (fault_workers.cpp refuse_write ends the same way).
    std::fprintf(stderr, "pheap: pager %s: mprotect of read-only page %zu failed: %s\n", core_.name.c_str(), p,
                 std::strerror(rc));
    std::abort();
  }
}

}  // namespace pheap::paging
