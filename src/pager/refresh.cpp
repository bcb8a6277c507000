// A read-only region moved to a newer watermark (pheap::pager::refresh, pager::invalidate).
//
// The store's refresh() (sparse_store.hpp) swaps its map under its own lock: a store read that
// starts after it returns reads the new watermark; one that started before may have read the
// old one. refresh_result::changed names the pages whose copy may differ. The pager may hold
// such a page in four places, and each must let go of the old bytes:
//   resident   mapped in the region: dropped from it (MADV_DONTNEED), absent;
//   filling    a fill between its claim and its install (a fault, a claimed read-ahead batch,
//              a prefetch step): claimed before the refresh, it may install the old bytes, or
//              (claimed after it) take the victim cache's old copy: waited for, then dropped;
//   kept       absent, a copy in the victim cache: the old bytes; `kept` cleared (I7), so no
//              fill takes it;
//   poisoned   its read failed — errc::stale once the writer released this reader's old
//              watermark, or an I/O error —: made absent, the next access reads again.
// Steps (invalidate_locked):
//   1. refresh() only: store().refresh().
//   2. The evictor's batch lock, held to the end: no eviction batch runs, so no page is
//      `evict` (I2) and none becomes `kept` with the old bytes meanwhile, and the resident
//      clock's ring is ours (resident_clock.hpp).
//   3. Each page of the ranges, until it is settled: filling → wait for the fill
//      (wait_not_filling) and look again; resident → claim_invalidate (evict: a fault on it
//      now waits for us, I3; pins kept, I4's exception); absent → forget_kept. Once `kept` is
//      cleared, a fill that claims the page reads the store, i.e. the new watermark, so an
//      absent page needs no more. poisoned → noted. refresh() also notes every poisoned page
//      of the region (when any was poisoned since its last sweep): a stale read poisons pages
//      whether their copy changed or not.
//   4. The claimed pages' clock entries forgotten (C1), each run of them dropped from the
//      region with one MADV_DONTNEED (I1), then absent (finish_eviction: pins kept, `kept`
//      not set, `wanted` woken: I3) and their slots given back (I6).
//   5. The poisoned pages' markers dropped (MADV_DONTNEED removes a UFFDIO_POISON marker: I1),
//      then unpoison (absent; a poisoned page holds no slot, I6), woken.
// Waiting for fills under the batch lock cannot deadlock while the application keeps its
// threads off the region (pager.hpp, the refresh's caveat): a claimed fill holds its slot and
// never waits for the evictor; a claimed read-ahead batch waits for a fault worker, and the
// workers wait for the evictor only while a fault needs a slot.
#include <algorithm>
#include <cassert>
#include <mutex>
#include <vector>

#include "pager/evictor.hpp"
#include "pager/os/memory.hpp"
#include "pager/pager_impl.hpp"
#include "pheap/error.hpp"

namespace pheap::paging {

refresh_result pager_impl::refresh(std::optional<std::uint64_t> max_epoch) {
  if (!core_.ro) {
    throw error(errc::invalid_argument, core_.name, "refresh",
                "a read-write pager is always at its newest watermark");
  }
  std::lock_guard lk(refresh_mu_);
  refresh_result r = max_epoch ? core_.store->refresh_to(*max_epoch) : core_.store->refresh();  // step 1
  core_.c.refreshes.fetch_add(1, std::memory_order_relaxed);
  invalidate_locked(r.changed, true);
  return r;
}

void pager_impl::invalidate(std::span<const std::pair<std::uint64_t, std::uint64_t>> ranges) {
  if (!core_.ro) {
    throw error(errc::invalid_argument, core_.name, "invalidate",
                "a writable region's pages are the newest copies: nothing to invalidate");
  }
  std::lock_guard lk(refresh_mu_);
  invalidate_locked(ranges, false);
}

void pager_impl::invalidate_locked(std::span<const std::pair<std::uint64_t, std::uint64_t>> ranges,
                                   bool poisoned_too) {
  std::vector<std::size_t> dropped, poisoned;
  {
    const evictor::batch_lock batch = evictor_.hold_between_batches();  // step 2
    // Step 3.
    const auto settle = [&](std::size_t p) {
      for (;;) {
        const std::uint32_t s = core_.table.load(p);
        switch (ps::kind(s)) {
          case ps::filling:
            core_.table.wait_not_filling(p);
            continue;
          case ps::resident: {
            std::uint32_t was = 0;
            if (core_.table.claim_invalidate(p, was)) {
              dropped.push_back(p);
              return;
            }
            // Owned: a read-only region's pages are owned only by the evictor (I2), which
            // is held; look again.
            continue;
          }
          case ps::absent:
            if (core_.table.forget_kept(p)) return;
            continue;  // claimed meanwhile: a fill
          default:  // poisoned
            poisoned.push_back(p);
            return;
        }
      }
    };
    for (const auto& [first, end] : ranges) {
      for (std::uint64_t p = first; p < std::min<std::uint64_t>(end, core_.npages); ++p) settle(p);
    }
    std::sort(dropped.begin(), dropped.end());
    dropped.erase(std::unique(dropped.begin(), dropped.end()), dropped.end());
    const std::uint64_t poisonings = core_.c.poisoned_pages.load(std::memory_order_acquire);
    if (poisoned_too && poisonings != poisoned_seen_) {
      poisoned.clear();  // all of them, below
      for (std::size_t p = 0; p < core_.npages; ++p) {
        if (ps::kind(core_.table.load(p)) == ps::poisoned) poisoned.push_back(p);
      }
      poisoned_seen_ = poisonings;
    }
    std::sort(poisoned.begin(), poisoned.end());
    poisoned.erase(std::unique(poisoned.begin(), poisoned.end()), poisoned.end());
    // Step 4.
    core_.clock.forget(dropped.data(), dropped.size());
    for_each_run(dropped.data(), dropped.size(), dropped.size(), [&](std::size_t i, std::size_t j) {
      os::drop(core_.page_addr(dropped[i]), (j - i) * core_.ps);
    });
    for (const std::size_t p : dropped) {
      if (core_.table.finish_eviction(p, 0) & ps::wanted) core_.wake_page(p);
    }
    core_.budget.release(dropped.size());
  }
  // Step 5.
  for_each_run(poisoned.data(), poisoned.size(), poisoned.size(), [&](std::size_t i, std::size_t j) {
    os::drop(core_.page_addr(poisoned[i]), (j - i) * core_.ps);
  });
  std::uint64_t unpoisoned = 0;
  for (const std::size_t p : poisoned) {
    if (core_.table.unpoison(p)) {
      ++unpoisoned;
      core_.wake_page(p);
    }
  }
  core_.c.invalidated_pages.fetch_add(dropped.size(), std::memory_order_relaxed);
  core_.c.unpoisoned_pages.fetch_add(unpoisoned, std::memory_order_relaxed);
}

}  // namespace pheap::paging
