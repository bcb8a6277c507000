// flush(): dirty-page collection per tracking mode, tear-free copy-out, write, commit.
//
// 1. Collect candidates (no claims yet):
//      wp_sync       pages with the `dirty` bit;
//      wp_async      one PAGEMAP_SCAN over the region with PM_SCAN_WP_MATCHING: collects the
//                    written+present pages and write-protects them again atomically (writes
//                    after this point are the next epoch's), plus pages with the `dirty` bit;
//      all_resident  every resident page.
//    A page still `filling` is waited for first: its fill may already have woken a writer
//    whose write completed before flush() was called.
// 2. Per chunk: claim (`flush` bit; skipped when the evictor owns the page — the evictor
//    writes it and step 3 waits for that), take a consistent copy into the bounce buffer,
//    write the chunk with one write_pages(), and only then release the claims (so a failed
//    write can mark them dirty before the evictor could drop them). Consistent copy:
//      wp_sync       clear `dirty`, UFFDIO_WRITEPROTECT the run, memcpy: writers block in a
//                    WP fault (→ `wanted`) until the claim is released, then dirty the page
//                    for the next epoch;
//      wp_async      re-protect the run (WP_MATCHING), memcpy, then PAGEMAP_SCAN the run: a
//                    page written during the memcpy is taken again with UFFDIO_MOVE out to
//                    the flush staging range and back (atomic), and stays dirty;
//      all_resident  UFFDIO_MOVE out and back for every run.
// 3. Wait for an eviction batch in flight (its pages may hold writes older than this flush),
//    report any store error recorded since the last flush, and commit.
// Flushes are serialized by flush_mu_. A flush never waits for a fault worker, and the
// evictor never waits for a flush, so flush and eviction cannot deadlock.
#include <sys/mman.h>

#include <algorithm>
#include <cstring>

#include "pager/pager_impl.hpp"
#include "pheap/error.hpp"

#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_ignore_thread_begin();  // libtsan; not declared by gcc 12's headers
extern "C" void __tsan_ignore_thread_end();
#endif

