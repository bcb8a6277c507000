// disk_replay_bench — how long the disk alone takes for a pager run's I/O: the yardstick of
// "a tiny buffer works at the speed of the disk" (issue 16; bench/README.md run T). Not a test;
// prints one CSV line.
//
//   disk_replay_bench --dir DIR --page-size P --file-bytes F --reads R --writes W [--threads T]
//
// Writes a file of F bytes in DIR (the datastore's size, so that whatever the device or the
// host caches, it caches for both), fdatasync, then times: T threads each doing R/T reads of
// one page at random page-aligned offsets, and one more thread doing the W page writes at
// random offsets, all O_DIRECT, one request at a time per thread. That is the pager's I/O with
// its concurrency (T faulting threads fill synchronously; the evictor writes) and nothing else:
// no faults, no copies, no eviction choice. The file is removed on every path that returns.
//
// Caveats: the pager's evictor writes a batch at queue depth (io_uring), this writes one at a
// time; the pager's offsets follow the application's (skewed) access, these are uniform. On
// this VM's SSD neither changed a 4 KiB or 64 KiB request's time by more than the run-to-run
// spread (bench/README.md run T).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

struct config {
  std::string dir;
  std::uint64_t page = 4096, file_bytes = 0, reads = 0, writes = 0;
  unsigned threads = 2;
};

int usage(const char* argv0, int rc) {
  std::fprintf(rc == 0 ? stdout : stderr,
               "usage: %s --dir DIR --page-size P --file-bytes F --reads R --writes W [--threads T]\n"
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

}  // namespace

int main(int argc, char** argv) {
  config c;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--help" || k == "-h") return usage(argv[0], 0);
    if (i + 1 >= argc) return usage(argv[0], 2);
    const std::string v = argv[++i];
    if (k == "--dir") c.dir = v;
    else if (k == "--page-size") c.page = std::stoull(v);
    else if (k == "--file-bytes") c.file_bytes = std::stoull(v);
    else if (k == "--reads") c.reads = std::stoull(v);
    else if (k == "--writes") c.writes = std::stoull(v);
    else if (k == "--threads") c.threads = static_cast<unsigned>(std::stoul(v));
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
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (auto b : bufs) std::free(b);
  if (failed != 0) {
    std::fprintf(stderr, "disk_replay_bench: I/O on %s failed: %s\n", path.c_str(), std::strerror(failed));
    return 1;
  }
  std::printf("page,threads,file_bytes,reads,writes,seconds\n%" PRIu64 ",%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.3f\n",
              c.page, c.threads, c.file_bytes, c.reads, c.writes, s);
  return 0;
}
