// The evictor: keeps the bounded buffer (buffer_budget.hpp) within its watermarks.
//
// The evictor wakes at the high watermark (or when a worker waits) and evicts down to the low
// watermark in batches. Victim choice: a clock hand with second chance (the `ref` bit set by
// fills), clean pages first. A batch:
//   1. claims victims (CAS: resident, unowned, unpinned → evict);
//   2. read-only region: one MADV_DONTNEED per contiguous run; done.
//   3. otherwise UFFDIO_MOVE each contiguous run into the staging range in one ioctl. The move
//      is atomic per page: after it the region page is missing (an access faults to a worker,
//      which sees `evict`, sets `wanted` and leaves the thread waiting), and the staging page
//      holds every byte ever written to the region page. This closes the eviction race.
//   4. decides which staged pages must be written: wp_sync: the `dirty` bit (writes to a
//      clean page trap to a worker first, I5); all_resident: all; wp_async: `dirty` bit or
//      PAGEMAP_SCAN said written before the claim; pages judged clean are compared with the
//      store (or with zeros if the store has no data for them) because a write may have
//      landed between the scan and the move and the uffd-wp bit does not travel with MOVE.
//   5. writes them with one store write_pages() batch (through a bounce buffer, never from a
//      registered range), drops the staging range with one MADV_DONTNEED, and only then marks
//      the pages absent and wakes the faults waiting on them (they refill from the store,
//      which now has the newest bytes).
//   On a store write error, the staged pages are moved back into the region, marked dirty,
//      and the error is kept for the next flush().
#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <cstring>

#include "pager/pager_impl.hpp"