namespace pheap::paging {

namespace {
// Copies one page out of the region while application threads may be writing it. That race
// is by design: consistency comes from the page tables (write-protect, PAGEMAP_SCAN verify,
// UFFDIO_MOVE), which ThreadSanitizer cannot see, so the copy is hidden from it.
void copy_out(std::byte* dst, const std::byte* src, std::size_t len) {
#if defined(__SANITIZE_THREAD__)
  __tsan_ignore_thread_begin();
#endif
  std::memcpy(dst, src, len);
#if defined(__SANITIZE_THREAD__)
  __tsan_ignore_thread_end();
#endif
}
}  // namespace

void pager_impl::written_bitmap(std::size_t first, std::size_t count, std::vector<bool>& out) {
  out.assign(count, false);
  if (count == 0) return;
  const long r = pagemap_walk<256>(pagemap_fd_, page_addr(first), page_addr(first + count), 0,
                                   page_is_written | page_is_present, 0,
                                   [&](const page_region& reg) {
                                     const auto [a, b] = pages_of(reg);
                                     for (std::size_t p = a; p <= b; ++p) out[p - first] = true;
                                   });
  if (r < 0) out.assign(count, true);  // cannot tell: everything counts as written (safe)
}

std::vector<std::size_t> pager_impl::collect_dirty() {
  std::vector<std::size_t> cand;
  if (mode_ == dirty_tracking::wp_async) {
    const long r = pagemap_walk<512>(pagemap_fd_, base_, base_ + cap_,
                                     pm_scan_wp_matching | pm_scan_check_wpasync,
                                     page_is_written | page_is_present, 0,
                                     [&](const page_region& reg) {
                                       const auto [a, b] = pages_of(reg);
                                       for (std::size_t p = a; p <= b; ++p) {
                                         if (cand.empty() || cand.back() != p) cand.push_back(p);
                                       }
                                     });
    if (r < 0) {
      throw error(errc::io, name_, "flush: PAGEMAP_SCAN", std::strerror(static_cast<int>(-r)),
                  static_cast<int>(-r));
    }
    std::vector<std::size_t> forced;
    for (std::size_t p = 0; p < npages_; ++p) {
      if (table_.load(p) & ps::dirty) forced.push_back(p);
    }
    if (!forced.empty()) {
      std::vector<std::size_t> merged;
      std::merge(cand.begin(), cand.end(), forced.begin(), forced.end(),
                 std::back_inserter(merged));
      merged.erase(std::unique(merged.begin(), merged.end()), merged.end());
      cand.swap(merged);
    }
    return cand;
  }
  for (std::size_t p = 0; p < npages_; ++p) {
    std::uint32_t s = table_.load(p);
    if (ps::kind(s) == ps::filling) {
      table_.wait_not_filling(p);
      s = table_.load(p);
    }
    if (ps::kind(s) != ps::resident) continue;
    if (mode_ == dirty_tracking::all_resident || (s & (ps::dirty | ps::wpclear))) {
      cand.push_back(p);
    }
  }
  return cand;
}

void pager_impl::take_by_move(const std::size_t* pages, std::size_t n, std::byte* const* dst) {
  for_each_run(pages, n, flush_batch_pages_, [&](std::size_t i, std::size_t j) {
    const std::vector<bool> moved = flush_staging_.move_out(pages + i, j - i);
    for (std::size_t k = i; k < j; ++k) {
      // Not moved (e.g. EBUSY): plain copy, which may race with a writer; the page stays
      // dirty in the page tables, so the next flush takes it again.
      copy_out(dst[k], moved[k - i] ? flush_staging_.slot(k - i) : page_addr(pages[k]), ps_);
    }
    flush_staging_.move_back(pages + i, moved);
  });
}

std::size_t pager_impl::flush_chunk(const std::size_t* cand, std::size_t n) {
  // ---- claim -------------------------------------------------------------------------------
  std::vector<std::size_t> claimed;
  claimed.reserve(n);
  for (std::size_t k = 0; k < n; ++k) {
    if (table_.claim_flush(cand[k], mode_ == dirty_tracking::wp_sync)) claimed.push_back(cand[k]);
  }
  if (claimed.empty()) return 0;
  const std::size_t m = claimed.size();
  std::vector<std::byte*> dst(m);
  for (std::size_t i = 0; i < m; ++i) dst[i] = flush_bounce_.data() + i * ps_;

  auto for_runs = [&](auto&& fn) { for_each_run(claimed.data(), m, m, fn); };

  // ---- consistent copy ---------------------------------------------------------------------
  if (mode_ == dirty_tracking::wp_sync) {
    for_runs([&](std::size_t i, std::size_t j) {
      const int rc = uffd_writeprotect(uffd_, page_addr(claimed[i]), (j - i) * ps_, true);
      if (rc != 0) {
        std::fprintf(stderr, "pheap: pager %s: UFFDIO_WRITEPROTECT pages %zu..%zu: %s\n",
                     name_.c_str(), claimed[i], claimed[j - 1], std::strerror(rc));
      }
      for (std::size_t k = i; k < j; ++k) copy_out(dst[k], page_addr(claimed[k]), ps_);
    });
  } else if (mode_ == dirty_tracking::wp_async) {
    std::vector<bool> w;
    for_runs([&](std::size_t i, std::size_t j) {
      // Re-protect only this claimed run (never unclaimed neighbours: that would hide their
      // writes from the next flush).
      (void)pagemap_walk<64>(pagemap_fd_, page_addr(claimed[i]), page_addr(claimed[j - 1] + 1),
                             pm_scan_wp_matching | pm_scan_check_wpasync,
                             page_is_written | page_is_present, 0, [](const page_region&) {});
      for (std::size_t k = i; k < j; ++k) copy_out(dst[k], page_addr(claimed[k]), ps_);
      written_bitmap(claimed[i], j - i, w);
      std::vector<std::size_t> again;
      std::vector<std::byte*> again_dst;
      for (std::size_t k = i; k < j; ++k) {
        if (w[k - i]) {
          again.push_back(claimed[k]);
          again_dst.push_back(dst[k]);
        }
      }
      if (!again.empty()) {
        c_.flush_retakes.fetch_add(again.size(), std::memory_order_relaxed);
        take_by_move(again.data(), again.size(), again_dst.data());
      }
    });
  } else {
    take_by_move(claimed.data(), m, dst.data());
  }

  // ---- write, then release -----------------------------------------------------------------
  std::vector<page_write> writes(m);
  for (std::size_t i = 0; i < m; ++i) writes[i] = {claimed[i], dst[i]};
  try {
    store_->write_pages(writes);
  } catch (...) {
    for (auto p : claimed) release_owned(p, ps::flush, ps::dirty);
    throw;
  }
  for (auto p : claimed) release_owned(p, ps::flush);
  c_.dirty_pages_written.fetch_add(m, std::memory_order_relaxed);
  c_.bytes_written.fetch_add(m * ps_, std::memory_order_relaxed);
  return m;
}

std::uint64_t pager_impl::flush(std::span<const std::byte> root) {
  std::lock_guard lk(flush_mu_);
  if (ro_) throw error(errc::read_only, name_, "flush", "the store is open read-only");
  const std::uint64_t t0 = now_ns();
  errors_.throw_pending();
  const std::vector<std::size_t> cand = collect_dirty();
  for (std::size_t i = 0; i < cand.size(); i += flush_batch_pages_) {
    flush_chunk(cand.data() + i, std::min(flush_batch_pages_, cand.size() - i));
  }
  // An eviction batch in flight may hold writes made before this flush: let it land.
  { std::lock_guard b(evict_batch_mu_); }
  errors_.throw_pending();
  const std::uint64_t epoch = store_->commit(root);
  if (!cand.empty()) budget_.set_writeback_failing(false);  // writes work again
  c_.flushes.fetch_add(1, std::memory_order_relaxed);
  c_.flush_ns.fetch_add(now_ns() - t0, std::memory_order_relaxed);
  return epoch;
}

}  // namespace pheap::paging
