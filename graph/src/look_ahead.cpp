// The look-ahead threads behind pheap/graph/look_ahead.hpp.
//
// A round: start() publishes (n, touch) under mu_ and wakes every thread. A thread claims the
// next item with next_.fetch_add; an item at or past at_ + window waits (the thread sleeps on
// cv_, counted in waiters_, which progress() reads after storing at_ to decide whether to take
// mu_ and notify: a waiter counted itself before it compared at_, under mu_, so either it sees
// the new at_ or progress() sees it counted and notifies once it sleeps). finish() clears
// active_ under mu_, wakes the waiters and waits until busy_ is 0; a thread that finds the round
// over (or claims past n) leaves it and decrements busy_. round_ lets a thread tell a new round
// from the one it already left.
#include <pheap/graph/look_ahead.hpp>

#include <pheap/fault_guard.hpp>

#include <algorithm>

namespace pheap::graph {

look_ahead::look_ahead(unsigned threads, std::size_t window) : window_(std::max<std::size_t>(window, 1)) {
  threads_.reserve(threads);
  for (unsigned i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
}

look_ahead::~look_ahead() {
  finish();
  {
    std::lock_guard lk(mu_);
    quit_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void look_ahead::start(std::size_t n, std::function<void(std::size_t)> touch) {
  finish();
  if (threads_.empty() || failed_.load(std::memory_order_relaxed)) return;
  {
    std::lock_guard lk(mu_);
    touch_ = std::move(touch);
    n_ = n;
    next_.store(0);
    at_.store(0);
    ++round_;
    active_ = true;
  }
  cv_.notify_all();
}

void look_ahead::progress(std::size_t k) noexcept {
  at_.store(k);
  if (waiters_.load() != 0) {
    std::lock_guard lk(mu_);  // a waiter between its check and its sleep holds mu_
    cv_.notify_all();
  }
}

void look_ahead::finish() {
  std::unique_lock lk(mu_);
  if (!active_) return;
  active_ = false;
  cv_.notify_all();
  idle_cv_.wait(lk, [&] { return busy_ == 0; });
  touch_ = nullptr;
}

void look_ahead::run() {
  std::uint64_t seen = 0;
  std::unique_lock lk(mu_);
  for (;;) {
    cv_.wait(lk, [&] { return quit_ || (active_ && round_ != seen); });
    if (quit_) return;
    seen = round_;
    ++busy_;
    const std::size_t n = n_;
    const std::function<void(std::size_t)>& touch = touch_;
    for (;;) {
      if (!active_) break;
      const std::size_t j = next_.fetch_add(1, std::memory_order_relaxed);
      if (j >= n) break;
      // Room ahead: at most window_ items past the walk.
      waiters_.fetch_add(1);
      while (active_ && j >= at_.load() + window_) cv_.wait(lk);
      waiters_.fetch_sub(1);
      if (!active_) break;
      lk.unlock();
      bool ok = true;
      try {
        pheap::guard_faults([&] { touch(j); });
      } catch (...) {
        ok = false;
      }
      lk.lock();
      if (!ok) {
        failed_.store(true, std::memory_order_relaxed);
        break;
      }
      if (failed_.load(std::memory_order_relaxed)) break;
    }
    --busy_;
    if (busy_ == 0) idle_cv_.notify_all();
  }
}

}  // namespace pheap::graph
