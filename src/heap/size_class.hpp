// src/heap/size_class.hpp — small-object size classes for a given chunk size.
//
// Classes: 8, then multiples of 16 up to 128, then four classes per power of two
// (1.25x, 1.5x, 1.75x, 2x) up to chunk_size / 2. Every class >= 16 is a multiple of 16, so
// every slot of such a class is 16-byte aligned (chunks are chunk-aligned offsets from a
// 4 KiB-aligned base); a power-of-two class of size s <= 4096 gives s-aligned slots, which is
// what allocate_aligned() relies on. Internal fragmentation <= 25 % above 128 bytes.
// Requests above chunk_size / 2 are "large": runs of whole chunks.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

#include "heap/heap_header.hpp"

namespace pheap::heap {

class size_classes {
 public:
  explicit size_classes(std::uint64_t chunk_size) : chunk_size_(chunk_size) {
    std::uint32_t n = 0;
    sizes_[n++] = 8;
    for (std::uint64_t s = 16; s <= 128; s += 16) sizes_[n++] = s;
    for (std::uint64_t base = 128; base < chunk_size / 2; base *= 2) {
      for (std::uint64_t q = 5; q <= 8; ++q) sizes_[n++] = base * q / 4;
    }
    count_ = n;
  }

  std::uint32_t count() const noexcept { return count_; }
  std::uint64_t size(std::uint32_t bin) const noexcept { return sizes_[bin]; }
  std::uint64_t max_small() const noexcept { return sizes_[count_ - 1]; }
  std::uint64_t slots(std::uint32_t bin) const noexcept { return chunk_size_ / sizes_[bin]; }

  // Bin for a request of `bytes` (1 <= bytes <= max_small()).
  static std::uint32_t bin_of(std::uint64_t bytes) noexcept {
    if (bytes <= 8) return 0;
    if (bytes <= 128) return static_cast<std::uint32_t>((bytes + 15) / 16);
    const unsigned k = static_cast<unsigned>(std::bit_width(bytes - 1)) - 1;  // 2^k < bytes <= 2^(k+1)
    const std::uint64_t base = 1ull << k, step = base >> 2;
    const std::uint64_t idx = (bytes - base + step - 1) / step;  // 1..4
    return static_cast<std::uint32_t>(8 + 4 * (k - 7) + idx);
  }

 private:
  std::uint64_t chunk_size_;
  std::uint64_t sizes_[max_bins] = {};
  std::uint32_t count_ = 0;
};

}  // namespace pheap::heap
