// The pool of the automatic buffers that follow one memory limit (limit_pool.hpp, P1-P3).
#include "pager/limit_pool.hpp"

#include <map>
#include <mutex>

namespace pheap::paging {

namespace {
std::int64_t ns_of(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}
}  // namespace

std::shared_ptr<limit_pool> limit_pool::of(const std::string& limit_name) {
  static std::mutex mu;
  static std::map<std::string, std::weak_ptr<limit_pool>> pools;
  std::lock_guard lk(mu);
  for (auto it = pools.begin(); it != pools.end();) {  // forget the pools no one holds
    it = it->second.expired() ? pools.erase(it) : std::next(it);
  }
  std::weak_ptr<limit_pool>& w = pools[limit_name];
  std::shared_ptr<limit_pool> p = w.lock();
  if (!p) {
    p = std::make_shared<limit_pool>();
    w = p;
  }
  return p;
}

int limit_pool::join() noexcept {
  members_.fetch_add(1, std::memory_order_relaxed);
  return next_id_.fetch_add(1, std::memory_order_relaxed);
}

bool limit_pool::take(std::int64_t bytes, int member) noexcept {
  std::int64_t h = held_.load(std::memory_order_acquire);
  do {
    if (h + bytes > cap()) {
      refused_member_.store(member, std::memory_order_relaxed);
      refused_ns_.store(ns_of(std::chrono::steady_clock::now()), std::memory_order_release);
      return false;
    }
  } while (!held_.compare_exchange_weak(h, h + bytes, std::memory_order_acq_rel));
  return true;
}

bool limit_pool::contended_by_other(int member,
                                    std::chrono::steady_clock::time_point now) const noexcept {
  const std::int64_t at = refused_ns_.load(std::memory_order_acquire);
  if (ns_of(now) - at > std::chrono::nanoseconds(kContention).count()) return false;
  return refused_member_.load(std::memory_order_relaxed) != member;
}

}  // namespace pheap::paging
