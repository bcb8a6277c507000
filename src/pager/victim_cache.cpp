#include "pager/victim_cache.hpp"

#include <sys/uio.h>

#include <cstring>

#include "pager/os/uffd.hpp"

namespace pheap::paging {

namespace {
constexpr std::size_t kMaxIov = 512;  // runs per process_madvise (the kernel takes up to 1024)

// Runs of consecutive pages in pages[0..n) (sorted), as iovecs over their mirror pages (page p
// at base + p * ps): f is called with up to kMaxIov of them at a time, and the bytes they span.
template <typename F>
void for_runs(std::byte* base, std::size_t ps, const std::size_t* pages, std::size_t n, F&& f) {
  iovec iov[kMaxIov];
  std::size_t k = 0, bytes = 0;
  for (std::size_t i = 0; i < n;) {
    std::size_t j = i + 1;
    while (j < n && pages[j] == pages[j - 1] + 1) ++j;
    iov[k++] = {base + pages[i] * ps, (j - i) * ps};
    bytes += (j - i) * ps;
    if (k == kMaxIov) {
      f(iov, k, bytes);
      k = bytes = 0;
    }
    i = j;
  }
  if (k > 0) f(iov, k, bytes);
}
}  // namespace

bool victim_cache::open(int pagemap_fd, std::size_t page_size, std::size_t pages) {
  if (pagemap_fd < 0 || pages == 0) return false;
  anon_map m;
  try {
    m = anon_map(page_size * pages, true);
  } catch (const std::exception&) {
    return false;  // no address space for a mirror (strict overcommit): run without
  }
  // Probe: a read of an untouched page maps the zero page; the scan must say so.
  volatile std::byte sink = m.data()[0];
  (void)sink;
  page_region r[2];
  const long n = pagemap_scan(pagemap_fd, m.data(), m.data() + os_page_size(), 0, 0,
                              page_is_present | page_is_pfnzero, r, 2, nullptr);
  os::drop(m.data(), os_page_size());
  if (n != 1 || r[0].categories != (page_is_present | page_is_pfnzero)) return false;
  map_ = std::move(m);
  pagemap_fd_ = pagemap_fd;
  advice_.open(map_.data());  // does the kernel take vectors of advice for the caller itself?
  ps_ = page_size;
  return true;
}

bool victim_cache::wants(std::size_t page) const noexcept {
  if (!sampling_.load(std::memory_order_relaxed)) return true;
  return (page * 0x9E3779B97F4A7C15ull >> 32) % kSample == 0;
}

void victim_cache::prepare(const std::size_t* pages, std::size_t n) noexcept {
  if (!advice_.takes(os::vector_advice::populate_write)) return;
  // Mirror pages still present (lazily freed, not yet taken) are only walked; the ones the
  // kernel took are allocated, charged and zeroed here instead of in keep()'s fault.
  for_runs(map_.data(), ps_, pages, n, [&](const iovec* iov, std::size_t k, std::size_t) {
    (void)advice_.apply(iov, k, os::vector_advice::populate_write);
  });
}

void victim_cache::keep(std::size_t page, const std::byte* bytes) noexcept {
  std::memcpy(mirror(page), bytes, ps_);
}

void victim_cache::give_back(const std::size_t* pages, std::size_t n, std::size_t evicted) noexcept {
  // One process_madvise per kMaxIov runs of pages: the kernel (6.13+ allows any advice on the
  // caller itself, 6.16+ batches the TLB flush over the vector) flushes once per call, where a
  // madvise per run costs a system call and a TLB shootdown (an IPI to every CPU running the
  // process) each. (One madvise over the whole span instead, tried at SCALE 18, cost the
  // evictor more CPU than the calls it saved: it looks at every present mirror page between.)
  // Where process_madvise refuses or stops short, one madvise per run; a run the kernel will
  // not free is dropped (MADV_DONTNEED): a copy the kernel cannot take back would be memory
  // outside every bound, and a dropped copy is only a miss (take() sees it gone).
  for_runs(map_.data(), ps_, pages, n, [&](const iovec* iov, std::size_t k, std::size_t bytes) {
    const long r = advice_.apply(iov, k, os::vector_advice::lazy_free);
    if (r < 0 || static_cast<std::size_t>(r) != bytes) {
      for (std::size_t i = 0; i < k; ++i) {
        if (os::free_lazily(iov[i].iov_base, iov[i].iov_len) != 0) os::drop(iov[i].iov_base, iov[i].iov_len);
      }
    }
  });
  kept_in_window_ += n;
  evicted_in_window_ += evicted;
  if (evicted_in_window_ >= kWindow && kept_in_window_ > 0) {
    const std::uint64_t taken = taken_.load(std::memory_order_relaxed);
    const double share = static_cast<double>(taken - taken_at_window_start_) / static_cast<double>(kept_in_window_);
    sampling_.store(share < kMinTaken, std::memory_order_relaxed);
    evicted_in_window_ = kept_in_window_ = 0;
    taken_at_window_start_ = taken;
  }
}

bool victim_cache::whole(const std::byte* m) const noexcept {
  page_region r[2];
  const long n = pagemap_scan(pagemap_fd_, const_cast<std::byte*>(m), const_cast<std::byte*>(m) + ps_,
                              0, 0, page_is_present | page_is_pfnzero, r, 2, nullptr);
  return n == 1 && r[0].start == reinterpret_cast<std::uint64_t>(m) &&
         r[0].end == reinterpret_cast<std::uint64_t>(m + ps_) && r[0].categories == page_is_present;
}

bool victim_cache::take(std::size_t page, std::byte* dst) noexcept {
  const std::byte* m = mirror(page);
  // Before the copy, so that a dropped copy is not read: the read would map the zero page,
  // which the next keep() must then replace (a copy-on-write fault and a TLB shootdown).
  if (!whole(m)) return false;
  std::memcpy(dst, m, ps_);
  // After the copy: still whole means no frame was dropped during the copy.
  if (!whole(m)) return false;
  came_back(page);
  return true;
}

void victim_cache::came_back(std::size_t page) noexcept {
  const std::byte* m = mirror(page);
  taken_.fetch_add(1, std::memory_order_relaxed);
  // Step 4: the page is about to be resident again, so the copy would only hold room that the
  // kernel's reclaim then takes from older victims (bench/DECISIONS.md, "the victim cache drops what it hands back"). Noted for the
  // evictor's next batch, which drops all it finds with one call.
  {
    std::lock_guard l(pending_mu_);
    if (npending_ < kPendingDrops) {
      pending_[npending_++] = page;
      return;
    }
  }
  os::drop(const_cast<std::byte*>(m), ps_);
}

void victim_cache::drop_taken() noexcept {
  std::size_t pages[kPendingDrops];
  std::size_t n;
  {
    std::lock_guard l(pending_mu_);
    n = npending_;
    std::memcpy(pages, pending_, n * sizeof pages[0]);
    npending_ = 0;
  }
  if (n == 0) return;
  iovec iov[kPendingDrops];
  for (std::size_t i = 0; i < n; ++i) iov[i] = {mirror(pages[i]), ps_};
  const long r = advice_.apply(iov, n, os::vector_advice::dontneed);
  if (r < 0 || static_cast<std::size_t>(r) != n * ps_) {
    for (std::size_t i = 0; i < n; ++i) os::drop(iov[i].iov_base, ps_);
  }
}

void victim_cache::drop_for_test(std::size_t first, std::size_t count) const noexcept {
  if (map_.p) os::page_out(mirror(first), count * ps_);
}

}  // namespace pheap::paging
