// Helpers for the heap tests: an anonymous zero-filled region standing in for the pager.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>

namespace pheap::test {

// MAP_NORESERVE anonymous memory: reads zeros where never written, like the pager region.
class anon_region {
 public:
  explicit anon_region(std::size_t size) : size_(size) {
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("mmap failed");
    base_ = static_cast<std::byte*>(p);
  }
  ~anon_region() { ::munmap(base_, size_); }
  anon_region(const anon_region&) = delete;
  anon_region& operator=(const anon_region&) = delete;
  std::byte* base() const { return base_; }
  std::size_t size() const { return size_; }

 private:
  std::byte* base_;
  std::size_t size_;
};

// Cheap deterministic per-offset fill so overlapping allocations are detected.
inline std::uint64_t tag_of(std::uint64_t off) { return off * 0x9E3779B97F4A7C15ull + 0x1234567; }

}  // namespace pheap::test
