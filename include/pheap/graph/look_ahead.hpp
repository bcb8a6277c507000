// pheap/graph/look_ahead.hpp — threads that touch the items of a walk ahead of it, so that a
// walk over a heap larger than the pager's buffer keeps many reads in flight.
//
// Why. A breadth-first search visits the vertices of its frontier one after another; each
// visit looks the vertex up (its hash node) and reads its list. Out of core every one of those
// is a fault, and the walk's thread waits for each read in turn: one read in flight, whatever
// the disk could do (an SSD answers random reads several times faster many deep than one at a
// time). The pager's fault read-ahead follows runs of faults, and a walk in
// frontier order makes none. A walk that knows its next items can have them touched ahead.
//
// What it does. For one round (a BFS level) of n items, start(n, touch) lets `threads` threads
// call touch(j) once for every j in [0, n), in increasing order of claim, never more than
// `window` items ahead of the position the walk last reported with progress(k). touch(j) is the
// caller's: typically a look-up (faulting the node in on the look-ahead thread, several at a
// time) and a manager::prefetch of what the walk will read for item j (the pager's queue:
// asynchronous, many pages in flight). finish() ends the round: items not yet claimed are not
// touched, and it returns when no touch() of the round is running (so the caller may reuse
// what touch reads, e.g. swap its frontier).
//
// Contract. touch runs only between start() and the return of finish(), on the look-ahead
// threads, concurrently with the walk and with itself: it must only read what the walk does not
// write during the round. Every touch runs under pheap::guard_faults; a touch that throws (a
// damaged page, a failed prefetch) ends the look-ahead for the rest of the object's life — the
// walk meets the same page itself and reports it. Skipped or failed touches change no result:
// a touch is a hint. The object is not thread-safe: start, progress and finish are the walk's.
//
// Costs. `threads` threads for the object's life, asleep between rounds; progress() is an
// atomic store (and a wake-up only when a look-ahead thread waits for room); each claim takes
// one mutex. In core the
// touches are look-ups of resident data that compete with the walk for the CPU: use it only
// when the heap does not fit in the buffer (graph::walk_look_ahead_wanted).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace pheap::graph {

class look_ahead {
 public:
  look_ahead(unsigned threads, std::size_t window);
  ~look_ahead();  // ends a running round, joins the threads
  look_ahead(const look_ahead&) = delete;
  look_ahead& operator=(const look_ahead&) = delete;

  void start(std::size_t n, std::function<void(std::size_t)> touch);
  void progress(std::size_t k) noexcept;  // the walk is at item k of the round
  void finish();

  // Whether a touch threw (the look-ahead stopped for good).
  bool stopped() const noexcept { return failed_.load(std::memory_order_relaxed); }

 private:
  void run();

  const std::size_t window_;
  std::mutex mu_;
  std::condition_variable cv_;  // a round started, room ahead, or the end
  std::condition_variable idle_cv_;  // a thread left the round
  std::function<void(std::size_t)> touch_;
  std::size_t n_ = 0;
  std::uint64_t round_ = 0;  // under mu_
  bool active_ = false, quit_ = false;
  unsigned busy_ = 0;  // threads inside the round (under mu_)
  std::atomic<std::size_t> next_{0}, at_{0};
  std::atomic<unsigned> waiters_{0};  // threads asleep for room ahead
  std::atomic<bool> failed_{false};
  std::vector<std::thread> threads_;
};

// Whether a walk over every vertex of a heap with `live_bytes` of data through a pager buffer
// of `buffer_bytes` gains from a look_ahead: when the data does not fit in the buffer (the
// walk's reads are then faults; a heap that fits is read ahead whole by prefetch_all).
inline bool walk_look_ahead_wanted(std::uint64_t live_bytes, std::uint64_t buffer_bytes) noexcept {
  return buffer_bytes != 0 && live_bytes > buffer_bytes;
}

}  // namespace pheap::graph
