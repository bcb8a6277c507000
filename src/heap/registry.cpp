#include "heap/registry.hpp"

#include <atomic>
#include <mutex>
#include <new>

#include "heap/segment_allocator.hpp"
#include "pheap/allocator.hpp"
#include "pheap/error.hpp"

namespace pheap::heap {

namespace {
constexpr unsigned slots = 256;
struct entry {
  std::atomic<const void*> key{nullptr};
  std::atomic<segment_allocator*> alloc{nullptr};
};
entry g_table[slots];
std::atomic<unsigned> g_high{0};  // slots [0, g_high) may be in use
std::mutex g_write;
}  // namespace

void register_heap(const void* header, segment_allocator* alloc) {
  std::lock_guard g(g_write);
  for (unsigned i = 0; i < slots; ++i) {
    if (g_table[i].key.load(std::memory_order_relaxed) != nullptr) continue;
    g_table[i].alloc.store(alloc, std::memory_order_relaxed);
    g_table[i].key.store(header, std::memory_order_release);
    if (i + 1 > g_high.load(std::memory_order_relaxed)) g_high.store(i + 1, std::memory_order_release);
    return;
  }
  throw error(errc::invalid_argument, "", "open", "more than 256 heaps open in this process");
}

void unregister_heap(const void* header) noexcept {
  std::lock_guard g(g_write);
  for (unsigned i = 0; i < slots; ++i) {
    if (g_table[i].key.load(std::memory_order_relaxed) == header) {
      g_table[i].key.store(nullptr, std::memory_order_release);
      g_table[i].alloc.store(nullptr, std::memory_order_relaxed);
      return;
    }
  }
}

segment_allocator* find_heap(const void* header) noexcept {
  const unsigned high = g_high.load(std::memory_order_acquire);
  for (unsigned i = 0; i < high; ++i) {
    if (g_table[i].key.load(std::memory_order_acquire) == header) {
      return g_table[i].alloc.load(std::memory_order_relaxed);
    }
  }
  return nullptr;
}

}  // namespace pheap::heap

namespace pheap::detail {

void* heap_allocate(const void* anchor, std::size_t bytes, std::size_t align) {
  heap::segment_allocator* a = heap::find_heap(anchor);
  if (a == nullptr) {
    throw error(errc::invalid_argument, "", "allocator::allocate", "the heap's manager is closed");
  }
  const std::uint64_t off = align <= 16 ? a->allocate(bytes) : a->allocate_aligned(bytes, align);
  if (off == 0) throw std::bad_alloc();
  return a->base() + off;
}

void heap_deallocate(const void* anchor, void* p) {
  if (p == nullptr) return;
  heap::segment_allocator* a = heap::find_heap(anchor);
  if (a == nullptr) {
    throw error(errc::invalid_argument, "", "allocator::deallocate", "the heap's manager is closed");
  }
  a->deallocate(static_cast<std::uint64_t>(static_cast<std::byte*>(p) - a->base()));
}

}  // namespace pheap::detail
