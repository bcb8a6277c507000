// The bounded buffer's slots (see buffer_budget.hpp for the invariants B1-B7).
#include "pager/buffer_budget.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace pheap::paging {

buffer_budget::~buffer_budget() {
  if (!pool_) return;
  pool_->give(pooled(), member_);
  pool_->leave(member_);
}

bool buffer_budget::share(std::shared_ptr<limit_pool> pool, std::int64_t unit, std::int64_t fixed) {
  const int member = pool->join();
  if (member < 0) return false;
  pool_ = std::move(pool);
  member_ = member;
  unit_ = unit;
  fixed_ = fixed;
  pool_->take_anyway(pooled(), member_);
  return true;
}

void buffer_budget::configure(std::size_t region_pages, std::size_t buffer_pages,
                              double high_watermark, double low_watermark) {
  region_pages_ = region_pages;
  max_pages_ = std::min(std::max(buffer_pages, min_pages), region_pages);
  high_fraction_ = high_watermark;
  low_fraction_ = low_watermark;
  lowest_target_.store(max_pages_, std::memory_order_relaxed);
  std::lock_guard lk(retarget_mu_);
  sampled_ = max_pages_;
  retarget(max_pages_);
}

void buffer_budget::retarget(std::size_t pages) {
  const std::size_t t = std::clamp(pages, std::min(min_pages, max_pages_), max_pages_);
  // B7: the fractions, with a small buffer's gaps in pages (none where the region fits: the
  // evictor never runs, and used may reach the target).
  const bool evicting = t < region_pages_;
  const std::size_t ahead = evicting ? std::min(kAheadPages, t / 8) : 0;
  const std::size_t high = std::clamp<std::size_t>(
      static_cast<std::size_t>(std::ceil(high_fraction_ * static_cast<double>(t))), 1, t - ahead);
  const std::size_t round = evicting ? std::max<std::size_t>(1, std::min(kRoundPages, t / 2)) : 1;
  const std::size_t low = std::min<std::size_t>(
      static_cast<std::size_t>(low_fraction_ * static_cast<double>(t)), high - std::min(round, high));
  // Lowering: watermarks first, so that no grant sees a target below its high mark.
  low_pages_.store(low, std::memory_order_relaxed);
  high_pages_.store(high, std::memory_order_relaxed);
  target_pages_.store(t, std::memory_order_release);
  if (t < lowest_target_.load(std::memory_order_relaxed)) {
    lowest_target_.store(t, std::memory_order_relaxed);
  }
  kick_at_high(used());
}

void buffer_budget::follow(sampler s, std::chrono::milliseconds period) {
  sampler_ = std::move(s);
  period_ = period;
}

void buffer_budget::follow_limit() {
  if (!sampler_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_sample_ < period_) return;
  last_sample_ = now;
  resamples_.fetch_add(1, std::memory_order_relaxed);
  const auto resident = static_cast<std::size_t>(std::max<std::int64_t>(0, occupied()));
  std::size_t lent;
  {
    std::lock_guard lk(retarget_mu_);
    lent = lent_;
  }
  // Lent memory is the pager's, not the rest of the process's (B5): counted with its pages,
  // and then taken off the target, it is counted once, touched or not.
  const std::size_t t = sampler_(resident + lent);
  std::lock_guard lk(retarget_mu_);
  sampled_ = t;
  if (lent_target() != target_pages()) retarget(lent_target());
}

void buffer_budget::lend(std::size_t n) {
  if (!sampler_ || n == 0) return;
  {
    std::lock_guard lk(retarget_mu_);
    lent_ += n;
    retarget(lent_target());
  }
  // As a fault waits for a slot (reserve), until used is at most the new high watermark.
  waiters_.fetch_add(1);
  while (used() > high_pages() && !stop_.load(std::memory_order_acquire) &&
         !writeback_failing_.load(std::memory_order_acquire)) {
    kick_evictor();
    std::unique_lock lk(free_mu_);
    free_cv_.wait_for(lk, std::chrono::milliseconds(5));
  }
  waiters_.fetch_sub(1);
}

void buffer_budget::give_back(std::size_t n) {
  if (!sampler_ || n == 0) return;
  std::lock_guard lk(retarget_mu_);
  lent_ -= std::min(n, lent_);
  retarget(lent_target());
}

bool buffer_budget::try_reserve(std::size_t limit) {
  std::int64_t o = occupied_.load(std::memory_order_acquire);
  for (;;) {
    if (o - pinned_.load(std::memory_order_acquire) >= static_cast<std::int64_t>(limit)) {
      return false;
    }
    if (occupied_.compare_exchange_weak(o, o + 1, std::memory_order_acq_rel)) break;
  }
  if (pool_) {  // B6; below the smallest working buffer the pool never refuses (as B4's floor)
    const std::int64_t used_after = o + 1 - pinned_.load(std::memory_order_acquire);
    if (used_after <= static_cast<std::int64_t>(std::min(min_pages, max_pages_))) {
      pool_->take_anyway(unit_, member_);
    } else if (!pool_->take(unit_, member_)) {
      occupied_.fetch_sub(1, std::memory_order_acq_rel);
      return false;
    }
  }
  kick_at_high(o + 1 - pinned_.load(std::memory_order_acquire));
  return true;
}

