#include "pager/os/uffd.hpp"

#include <fcntl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "pheap/error.hpp"

namespace pheap::paging {

const char* to_string(uffd_source s) noexcept {
  switch (s) {
    case uffd_source::syscall: return "userfaultfd(2)";
    case uffd_source::syscall_user_mode_only: return "userfaultfd(2) UFFD_USER_MODE_ONLY";
    case uffd_source::dev_userfaultfd: return "/dev/userfaultfd";
  }
  return "?";
}

std::string explain_uffd_failure(int syscall_errno, int user_mode_errno, int dev_errno) {
  std::string m = "userfaultfd is not available: userfaultfd(2) failed (";
  m += std::strerror(syscall_errno);
  m += "), with UFFD_USER_MODE_ONLY (";
  m += user_mode_errno ? std::strerror(user_mode_errno) : "not tried";
  m += "), /dev/userfaultfd (";
  m += std::strerror(dev_errno);
  m += "). Fix one of: set vm.unprivileged_userfaultfd=1 (sysctl) or run with CAP_SYS_PTRACE; "
       "grant read/write access to /dev/userfaultfd (e.g. chmod/ACL for this user); in a "
       "container, use a seccomp profile that allows the userfaultfd syscall";
  if (syscall_errno == ENOSYS) m += "; this kernel was built without CONFIG_USERFAULTFD";
  return m;
}

uffd_open_result open_userfaultfd(const std::string& what) {
  const int flags = O_CLOEXEC | O_NONBLOCK;
  int fd = static_cast<int>(::syscall(SYS_userfaultfd, flags));
  if (fd >= 0) return {fd, uffd_source::syscall};
  const int e1 = errno;
  int e2 = 0;
  if (e1 == EPERM) {
    fd = static_cast<int>(::syscall(SYS_userfaultfd, flags | user_mode_only));
    if (fd >= 0) return {fd, uffd_source::syscall_user_mode_only};
    e2 = errno;
  }
  int e3 = 0;
  const int dev = ::open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
  if (dev >= 0) {
    fd = ::ioctl(dev, ioctl_uffd_new, flags);
    e3 = errno;
    ::close(dev);
    if (fd >= 0) return {fd, uffd_source::dev_userfaultfd};
  } else {
    e3 = errno;
  }
  throw error(errc::unavailable, what, "open userfaultfd", explain_uffd_failure(e1, e2, e3), e1);
}

void uffd_api(int fd, std::uint64_t features, const std::string& what) {
  uffdio_api api{};
  api.api = UFFD_API;
  api.features = features;
  if (::ioctl(fd, UFFDIO_API, &api) != 0) {
    const int e = errno;
    throw error(errc::unavailable, what, "UFFDIO_API",
                "kernel refused userfaultfd features 0x" + [&] {
                  char b[32];
                  std::snprintf(b, sizeof b, "%llx", static_cast<unsigned long long>(features));
                  return std::string(b);
                }() + ": " + std::strerror(e),
                e);
  }
}

long uffd_read_events(int fd, uffd_msg* out, std::size_t cap) noexcept {
  const ssize_t n = ::read(fd, out, cap * sizeof(uffd_msg));
  if (n < 0) return errno == EAGAIN ? 0 : -errno;
  return static_cast<long>(static_cast<std::size_t>(n) / sizeof(uffd_msg));
}

int open_pagemap() noexcept { return ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC); }

