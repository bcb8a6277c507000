// disk_replay_bench — how long the disk alone takes for a pager run's I/O: the yardstick of
// "a tiny buffer works at the speed of the disk" (issue 16; bench/README.md, "Out of core"). Not a test;
// prints one CSV line.
//
//   disk_replay_bench --dir DIR --page-size P --file-bytes F --reads R --writes W [--threads T]
//                     [--faults [--buffer-pages B]]
//
// Writes a file of F bytes in DIR (the datastore's size, so that whatever the device or the
// host caches, it caches for both), fdatasync, then times: T threads each doing R/T reads of
// one page at random page-aligned offsets, and one more thread doing the W page writes at
// random offsets, all O_DIRECT, one request at a time per thread. That is the pager's I/O with
// its concurrency (T faulting threads fill synchronously; the evictor writes) and nothing else:
// no faults, no copies, no eviction choice. The file is removed on every path that returns.
//
// --faults adds what any userfaultfd pager must pay around that I/O, and nothing of pheap's: the
// floor of the mechanism (bench/README.md, "Out of core"). The T threads read the pages of an anonymous
// region of F bytes registered with userfaultfd (UFFD_FEATURE_SIGBUS); each missing page raises
// SIGBUS on the thread that touched it, whose handler reads the page from the file and installs
// it with UFFDIO_COPY, and the access is retried, until the thread has taken its R/T faults
// (one read each, as above). The one more thread is the evictor: it unmaps each filled page
// (MADV_DONTNEED, one page per call, which is one TLB shootdown per page, as UFFDIO_MOVE of a
// lone victim costs; bench/DECISIONS.md "what this machine charges a pager") and makes the W
// writes spread among those unmaps.
// At most B pages (default 16) are filled and not yet unmapped; a faulting thread waits when
// there are B, and wakes the evictor when there are B/2 or more.
//
// Caveats: the pager's evictor writes a batch at queue depth (io_uring), this writes one at a
// time; the pager's offsets follow the application's (skewed) access, these are uniform. On
// this VM's SSD neither changed a 4 KiB or 64 KiB request's time by more than the run-to-run
// spread (bench/DECISIONS.md "the harvest walks the ring, not the region"). The floor keeps no
// data safe: it writes the same number of
// pages but not the unmapped ones, and an unmap of a page written between the copy and the zap
// would lose the write; a correct pager needs an atomic unmap (UFFDIO_MOVE), which costs the
// same one shootdown per lone page. It does not bound a pager that evicts runs of consecutive
// pages, which share a shootdown.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "pager/os/uffd.hpp"

namespace {

struct config {
  std::string dir;
  std::uint64_t page = 4096, file_bytes = 0, reads = 0, writes = 0;
  unsigned threads = 2;
  bool faults = false;
  std::size_t buffer_pages = 16;
};

int usage(const char* argv0, int rc) {
  std::fprintf(rc == 0 ? stdout : stderr,
               "usage: %s --dir DIR --page-size P --file-bytes F --reads R --writes W [--threads T]\n"
               "       [--faults [--buffer-pages B]]\n"
               "(see the header of disk_replay_bench.cpp)\n",
               argv0);
  return rc;
}

// `n` one-page requests at random page offsets of fd, reading or writing `buf`.
bool run_requests(int fd, bool write, std::uint64_t n, const config& c, unsigned seed, void* buf) {
  std::mt19937_64 rng(seed);
  errno = 0;
  const std::uint64_t pages = c.file_bytes / c.page;
  for (std::uint64_t i = 0; i < n; ++i) {
    const off_t off = static_cast<off_t>(rng() % pages * c.page);
    const ssize_t got = write ? ::pwrite(fd, buf, c.page, off) : ::pread(fd, buf, c.page, off);
    if (got != static_cast<ssize_t>(c.page)) return false;
  }
  return true;
}

// ---- --faults: the mechanism's floor ------------------------------------------------------
// The SIGBUS handler's world: set before the threads start, read-only after.
int g_uffd = -1, g_fd = -1;
std::byte* g_base = nullptr;
std::uint64_t g_page = 0, g_len = 0;
char g_path[4096];
thread_local void* t_bounce = nullptr;   // this thread's read buffer; null outside a reader
thread_local std::uint64_t t_reads = 0;  // faults taken (one read each)
thread_local bool t_filled = false;      // the last fault installed its page (not EEXIST)

[[noreturn]] void die_in_handler(const char* what) {
  const char* pre = "disk_replay_bench: ";
  (void)!::write(2, pre, std::strlen(pre));
  (void)!::write(2, what, std::strlen(what));
  (void)!::write(2, "\n", 1);
  ::unlink(g_path);
  ::_exit(1);
}

void on_sigbus(int, siginfo_t* si, void*) {
  auto* a = static_cast<std::byte*>(si->si_addr);
  if (t_bounce == nullptr || a < g_base || a >= g_base + g_len) die_in_handler("SIGBUS outside the region");
  const int saved = errno;
  const std::uint64_t off = static_cast<std::uint64_t>(a - g_base) / g_page * g_page;
  if (::pread(g_fd, t_bounce, g_page, static_cast<off_t>(off)) != static_cast<ssize_t>(g_page)) {
    die_in_handler("a read of the file failed");
  }
  ++t_reads;
  const int r = pheap::paging::uffd_copy(g_uffd, g_base + off, t_bounce, g_page, 0);
  if (r != 0 && r != EEXIST) die_in_handler("UFFDIO_COPY failed");
  t_filled = r == 0;
  errno = saved;
}

// The filled pages not yet unmapped (at most `cap`, counted until the evictor has unmapped
// them), between the readers and the evictor.
class filled_queue {
 public:
  explicit filled_queue(std::size_t cap) : cap_(std::max<std::size_t>(cap, 2)) {}
  void push(std::uint64_t page) {
    std::unique_lock lk(mu_);
    room_.wait(lk, [&] { return held_ < cap_; });
    q_.push_back(page);
    if (++held_ >= cap_ / 2) work_.notify_one();
  }
  // Takes everything queued once B/2 pages are held (or the readers are done); false once the
  // readers are done and nothing is left.
  bool take(std::vector<std::uint64_t>& out) {
    std::unique_lock lk(mu_);
    work_.wait(lk, [&] { return held_ >= cap_ / 2 || done_; });
    out.assign(q_.begin(), q_.end());
    q_.clear();
    return !out.empty() || !done_;
  }
  void unmapped() {
    std::lock_guard lk(mu_);
    --held_;
    room_.notify_one();
  }
  void finish() {
    std::lock_guard lk(mu_);
    done_ = true;
    work_.notify_one();
  }

