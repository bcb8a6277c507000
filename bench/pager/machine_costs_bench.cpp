// machine_costs_bench — what the machine charges for the two things a userspace pager does
// that the kernel's own fault path does not (not a test; prints CSV):
//
//   machine_costs_bench [--pages N] [--round-trips N]
//
//   wakeup   an eventfd round trip between two threads (each wakes the other once), both on
//            one CPU and on two. A pager fault wakes a fault worker and is woken back: on a VM
//            whose idle vCPUs halt, waking a thread on another CPU costs an IPI and the host's
//            rescheduling of that vCPU, which the same-CPU round trip does not pay.
//   move     UFFDIO_MOVE of N pages (default 4096) out of a range while another thread of the
//            process runs on the other CPU (so each TLB flush must reach it): one ioctl per page
//            (the evictor's victims are scattered: runs of 1.1 pages on average at SCALE 18,
//            1/2), and one per run of 64 and 512 pages. Reports µs per page and the TLB
//            shootdown interrupts per page (/proc/interrupts "TLB").
//   drop     MADV_DONTNEED of N scattered pages: one madvise per page against one
//            process_madvise over all of them (Linux 6.13+ accepts any advice for the calling
//            process; 6.16 batches the flush), same measures.
// Needs two CPUs for the cross-CPU rows (they are skipped, and say so, with one) and
// userfaultfd with UFFD_FEATURE_MOVE for the move rows.
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "pager/os/uffd.hpp"

using namespace pheap::paging;
using clk = std::chrono::steady_clock;

namespace {

long tlb_shootdowns() {
  std::ifstream f("/proc/interrupts");
  std::string l;
  long total = 0;
  while (std::getline(f, l)) {
    const auto c = l.find("TLB:");
    if (c == std::string::npos) continue;
    std::istringstream s(l.substr(c + 4));
    long v;
    while (s >> v) total += v;
  }
  return total;
}

void pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  (void)sched_setaffinity(0, sizeof set, &set);
}

double round_trip_us(int cpu_a, int cpu_b, int n) {
  const int a = ::eventfd(0, 0), b = ::eventfd(0, 0);
  std::uint64_t one = 1, x = 0;
  std::thread t([&] {
    pin(cpu_b);
    std::uint64_t y;
    for (int i = 0; i < n; ++i) {
      if (::read(a, &y, 8) != 8 || ::write(b, &one, 8) != 8) std::abort();
    }
  });
  pin(cpu_a);
  const auto t0 = clk::now();
  for (int i = 0; i < n; ++i) {
    if (::write(a, &one, 8) != 8 || ::read(b, &x, 8) != 8) std::abort();
  }
  const auto t1 = clk::now();
  t.join();
  ::close(a);
  ::close(b);
  return std::chrono::duration<double, std::micro>(t1 - t0).count() / n;
}