const uffd_features& probe_features(const std::string& what) {
  static uffd_features f;
  static std::once_flag once;
  static std::exception_ptr failure;
  std::call_once(once, [&] {
    try {
      auto r = open_userfaultfd(what);
      uffdio_api api{};
      api.api = UFFD_API;
      api.features = 0;
      if (::ioctl(r.fd, UFFDIO_API, &api) != 0) {
        const int e = errno;
        ::close(r.fd);
        throw error(errc::unavailable, what, "UFFDIO_API", std::strerror(e), e);
      }
      ::close(r.fd);
      f.kernel = api.features;
      f.wp = (api.features & UFFD_FEATURE_PAGEFAULT_FLAG_WP) != 0;
      f.wp_async = (api.features & feat_wp_async) != 0;
      f.move = (api.features & feat_move) != 0;
      f.poison = (api.features & feat_poison) != 0;
      f.wp_unpopulated = (api.features & feat_wp_unpopulated) != 0;
      const int pm = open_pagemap();
      if (pm >= 0) {
        page_region r1{};
        std::uint64_t we = 0;
        static char probe_byte;
        char* a = reinterpret_cast<char*>(reinterpret_cast<std::uintptr_t>(&probe_byte) &
                                          ~(std::uintptr_t(os_page_size()) - 1));
        f.pagemap_scan = pagemap_scan(pm, a, a + os_page_size(), 0, page_is_present, 0, &r1, 1,
                                      &we) >= 0;
        ::close(pm);
      }
    } catch (...) {
      failure = std::current_exception();
    }
  });
  if (failure) std::rethrow_exception(failure);
  return f;
}

std::uint64_t uffd_register(int fd, void* addr, std::size_t len, std::uint64_t mode,
                            const std::string& what) {
  uffdio_register reg{};
  reg.range.start = reinterpret_cast<std::uint64_t>(addr);
  reg.range.len = len;
  reg.mode = mode;
  if (::ioctl(fd, UFFDIO_REGISTER, &reg) != 0) {
    const int e = errno;
    throw error(errc::unavailable, what, "UFFDIO_REGISTER", std::strerror(e), e);
  }
  return reg.ioctls;
}

void uffd_unregister(int fd, void* addr, std::size_t len) noexcept {
  uffdio_range r{reinterpret_cast<std::uint64_t>(addr), len};
  (void)::ioctl(fd, UFFDIO_UNREGISTER, &r);
}

int uffd_copy(int fd, void* dst, const void* src, std::size_t len, std::uint64_t mode) noexcept {
  std::size_t done = 0;
  while (done < len) {
    uffdio_copy c{};
    c.dst = reinterpret_cast<std::uint64_t>(dst) + done;
    c.src = reinterpret_cast<std::uint64_t>(src) + done;
    c.len = len - done;
    c.mode = mode;
    if (::ioctl(fd, UFFDIO_COPY, &c) == 0) return 0;
    const int e = errno;
    if (e == EAGAIN && c.copy > 0) {  // partial progress (mmap_lock contention): continue
      done += static_cast<std::size_t>(c.copy);
      continue;
    }
    if (e == EAGAIN) continue;
    return e;
  }
  return 0;
}

int uffd_zeropage(int fd, void* dst, std::size_t len) noexcept {
  for (;;) {
    uffdio_zeropage z{};
    z.range.start = reinterpret_cast<std::uint64_t>(dst);
    z.range.len = len;
    if (::ioctl(fd, UFFDIO_ZEROPAGE, &z) == 0) return 0;
    if (errno != EAGAIN) return errno;
    if (z.zeropage > 0) {
      dst = static_cast<char*>(dst) + z.zeropage;
      len -= static_cast<std::size_t>(z.zeropage);
      if (len == 0) return 0;
    }
  }
}

int uffd_wake(int fd, void* addr, std::size_t len) noexcept {
  uffdio_range r{reinterpret_cast<std::uint64_t>(addr), len};
  return ::ioctl(fd, UFFDIO_WAKE, &r) == 0 ? 0 : errno;
}

int uffd_writeprotect(int fd, void* addr, std::size_t len, bool protect) noexcept {
  for (;;) {
    uffdio_writeprotect w{};
    w.range.start = reinterpret_cast<std::uint64_t>(addr);
    w.range.len = len;
    w.mode = protect ? UFFDIO_WRITEPROTECT_MODE_WP : 0;
    if (::ioctl(fd, UFFDIO_WRITEPROTECT, &w) == 0) return 0;
    if (errno != EAGAIN) return errno;
  }
}

