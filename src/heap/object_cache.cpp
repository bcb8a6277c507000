#include "heap/object_cache.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "heap/size_class.hpp"

namespace pheap::heap {

namespace {
std::atomic<std::uint32_t> g_thread_ordinal{0};
thread_local const std::uint32_t t_ordinal = g_thread_ordinal.fetch_add(1, std::memory_order_relaxed);
}  // namespace

object_cache::object_cache(const size_classes& classes) : nbins_(classes.count()) {
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  nshards_ = std::min(64u, std::max(4u, 2 * hw));
  std::uint64_t total = 0;
  for (std::uint32_t b = 0; b < nbins_; ++b) {
    const std::uint64_t size = classes.size(b);
    if (size > max_cached_size) continue;
    cap_[b] = static_cast<std::uint32_t>(std::clamp<std::uint64_t>((64 * 1024) / size, 8, 256));
    start_[b] = total;
    total += cap_[b];
  }
  shards_ = std::make_unique<shard[]>(nshards_);
  for (std::uint32_t s = 0; s < nshards_; ++s) {
    shards_[s].slots = std::make_unique<std::uint64_t[]>(total);
  }
}

std::uint32_t object_cache::my_shard() const noexcept { return t_ordinal % nshards_; }

std::uint64_t object_cache::pop(std::uint32_t s, std::uint32_t bin) noexcept {
  shard& sh = shards_[s];
  std::lock_guard g(sh.lock);
  std::uint32_t& n = sh.count[bin];
  if (n == 0) return 0;
  return sh.slots[start_[bin] + --n];
}

bool object_cache::push(std::uint32_t s, std::uint32_t bin, std::uint64_t off,
                        std::vector<std::uint64_t>& spill) {
  shard& sh = shards_[s];
  std::lock_guard g(sh.lock);
  std::uint32_t& n = sh.count[bin];
  if (n < cap_[bin]) {
    sh.slots[start_[bin] + n++] = off;
    return true;
  }
  spill.clear();
  spill.push_back(off);
  const std::uint32_t keep = cap_[bin] / 2;
  while (n > keep) spill.push_back(sh.slots[start_[bin] + --n]);
  return false;
}

std::size_t object_cache::push_many(std::uint32_t s, std::uint32_t bin, const std::uint64_t* offs,
                                    std::size_t k) noexcept {
  shard& sh = shards_[s];
  std::lock_guard g(sh.lock);
  std::uint32_t& n = sh.count[bin];
  std::size_t taken = 0;
  while (taken < k && n < cap_[bin]) sh.slots[start_[bin] + n++] = offs[taken++];
  return taken;
}

void object_cache::drain(std::vector<std::vector<std::uint64_t>>& out) {
  out.resize(nbins_);
  for (std::uint32_t s = 0; s < nshards_; ++s) {
    shard& sh = shards_[s];
    std::lock_guard g(sh.lock);
    for (std::uint32_t b = 0; b < nbins_; ++b) {
      std::uint32_t& n = sh.count[b];
      out[b].insert(out[b].end(), sh.slots.get() + start_[b], sh.slots.get() + start_[b] + n);
      n = 0;
    }
  }
}

std::uint64_t object_cache::cached_objects() const noexcept {
  std::uint64_t total = 0;
  for (std::uint32_t s = 0; s < nshards_; ++s) {
    std::lock_guard g(shards_[s].lock);
    for (std::uint32_t b = 0; b < nbins_; ++b) total += shards_[s].count[b];
  }
  return total;
}

}  // namespace pheap::heap
