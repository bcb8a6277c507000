// src/heap/segment_allocator.hpp — the Metall-style allocator over one contiguous region.
//
// Works on any memory range [base, base + capacity) that reads zeros where never written
// (the pager region in production, anonymous mmap in unit tests). Returns OFFSETS from base;
// offset 0 (the heap header) is never a valid allocation and means "failed".
//
// Allocation paths:
//   * small (<= chunk_size / 2): size class -> this thread's cache shard (fast path: one
//     uncontended spinlock, no persistent write) -> on a miss, refill half a cache from the
//     bin: world lock shared, bin lock, take slots from the first non-full chunk's bitset,
//     taking a fresh chunk (chunk lock) when the bin has none;
//   * large: world shared, chunk lock, first-fit run of whole chunks in the chunk bitmap.
// Freeing small objects pushes onto the calling thread's cache shard; a full shard spills half
// of its entries back to the bitsets. A small chunk whose last slot is freed, and every large
// run, is released at once: its directory entries are cleared and the release hook (if any)
// is told the byte range, so the store can punch a hole.
//
// Flush consistency (the choice, and why): persistent metadata (header, chunk directory,
// bitmap, bitsets, bin lists) is only ever written under the world lock held SHARED plus the
// relevant bin/chunk lock, and each such critical section leaves it self-consistent.
// manager::flush() takes the world lock EXCLUSIVE, calls drain_caches() (so no slot is
// "allocated in the bitset but sitting in a DRAM cache" in the committed image), runs the
// pager flush, then releases it. Cache hits (the hot path) never touch persistent metadata,
// so they keep running during a flush; only slow paths wait. Consequence: a committed
// watermark never leaks cached slots and never shows a half-updated bitset/list/directory.
//
// Failure modes: capacity exhausted -> 0 (callers turn it into nullptr / std::bad_alloc);
// alignment > 4096 or not a power of two -> 0; freeing an offset that is not the start of a
// live allocation -> pheap::error(invalid_argument) when detectable (outside the data area,
// free chunk, slot misaligned, slot not allocated on the slow path); a double free that hits
// a cache is NOT detected. Mutations on a read-only heap -> pheap::error(read_only).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "heap/chunk_directory.hpp"
#include "heap/heap_header.hpp"
#include "heap/object_cache.hpp"
#include "heap/size_class.hpp"
#include "heap/world_lock.hpp"

namespace pheap::heap {

struct allocator_usage {
  std::uint64_t chunk_size = 0;
  std::uint64_t num_chunks = 0;
  std::uint64_t chunks_in_use = 0;
  std::uint64_t small_chunks = 0;
  std::uint64_t large_chunks = 0;
  std::uint64_t small_bytes = 0;    // bytes in occupied small slots (incl. cached free ones)
  std::uint64_t large_bytes = 0;    // bytes in large runs
  std::uint64_t cached_objects = 0; // free slots held by per-thread caches
};

class segment_allocator {
 public:
  // Layout for a heap of `capacity` bytes and `chunk_size` chunks. Throws
  // error(invalid_argument) when chunk_size is not a power of two in [64 KiB, 1 GiB] or the
  // capacity cannot hold the metadata plus one chunk.
  static layout compute_layout(std::uint64_t capacity, std::uint64_t chunk_size);

  // Writes a fresh header into zeroed memory at base (the rest stays zero = all free).
  static void format(std::byte* base, std::uint64_t capacity, std::uint64_t chunk_size);

  // Attaches to a formatted heap. Validates the header against `capacity` and throws
  // error(corrupt / not_a_datastore / newer_format) naming `path` when it does not fit.
  // Reads only; O(1) in heap size.
  segment_allocator(std::byte* base, std::uint64_t capacity, bool read_only,
                    const std::string& path);
  ~segment_allocator();

  segment_allocator(const segment_allocator&) = delete;
  segment_allocator& operator=(const segment_allocator&) = delete;