int uffd_poison(int fd, void* addr, std::size_t len) noexcept {
  for (;;) {
    uffdio_poison_arg p{};
    p.range.start = reinterpret_cast<std::uint64_t>(addr);
    p.range.len = len;
    if (::ioctl(fd, ioctl_poison, &p) == 0) return 0;
    if (errno != EAGAIN) return errno;
  }
}

int uffd_move(int fd, void* dst, const void* src, std::size_t len, std::size_t* moved) noexcept {
  std::size_t done = 0;
  int rc = 0;
  while (done < len) {
    uffdio_move_arg m{};
    m.dst = reinterpret_cast<std::uint64_t>(dst) + done;
    m.src = reinterpret_cast<std::uint64_t>(src) + done;
    m.len = len - done;
    m.mode = move_mode_allow_src_holes;
    if (::ioctl(fd, ioctl_move, &m) == 0) {
      done = len;
      break;
    }
    const int e = errno;
    if (m.move > 0) done += static_cast<std::size_t>(m.move);
    if (e == EAGAIN) continue;
    rc = e;
    break;
  }
  if (moved) *moved = done;
  return rc;
}

int uffd_move_whole(int fd, void* dst, const void* src, std::size_t len, std::size_t* moved,
                    bool wake) noexcept {
  std::size_t done = 0;
  int rc = 0;
  for (unsigned stalls = 0; done < len;) {
    uffdio_move_arg m{};
    m.dst = reinterpret_cast<std::uint64_t>(dst) + done;
    m.src = reinterpret_cast<std::uint64_t>(src) + done;
    m.len = len - done;
    m.mode = wake ? 0 : move_mode_dontwake;
    if (::ioctl(fd, ioctl_move, &m) == 0) {
      done = len;
      break;
    }
    const int e = errno;
    if (m.move > 0) {
      done += static_cast<std::size_t>(m.move);
      stalls = 0;
    } else {
      ++stalls;
    }
    // EAGAIN and EBUSY: the source's folio locked, pinned or being migrated for a moment (by
    // reclaim's or compaction's scan, a machine under memory pressure): 8 retries at once,
    // then 16 after 100 µs each, so a refusal that lasts costs at most 1.6 ms. (Once, a fill
    // of a fresh read-only open fell back to 4 KiB copies on a loaded CI machine, when only
    // EAGAIN was retried and at once; its errno was not recorded: pager_stats now keeps it.)
    if ((e == EAGAIN || e == EBUSY) && stalls <= 24) {
      if (stalls > 8) {
        const timespec pause{0, 100'000};
        ::nanosleep(&pause, nullptr);
      }
      continue;
    }
    rc = e;
    break;
  }
  if (moved) *moved = done;
  return rc;
}

long pagemap_scan(int pagemap_fd, void* start, void* end, std::uint64_t flags,
                  std::uint64_t required, std::uint64_t anyof, page_region* out, std::size_t cap,
                  std::uint64_t* walk_end, std::uint64_t returned) noexcept {
  pm_scan_arg a{};
  a.size = sizeof a;
  a.flags = flags;
  a.start = reinterpret_cast<std::uint64_t>(start);
  a.end = reinterpret_cast<std::uint64_t>(end);
  a.vec = reinterpret_cast<std::uint64_t>(out);
  a.vec_len = cap;
  a.category_mask = required;
  a.category_anyof_mask = anyof;
  a.return_mask = returned ? returned : required | anyof;
  const long n = ::ioctl(pagemap_fd, ioctl_pagemap_scan, &a);
  if (walk_end) *walk_end = a.walk_end;
  return n < 0 ? -errno : n;
}

std::size_t os_page_size() noexcept {
  static const std::size_t ps = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return ps;
}

}  // namespace pheap::paging
