// src/pager/error_channel.hpp — where the pager's background threads leave a store error for
// the next flush() to report.
//
// Contract:
//   * Fault workers (a fill whose store read failed: the page is poisoned, the access gets
//     SIGBUS) and the evictor (a write-back that failed: the pages stay resident and dirty)
//     have no caller to throw to; they record() the error here, and only once the data it
//     concerns is safe (a failed read: the page is `filling`, the worker's, until poisoned;
//     a failed write-back: its pages dirty again, evictor.cpp step 6): a flush may take
//     the error at its step 1 while the batch that recorded it still runs, and so collect
//     nothing of that batch. (Recorded before its pages were dirty again, the error let the
//     next flush succeed without them.) flush()'s own store errors are thrown to its caller
//     directly and never pass through the channel.
//   * The channel keeps the first error recorded since it was last emptied; later ones are
//     dropped (the data they concern stays protected: poisoned, or resident and dirty for the
//     next write).
//   * throw_pending() empties the channel and throws what it held, so each error is reported
//     by exactly one flush. flush() calls it before it writes anything (an error of the past
//     epoch fails this flush) and again before it commits (one recorded while it ran).
//   * Its mutex is the innermost lock of the pager but for the leaves (lock_rank.hpp: flush →
//     evict_batch → scan → this) and is held only to swap the pointer.
#pragma once

#include <exception>
#include <mutex>
#include <utility>

#include "pager/lock_rank.hpp"

namespace pheap::paging {

class error_channel {
 public:
  // Keeps `e` unless an earlier error is still pending.
  void record(std::exception_ptr e) {
    std::lock_guard lk(mu_);
    if (!pending_) pending_ = std::move(e);
  }

  // Empties the channel; rethrows the pending error, if there was one.
  void throw_pending() {
    std::exception_ptr e;
    {
      std::lock_guard lk(mu_);
      e = std::exchange(pending_, nullptr);
    }
    if (e) std::rethrow_exception(e);
  }

 private:
  ranked_mutex<lock_rank::errors> mu_;
  std::exception_ptr pending_;
};

}  // namespace pheap::paging
