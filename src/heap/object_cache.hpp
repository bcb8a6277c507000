// src/heap/object_cache.hpp — per-thread caches of free small-object slots (DRAM only).
//
// A cached slot is FREE for the application but still marked allocated in its chunk's
// persistent bitset. Hence the flush rule (see segment_allocator.hpp): before a flush commits,
// every cache is drained back into the bitsets under the exclusive world lock, so a committed
// watermark never contains "allocated but unreachable" slots from caches.
//
// Shards: max(4, 2 x hardware threads) shards, each a spinlock plus, per cacheable bin, a
// bounded LIFO of slot offsets. A thread picks shard (thread ordinal % shards), so threads
// rarely share a shard; any thread may free into any shard (objects may be handed between
// threads freely). Only bins of size <= max_cached_size are cached.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "heap/heap_header.hpp"
#include "heap/spinlock.hpp"

namespace pheap::heap {

class size_classes;

class object_cache {
 public:
  static constexpr std::uint64_t max_cached_size = 16 * 1024;

  explicit object_cache(const size_classes& classes);

  std::uint32_t shard_count() const noexcept { return nshards_; }
  // The calling thread's shard.
  std::uint32_t my_shard() const noexcept;
  bool cacheable(std::uint32_t bin) const noexcept { return cap_[bin] != 0; }
  std::uint32_t capacity(std::uint32_t bin) const noexcept { return cap_[bin]; }

  // Pops one offset; 0 if empty.
  std::uint64_t pop(std::uint32_t shard, std::uint32_t bin) noexcept;
  // Pushes `off`. If the shard's bin is full, moves `off` plus half of the cached offsets
  // into `spill` (cleared first) for the caller to return to the bins, and returns false.
  bool push(std::uint32_t shard, std::uint32_t bin, std::uint64_t off,
            std::vector<std::uint64_t>& spill);
  // Pushes up to `n` offsets from `offs`; returns how many were taken.
  std::size_t push_many(std::uint32_t shard, std::uint32_t bin, const std::uint64_t* offs,
                        std::size_t n) noexcept;
  // Removes every cached offset of every shard (appended to out[bin]).
  void drain(std::vector<std::vector<std::uint64_t>>& out);
  std::uint64_t cached_objects() const noexcept;

 private:
  struct alignas(64) shard {
    mutable spinlock lock;
    std::unique_ptr<std::uint64_t[]> slots;  // bin b uses [start_[b], start_[b] + cap_[b])
    std::uint32_t count[max_bins] = {};
  };

  std::uint32_t nshards_;
  std::uint32_t nbins_;
  std::uint32_t cap_[max_bins] = {};
  std::uint64_t start_[max_bins] = {};
  std::unique_ptr<shard[]> shards_;
};

}  // namespace pheap::heap
