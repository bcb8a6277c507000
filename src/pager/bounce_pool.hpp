// src/pager/bounce_pool.hpp — the bounce buffers of fills on the faulting thread: a fixed set of
// slots, taken and given back with one atomic operation each, so safe inside a signal handler.
//
// A fill reads the store into a bounce buffer and copies it into the region with UFFDIO_COPY
// (the store never reads into a registered range). The fault workers have a buffer each. Fills
// on the faulting thread (pager_options::fault_fill) run in pheap's SIGBUS handler on any thread
// of the application, where a buffer per thread could be neither mapped safely (mmap may fail,
// and nothing may wait for memory there) nor unmapped when the thread ends (no destructor runs
// for what a signal handler mapped: each thread that ever faulted would leak one). So the pager
// maps kSlots slots at open, as address space only, and a fill holds one while it runs:
//   P1  a slot is held by at most one fill: acquire() sets its bit with a compare-and-swap,
//       release() clears it.
//   P2  acquire() never waits: nullptr while every slot is held (more than kSlots threads in a
//       fill at once); the caller sleeps briefly and its access faults again, as when another
//       thread is filling the page.
//   P3  a slot's memory becomes resident at its first use and stays; acquire() takes the lowest
//       free slot, so the resident slots are at most the most fills that ever ran at once
//       (≤ kSlots) times slot_bytes.
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>

#include "pager/os/memory.hpp"

namespace pheap::paging {

class bounce_pool {
 public:
  static constexpr unsigned kSlots = 64;  // the bits of one word

  bounce_pool() = default;
  // Maps kSlots slots of `slot_bytes` (address space; nothing is touched). Throws as anon_map.
  void open(std::size_t slot_bytes) {
    map_ = anon_map(slot_bytes * kSlots, true);
    slot_bytes_ = slot_bytes;
  }
  bool is_open() const noexcept { return map_.p != nullptr; }

  // P1, P2, P3: the lowest free slot, its index in `slot`; nullptr when all are held.
  std::byte* acquire(unsigned& slot) noexcept {
    std::uint64_t held = held_.load(std::memory_order_relaxed);
    while (held != ~std::uint64_t{0}) {
      const unsigned i = static_cast<unsigned>(std::countr_one(held));
      if (held_.compare_exchange_weak(held, held | (std::uint64_t{1} << i), std::memory_order_acquire,
                                      std::memory_order_relaxed)) {
        slot = i;
        return map_.data() + std::size_t{i} * slot_bytes_;
      }
    }
    return nullptr;
  }
  void release(unsigned slot) noexcept {
    held_.fetch_and(~(std::uint64_t{1} << slot), std::memory_order_release);
  }

 private:
  anon_map map_;
  std::size_t slot_bytes_ = 0;
  std::atomic<std::uint64_t> held_{0};
};

}  // namespace pheap::paging