 private:
  const std::size_t cap_;
  std::mutex mu_;
  std::condition_variable room_, work_;
  std::deque<std::uint64_t> q_;
  std::size_t held_ = 0;
  bool done_ = false;
};

// T readers taking their faults, the evictor unmapping and writing; the seconds, or -1.
double run_floor(int fd, const config& c, const std::vector<void*>& bufs) {
  using namespace pheap::paging;
  const std::uint64_t pages = c.file_bytes / c.page;
  g_len = pages * c.page;
  g_page = c.page;
  g_fd = fd;
  void* m = ::mmap(nullptr, g_len + c.page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) {
    std::fprintf(stderr, "disk_replay_bench: mmap of %" PRIu64 " bytes: %s\n", g_len, std::strerror(errno));
    return -1;
  }
  const auto raw = reinterpret_cast<std::uintptr_t>(m);
  g_base = reinterpret_cast<std::byte*>((raw + c.page - 1) / c.page * c.page);
  struct unmap {
    void* m;
    std::size_t len;
    ~unmap() { ::munmap(m, len); }
  } unmap_guard{m, g_len + c.page};
  try {
    g_uffd = open_userfaultfd("disk_replay_bench").fd;
    uffd_api(g_uffd, UFFD_FEATURE_SIGBUS, "disk_replay_bench");
    (void)uffd_register(g_uffd, g_base, g_len, UFFDIO_REGISTER_MODE_MISSING, "disk_replay_bench");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "disk_replay_bench: --faults: %s\n", e.what());
    if (g_uffd >= 0) ::close(g_uffd);
    return -1;
  }
  struct sigaction sa {}, old {};
  sa.sa_sigaction = on_sigbus;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGBUS, &sa, &old);

  filled_queue q(c.buffer_pages);
  std::atomic<int> failed{0};
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> readers;
  for (unsigned t = 0; t < c.threads; ++t) {
    const std::uint64_t n = c.reads / c.threads + (t < c.reads % c.threads ? 1 : 0);
    readers.emplace_back([&, t, n] {
      t_bounce = bufs[t];
      std::mt19937_64 rng(1000 + t);
      while (t_reads < n) {
        const std::uint64_t p = rng() % pages;
        t_filled = false;
        std::atomic_signal_fence(std::memory_order_seq_cst);  // the handler sees it, and
        (void)*reinterpret_cast<volatile const unsigned char*>(g_base + p * c.page);
        std::atomic_signal_fence(std::memory_order_seq_cst);  // we see what the handler set
        if (t_filled) q.push(p);
      }
      t_bounce = nullptr;
    });
  }
  std::thread evictor([&] {
    std::mt19937_64 rng(7);
    std::vector<std::uint64_t> batch;
    std::uint64_t unmapped = 0, written = 0;
    const auto write_up_to = [&](std::uint64_t target) {
      for (; written < target; ++written) {
        const off_t off = static_cast<off_t>(rng() % pages * c.page);
        if (::pwrite(fd, bufs[c.threads], c.page, off) != static_cast<ssize_t>(c.page)) {
          failed = errno != 0 ? errno : EIO;
          return;
        }
      }
    };
    while (q.take(batch)) {
      for (const std::uint64_t p : batch) {
        if (::madvise(g_base + p * c.page, c.page, MADV_DONTNEED) != 0) failed = errno;
        q.unmapped();
        ++unmapped;
        // the writes spread among the unmaps as the pager's write-backs among its evictions
        write_up_to(c.reads == 0 ? c.writes : std::min(c.writes, c.writes * unmapped / c.reads));
      }
    }
    write_up_to(c.writes);
  });
  for (auto& t : readers) t.join();
  q.finish();
  evictor.join();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ::sigaction(SIGBUS, &old, nullptr);
  uffd_unregister(g_uffd, g_base, g_len);
  ::close(g_uffd);
  if (failed != 0) {
    std::fprintf(stderr, "disk_replay_bench: --faults: I/O or unmap failed: %s\n", std::strerror(failed));
    return -1;
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  config c;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--help" || k == "-h") return usage(argv[0], 0);
    if (k == "--faults") {
      c.faults = true;
      continue;
    }
    if (i + 1 >= argc) return usage(argv[0], 2);
    const std::string v = argv[++i];
    if (k == "--dir") c.dir = v;
    else if (k == "--page-size") c.page = std::stoull(v);
    else if (k == "--file-bytes") c.file_bytes = std::stoull(v);
    else if (k == "--reads") c.reads = std::stoull(v);
    else if (k == "--writes") c.writes = std::stoull(v);
    else if (k == "--threads") c.threads = static_cast<unsigned>(std::stoul(v));
    else if (k == "--buffer-pages") c.buffer_pages = std::stoull(v);
    else return usage(argv[0], 2);
  }
  if (c.dir.empty() || c.page == 0 || c.page % 4096 != 0 || c.threads == 0) return usage(argv[0], 2);
  c.file_bytes = std::max(c.file_bytes / c.page, std::uint64_t{1}) * c.page;

  const std::string path = c.dir + "/disk-replay-" + std::to_string(::getpid()) + ".dat";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_DIRECT, 0600);
  if (fd < 0) {
    std::fprintf(stderr, "disk_replay_bench: %s: %s\n", path.c_str(), std::strerror(errno));
    return 1;
  }
  struct cleanup {
    int fd;
    std::string path;
    ~cleanup() {
      ::close(fd);
      ::unlink(path.c_str());
    }
  } guard{fd, path};

  std::vector<void*> bufs(c.threads + 1);
  for (auto& b : bufs) {
    if (::posix_memalign(&b, 4096, c.page) != 0) return 1;
    std::memset(b, 0x5a, c.page);
  }
  for (std::uint64_t off = 0; off < c.file_bytes; off += c.page) {
    if (::pwrite(fd, bufs[0], c.page, static_cast<off_t>(off)) != static_cast<ssize_t>(c.page)) {
      std::fprintf(stderr, "disk_replay_bench: writing %s: %s\n", path.c_str(), std::strerror(errno));
      return 1;
    }
  }
  if (::fdatasync(fd) != 0) return 1;

  double s = 0;
  if (c.faults) {
    std::snprintf(g_path, sizeof g_path, "%s", path.c_str());
    s = run_floor(fd, c, bufs);
    for (auto b : bufs) std::free(b);
    if (s < 0) return 1;
  } else {
    std::atomic<int> failed{0};  // the errno of a request that failed (EIO for a short one)
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> ts;
    for (unsigned t = 0; t < c.threads; ++t) {
      const std::uint64_t n = c.reads / c.threads + (t < c.reads % c.threads ? 1 : 0);
      ts.emplace_back([&, t, n] {
        if (!run_requests(fd, false, n, c, 1000 + t, bufs[t])) failed = errno != 0 ? errno : EIO;
      });
    }
    ts.emplace_back([&] {
      if (!run_requests(fd, true, c.writes, c, 7, bufs[c.threads])) failed = errno != 0 ? errno : EIO;
    });
    for (auto& t : ts) t.join();
    s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (auto b : bufs) std::free(b);
    if (failed != 0) {
      std::fprintf(stderr, "disk_replay_bench: I/O on %s failed: %s\n", path.c_str(), std::strerror(failed));
      return 1;
    }
  }
  std::printf("page,threads,file_bytes,reads,writes,seconds,mode\n%" PRIu64 ",%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.3f,%s\n",
              c.page, c.threads, c.file_bytes, c.reads, c.writes, s, c.faults ? "faults" : "io");
  return 0;
}
