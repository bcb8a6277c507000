// metall/utility/mutex.hpp (pheap's Metall compatibility layer) — striped process-wide
// mutexes for data structures in the heap.
//
// A std::mutex inside a persistent heap would be stored in whatever state it had at the last
// flush; these live in the process instead. mutex_lock<N>(i) locks mutex i % N of a static
// array of N (one array per N, shared by every caller in the process) and returns the lock.
#pragma once

#include <cstddef>
#include <mutex>

namespace metall::utility::mutex {

template <std::size_t N>
std::mutex& stripe(std::size_t index) noexcept {
  static std::mutex stripes[N];
  return stripes[index % N];
}

template <std::size_t N>
std::unique_lock<std::mutex> mutex_lock(std::size_t index) {
  return std::unique_lock<std::mutex>(stripe<N>(index));
}

}  // namespace metall::utility::mutex
