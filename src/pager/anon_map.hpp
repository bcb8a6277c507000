// src/pager/anon_map.hpp — a private anonymous mapping owned by RAII: the region itself, the
// staging ranges, bounce buffers and the zero page. Mapped MAP_NORESERVE and MADV_NOHUGEPAGE
// (the pager works in UPages of the store's page size, never in transparent huge pages).
#pragma once

#include <cstddef>

namespace pheap::paging {

struct anon_map {
  void* p = nullptr;
  std::size_t len = 0;
  anon_map() = default;
  // Maps `bytes` read/write; `dontfork`: MADV_DONTFORK (a child never sees it). Throws
  // errc::io naming the mmap failure.
  anon_map(std::size_t bytes, bool dontfork);
  ~anon_map();
  anon_map(anon_map&& o) noexcept : p(o.p), len(o.len) { o.p = nullptr; o.len = 0; }
  anon_map& operator=(anon_map&& o) noexcept;
  std::byte* data() const noexcept { return static_cast<std::byte*>(p); }
  // Gives the memory back to the kernel (MADV_DONTNEED); the mapping stays, reading zeros.
  void release_memory() const noexcept;
};

}  // namespace pheap::paging
