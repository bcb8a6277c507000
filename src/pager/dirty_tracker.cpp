// Dirty tracking: which pages a flush must write, and how to copy them without tearing, per
// tracking mode (pheap/pager.hpp describes the modes; flush.cpp is the protocol that uses
// this).
//
// Candidates (collect_dirty; no claims yet):
//   wp_sync       pages with the `dirty` bit;
//   wp_async      one PAGEMAP_SCAN over the region with PM_SCAN_WP_MATCHING: collects the
//                 written+present pages and write-protects them again atomically (writes after
//                 this point are the next epoch's), plus pages with the `dirty` bit;
//   all_resident  every resident page.
//   A page still `filling` is waited for first: its fill may already have woken a writer whose
//   write completed before flush() was called.
//
// Tear-free copy of claimed pages (take_copies; the `flush` claim cleared `dirty`):
//   wp_sync       UFFDIO_WRITEPROTECT the run, memcpy: writers block in a WP fault
//                 (→ `wanted`) until the claim is released, then dirty the page for the next
//                 epoch;
//   wp_async      re-protect the run (WP_MATCHING), memcpy, then PAGEMAP_SCAN the run: a page
//                 written during the memcpy is taken again with UFFDIO_MOVE out to the flush
//                 staging range and back (atomic), and stays dirty;
//   all_resident  UFFDIO_MOVE out and back for every run (take_by_move).
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "pager/dirty_tracker.hpp"
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

void dirty_tracker::open_staging() {
  // Huge: 2 MiB-aligned and MADV_HUGEPAGE, so that a retake keeps the page's mapping whole.
  staging_.open(core_.uffd, core_.pagemap_fd, core_.base, core_.ps, batch_pages_, 0, core_.name,
                core_.huge_on ? &core_.huge : nullptr, false);
}

void dirty_tracker::written_bitmap(std::size_t first, std::size_t count, std::vector<bool>& out) {
  out.assign(count, false);
  if (count == 0) return;
  const long r = pagemap_walk<256>(core_.pagemap_fd, core_.page_addr(first), core_.page_addr(first + count), 0,
                                   page_is_written | page_is_present, 0,
                                   [&](const page_region& reg) {
                                     const auto [a, b] = core_.pages_of(reg);
                                     for (std::size_t p = a; p <= b; ++p) out[p - first] = true;
                                   });
  if (r < 0) out.assign(count, true);  // cannot tell: everything counts as written (safe)
}

std::vector<std::size_t> dirty_tracker::collect_dirty() {
  std::vector<std::size_t> cand;
  if (core_.mode == dirty_tracking::wp_async) {
    // With the evictor's harvest excluded: it moves written bits into the words, and a scan
    // between its re-protect and its recording would see neither.
    std::lock_guard lk(core_.scan_mu);
    const long r = pagemap_walk<512>(core_.pagemap_fd, core_.base, core_.base + core_.cap,
                                     pm_scan_wp_matching | pm_scan_check_wpasync,
                                     page_is_written | page_is_present, 0,
                                     [&](const page_region& reg) {
                                       const auto [a, b] = core_.pages_of(reg);
                                       for (std::size_t p = a; p <= b; ++p) {
                                         if (cand.empty() || cand.back() != p) cand.push_back(p);
                                       }
                                     });
    if (r < 0) {
      throw error(errc::io, core_.name, "flush: PAGEMAP_SCAN", std::strerror(static_cast<int>(-r)),
                  static_cast<int>(-r));
    }
    std::vector<std::size_t> forced;
    for (std::size_t p = 0; p < core_.npages; ++p) {
      if (core_.table.load(p) & ps::dirty) forced.push_back(p);
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
  for (std::size_t p = 0; p < core_.npages; ++p) {
    std::uint32_t s = core_.table.load(p);
    if (ps::kind(s) == ps::filling) {
      core_.table.wait_not_filling(p);
      s = core_.table.load(p);
    }
    if (ps::kind(s) != ps::resident) continue;
    if (core_.mode == dirty_tracking::all_resident || (s & (ps::dirty | ps::wpclear))) {
      cand.push_back(p);
    }
  }
  return cand;
}

void dirty_tracker::take_copies(const std::size_t* pages, std::size_t n, std::byte* const* dst) {
  if (core_.mode == dirty_tracking::wp_sync) {
    copy_write_protected(pages, n, dst);
  } else if (core_.mode == dirty_tracking::wp_async) {
    copy_and_verify(pages, n, dst);
  } else {
    take_by_move(pages, n, dst);
  }
}

void dirty_tracker::copy_write_protected(const std::size_t* pages, std::size_t n,
                                      std::byte* const* dst) {
  for_each_run(pages, n, n, [&](std::size_t i, std::size_t j) {
    const int rc = uffd_writeprotect(core_.uffd, core_.page_addr(pages[i]), (j - i) * core_.ps, true);
    if (rc != 0) {
      std::fprintf(stderr, "pheap: pager %s: UFFDIO_WRITEPROTECT pages %zu..%zu: %s\n",
                   core_.name.c_str(), pages[i], pages[j - 1], std::strerror(rc));
    }
    for (std::size_t k = i; k < j; ++k) copy_out(dst[k], core_.page_addr(pages[k]), core_.ps);
  });
}

void dirty_tracker::copy_and_verify(const std::size_t* pages, std::size_t n, std::byte* const* dst) {
  std::vector<bool> w;
  for_each_run(pages, n, n, [&](std::size_t i, std::size_t j) {
    // No harvest between the protect and the check: it would re-protect a page written during
    // the copy, and the check would not see that write.
    std::lock_guard lk(core_.scan_mu);
    // Re-protect only this claimed run (never unclaimed neighbours: that would hide their
    // writes from the next flush).
    (void)pagemap_walk<64>(core_.pagemap_fd, core_.page_addr(pages[i]), core_.page_addr(pages[j - 1] + 1),
                           pm_scan_wp_matching | pm_scan_check_wpasync,
                           page_is_written | page_is_present, 0, [](const page_region&) {});
    for (std::size_t k = i; k < j; ++k) copy_out(dst[k], core_.page_addr(pages[k]), core_.ps);
    written_bitmap(pages[i], j - i, w);
    std::vector<std::size_t> again;
    std::vector<std::byte*> again_dst;
    for (std::size_t k = i; k < j; ++k) {
      if (w[k - i]) {
        again.push_back(pages[k]);
        again_dst.push_back(dst[k]);
      }
    }
    if (!again.empty()) {
      core_.c.flush_retakes.fetch_add(again.size(), std::memory_order_relaxed);
      take_by_move(again.data(), again.size(), again_dst.data());
    }
  });
}

void dirty_tracker::take_by_move(const std::size_t* pages, std::size_t n, std::byte* const* dst) {
  for_each_run(pages, n, batch_pages_, [&](std::size_t i, std::size_t j) {
    const std::vector<bool> moved = staging_.move_out(pages + i, j - i);
    for (std::size_t k = i; k < j; ++k) {
      // Not moved (e.g. EBUSY): plain copy, which may race with a writer; the page stays
      // dirty in the page tables, so the next flush takes it again.
      copy_out(dst[k], moved[k - i] ? staging_.slot(k - i) : core_.page_addr(pages[k]), core_.ps);
    }
    staging_.move_back(pages + i, moved);
  });
}

}  // namespace pheap::paging
