// src/pager/lock_rank.hpp — the pager's lock order (pager_impl.hpp) as ranks, checked in
// debug builds, in the style of the invariant checkers: a lock is taken only while every lock
// the thread holds has a lower rank, so no two threads can wait for each other's locks.
//
//   rank         lock                                     taken under
//   flush        flusher::mu_, pager_impl::refresh_mu_    nothing
//                (read-only pagers, which never flush)
//   evict_batch  evictor::batch_mu_                       flush
//   scan         pager_core::scan_mu (wp_async scans)     flush, evict_batch
//   errors       error_channel's                          any of the above
//   leaf         evictor::write_back_mu_, fault_service::pf_mu_, resident_clock's,
//                victim_cache's pending list, read_ahead's: nothing is taken under a leaf,
//                not even another leaf
// (The buffer budget's mutexes, which its condition variables wait on, and the limit pool's
// are leaves too, unranked: buffer_budget.hpp and limit_pool.hpp say what they guard.)
//
// ranked_mutex<R> is a std::mutex where NDEBUG is defined (no cost), else a checked_mutex<R>:
// lock() first checks the thread's held ranks (a thread-local stack of the ranked locks it
// holds, released in any order) and, against the order, prints both locks and aborts, as an
// assertion does. checked_mutex is there in every build, for the tests of the checker.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <type_traits>

namespace pheap::paging {

enum class lock_rank : unsigned char { flush = 1, evict_batch, scan, errors, leaf };

#ifdef NDEBUG
inline constexpr bool kCheckLockRanks = false;
#else
inline constexpr bool kCheckLockRanks = true;
#endif

namespace lock_ranks {

inline const char* name(lock_rank r) noexcept {
  switch (r) {
    case lock_rank::flush: return "flush (flusher::mu_)";
    case lock_rank::evict_batch: return "evict_batch (evictor::batch_mu_)";
    case lock_rank::scan: return "scan (pager_core::scan_mu)";
    case lock_rank::errors: return "errors (error_channel)";
    case lock_rank::leaf: return "leaf";
  }
  return "?";
}

// The ranked locks this thread holds, in the order taken (trivial: no dynamic initialisation,
// so a fill on the faulting thread, inside the SIGBUS handler, may use it too).
struct held {
  static constexpr int kMax = 8;
  lock_rank ranks[kMax];
  int n;
};
inline thread_local held tls_held{};

[[noreturn]] inline void violated(lock_rank taking, lock_rank holding) noexcept {
  std::fprintf(stderr,
               "pheap: lock order violated (src/pager/lock_rank.hpp): taking %s while holding %s\n",
               name(taking), name(holding));
  std::abort();
}

// Before taking a lock of rank r: every lock held must rank below it.
inline void before_lock(lock_rank r) noexcept {
  held& h = tls_held;
  for (int i = 0; i < h.n; ++i) {
    if (h.ranks[i] >= r) violated(r, h.ranks[i]);
  }
  if (h.n == held::kMax) violated(r, h.ranks[h.n - 1]);  // deeper than the order allows
}

inline void locked(lock_rank r) noexcept {
  held& h = tls_held;
  h.ranks[h.n++] = r;
}

// The latest lock of rank r the thread took is released (unique_lock may release out of order).
inline void unlocked(lock_rank r) noexcept {
  held& h = tls_held;
  for (int i = h.n - 1; i >= 0; --i) {
    if (h.ranks[i] != r) continue;
    for (int j = i + 1; j < h.n; ++j) h.ranks[j - 1] = h.ranks[j];
    --h.n;
    return;
  }
}

}  // namespace lock_ranks

// A std::mutex whose lock() checks the lock order first (Lockable: lock_guard, unique_lock).
template <lock_rank R>
class checked_mutex {
 public:
  void lock() {
    lock_ranks::before_lock(R);
    mu_.lock();
    lock_ranks::locked(R);
  }
  bool try_lock() {
    lock_ranks::before_lock(R);
    if (!mu_.try_lock()) return false;
    lock_ranks::locked(R);
    return true;
  }
  void unlock() {
    lock_ranks::unlocked(R);
    mu_.unlock();
  }

 private:
  std::mutex mu_;
};

template <lock_rank R>
using ranked_mutex = std::conditional_t<kCheckLockRanks, checked_mutex<R>, std::mutex>;

}  // namespace pheap::paging
