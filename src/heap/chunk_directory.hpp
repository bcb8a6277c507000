// src/heap/chunk_directory.hpp — chunk bookkeeping inside the region: the chunk directory
// (one chunk_entry per chunk), the chunk-used bitmap, and the non-full list of each bin.
//
// Not synchronized itself. Callers hold: the chunk lock for allocate_run()/release_run() and
// for writing kind/bin of entries; bin lock b for list operations on bin b and for `used` of
// small chunks in bin b.
//
// Invariants (verified by segment_allocator::check):
//   * bitmap bit c == (entry c kind != free); header.chunks_in_use == number of such chunks;
//   * chunks >= chunk_high are free; chunks < free_hint are in use;
//   * a large run is one large_head (used = run length n) followed by n-1 large_body entries
//     whose `used` is their distance to the head;
//   * a small chunk is in its bin's non-full list iff 0 < used < slots, and free chunks and
//     full chunks have next = prev = 0.
#pragma once

#include <cstdint>

#include "heap/heap_header.hpp"

namespace pheap::heap {

class chunk_directory {
 public:
  static constexpr std::uint64_t none = ~0ull;

  chunk_directory(std::byte* base, heap_header* h) noexcept
      : h_(h),
        dir_(reinterpret_cast<chunk_entry*>(base + h->dir_off)),
        map_(reinterpret_cast<std::uint64_t*>(base + h->map_off)) {}

  chunk_entry& entry(std::uint64_t c) const noexcept { return dir_[c]; }
  bool used_bit(std::uint64_t c) const noexcept { return (map_[c / 64] >> (c % 64)) & 1; }

  // Finds `n` contiguous free chunks (first fit from free_hint), marks them used in the
  // bitmap and the header counters, and returns the first; `none` if there is no such run.
  // Entries are left for the caller to fill.
  std::uint64_t allocate_run(std::uint64_t n) noexcept;
  // Marks [c, c+n) free: entries zeroed, bitmap cleared, counters updated.
  void release_run(std::uint64_t c, std::uint64_t n) noexcept;

  // Bin non-full list (bin lock held).
  void list_push(std::uint32_t bin, std::uint64_t c) noexcept;
  void list_remove(std::uint32_t bin, std::uint64_t c) noexcept;

 private:
  // First index >= from and < limit whose bitmap bit equals `bit`; `limit` if none.
  std::uint64_t find_next(std::uint64_t from, std::uint64_t limit, bool bit) const noexcept;

  heap_header* h_;
  chunk_entry* dir_;
  std::uint64_t* map_;
};

}  // namespace pheap::heap
