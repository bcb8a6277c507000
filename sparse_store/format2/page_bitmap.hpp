// sparse_store/format2/page_bitmap.hpp — one bit per page of a format-2 datastore: "may hold
// non-zero data". A clear bit means read_pages() returns zeros for the page. Built at open from
// the data extents of the segment files and the committed journal (a discard clears bits).
#pragma once

#include <atomic>
#include <bit>
#include <cstdint>
#include <memory>

namespace pheap::store::format2 {

class page_bitmap {
 public:
  explicit page_bitmap(std::uint64_t pages)
      : pages_(pages), words_(std::make_unique<std::atomic<std::uint64_t>[]>((pages + 63) / 64)) {
    for (std::uint64_t i = 0; i < (pages + 63) / 64; ++i) words_[i].store(0, std::memory_order_relaxed);
  }

  std::uint64_t size() const { return pages_; }

  bool test(std::uint64_t page) const {
    return (words_[page / 64].load(std::memory_order_acquire) >> (page % 64)) & 1u;
  }
  void set(std::uint64_t page) {
    words_[page / 64].fetch_or(1ull << (page % 64), std::memory_order_acq_rel);
  }
  void clear(std::uint64_t page) {
    words_[page / 64].fetch_and(~(1ull << (page % 64)), std::memory_order_acq_rel);
  }
  void set_range(std::uint64_t first, std::uint64_t end) {
    for (std::uint64_t p = first; p < end; ++p) set(p);
  }

  // Calls fn(page) for every set bit in [first, end), skipping empty words in one step (a
  // discard of a huge never-written range costs one load per 64 pages).
  template <class Fn>
  void for_each_set(std::uint64_t first, std::uint64_t end, Fn&& fn) const {
    std::uint64_t p = first;
    while (p < end) {
      std::uint64_t w = words_[p / 64].load(std::memory_order_acquire) >> (p % 64);
      if (w == 0) {
        p = (p / 64 + 1) * 64;
        continue;
      }
      p += static_cast<std::uint64_t>(std::countr_zero(w));
      if (p >= end) break;
      fn(p);
      ++p;
    }
  }

 private:
  std::uint64_t pages_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> words_;
};

}  // namespace pheap::store::format2
