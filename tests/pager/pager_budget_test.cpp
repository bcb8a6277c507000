// The buffer budget: tiny buffers cost CPU in proportion to the pages they move, whatever the
// capacity of the region (never a spin); buffers below the minimum are refused naming it.
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
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

}  // namespace
}  // namespace pheap::test