  std::byte* base() const noexcept { return base_; }
  heap_header& header() const noexcept { return *h_; }
  bool read_only() const noexcept { return read_only_; }
  world_lock& world() noexcept { return world_; }
  const size_classes& classes() const noexcept { return classes_; }

  // 0 on exhaustion. bytes == 0 is treated as 1.
  std::uint64_t allocate(std::uint64_t bytes);
  // align: power of two <= 4096, else 0.
  std::uint64_t allocate_aligned(std::uint64_t bytes, std::uint64_t align);
  void deallocate(std::uint64_t off);
  // Usable bytes of the allocation starting at `off` (its size class or run size).
  std::uint64_t usable_size(std::uint64_t off) const;

  // Returns every cached slot to the bitsets (releasing chunks that become empty); returns
  // how many. Takes the world lock shared; manager::flush() calls it holding it exclusive so
  // that the drain and the commit are one step. Also run automatically when an allocation
  // finds no free chunk, before giving up.
  std::uint64_t drain_caches();
  // True iff nothing is allocated (cached free slots do not count). Takes the world lock.
  bool all_memory_deallocated();
  allocator_usage usage() const;
  // Bytes from the region's start that hold the heap's metadata and every chunk ever used:
  // beyond them the region has never been written (chunk_high).
  std::uint64_t used_extent() const noexcept;
  // The same, read from a copy of the heap's first `len` bytes (its header) before the region
  // is mapped; 0 when they are not a valid header of a heap of `capacity` bytes (the attach
  // then reports why).
  static std::uint64_t used_extent_of(const std::byte* header, std::size_t len,
                                      std::uint64_t capacity) noexcept;

  // Invariant checker: appends one message per violation. Caller holds the world lock
  // exclusive or the heap is not shared (read-only check tool).
  void check(std::vector<std::string>& problems) const;
  // True iff [off, off+len) lies inside one live allocation (used by the directory checker).
  bool is_live_range(std::uint64_t off, std::uint64_t len) const;

  // Called with (offset, length) of every chunk range released, under the chunk lock.
  // Must not call back into the allocator.
  void set_release_hook(std::function<void(std::uint64_t, std::uint64_t)> hook) {
    release_hook_ = std::move(hook);
  }

 private:
  std::uint64_t allocate_small(std::uint32_t bin);
  std::uint64_t allocate_large(std::uint64_t bytes);
  std::uint64_t allocate_aligned_once(std::uint64_t bytes, std::uint64_t align);
  // Takes up to k slots of `bin` from the bitsets; returns how many. World lock held.
  std::size_t refill(std::uint32_t bin, std::uint64_t* out, std::size_t k);
  // Returns slots to the bitsets. World lock held.
  void release_slots(std::uint32_t bin, const std::uint64_t* offs, std::size_t n);
  void release_slot_locked(std::uint32_t bin, std::uint64_t off);
  void free_large(std::uint64_t c);
  void require_writable(const char* op) const;
  [[noreturn]] void bad_free(std::uint64_t off, const char* why) const;
  std::uint64_t chunk_of(std::uint64_t off) const noexcept {
    return (off - h_->data_off) >> h_->chunk_shift;
  }
  std::uint64_t chunk_off(std::uint64_t c) const noexcept {
    return h_->data_off + (c << h_->chunk_shift);
  }
  void* bits_area(std::uint64_t c) const noexcept {
    return base_ + h_->bits_off + c * h_->bits_stride;
  }

  std::byte* base_;
  heap_header* h_;
  bool read_only_;
  std::string path_;
  size_classes classes_;
  chunk_directory dir_;
  object_cache cache_;
  world_lock world_;
  std::mutex chunk_mutex_;
  std::unique_ptr<std::mutex[]> bin_mutex_;
  std::function<void(std::uint64_t, std::uint64_t)> release_hook_;
};

}  // namespace pheap::heap
