// src/heap/world_lock.hpp — the heap's stop-the-world lock.
//
// Every operation that changes persistent allocator or directory metadata holds this lock
// SHARED for its whole duration (including a user constructor run by construct<T>, so a
// construction is never half-visible to a flush); manager::flush() holds it EXCLUSIVE while
// it drains the per-thread caches and runs the pager flush. So every committed watermark sees
// metadata between operations, never inside one.
//
// Properties:
//   * Writer-preferring (glibc PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP): a flush is not
//     starved by a steady stream of allocations.
//   * Re-entrant for the holder: a thread that already holds it (shared or exclusive) does not
//     acquire again (a user constructor that allocates from the same heap would otherwise
//     deadlock behind a waiting flush). Tracked per thread in a small thread_local table.
//   * Asking for exclusive while holding shared (flush() from inside a constructor) throws
//     pheap::error(invalid_argument) instead of deadlocking.
// Caveat: a constructor run by construct<T> must not block on another thread that needs this
// heap's slow paths while a flush is pending (classic lock-order inversion).
#pragma once

#include <pthread.h>

#include <cstdint>

namespace pheap::heap {

class world_lock {
 public:
  world_lock();
  ~world_lock();
  world_lock(const world_lock&) = delete;
  world_lock& operator=(const world_lock&) = delete;

  // 0 = not held by this thread, 1 = shared, 2 = exclusive.
  int held_by_me() const noexcept;

  class shared {
   public:
    explicit shared(world_lock& w);
    ~shared();
    shared(const shared&) = delete;
    shared& operator=(const shared&) = delete;

   private:
    world_lock* w_;
    bool owns_;
  };

  class exclusive {
   public:
    explicit exclusive(world_lock& w);  // throws error(invalid_argument) if held shared
    ~exclusive();
    exclusive(const exclusive&) = delete;
    exclusive& operator=(const exclusive&) = delete;

   private:
    world_lock* w_;
    bool owns_;
  };

 private:
  void mark(int mode);
  void unmark() noexcept;
  pthread_rwlock_t rw_;
};

}  // namespace pheap::heap