bool buffer_budget::reserve() {
  if (try_reserve(target_pages())) return true;
  waits_.fetch_add(1, std::memory_order_relaxed);
  waiters_.fetch_add(1);
  bool ok = false;
  for (;;) {
    note_if_short();
    kick_evictor();
    if (try_reserve(target_pages())) {
      ok = true;
      break;
    }
    if (stop_.load(std::memory_order_acquire)) break;
    if (writeback_failing_.load(std::memory_order_acquire)) {
      // Write-back is failing: evicting would lose data, waiting would hang the faulting
      // thread. Overflow the buffer instead (B2); the error surfaces at flush().
      occupied_.fetch_add(1, std::memory_order_acq_rel);
      if (pool_) pool_->take_anyway(unit_, member_);
      ok = true;
      break;
    }
    std::unique_lock lk(free_mu_);
    free_cv_.wait_for(lk, std::chrono::milliseconds(5));
  }
  waiters_.fetch_sub(1);
  return ok;
}

void buffer_budget::note_if_short() noexcept {
  // Held down below its own maximum, and below a fair share: the others hold the rest.
  if (!pool_ || target_pages() >= max_pages_) return;
  const int n = pool_->members();
  if (n > 1 && pooled() < pool_->cap() / n) pool_->note_wanting(member_);  // B6, P3
}

void buffer_budget::release(std::size_t n) {
  occupied_.fetch_sub(static_cast<std::int64_t>(n), std::memory_order_acq_rel);
  if (pool_) pool_->give(static_cast<std::int64_t>(n) * unit_, member_);
  if (waiters_.load(std::memory_order_acquire) > 0) notify_freed();
}

void buffer_budget::retake(std::size_t n) {
  if (n == 0) return;
  occupied_.fetch_add(static_cast<std::int64_t>(n), std::memory_order_acq_rel);
  if (pool_) pool_->take_anyway(static_cast<std::int64_t>(n) * unit_, member_);
  note_peak();
}

void buffer_budget::kick_evictor() {
  {
    std::lock_guard lk(evict_mu_);
    if (kicked_) return;
    kicked_ = true;
  }
  evict_cv_.notify_one();
}

bool buffer_budget::wait_for_kick() {
  const auto woken = [&] { return kicked_ || stop_.load(); };
  for (;;) {
    follow_limit();  // may kick: outside evict_mu_
    std::unique_lock lk(evict_mu_);
    if (!sampler_) {
      evict_cv_.wait(lk, woken);
      break;
    }
    if (evict_cv_.wait_for(lk, period_, woken)) break;
  }
  return !stop_.load();
}

std::size_t buffer_budget::to_evict() {
  follow_limit();
  const std::int64_t u = used();
  std::int64_t excess = u - low_pages();
  if (excess <= 0 && waiter_needs_room(u)) excess = 1;
  return excess <= 0 ? 0 : static_cast<std::size_t>(excess);
}

bool buffer_budget::waiter_needs_room(std::int64_t used_now) const noexcept {
  // A waiting fault that has room already (it has not woken yet) needs no eviction: evicting
  // for it anyway took the buffer page by page below the low watermark while it slept, and
  // staying kicked for it spun the evictor until it woke. A waiter the pool refuses (B6) has
  // no room either.
  return waiters_.load() > 0 &&
         (used_now >= static_cast<std::int64_t>(target_pages()) || (pool_ && pool_->full_for(unit_)));
}

void buffer_budget::notify_freed() {
  std::lock_guard lk(free_mu_);
  free_cv_.notify_all();
}

void buffer_budget::end_round(bool idle_round) {
  std::lock_guard lk(evict_mu_);
  kicked_ = false;
  // Kicks that came during the round were absorbed (kicked_ was set): stay kicked if they left
  // work. Not for a waiter that has room (B3): the round ended because nothing was left to
  // evict, and the evictor would go round and round until that fault woke up and took its
  // slot (a third of the CPU samples in a profile of a 2 MiB buffer of 64 KiB pages); if it then
  // finds the buffer full again, its next round kicks.
  const std::int64_t u = used();
  if (idle_round || waiters_.load() > 0 || u >= high_pages()) {
    kicked_ = u > low_pages() || waiter_needs_room(u);
  }
}

bool buffer_budget::evictor_idle() {
  std::lock_guard lk(evict_mu_);
  return !kicked_ && used() <= high_pages();
}

void buffer_budget::wake_all() {
  kick_evictor();
  notify_freed();
}

void buffer_budget::note_peak() {
  const auto occ = static_cast<std::uint64_t>(std::max<std::int64_t>(0, occupied_.load()));
  std::uint64_t peak = peak_.load(std::memory_order_relaxed);
  while (occ > peak && !peak_.compare_exchange_weak(peak, occ)) {
  }
}

}  // namespace pheap::paging
