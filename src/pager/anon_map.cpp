#include "pager/anon_map.hpp"

#include <sys/mman.h>

#include <cerrno>

#include "pheap/error.hpp"

namespace pheap::paging {

anon_map::anon_map(std::size_t bytes, bool dontfork) : len(bytes) {
  p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
             -1, 0);
  if (p == MAP_FAILED) {
    p = nullptr;
    throw_errno(errno, "", "mmap pager buffer");
  }
  if (dontfork) (void)::madvise(p, bytes, MADV_DONTFORK);
  (void)::madvise(p, bytes, MADV_NOHUGEPAGE);
}

void anon_map::release_memory() const noexcept {
  if (p) (void)::madvise(p, len, MADV_DONTNEED);
}

anon_map::~anon_map() {
  if (p) ::munmap(p, len);
}

anon_map& anon_map::operator=(anon_map&& o) noexcept {
  if (this != &o) {
    if (p) ::munmap(p, len);
    p = o.p;
    len = o.len;
    o.p = nullptr;
    o.len = 0;
  }
  return *this;
}

}  // namespace pheap::paging
