#include "heap/chunk_directory.hpp"

#include <algorithm>
#include <bit>

namespace pheap::heap {

std::uint64_t chunk_directory::find_next(std::uint64_t from, std::uint64_t limit,
                                         bool bit) const noexcept {
  std::uint64_t c = from;
  while (c < limit) {
    std::uint64_t word = map_[c / 64];
    if (!bit) word = ~word;
    word &= ~0ull << (c % 64);  // ignore bits below c
    if (word != 0) {
      const std::uint64_t r = (c & ~63ull) + static_cast<std::uint64_t>(std::countr_zero(word));
      return std::min(r, limit);
    }
    c = (c & ~63ull) + 64;
  }
  return limit;
}

std::uint64_t chunk_directory::allocate_run(std::uint64_t n) noexcept {
  const std::uint64_t total = h_->num_chunks;
  if (n == 0 || n > total) return none;
  std::uint64_t c = h_->free_hint;
  for (;;) {
    c = find_next(c, total, false);
    if (c + n > total) return none;
    const std::uint64_t busy = find_next(c, c + n, true);
    if (busy == c + n) break;
    c = busy + 1;
  }
  for (std::uint64_t i = c; i < c + n; ++i) map_[i / 64] |= 1ull << (i % 64);
  h_->chunks_in_use += n;
  h_->chunk_high = std::max(h_->chunk_high, c + n);
  if (c == h_->free_hint) h_->free_hint = c + n;
  return c;
}

void chunk_directory::release_run(std::uint64_t c, std::uint64_t n) noexcept {
  for (std::uint64_t i = c; i < c + n; ++i) {
    dir_[i] = chunk_entry{};
    map_[i / 64] &= ~(1ull << (i % 64));
  }
  h_->chunks_in_use -= n;
  h_->free_hint = std::min(h_->free_hint, c);
}

void chunk_directory::list_push(std::uint32_t bin, std::uint64_t c) noexcept {
  chunk_entry& e = dir_[c];
  const std::uint32_t head = h_->bin_head[bin];
  e.next = head;
  e.prev = 0;
  if (head != 0) dir_[head - 1].prev = static_cast<std::uint32_t>(c + 1);
  h_->bin_head[bin] = static_cast<std::uint32_t>(c + 1);
}

void chunk_directory::list_remove(std::uint32_t bin, std::uint64_t c) noexcept {
  chunk_entry& e = dir_[c];
  if (e.prev != 0) {
    dir_[e.prev - 1].next = e.next;
  } else {
    h_->bin_head[bin] = e.next;
  }
  if (e.next != 0) dir_[e.next - 1].prev = e.prev;
  e.next = e.prev = 0;
}

}  // namespace pheap::heap