// Runs `work` while a thread of this process spins on the other CPU; returns µs per page and
// TLB shootdowns per page.
template <class F>
std::pair<double, double> with_peer(int cpus, std::size_t pages, F work) {
  std::atomic<bool> stop{false};
  std::thread peer([&] {
    if (cpus > 1) pin(1);
    volatile std::uint64_t spin = 0;
    while (!stop.load(std::memory_order_relaxed)) spin = spin + 1;
  });
  if (cpus > 1) pin(0);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const long s0 = tlb_shootdowns();
  const auto t0 = clk::now();
  work();
  const auto t1 = clk::now();
  const long s1 = tlb_shootdowns();
  stop = true;
  peer.join();
  return {std::chrono::duration<double, std::micro>(t1 - t0).count() / static_cast<double>(pages),
          static_cast<double>(s1 - s0) / static_cast<double>(pages)};
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t pages = 4096;
  int trips = 20000;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--help" || k == "-h") {
      std::printf("usage: %s [--pages N] [--round-trips N]\n(see the header of machine_costs_bench.cpp)\n", argv[0]);
      return 0;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "%s needs a value\n", k.c_str());
      return 2;
    }
    if (k == "--pages") pages = std::strtoull(argv[++i], nullptr, 10);
    else if (k == "--round-trips") trips = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      return 2;
    }
  }
  const int cpus = static_cast<int>(std::thread::hardware_concurrency());
  const std::size_t ps = os_page_size();
  std::printf("row,what,us,tlb_shootdowns_per_page\n");

  // wakeup
  std::printf("wakeup,eventfd round trip same cpu,%.2f,\n", round_trip_us(0, 0, trips));
  if (cpus > 1) {
    std::printf("wakeup,eventfd round trip two cpus,%.2f,\n", round_trip_us(0, 1, trips));
  } else {
    std::printf("wakeup,eventfd round trip two cpus,skipped: one cpu,\n");
  }

  // move
  uffd_open_result u;
  try {
    u = open_userfaultfd("machine_costs_bench");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
  }
  if (u.fd < 0) {
    std::printf("move,all,skipped: no userfaultfd,\n");
  } else if (!(probe_features("machine_costs_bench").move)) {
    std::printf("move,all,skipped: no UFFD_FEATURE_MOVE,\n");
  } else {
    uffd_api(u.fd, feat_move, "machine_costs_bench");
    const std::size_t len = pages * ps;
    auto* dst = static_cast<std::byte*>(::mmap(nullptr, len, PROT_READ | PROT_WRITE,
                                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    (void)uffd_register(u.fd, dst, len, UFFDIO_REGISTER_MODE_MISSING, "machine_costs_bench");
    for (std::size_t run : {std::size_t{1}, std::size_t{64}, std::size_t{512}}) {
      auto* src = static_cast<std::byte*>(::mmap(nullptr, len, PROT_READ | PROT_WRITE,
                                                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
      for (std::size_t p = 0; p < pages; ++p) src[p * ps] = std::byte{1};
      const auto [us, tlb] = with_peer(cpus, pages, [&] {
        for (std::size_t p = 0; p < pages; p += run) {
          const std::size_t n = std::min(run, pages - p);
          if (uffd_move(u.fd, dst + p * ps, src + p * ps, n * ps, nullptr) != 0) std::abort();
        }
      });
      std::printf("move,UFFDIO_MOVE %zu page%s per ioctl,%.2f,%.3f\n", run, run == 1 ? "" : "s", us, tlb);
      ::madvise(dst, len, MADV_DONTNEED);
      ::munmap(src, len);
    }
    ::munmap(dst, len);
    ::close(u.fd);
  }

  // drop: every other page of 2N, so that no two are adjacent
  {
    const std::size_t len = 2 * pages * ps;
    auto* m = static_cast<std::byte*>(::mmap(nullptr, len, PROT_READ | PROT_WRITE,
                                             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    auto touch = [&] {
      for (std::size_t p = 0; p < 2 * pages; ++p) m[p * ps] = std::byte{1};
    };
    touch();
    auto [us1, tlb1] = with_peer(cpus, pages, [&] {
      for (std::size_t p = 0; p < pages; ++p) ::madvise(m + 2 * p * ps, ps, MADV_DONTNEED);
    });
    std::printf("drop,madvise DONTNEED one page per call,%.2f,%.3f\n", us1, tlb1);
    touch();
    const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, ::getpid(), 0));
    std::vector<iovec> v(pages);
    for (std::size_t p = 0; p < pages; ++p) v[p] = {m + 2 * p * ps, ps};
    long done = 0;
    auto [us2, tlb2] = with_peer(cpus, pages, [&] {
      for (std::size_t at = 0; at < pages; at += IOV_MAX) {
        const std::size_t n = std::min<std::size_t>(IOV_MAX, pages - at);
        const long r = ::syscall(SYS_process_madvise, pidfd, v.data() + at, n, MADV_DONTNEED, 0);
        if (r < 0) {
          done = -errno;
          return;
        }
        done += r;
      }
    });
    if (done < 0) {
      std::printf("drop,process_madvise DONTNEED %d pages per call,skipped: %s,\n", IOV_MAX,
                  std::strerror(static_cast<int>(-done)));
    } else {
      std::printf("drop,process_madvise DONTNEED %d pages per call,%.2f,%.3f\n", IOV_MAX, us2, tlb2);
    }
    if (pidfd >= 0) ::close(pidfd);
    ::munmap(m, len);
  }
  return 0;
}
