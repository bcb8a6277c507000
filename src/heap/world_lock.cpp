#include "heap/world_lock.hpp"

#include <array>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "pheap/error.hpp"

namespace pheap::heap {

namespace {
struct held_entry {
  const world_lock* lock;
  int mode;
};
// Locks of distinct heaps this thread holds at once; 16 nested heaps is far beyond any use.
thread_local std::array<held_entry, 16> t_held{};
}  // namespace

world_lock::world_lock() {
  pthread_rwlockattr_t attr;
  pthread_rwlockattr_init(&attr);
  pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
  const int rc = pthread_rwlock_init(&rw_, &attr);
  pthread_rwlockattr_destroy(&attr);
  if (rc != 0) throw std::system_error(rc, std::generic_category(), "pthread_rwlock_init");
}

world_lock::~world_lock() { pthread_rwlock_destroy(&rw_); }

int world_lock::held_by_me() const noexcept {
  for (const auto& e : t_held) {
    if (e.lock == this) return e.mode;
  }
  return 0;
}

void world_lock::mark(int mode) {
  for (auto& e : t_held) {
    if (e.lock == nullptr) {
      e = {this, mode};
      return;
    }
  }
  throw error(errc::invalid_argument, "", "lock heap", "more than 16 heaps locked by one thread");
}

void world_lock::unmark() noexcept {
  for (auto& e : t_held) {
    if (e.lock == this) {
      e = {nullptr, 0};
      return;
    }
  }
}

world_lock::shared::shared(world_lock& w) : w_(&w), owns_(w.held_by_me() == 0) {
  if (!owns_) return;
  pthread_rwlock_rdlock(&w_->rw_);
  try {
    w_->mark(1);
  } catch (...) {
    pthread_rwlock_unlock(&w_->rw_);
    throw;
  }
}

world_lock::shared::~shared() {
  if (!owns_) return;
  w_->unmark();
  pthread_rwlock_unlock(&w_->rw_);
}

world_lock::exclusive::exclusive(world_lock& w) : w_(&w), owns_(false) {
  const int mode = w.held_by_me();
  if (mode == 2) return;
  if (mode == 1) {
    throw error(errc::invalid_argument, "", "flush",
                "called while this thread is inside a heap operation (e.g. from a constructor "
                "run by construct<T>)");
  }
  pthread_rwlock_wrlock(&w_->rw_);
  try {
    w_->mark(2);
  } catch (...) {
    pthread_rwlock_unlock(&w_->rw_);
    throw;
  }
  owns_ = true;
}

world_lock::exclusive::~exclusive() {
  if (!owns_) return;
  w_->unmark();
  pthread_rwlock_unlock(&w_->rw_);
}

}  // namespace pheap::heap
