// The pager's OS layer, threads (threads.hpp).
#include "pager/os/threads.hpp"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/futex.h>

#include <cerrno>
#include <climits>
#include <csignal>
#include <ctime>

#include "pheap/error.hpp"

namespace pheap::paging::os {

int wake_event_open(const std::string& what) {
  const int fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd < 0) throw_errno(errno, what, "eventfd");
  return fd;
}

void wake_event_signal(int fd) noexcept {
  const std::uint64_t one = 1;
  (void)!::write(fd, &one, sizeof one);
}

void wake_event_drain(int fd) noexcept {
  std::uint64_t v;
  (void)!::read(fd, &v, sizeof v);
}

static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t));

void futex_wake_all(std::atomic<std::uint32_t>& w) noexcept {
  (void)::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&w), FUTEX_WAKE_PRIVATE, INT_MAX,
                  nullptr, nullptr, 0);
}

void futex_wait(std::atomic<std::uint32_t>& w, std::uint32_t seen, long bound_ns) noexcept {
  const timespec bound{bound_ns / 1000000000L, bound_ns % 1000000000L};
  (void)::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&w), FUTEX_WAIT_PRIVATE, seen,
                  &bound, nullptr, 0);
}

void signal_thread(long tid, int sig) noexcept {
  (void)::syscall(SYS_tgkill, ::getpid(), static_cast<pid_t>(tid), sig);
}

void write_line_signal_safe(const char* b, std::size_t n) noexcept {
  for (std::size_t off = 0; off < n;) {
    const ssize_t w = ::write(STDERR_FILENO, b + off, n - off);
    if (w <= 0) return;
    off += static_cast<std::size_t>(w);
  }
}

fault_wait::fault_wait(int uffd, int wake_fd) : fds_{{uffd, POLLIN, 0}, {wake_fd, POLLIN, 0}} {
  ep_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (ep_ < 0) return;
  epoll_event u{};
  u.events = EPOLLIN | EPOLLEXCLUSIVE;
  u.data.fd = uffd;
  epoll_event w{};
  w.events = EPOLLIN;
  w.data.fd = wake_fd;
  if (::epoll_ctl(ep_, EPOLL_CTL_ADD, uffd, &u) != 0 ||
      ::epoll_ctl(ep_, EPOLL_CTL_ADD, wake_fd, &w) != 0) {
    ::close(ep_);
    ep_ = -1;
  }
}

fault_wait::~fault_wait() {
  if (ep_ >= 0) ::close(ep_);
}

bool fault_wait::wait() noexcept {
  if (ep_ < 0) {
    (void)::poll(fds_, 2, -1);
    return (fds_[1].revents & POLLIN) != 0;
  }
  epoll_event ev[2];
  const int n = ::epoll_wait(ep_, ev, 2, -1);
  for (int i = 0; i < n; ++i) {
    if (ev[i].data.fd == fds_[1].fd) return true;
  }
  return false;
}

}  // namespace pheap::paging::os
