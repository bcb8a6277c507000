// src/heap/spinlock.hpp — a test-and-test-and-set lock for the per-thread cache shards,
// whose critical sections are a handful of instructions. Yields after a short spin.
#pragma once

#include <atomic>
#include <thread>

namespace pheap::heap {

class spinlock {
 public:
  void lock() noexcept {
    for (unsigned spins = 0;; ++spins) {
      if (!flag_.exchange(true, std::memory_order_acquire)) return;
      while (flag_.load(std::memory_order_relaxed)) {
        if (++spins > 64) std::this_thread::yield();
      }
    }
  }
  void unlock() noexcept { flag_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> flag_{false};
};

}  // namespace pheap::heap
