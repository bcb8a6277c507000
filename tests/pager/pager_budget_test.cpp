// The buffer budget: tiny buffers cost CPU in proportion to the pages they move, whatever the
// capacity of the region (never a spin); an automatic buffer fits a real memory cgroup.
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include "pager_test_util.hpp"

namespace pheap::test {
namespace {

double process_cpu_seconds() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

// Aborts the process (with a message) unless disarmed within `seconds`: a spin or a hang
// fails the test instead of stalling the suite.
class watchdog {
 public:
  explicit watchdog(int seconds)
      : th_([this, seconds] {
          for (int i = 0; i < seconds * 10 && !done_.load(); ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
          }
          if (!done_.load()) {
            std::fprintf(stderr, "watchdog: the workload did not finish in %d s\n", seconds);
            std::abort();
          }
        }) {}
  ~watchdog() {
    done_ = true;
    th_.join();
  }

 private:
  std::atomic<bool> done_{false};
  std::thread th_;
};

struct tiny_run {
  double cpu_s = 0;  // process CPU time (user + system) during the workload
  std::uint64_t pages_moved = 0;  // store page reads + writes
  double cpu_per_page() const { return cpu_s / static_cast<double>(pages_moved); }
};

// Two threads read and write random words of a 4 MiB heap through a buffer of `buffer` bytes,
// in a region of `capacity` bytes (the heap's default capacity is 64 GiB).
tiny_run run_tiny(std::size_t ps, std::size_t buffer, std::uint64_t capacity) {
  pager_options o;
  o.buffer_size = buffer;
  auto store = mem_store::create(capacity, static_cast<std::uint32_t>(ps));
  auto st = store->state();
  pager pg(std::move(store), o);
  const std::size_t words = (std::size_t(4) << 20) / 8;
  const double c0 = process_cpu_seconds();
  const std::uint64_t io0 = st->reads + st->writes;
  {
    watchdog wd(120);
    std::vector<std::thread> ts;
    for (unsigned t = 0; t < 2; ++t) {
      ts.emplace_back([&, t] {
        std::mt19937_64 rng(t + 1);
        auto* w = reinterpret_cast<std::uint64_t*>(pg.base());
        for (int i = 0; i < 6000; ++i) {
          std::atomic_ref<std::uint64_t> a(w[rng() % words]);
          if (i & 1) a.fetch_add(1, std::memory_order_relaxed);
          else (void)a.load(std::memory_order_relaxed);
        }
      });
    }
    for (auto& t : ts) t.join();
  }
  tiny_run r;
  r.cpu_s = process_cpu_seconds() - c0;
  r.pages_moved = st->reads + st->writes - io0;
  return r;
}

class PagerTinyBuffer : public ::testing::TestWithParam<std::size_t> {};

// Before the evictor's clock went over the resident pages only, every batch swept the page
// numbers of the whole region: a 256 KiB buffer in a 64 GiB region spun at 100 % CPU (61 s of
// CPU for what takes 1 s in a 64 MiB region).
TEST_P(PagerTinyBuffer, CpuPerPageMovedDoesNotGrowWithTheRegionCapacity) {
  PHEAP_REQUIRE_UFFD(dirty_tracking::automatic);
  const std::size_t ps = GetParam();
  const std::size_t buffer = ps == 4096 ? (256u << 10) : (1u << 20);
  const tiny_run small = run_tiny(ps, buffer, 64ull << 20);
  const tiny_run large = run_tiny(ps, buffer, 64ull << 30);
  ASSERT_GT(small.pages_moved, 1000u) << "the workload did not page: the test would not fail";
  ASSERT_GT(large.pages_moved, 1000u);
  // CPU per page moved: in the same order of magnitude whatever the capacity, and far below a
  // spin (a page moved costs tens of µs of CPU; 2 ms leaves room for sanitizer builds).
  EXPECT_LT(large.cpu_per_page(), 3 * small.cpu_per_page() + 50e-6)
      << "64 GiB region: " << large.cpu_s << " s CPU for " << large.pages_moved
      << " pages; 64 MiB region: " << small.cpu_s << " s for " << small.pages_moved;
  EXPECT_LT(large.cpu_per_page(), 2e-3) << large.cpu_s << " s CPU for " << large.pages_moved;
  EXPECT_LT(small.cpu_per_page(), 2e-3) << small.cpu_s << " s CPU for " << small.pages_moved;
}

INSTANTIATE_TEST_SUITE_P(pages, PagerTinyBuffer, ::testing::Values(4096, 65536),
                         [](const auto& i) { return std::to_string(i.param / 1024) + "K"; });

// Not in ThreadSanitizer builds: TSan gives every page the process touches shadow memory
// several times its size, charged to the same cgroup, so no limit of which the buffer is a
// fraction can hold it (the child is OOM-killed whatever pheap does). The release and
// ASan+UBSan stages of scripts/test.sh run it.
#if !defined(__SANITIZE_THREAD__)
// ---- the automatic buffer in a real memory cgroup -------------------------------------------

// A child cgroup of this process's memory cgroup (v1 or v2) with a memory limit, removed on
// destruction; `dir` is empty (and `why` says why) when one cannot be made here.
struct memory_cgroup {
  std::string dir, why;
  bool v2 = false;
  explicit memory_cgroup(std::uint64_t limit) {
    if (::geteuid() != 0) {
      why = "root, to create a memory cgroup";
      return;
    }
    std::string parent;
    std::ifstream cg("/proc/self/cgroup");
    for (std::string line; std::getline(cg, line);) {
      const auto a = line.find(':'), b = line.find(':', a + 1);
      const std::string ctl = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
      if (ctl.find("memory") != std::string::npos && ::access("/sys/fs/cgroup/memory", W_OK) == 0) {
        parent = "/sys/fs/cgroup/memory" + (path == "/" ? "" : path);
      } else if (line.rfind("0::", 0) == 0 && parent.empty() &&
                 ::access(("/sys/fs/cgroup" + path + "/memory.max").c_str(), F_OK) == 0) {
        parent = "/sys/fs/cgroup" + (path == "/" ? "" : path);
        v2 = true;
      }
    }
    if (parent.empty()) {
      why = "a writable memory cgroup hierarchy (v1 /sys/fs/cgroup/memory or v2)";
      return;
    }
    const std::string d = parent + "/pheap-test-" + std::to_string(::getpid());
    if (::mkdir(d.c_str(), 0755) != 0) {
      why = "mkdir " + d + ": " + std::strerror(errno);
      return;
    }
    dir = d;
    if (!put(v2 ? "memory.max" : "memory.limit_in_bytes", std::to_string(limit))) {
      why = "cannot set the memory limit of " + d;
      dir.clear();
      ::rmdir(d.c_str());
    }
  }
  ~memory_cgroup() {
    if (dir.empty()) return;
    for (int i = 0; i < 100 && ::rmdir(dir.c_str()) != 0 && errno == EBUSY; ++i) ::usleep(20000);
  }
  bool put(const std::string& file, const std::string& v) const {
    std::ofstream f(dir + "/" + file);
    f << v;
    f.flush();
    return static_cast<bool>(f);
  }
  std::string get(const std::string& file) const {
    std::ifstream f(dir + "/" + file);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }
};

// The budget is the budget: with no buffer_size, a pager in a 64 MiB memory cgroup writes and
// reads back 256 MiB (4x the limit) through a real sparse_store and is not OOM-killed; its
// stats name the cgroup as the source of the buffer's size.
TEST(PagerBudget, AutomaticBufferFitsAMemoryCgroupFourTimesSmallerThanTheData) {
  PHEAP_REQUIRE_UFFD(dirty_tracking::automatic);
  const std::uint64_t limit = 64ull << 20, data = 4 * limit, ps = 65536;
  memory_cgroup cg(limit);
  if (cg.dir.empty()) { PHEAP_REQUIRE_FEATURE(cg.why); }
  temp_dir tmp;
  int go[2], res[2];
  ASSERT_EQ(::pipe(go), 0);
  ASSERT_EQ(::pipe(res), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(go[1]);
    ::close(res[0]);
    char b;
    if (::read(go[0], &b, 1) != 1) ::_exit(10);  // moved into the cgroup
    std::string report;
    int code = 0;
    try {
      store_options so;
      so.capacity = 2 * data;
      so.page_size = ps;
      so.segment_size = 64ull << 20;
      pager pg(sparse_store::create(tmp / "ds", so), pager_options{});
      const pager_stats s0 = pg.stats();
      report = "buffer " + std::to_string(s0.buffer_bytes) + " from " + s0.buffer_source;
      if (s0.buffer_source.find("cgroup") == std::string::npos) code = 11;
      if (s0.buffer_bytes == 0 || s0.buffer_bytes >= limit) code = 12;
      auto* w = reinterpret_cast<std::uint64_t*>(pg.base());
      const std::size_t words = data / 8, step = 4096 / 8;  // one word per 4 KiB
      for (std::size_t i = 0; i < words; i += step) w[i] = i * 2654435761u + 1;
      pg.flush({});
      for (std::size_t i = 0; i < words; i += step) {
        if (w[i] != i * 2654435761u + 1) {
          code = 13;
          break;
        }
      }
      const pager_stats s1 = pg.stats();
      report += "; after: " + std::to_string(s1.evictions) + " evictions, buffer " +
                std::to_string(s1.buffer_bytes) + ", peak resident " +
                std::to_string(s1.peak_resident_pages) + " pages";
      if (s1.evictions == 0) code = 14;
    } catch (const std::exception& e) {
      report = e.what();
      code = 15;
    }
    if (::write(res[1], report.data(), report.size()) < 0) ::_exit(16);
    ::_exit(code);
  }
  ::close(go[0]);
  ::close(res[1]);
  ASSERT_TRUE(cg.put("cgroup.procs", std::to_string(pid)));
  ASSERT_EQ(::write(go[1], "g", 1), 1);
  ::close(go[1]);
  std::string report;
  char buf[512];
  for (ssize_t n; (n = ::read(res[0], buf, sizeof buf)) > 0;) report.append(buf, static_cast<std::size_t>(n));
  ::close(res[0]);
  int st = 0;
  ::waitpid(pid, &st, 0);
  const std::string oom = cg.get(cg.v2 ? "memory.events" : "memory.oom_control");
  ASSERT_TRUE(WIFEXITED(st)) << "child killed by signal " << (WIFSIGNALED(st) ? WTERMSIG(st) : 0)
                             << " (OOM?): " << oom << "; " << report;
  EXPECT_EQ(WEXITSTATUS(st), 0) << report;
  EXPECT_NE(oom.find("oom_kill 0"), std::string::npos) << oom;
  std::printf("%s\n", report.c_str());
}

#endif  // !__SANITIZE_THREAD__

}  // namespace
}  // namespace pheap::test
