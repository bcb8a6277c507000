// src/heap/slot_bitset.hpp — the per-chunk slot bitset of a small chunk (in the region).
//
// Two levels, stored back to back at the chunk's bitset area:
//   L0: one bit per slot, 1 = allocated. Bits past the last slot are kept at 1.
//   L1: one bit per L0 word, 1 = that L0 word is all ones (full). Bits past the last L0 word
//       are kept at 1.
// Invariant (checked by check()): L1 bit w == (L0 word w == ~0) for every w, and the number
// one bits over real slots equals the chunk entry's `used`.
// Finding a free slot scans at most L1 words (64 for an 8-byte class in a 2 MiB chunk),
// then one L0 word. Not thread-safe: callers hold the owning bin's lock.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

namespace pheap::heap {

class slot_bitset {
 public:
  static constexpr std::uint64_t none = ~0ull;

  // Bytes needed by a bitset of `slots` bits (rounded to 64).
  static std::uint64_t bytes_for(std::uint64_t slots) noexcept {
    const std::uint64_t l0 = (slots + 63) / 64, l1 = (l0 + 63) / 64;
    return ((l0 + l1) * 8 + 63) & ~63ull;
  }

  slot_bitset(void* area, std::uint64_t slots) noexcept
      : l0_(static_cast<std::uint64_t*>(area)),
        slots_(slots),
        l0_words_((slots + 63) / 64),
        l1_words_((l0_words_ + 63) / 64),
        l1_(l0_ + l0_words_) {}

  // Clears every slot (called when a chunk is assigned to a bin).
  void init() noexcept {
    std::memset(l0_, 0, (l0_words_ + l1_words_) * 8);
    if (slots_ % 64 != 0) l0_[l0_words_ - 1] = ~0ull << (slots_ % 64);
    if (l0_words_ % 64 != 0) l1_[l1_words_ - 1] = ~0ull << (l0_words_ % 64);
    if (l0_[l0_words_ - 1] == ~0ull) set_l1(l0_words_ - 1);  // a last word holding no slot
  }

  // Marks and returns a free slot, or `none` if the chunk is full.
  std::uint64_t acquire() noexcept {
    for (std::uint64_t i = 0; i < l1_words_; ++i) {
      if (l1_[i] == ~0ull) continue;
      const std::uint64_t w = i * 64 + static_cast<std::uint64_t>(std::countr_one(l1_[i]));
      const std::uint64_t b = static_cast<std::uint64_t>(std::countr_one(l0_[w]));
      l0_[w] |= 1ull << b;
      if (l0_[w] == ~0ull) set_l1(w);
      return w * 64 + b;
    }
    return none;
  }

  void release(std::uint64_t slot) noexcept {
    const std::uint64_t w = slot / 64;
    l0_[w] &= ~(1ull << (slot % 64));
    l1_[w / 64] &= ~(1ull << (w % 64));
  }

  bool test(std::uint64_t slot) const noexcept { return (l0_[slot / 64] >> (slot % 64)) & 1; }

  // Structural check: tail bits set, L1 mirrors L0 fullness. Returns the number of allocated
  // real slots in *allocated. False if the structure is broken.
  bool check(std::uint64_t* allocated) const noexcept {
    std::uint64_t n = 0;
    for (std::uint64_t w = 0; w < l0_words_; ++w) {
      const bool full = l0_[w] == ~0ull;
      if (full != static_cast<bool>((l1_[w / 64] >> (w % 64)) & 1)) return false;
      std::uint64_t word = l0_[w];
      if (w == l0_words_ - 1 && slots_ % 64 != 0) {
        const std::uint64_t tail = ~0ull << (slots_ % 64);
        if ((word & tail) != tail) return false;
        word &= ~tail;
      }
      n += static_cast<std::uint64_t>(std::popcount(word));
    }
    if (l0_words_ % 64 != 0) {
      const std::uint64_t tail = ~0ull << (l0_words_ % 64);
      if ((l1_[l1_words_ - 1] & tail) != tail) return false;
    }
    *allocated = n;
    return true;
  }

 private:
  void set_l1(std::uint64_t w) noexcept { l1_[w / 64] |= 1ull << (w % 64); }

  std::uint64_t* l0_;
  std::uint64_t slots_, l0_words_, l1_words_;
  std::uint64_t* l1_;
};

}  // namespace pheap::heap