namespace pheap::paging {

void pager_impl::wait_evictor_idle() {
  for (;;) {
    {
      std::lock_guard b(evict_batch_mu_);
      if (budget_.evictor_idle()) return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void pager_impl::evictor_main() {
  for (;;) {
    if (!budget_.wait_for_kick()) return;
    bool idle_round = false;
    {
      std::lock_guard batch(evict_batch_mu_);
      // Evict down to the low watermark; with waiters, at least one page each round.
      for (;;) {
        if (stop_.load()) return;
        const std::size_t excess = budget_.to_evict();
        if (excess == 0) break;
        const std::size_t want = std::min(excess, evict_batch_pages_);
        const std::uint64_t t0 = now_ns();
        const std::size_t freed = evict_batch(want);
        c_.evict_ns.fetch_add(now_ns() - t0, std::memory_order_relaxed);
        budget_.notify_freed();
        if (freed == 0) {
          idle_round = true;  // everything owned, pinned or failing: back off briefly
          break;
        }
      }
    }
    budget_.end_round(idle_round);
    if (idle_round) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

std::size_t pager_impl::evict_batch(std::size_t want) {
  // ---- 1. choose and claim victims --------------------------------------------------------
  std::vector<std::size_t> victims;
  std::vector<bool> victim_dirty;  // dirty as judged at claim time
  std::vector<std::size_t> dirty_seen;
  victims.reserve(want);
  const std::size_t window = std::min<std::size_t>(npages_, std::max<std::size_t>(256, want * 8));
  std::vector<bool> written;
  std::size_t steps = 0;
  const std::size_t max_steps = 2 * npages_ + window;
  auto claim = [&](std::size_t p, bool dirty) {
    std::uint32_t s = 0;
    if (!table_.claim_evict(p, s)) return false;
    victims.push_back(p);
    victim_dirty.push_back(dirty || (s & ps::dirty) || mode_ == dirty_tracking::all_resident);
    return true;
  };
  while (victims.size() < want && steps < max_steps) {
    const std::size_t first = clock_hand_;
    const std::size_t count = std::min(window, npages_ - first);
    if (mode_ == dirty_tracking::wp_async && !ro_) written_bitmap(first, count, written);
    dirty_seen.clear();
    for (std::size_t i = 0; i < count && victims.size() < want; ++i) {
      const std::size_t p = first + i;
      const std::uint32_t s = table_.load(p);
      if (!ps::evictable(s)) continue;
      if (s & ps::ref) {  // second chance
        table_.clear_ref(p, s);
        continue;
      }
      const bool d = !ro_ && ((s & ps::dirty) || mode_ == dirty_tracking::all_resident ||
                              (mode_ == dirty_tracking::wp_async && written[i]));
      if (d) {
        dirty_seen.push_back(p);
      } else {
        claim(p, false);
      }
    }
    for (std::size_t k = 0; k < dirty_seen.size() && victims.size() < want; ++k) {
      claim(dirty_seen[k], true);
    }
    steps += count;
    clock_hand_ = first + count >= npages_ ? 0 : first + count;
  }
  if (victims.empty()) return 0;
  // Keep runs contiguous: sort by page (victims may wrap around the end of the region).
  {
    std::vector<std::size_t> idx(victims.size());
    for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
    std::sort(idx.begin(), idx.end(), [&](auto a, auto b) { return victims[a] < victims[b]; });
    std::vector<std::size_t> v2;
    std::vector<bool> d2;
    for (auto i : idx) {
      v2.push_back(victims[i]);
      d2.push_back(victim_dirty[i]);
    }
    victims.swap(v2);
    victim_dirty.swap(d2);
  }
  const std::size_t n = victims.size();


  // ---- 2. read-only: just drop -----------------------------------------------------------
  if (ro_) {
    for_each_run(victims.data(), n, n, [&](std::size_t i, std::size_t j) {
      ::madvise(page_addr(victims[i]), (j - i) * ps_, MADV_DONTNEED);
    });
    for (auto p : victims) finish_eviction(p);
    budget_.release(n);
    c_.evictions.fetch_add(n, std::memory_order_relaxed);
    return n;
  }

  // ---- 3. move out, run by run; what moved is read from the page tables ----------------------
  const std::vector<bool> moved = evict_staging_.move_out(victims.data(), n);
  for (std::size_t i = 0; i < n; ++i) {
    if (!moved[i]) release_owned(victims[i], ps::evict);  // still in the region, untouched
  }

  // ---- 4. judge ----------------------------------------------------------------------------
  std::vector<std::size_t> out;  // indexes into victims of pages to write
  std::vector<std::size_t> verify;
  for (std::size_t i = 0; i < n; ++i) {
    if (!moved[i]) continue;
    if (victim_dirty[i] || (table_.load(victims[i]) & ps::dirty)) {
      out.push_back(i);
    } else if (mode_ == dirty_tracking::wp_async) {
      verify.push_back(i);
    }
  }
  if (!verify.empty()) {
    std::vector<page_read> reads;
    std::vector<std::size_t> with_data;
    for (std::size_t k = 0; k < verify.size(); ++k) {
      const std::size_t i = verify[k];
      if (store_->may_have_data(victims[i])) {
        reads.push_back({victims[i], verify_bounce_.data() + reads.size() * ps_});
        with_data.push_back(i);
      } else if (std::memcmp(evict_staging_.slot(i), zero_.data(), ps_) != 0) {
        out.push_back(i);
      }
    }
    if (!reads.empty()) {
      c_.evict_verify_reads.fetch_add(reads.size(), std::memory_order_relaxed);
      bool ok = true;
      try {
        store_->read_pages(reads);
      } catch (...) {
        ok = false;  // cannot prove them clean: write them
      }
      for (std::size_t k = 0; k < with_data.size(); ++k) {
        const std::size_t i = with_data[k];
        if (!ok || std::memcmp(evict_staging_.slot(i), reads[k].buf, ps_) != 0) out.push_back(i);
      }
    }
  }

  // ---- 5. write back, drop, release ----------------------------------------------------------
  bool write_failed = false;
  if (!out.empty()) {
    std::sort(out.begin(), out.end());
    std::vector<page_write> writes;
    writes.reserve(out.size());
    for (std::size_t k = 0; k < out.size(); ++k) {
      std::byte* b = evict_bounce_.data() + k * ps_;
      std::memcpy(b, evict_staging_.slot(out[k]), ps_);
      writes.push_back({victims[out[k]], b});
    }
    try {
      store_->write_pages(writes);
      budget_.set_writeback_failing(false);
      c_.evicted_dirty.fetch_add(out.size(), std::memory_order_relaxed);
      c_.bytes_written.fetch_add(out.size() * ps_, std::memory_order_relaxed);
    } catch (...) {
      errors_.record(std::current_exception());
      budget_.set_writeback_failing(true);
      write_failed = true;
    }
  }
  std::size_t freed = 0;
  if (write_failed) {
    // Nothing may be lost: every staged page goes back into the region, marked dirty.
    evict_staging_.move_back(victims.data(), moved);
    for (std::size_t i = 0; i < n; ++i) {
      if (moved[i]) release_owned(victims[i], ps::evict, ps::dirty);
    }
    return 0;
  }
  evict_staging_.drop(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (!moved[i]) continue;
    finish_eviction(victims[i]);
    ++freed;
  }
  budget_.release(freed);
  c_.evictions.fetch_add(freed, std::memory_order_relaxed);
  return freed;
}

void pager_impl::finish_eviction(std::size_t page) {
  // Faults that waited on it refault and refill from the store, which has its newest bytes.
  if (table_.finish_eviction(page) & ps::wanted) wake_page(page);
}

}  // namespace pheap::paging
