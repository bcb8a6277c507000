// The buffer budget: tiny buffers cost CPU in proportion to the pages they move, whatever the
// capacity of the region (never a spin); an automatic buffer fits a real memory cgroup.
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include "pager/test_access.hpp"
#include "pager_test_util.hpp"

namespace pheap::test {
namespace {

double process_cpu_seconds() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

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

// With a buffer of a few pages in a wide region the evictor harvests the written bits of each
// run of resident pages, not of the whole region (evictor.cpp harvest_writes; bench/DECISIONS.md
// "the harvest walks the ring, not the region"). Pages installed since the hand took them in are left to a later walk: no write may
// be lost for it. Two threads write their own word of 256 pages spread over 256 MiB through a
// 3-page buffer, eight rounds; after a flush a new pager on the store sees every last value.
TEST_P(PagerTinyBuffer, EveryWriteThroughATinyBufferInAWideRegionReachesTheStore) {
  PHEAP_REQUIRE_UFFD(dirty_tracking::wp_async);
  const std::size_t ps = GetParam();
  constexpr std::uint64_t kCapacity = 256ull << 20;
  constexpr std::size_t kPages = 256, kRounds = 8;
  const std::size_t stride = kCapacity / ps / kPages;
  const auto value = [](std::size_t page, std::size_t round, unsigned t) {
    return (page + 1) * 1000003u + round * 10 + t;
  };
  backing b("mem");
  pager_options o;
  o.buffer_size = 3 * ps;
  o.tracking = dirty_tracking::wp_async;
  {
    pager pg(b.create(kCapacity, static_cast<std::uint32_t>(ps)), o);
    watchdog wd(120);
    std::vector<std::thread> ts;
    for (unsigned t = 0; t < 2; ++t) {
      ts.emplace_back([&, t] {
        for (std::size_t r = 0; r < kRounds; ++r) {
          for (std::size_t k = 0; k < kPages; ++k) {
            const std::size_t p = (k * 7 + r) % kPages;  // a different order each round
            std::atomic_ref<std::uint64_t> w(reinterpret_cast<std::uint64_t*>(pg.base() + p * stride * ps)[t]);
            w.store(value(p, r, t), std::memory_order_relaxed);
          }
        }
      });
    }
    for (auto& t : ts) t.join();
    ASSERT_GT(pg.stats().evicted_dirty, kPages) << "the workload did not page: the test would not fail";
    pg.flush({});
  }
  pager pg(b.reopen(), o);
  std::size_t wrong = 0;
  for (std::size_t p = 0; p < kPages; ++p) {
    for (unsigned t = 0; t < 2; ++t) {
      const auto* w = reinterpret_cast<const std::uint64_t*>(pg.base() + p * stride * ps);
      wrong += w[t] != value(p, kRounds - 1, t);
    }
  }
  EXPECT_EQ(wrong, 0u) << "of " << 2 * kPages << " words";
}

// A tiny buffer's evictor moves out a page or two per batch; emptying the staging range costs
// a TLB shootdown however little it holds, so dropped frames wait for a few batches and go
// with one MADV_DONTNEED (staging.hpp step 3). Claims: between batches the range never keeps
// more frames than the bound pheap counts outside its buffer (an eviction batch, at most
// 256 KiB), it does keep some (the batches share an emptying), and every write still lands.
TEST_P(PagerTinyBuffer, SmallEvictionBatchesShareOneStagingEmptyingWithinItsStatedBound) {
  PHEAP_REQUIRE_UFFD(dirty_tracking::wp_async);
  const std::size_t ps = GetParam();
  constexpr std::size_t kPages = 64, kBuffer = 8;
  backing b("mem");
  pager_options o;
  o.buffer_size = kBuffer * ps;
  o.tracking = dirty_tracking::wp_async;
  {
    pager pg(b.create(kPages * ps, static_cast<std::uint32_t>(ps)), o);
    paging::pager_impl& impl = paging::test_access::impl(pg);
    const std::size_t bound = paging::test_access::evictor(pg).staging_range().retain() * (ps / paging::os_page_size());
    ASSERT_GT(bound, 0u);
    std::size_t max_seen = 0, times_kept = 0;
    watchdog wd(120);
    for (std::size_t r = 0; r < 4; ++r) {
      for (std::size_t p = 0; p < kPages; ++p) {
        reinterpret_cast<std::uint64_t*>(pg.base() + p * ps)[r] = p * 100 + r;
        impl.wait_evictor_idle();
        const std::size_t frames = paging::test_access::evictor(pg).staging_range().staged_frames();
        max_seen = std::max(max_seen, frames);
        times_kept += frames > 0;
        ASSERT_LE(frames, bound) << "after page " << p << " of round " << r;
      }
    }
    ASSERT_GT(pg.stats().evicted_dirty, kPages) << "the workload did not page: the test would not fail";
    EXPECT_GT(times_kept, 0u) << "every batch emptied the staging range on its own";
    EXPECT_EQ(impl.check_invariants(), "");
    pg.flush({});
  }
  pager pg(b.reopen(), o);
  std::size_t wrong = 0;
  for (std::size_t p = 0; p < kPages; ++p) {
    for (std::size_t r = 0; r < 4; ++r) wrong += reinterpret_cast<const std::uint64_t*>(pg.base() + p * ps)[r] != p * 100 + r;
  }
  EXPECT_EQ(wrong, 0u) << "of " << 4 * kPages << " words";
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

// Runs `body` in a child process inside `cg`; the child reports a line and an exit code (0 =
// pass). Returns the report; fails the test when the child is killed (the OOM killer) or exits
// non-zero, or when the cgroup counted an OOM kill.
std::string run_in_cgroup(const memory_cgroup& cg, const std::function<int(std::string&)>& body) {
  int go[2], res[2];
  if (::pipe(go) != 0 || ::pipe(res) != 0) {
    ADD_FAILURE() << "pipe: " << std::strerror(errno);
    return {};
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(go[1]);
    ::close(res[0]);
    char b;
    if (::read(go[0], &b, 1) != 1) ::_exit(10);  // moved into the cgroup
    std::string report;
    int code = 0;
    try {
      code = body(report);
    } catch (const std::exception& e) {
      report += std::string("; ") + e.what();
      code = 15;
    }
    if (::write(res[1], report.data(), report.size()) < 0) ::_exit(16);
    ::_exit(code);
  }
  ::close(go[0]);
  ::close(res[1]);
  EXPECT_TRUE(cg.put("cgroup.procs", std::to_string(pid)));
  EXPECT_EQ(::write(go[1], "g", 1), 1);
  ::close(go[1]);
  std::string report;
  char buf[512];
  for (ssize_t n; (n = ::read(res[0], buf, sizeof buf)) > 0;) report.append(buf, static_cast<std::size_t>(n));
  ::close(res[0]);
  int st = 0;
  ::waitpid(pid, &st, 0);
  const std::string oom = cg.get(cg.v2 ? "memory.events" : "memory.oom_control");
  EXPECT_TRUE(WIFEXITED(st)) << "child killed by signal " << (WIFSIGNALED(st) ? WTERMSIG(st) : 0)
                             << " (OOM?): " << oom << "; " << report;
  EXPECT_EQ(WIFEXITED(st) ? WEXITSTATUS(st) : -1, 0) << report;
  EXPECT_NE(oom.find("oom_kill 0"), std::string::npos) << oom;
  std::printf("%s\n", report.c_str());
  return report;
}

// A pager over a real sparse_store of capacity 2 x `data`, automatic buffer.
std::unique_ptr<pager> open_auto(const temp_dir& tmp, std::uint64_t data, std::uint32_t ps) {
  store_options so;
  so.capacity = 2 * data;
  so.page_size = ps;
  so.segment_size = 64ull << 20;
  return std::make_unique<pager>(sparse_store::create(tmp / "ds", so), pager_options{});
}

// One word per 4 KiB of [first, last) words: written, or checked (false at the first wrong one).
constexpr std::size_t kStep = 4096 / 8;
std::uint64_t word_value(std::size_t i) { return i * 2654435761u + 1; }
void write_words(pager& pg, std::size_t first, std::size_t last) {
  auto* w = reinterpret_cast<std::uint64_t*>(pg.base());
  for (std::size_t i = first; i < last; i += kStep) w[i] = word_value(i);
}
bool check_words(pager& pg, std::size_t first, std::size_t last) {
  const auto* w = reinterpret_cast<const std::uint64_t*>(pg.base());
  for (std::size_t i = first; i < last; i += kStep) {
    if (w[i] != word_value(i)) return false;
  }
  return true;
}

// A 64 MiB memory cgroup for the test's child and a directory for its datastore.
class PagerBudget : public ::testing::Test {
 protected:
  static constexpr std::uint64_t limit = 64ull << 20;
  void SetUp() override {
    PHEAP_REQUIRE_UFFD(dirty_tracking::automatic);
    cg = std::make_unique<memory_cgroup>(limit);
    if (cg->dir.empty()) { PHEAP_REQUIRE_FEATURE(cg->why); }
  }
  std::unique_ptr<memory_cgroup> cg;
  temp_dir tmp;
};

// The budget is the budget: with no buffer_size, a pager in a 64 MiB memory cgroup writes and
// reads back 256 MiB (4x the limit) through a real sparse_store and is not OOM-killed; its
// stats name the cgroup as the source of the buffer's size.
TEST_F(PagerBudget, AutomaticBufferFitsAMemoryCgroupFourTimesSmallerThanTheData) {
  const std::uint64_t data = 4 * limit;
  run_in_cgroup(*cg, [&](std::string& report) {
    auto pg = open_auto(tmp, data, 65536);
    const pager_stats s0 = pg->stats();
    report = "buffer " + std::to_string(s0.buffer_bytes) + " from " + s0.buffer_source;
    if (s0.buffer_source.find("cgroup") == std::string::npos) return 11;
    if (s0.buffer_bytes == 0 || s0.buffer_bytes >= limit) return 12;
    write_words(*pg, 0, data / 8);
    pg->flush({});
    if (!check_words(*pg, 0, data / 8)) return 13;
    const pager_stats s1 = pg->stats();
    report += "; after: " + std::to_string(s1.evictions) + " evictions, buffer " +
              std::to_string(s1.buffer_bytes) + ", peak resident " +
              std::to_string(s1.peak_resident_pages) + " pages";
    return s1.evictions == 0 ? 14 : 0;
  });
}

// The two tests below are not built under ASan: there the application's own memory costs more
// than itself in the cgroup (a shadow byte per 8, redzones, and a debug build's slower evictor
// sampling behind a growth it cannot see coming), so the limit leaves the buffer a few MiB and
// the OOM killer or the 2-page floor measures ASan, not the pager (the release stage runs them,
// as root; as the TSan exclusion around this file).
#if !defined(__SANITIZE_ADDRESS__)

// Waits until the evictor has sampled the memory limit `n` more times from now
// (pager_stats::buffer_resamples; it samples every 10 ms, memory_limit.hpp): the target then
// follows what the process uses now, however late the evictor thread ran. False at the
// deadline, `report` saying so.
bool wait_for_samples(pager& pg, std::uint64_t n, std::string& report) {
  const std::uint64_t r0 = pg.stats().buffer_resamples;
  if (eventually([&] { return pg.stats().buffer_resamples >= r0 + n; })) return true;
  report += "; the evictor did not sample the limit " + std::to_string(n) + " times in " +
            std::to_string(kActorDeadline.count()) + " s (" +
            std::to_string(pg.stats().buffer_resamples - r0) + " samples)";
  return false;
}

// A flush lends its bounce buffer out of the buffer (buffer_budget.hpp B5), so the reserve
// kept for the rest of the process does not have to hold it: once the limit binds (the
// application took 24 MiB of its own after open) and the buffer is full of dirty pages, the
// flush first lowers the target by the bounce buffer's pages (the evictor makes room before
// the copies start) and gives them back when it ends. The child is not OOM-killed and reads
// back every word.
TEST_F(PagerBudget, FlushLendsItsBounceBufferOutOfTheBufferAndGivesItBack) {
  const std::uint64_t data = 2 * limit, growth = 24ull << 20;
  run_in_cgroup(*cg, [&](std::string& report) {
    auto pg = open_auto(tmp, data, 4096);
    std::vector<std::unique_ptr<char[]>> mine;
    for (std::uint64_t got = 0; got < growth; got += 1 << 20) {
      mine.emplace_back(new char[1 << 20]);
      std::memset(mine.back().get(), 1, 1 << 20);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    write_words(*pg, 0, data / 8);  // twice the limit: the buffer is full of dirty pages
    if (!wait_for_samples(*pg, 5, report)) return 17;  // the target stands where the limit binds
    const pager_stats s0 = pg->stats();
    pg->flush({});
    // Samples after the flush gave the bounce buffer back. (Not faults for the evictor to
    // sample on its way: 4 000 page reads grow the rest of the process by 2-3 MiB, and the
    // target they leave measured them rather than the flush.)
    if (!wait_for_samples(*pg, 5, report)) return 17;
    const pager_stats s1 = pg->stats();
    report = "target " + std::to_string(s0.buffer_target_bytes >> 10) + " KiB, lowest before " +
             std::to_string(s0.buffer_lowest_target_bytes >> 10) + " KiB, lowest after the flush " +
             std::to_string(s1.buffer_lowest_target_bytes >> 10) + " KiB, target after " +
             std::to_string(s1.buffer_target_bytes >> 10) + " KiB";
    // Lent: the target went at least 3 MiB below where it stood (the bounce buffer is 1/16 of
    // the limit: 4 MiB here).
    if (s1.buffer_lowest_target_bytes + (3u << 20) > s0.buffer_target_bytes) return 11;
    // Given back: the target rose at least 3 MiB above its lowest again (not all the way to
    // where it stood: the store's page map and malloc's arenas keep some of the flush's own
    // memory, ~1.5 MiB here, which the sampler rightly counts as the rest of the process).
    if (s1.buffer_target_bytes < s1.buffer_lowest_target_bytes + (3u << 20)) return 12;
    return check_words(*pg, 0, data / 8) ? 0 : 13;
  });
}

// The buffer follows the cgroup: after the pager opened with a full-size automatic buffer and
// filled it, the application takes 28 MiB of its own (more than the 16 MiB headroom of the
// open-time sizing: without following, buffer + application exceed the 64 MiB limit and the
// kernel OOM-kills the process) in 1 MiB steps while it keeps writing the heap. The pager
// lowers its target, gives the memory back, and the run completes with every word intact;
// when the application frees its memory the target rises back.
TEST_F(PagerBudget, AutomaticBufferShrinksWhenTheApplicationGrowsBeyondTheHeadroom) {
  const std::uint64_t data = 4 * limit, growth = 28ull << 20;
  run_in_cgroup(*cg, [&](std::string& report) {
    auto pg = open_auto(tmp, data, 4096);
    const pager_stats s0 = pg->stats();
    report = "buffer " + std::to_string(s0.buffer_bytes >> 20) + " MiB from " + s0.buffer_source;
    // The growth must not fit beside the buffer sized at open, by the measure of check 12
    // below (a buffer of 35 MiB, where the child used 1.2 MiB at open, is one: 35 + 28 > 62).
    if (s0.buffer_bytes + growth <= limit - (2u << 20)) return 11;  // it would fit: no test
    const std::size_t words = data / 8, slice = words / 64;
    write_words(*pg, 0, words / 4);  // one limit's worth: the buffer is full
    // The application's own memory, outside the heap, touched 1 MiB at a time while the heap
    // keeps being written.
    std::vector<std::unique_ptr<char[]>> mine;
    std::size_t next = words / 4;
    for (std::uint64_t got = 0; got < growth; got += 1 << 20) {
      mine.emplace_back(new char[1 << 20]);
      std::memset(mine.back().get(), 1, 1 << 20);
      write_words(*pg, next, next + slice / 8);
      next += slice / 8;
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    write_words(*pg, next, words);
    const pager_stats s1 = pg->stats();
    report += "; grown: target " + std::to_string(s1.buffer_target_bytes >> 20) + " MiB (" +
              s1.buffer_target_source + "), " + std::to_string(s1.evictions) + " evictions";
    // The buffer made room for the growth: target + growth fit the limit with the 2 MiB the
    // child used before (a buffer that kept its size at open would not: 37 + 28 MiB).
    if (s1.buffer_target_bytes + growth > limit - (2u << 20)) return 12;
    pg->flush({});
    if (!check_words(*pg, 0, words)) return 13;
    mine.clear();
    if (!wait_for_samples(*pg, 10, report)) return 17;  // samples after the memory was freed
    check_words(*pg, 0, words / 4);  // a fault or two: the evictor samples on its way
    const pager_stats s2 = pg->stats();
    report += "; freed: target " + std::to_string(s2.buffer_target_bytes >> 20) + " MiB";
    if (s2.buffer_target_bytes <= s1.buffer_target_bytes) return 14;  // did not rise back
    return s2.buffer_resamples == 0 ? 15 : 0;
  });
}

// Two automatic buffers in one cgroup: each pager sized itself at open as if it were alone
// (the other's buffer was still empty), and each then counts the other's resident pages as
// the rest of the process (memory_limit.hpp), so together they stay within the limit. Two
// datastores of twice the limit each, written in alternating slices, then flushed and read
// back: no OOM kill, every word intact, both evicted, the two targets together fit the limit,
// and neither was starved by the other (limit_pool.hpp).
TEST_F(PagerBudget, TwoAutomaticBuffersInOneCgroupTogetherStayWithinItsLimit) {
  const std::uint64_t data = 2 * limit;
  temp_dir tmp2;
  run_in_cgroup(*cg, [&](std::string& report) {
    auto a = open_auto(tmp, data, 4096);
    auto b = open_auto(tmp2, data, 4096);
    const std::size_t words = data / 8, slice = words / 32;
    for (std::size_t at = 0; at < words; at += slice) {
      write_words(*a, at, at + slice);
      write_words(*b, at, at + slice);
    }
    a->flush({});
    b->flush({});
    if (!check_words(*a, 0, words)) return 11;
    if (!check_words(*b, 0, words)) return 12;
    const pager_stats sa = a->stats(), sb = b->stats();
    report = "targets " + std::to_string(sa.buffer_target_bytes >> 20) + " + " +
             std::to_string(sb.buffer_target_bytes >> 20) + " MiB (at open " +
             std::to_string(sa.buffer_bytes >> 20) + " and " + std::to_string(sb.buffer_bytes >> 20) +
             " MiB); peaks " + std::to_string(sa.peak_resident_pages) + " and " +
             std::to_string(sb.peak_resident_pages) + " pages; evictions " +
             std::to_string(sa.evictions) + " and " + std::to_string(sb.evictions);
    if (sa.evictions == 0 || sb.evictions == 0) return 13;
    if (sa.buffer_target_bytes + sb.buffer_target_bytes > limit) return 14;
    // Fair shares under contention (limit_pool.hpp P3): neither holds less than a third.
    const std::uint64_t both = sa.buffer_target_bytes + sb.buffer_target_bytes;
    return 3 * std::min(sa.buffer_target_bytes, sb.buffer_target_bytes) < both ? 15 : 0;
  });
}
// Two processes in one cgroup (MPI ranks of one node in a job's cgroup), each with an automatic
// buffer over its own datastore of twice the limit, written and read back at once: they share
// the cgroup's pool (limit_pool.hpp; before it, each sized itself as if alone and the kernel
// OOM-killed one in every run). The child ends without closing its pager (_exit), as a rank
// that is killed would: the parent gets back what it held at its next sample (P4).
TEST_F(PagerBudget, TwoProcessesWithAutomaticBuffersInOneCgroupTogetherStayWithinItsLimit) {
  const std::uint64_t data = 2 * limit;
  temp_dir tmp2;
  run_in_cgroup(*cg, [&](std::string& report) {
    const pid_t other = ::fork();
    const bool child = other == 0;
    auto pg = open_auto(child ? tmp2 : tmp, data, 4096);
    const std::size_t words = data / 8;
    write_words(*pg, 0, words);
    pg->flush({});
    const bool ok = check_words(*pg, 0, words);
    const pager_stats st = pg->stats();
    if (child) ::_exit(ok ? 0 : 1);
    int status = 0;
    ::waitpid(other, &status, 0);
    report = "target " + std::to_string(st.buffer_target_bytes >> 20) + " MiB; other: " +
             (WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                                : "signal " + std::to_string(WTERMSIG(status)));
    if (!ok) return 11;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 12;
  });
}
#endif  // !__SANITIZE_ADDRESS__

#endif  // !__SANITIZE_THREAD__

}  // namespace
}  // namespace pheap::test
