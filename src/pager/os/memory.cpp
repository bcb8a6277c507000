// The pager's OS layer, memory (memory.hpp).
#include "pager/os/memory.hpp"

#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "pager/os/files.hpp"
#include "pheap/error.hpp"

#ifndef MADV_PAGEOUT  // 5.4; the build host's headers may be older than the kernel
#define MADV_PAGEOUT 21
#endif
#ifndef MADV_POPULATE_WRITE  // 5.14
#define MADV_POPULATE_WRITE 23
#endif

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
  if (p) os::drop(p, len);
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

namespace os {

void* reserve_aligned(std::size_t bytes, std::size_t align, bool writable, bool huge) noexcept {
  const int prot = writable ? (PROT_READ | PROT_WRITE) : PROT_READ;
  void* raw = ::mmap(nullptr, bytes + align, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto a = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = (a + align - 1) & ~(std::uintptr_t(align) - 1);
  if (aligned > a) ::munmap(raw, aligned - a);
  const std::uintptr_t tail = aligned + bytes;
  if (a + bytes + align > tail) ::munmap(reinterpret_cast<void*>(tail), a + bytes + align - tail);
  void* p = reinterpret_cast<void*>(aligned);
  (void)::madvise(p, bytes, MADV_DONTFORK);
  (void)::madvise(p, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  return p;
}

std::size_t pmd_size() noexcept {
  static const std::size_t pmd = [] {
    const std::string s = read_small_file("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size");
    const unsigned long long v = s.empty() ? 0 : std::strtoull(s.c_str(), nullptr, 10);
    return v >= 4096 && (v & (v - 1)) == 0 ? static_cast<std::size_t>(v) : std::size_t{2} << 20;
  }();
  return pmd;
}

bool thp_enabled() noexcept {
  const std::string s = read_small_file("/sys/kernel/mm/transparent_hugepage/enabled");
  return !s.empty() && s.find("[never]") == std::string::npos;
}

int populate_write(void* p, std::size_t len) noexcept {
  return ::madvise(p, len, MADV_POPULATE_WRITE) == 0 ? 0 : errno;
}

void unmap(void* p, std::size_t len) noexcept {
  if (p) (void)::munmap(p, len);
}

int protect_read_only(void* p, std::size_t len) noexcept {
  return ::mprotect(p, len, PROT_READ) == 0 ? 0 : errno;
}

std::size_t address_space_limit() noexcept {
  rlimit as{};
  if (::getrlimit(RLIMIT_AS, &as) != 0 || as.rlim_cur == RLIM_INFINITY) return 0;
  return static_cast<std::size_t>(as.rlim_cur);
}

void drop(void* p, std::size_t len) noexcept { (void)::madvise(p, len, MADV_DONTNEED); }

int free_lazily(void* p, std::size_t len) noexcept {
  return ::madvise(p, len, MADV_FREE) == 0 ? 0 : errno;
}

void page_out(void* p, std::size_t len) noexcept { (void)::madvise(p, len, MADV_PAGEOUT); }

namespace {
int advice_of(vector_advice::advice a) noexcept {
  switch (a) {
    case vector_advice::lazy_free: return MADV_FREE;
    case vector_advice::dontneed: return MADV_DONTNEED;
    case vector_advice::populate_write: return MADV_POPULATE_WRITE;
  }
  return MADV_DONTNEED;
}
}  // namespace

void vector_advice::open(void* probe) noexcept {
  pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, ::getpid(), 0u));
  if (pidfd_ < 0) return;
  const long page = ::sysconf(_SC_PAGESIZE);
  iovec one{probe, static_cast<std::size_t>(page)};
  if (::syscall(SYS_process_madvise, pidfd_, &one, 1, MADV_FREE, 0u) < 0) {
    ::close(pidfd_);
    pidfd_ = -1;
    return;
  }
  populate_ = ::syscall(SYS_process_madvise, pidfd_, &one, 1, MADV_POPULATE_WRITE, 0u) == page;
  (void)::madvise(probe, static_cast<std::size_t>(page), MADV_DONTNEED);
}

vector_advice::~vector_advice() {
  if (pidfd_ >= 0) ::close(pidfd_);
}

long vector_advice::apply(const iovec* iov, std::size_t n, advice a) const noexcept {
  if (pidfd_ < 0 || (a == populate_write && !populate_)) return -1;
  return ::syscall(SYS_process_madvise, pidfd_, iov, n, advice_of(a), 0u);
}

}  // namespace os
}  // namespace pheap::paging
