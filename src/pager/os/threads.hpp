// src/pager/os/threads.hpp — the pager's OS layer, threads: how its threads sleep and wake
// (the wake-up eventfd, futex words, the fault workers' wait on the userfaultfd), a signal
// sent to one thread, and the one line a signal handler may write. See memory.hpp for what
// the OS layer is.
//
// Caveats:
//  * Nothing here throws except wake_event_open(); the rest is called on fault paths, from
//    destructors and (write_line_signal_safe) from a signal handler.
//  * futex_wait() may return early (a wake, a signal, the bound, or the word no longer being
//    `seen`): callers look again at what they wait for.
#pragma once

#include <poll.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace pheap::paging::os {

// An eventfd (close-on-exec, non-blocking) whose readability wakes the fault workers. Throws
// errc::io naming `what` when the kernel refuses.
int wake_event_open(const std::string& what);
// Adds one to the counter: every waiter on the descriptor becomes readable.
void wake_event_signal(int fd) noexcept;
// Reads the counter back to zero (whoever wins resets it; the others find nothing).
void wake_event_drain(int fd) noexcept;

// Wakes every thread sleeping in futex_wait on `w` (this process's private futex).
void futex_wake_all(std::atomic<std::uint32_t>& w) noexcept;
// Sleeps while `w` holds `seen`, at most `bound_ns`.
void futex_wait(std::atomic<std::uint32_t>& w, std::uint32_t seen, long bound_ns) noexcept;

// Sends `sig` to thread `tid` of this process (tgkill).
void signal_thread(long tid, int sig) noexcept;

// Writes `n` bytes to stderr with write(2) alone (async-signal-safe); gives up on an error.
void write_line_signal_safe(const char* b, std::size_t n) noexcept;

// Where a fault worker sleeps: until the userfaultfd or the wake-up eventfd is readable. With
// epoll, the uffd is held EPOLLEXCLUSIVE, so a fault wakes one idle worker (poll() on the uffd
// woke every worker for every fault, and the losers' wake-ups — a cross-CPU IPI each on a VM —
// and their empty reads were worker time spent for nothing). The wake-up eventfd is held
// without EPOLLEXCLUSIVE: stop and prefetch wake everyone. Without epoll (the instance could
// not be made), poll().
class fault_wait {
 public:
  fault_wait(int uffd, int wake_fd);
  ~fault_wait();
  fault_wait(const fault_wait&) = delete;
  fault_wait& operator=(const fault_wait&) = delete;
  // Sleeps until the uffd or the wake-up eventfd is readable; true if the eventfd is.
  bool wait() noexcept;

 private:
  pollfd fds_[2];
  int ep_ = -1;
};

}  // namespace pheap::paging::os
