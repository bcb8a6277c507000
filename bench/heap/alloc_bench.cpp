// alloc_bench — small mixed-size allocation throughput of pheap vs malloc, std::allocator and
// Boost.Interprocess managed_mapped_file in the same run, plus reopen time of large heaps.
//
//   alloc_bench [--dir DIR] [--ops N] [--reopen-gib 1,4]
//
// Workload per thread: N allocations of sizes drawn uniformly from 8..512 bytes (each first
// word written), then N frees in random order. Each allocator runs the workload twice on the
// same instance (round 1 includes first-touch page faults; round 2 is steady state) and the
// table reports round 2 in M alloc+free pairs per second. 1 thread and 2 threads (each with
// its own objects). Ratios: pheap / malloc and pheap / managed_mapped_file.
// Containers: flat containers (elements that take no allocator) with the plain
// pheap::allocator<T>, with scoped_allocator<T>, and through the pheap::container alias (whose
// default_allocator picks one): vector push_back, deque push_back, unordered_map and map
// inserts of N u64 (container built, filled and destroyed per rep; 15 interleaved reps,
// each variant first in a third of them; median M ops per thread-CPU second); ratios
// scoped/plain and alias/plain.
// Reopen: builds a heap holding G GiB of objects (1 MiB blocks plus 100k small objects, first
// word of each written), flushes and closes it, then times open_only and open_read_only
// (constructor + find of one object) in fresh managers.
#include <boost/interprocess/managed_mapped_file.hpp>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "pheap/pheap.hpp"

namespace {

namespace pc = pheap::container;
using u64 = std::uint64_t;

using clk = std::chrono::steady_clock;
namespace bip = boost::interprocess;

struct alloc_api {
  std::string name;
  std::function<void*(std::size_t)> alloc;
  std::function<void(void*, std::size_t)> free;
};

// One thread's workload; returns seconds.
double run_thread(const alloc_api& a, std::size_t ops, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::size_t> sizes(ops);
  for (auto& s : sizes) s = 8 + rng() % 505;
  std::vector<std::size_t> order(ops);
  for (std::size_t i = 0; i < ops; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<void*> ptrs(ops);
  const auto t0 = clk::now();
  for (std::size_t i = 0; i < ops; ++i) {
    ptrs[i] = a.alloc(sizes[i]);
    if (ptrs[i] == nullptr) {
      std::fprintf(stderr, "%s: allocation failed\n", a.name.c_str());
      std::exit(1);
    }
    *static_cast<std::size_t*>(ptrs[i]) = i;
  }
  for (std::size_t i : order) a.free(ptrs[i], sizes[i]);
  return std::chrono::duration<double>(clk::now() - t0).count();
}

// Mpairs/s over `threads` threads (wall clock), round 2 of 2.
double measure(const alloc_api& a, std::size_t ops, unsigned threads, double* round1) {
  double result = 0;
  for (int round = 0; round < 2; ++round) {
    const auto t0 = clk::now();
    std::vector<std::thread> ts;
    for (unsigned t = 0; t < threads; ++t) ts.emplace_back([&, t] { run_thread(a, ops, 1000 * round + t); });
    for (auto& t : ts) t.join();
    const double secs = std::chrono::duration<double>(clk::now() - t0).count();
    const double mops = static_cast<double>(ops) * threads / secs / 1e6;
    if (round == 0 && round1) *round1 = mops;
    result = mops;
  }
  return result;
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// M ops per CPU second of one rep (thread CPU time: the comparison is about code paths, and
// other processes on a shared machine then do not count): build C with the heap's allocator,
// fill it with n operations, destroy it.
template <class C, class Fill>
double container_rep(pheap::manager& m, std::size_t n, Fill fill) {
  const double t0 = thread_cpu_seconds();
  {
    C c(m.get_allocator<>());
    fill(c, n);
  }
  return static_cast<double>(n) / (thread_cpu_seconds() - t0) / 1e6;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <class Plain, class Scoped, class Alias, class Fill>
void container_abc(pheap::manager& m, const char* name, std::size_t n, Fill fill) {
  std::vector<double> plain, scoped, alias;
  for (int rep = 0; rep < 15; ++rep) {  // each variant goes first in a third of the reps
    for (int k = 0; k < 3; ++k) {
      switch ((rep + k) % 3) {
        case 0: plain.push_back(container_rep<Plain>(m, n, fill)); break;
        case 1: scoped.push_back(container_rep<Scoped>(m, n, fill)); break;
        default: alias.push_back(container_rep<Alias>(m, n, fill)); break;
      }
    }
  }
  const double p = median(plain), s = median(scoped), a = median(alias);
  std::printf("%-24s %9.2f %9.2f %9.2f %13.3f %11.3f\n", name, p, s, a, s / p, a / p);
}

template <class A>
using u64_map = boost::unordered_map<u64, u64, boost::hash<u64>, std::equal_to<u64>, A>;

void container_bench(pheap::manager& m, std::size_t n) {
  using plain = pheap::allocator<u64>;
  using scoped = pc::scoped_allocator<u64>;
  using plain_pair = pheap::allocator<std::pair<const u64, u64>>;
  using scoped_pair = pc::scoped_allocator<std::pair<const u64, u64>>;
  std::printf("containers: %zu u64 operations per rep, median of 15 (M ops per CPU second)\n", n);
  std::printf("%-24s %9s %9s %9s %13s %11s\n", "container", "plain", "scoped", "alias", "scoped/plain",
              "alias/plain");
  const auto push = [](auto& c, std::size_t k) {
    for (std::size_t i = 0; i < k; ++i) c.push_back(i);
  };
  const auto insert = [](auto& c, std::size_t k) {
    for (std::size_t i = 0; i < k; ++i) c.emplace(i * 0x9E3779B97F4A7C15ull, i);
  };
  container_abc<boost::container::vector<u64, plain>, boost::container::vector<u64, scoped>, pc::vector<u64>>(
      m, "vector push_back", n, push);
  container_abc<boost::container::deque<u64, plain>, boost::container::deque<u64, scoped>, pc::deque<u64>>(
      m, "deque push_back", n, push);
  container_abc<u64_map<plain_pair>, u64_map<scoped_pair>, pc::unordered_map<u64, u64>>(
      m, "unordered_map emplace", n, insert);
  container_abc<boost::container::map<u64, u64, std::less<u64>, plain_pair>,
                boost::container::map<u64, u64, std::less<u64>, scoped_pair>, pc::map<u64, u64>>(
      m, "map emplace", n, insert);
}

void reopen_bench(const std::string& dir, unsigned gib) {
  const std::string path = dir + "/reopen-" + std::to_string(gib) + "g";
  std::filesystem::remove_all(path);
  pheap::options o = pheap::options::from_env();
  o.capacity = (static_cast<std::uint64_t>(gib) + 2) << 30;
  o.pager.buffer_size = 512ull << 20;
  double build = 0, close_s = 0;
  std::uint64_t disk = 0;
  {
    const auto t0 = clk::now();
    auto m = std::make_unique<pheap::manager>(pheap::create_only, path, o);
    for (std::uint64_t i = 0; i < (static_cast<std::uint64_t>(gib) << 10); ++i) {
      auto* p = static_cast<std::uint64_t*>(m->allocate(1 << 20));
      *p = i;
    }
    for (int i = 0; i < 100000; ++i) *static_cast<int*>(m->allocate(8 + i % 500)) = i;
    m->construct<std::uint64_t>("marker")(gib);
    m->flush();
    build = std::chrono::duration<double>(clk::now() - t0).count();
    disk = m->stats().disk_bytes;
    const auto t1 = clk::now();
    m.reset();  // final flush (nothing dirty) + close
    close_s = std::chrono::duration<double>(clk::now() - t1).count();
  }
  auto time_open = [&](auto tag) {
    const auto t0 = clk::now();
    pheap::manager m(tag, path, o);
    const auto* v = m.find<std::uint64_t>("marker").first;
    const double s = std::chrono::duration<double>(clk::now() - t0).count();
    if (v == nullptr || *v != gib) std::fprintf(stderr, "reopen: marker lost\n");
    return s;
  };
  const double rw = time_open(pheap::open_only);
  const double ro = time_open(pheap::open_read_only);
  std::printf("reopen %u GiB heap: open_only %.2f ms, open_read_only %.2f ms  (build+flush %.2f s, "
              "close %.3f s, on disk %.2f GiB)\n",
              gib, rw * 1e3, ro * 1e3, build, close_s, static_cast<double>(disk) / (1 << 30));
  std::filesystem::remove_all(path);
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = "/tmp/pheap-alloc-bench";
  std::size_t ops = 1000000;
  std::vector<unsigned> reopen_gib{1, 4};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--dir" && i + 1 < argc) dir = argv[++i];
    else if (a == "--ops" && i + 1 < argc) ops = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--reopen-gib" && i + 1 < argc) {
      reopen_gib.clear();
      for (const char* p = argv[++i]; *p;) {
        char* end;
        const unsigned long v = std::strtoul(p, &end, 10);
        if (v) reopen_gib.push_back(static_cast<unsigned>(v));
        p = *end ? end + 1 : end;
      }
    } else {
      std::fprintf(stderr, "usage: alloc_bench [--dir DIR] [--ops N] [--reopen-gib 1,4]\n");
      return 2;
    }
  }
  std::filesystem::create_directories(dir);
  const std::string heap_path = dir + "/heap";
  const std::string bip_path = dir + "/bip.mmf";
  std::filesystem::remove_all(heap_path);
  std::filesystem::remove(bip_path);

  pheap::options o = pheap::options::from_env();
  o.capacity = 16ull << 30;
  pheap::manager m(pheap::create_only, heap_path, o);
  bip::managed_mapped_file mmf(bip::create_only, bip_path.c_str(), 4ull << 30);
  std::allocator<char> stda;

  const std::vector<alloc_api> apis{
      {"malloc", [](std::size_t n) { return std::malloc(n); }, [](void* p, std::size_t) { std::free(p); }},
      {"std::allocator", [&](std::size_t n) { return static_cast<void*>(stda.allocate(n)); },
       [&](void* p, std::size_t n) { stda.deallocate(static_cast<char*>(p), n); }},
      {"bip::managed_mapped_file", [&](std::size_t n) { return mmf.allocate(n, std::nothrow); },
       [&](void* p, std::size_t) { mmf.deallocate(p); }},
      {"pheap::manager", [&](std::size_t n) { return m.allocate(n); }, [&](void* p, std::size_t) { m.deallocate(p); }},
  };
  std::printf("alloc_bench: %zu allocations of 8..512 B then random-order frees per thread; "
              "M alloc+free pairs/s (round 2; round 1 in parentheses)\n", ops);
  std::printf("%-26s %22s %22s\n", "allocator", "1 thread", "2 threads");
  double res[4][2];
  for (std::size_t i = 0; i < apis.size(); ++i) {
    double r1a = 0, r1b = 0;
    res[i][0] = measure(apis[i], ops, 1, &r1a);
    res[i][1] = measure(apis[i], ops, 2, &r1b);
    std::printf("%-26s %10.2f (%8.2f) %10.2f (%8.2f)\n", apis[i].name.c_str(), res[i][0], r1a, res[i][1], r1b);
  }
  std::printf("ratio pheap/malloc:        %10.2f %21.2f\n", res[3][0] / res[0][0], res[3][1] / res[0][1]);
  std::printf("ratio pheap/managed_mapped_file: %4.2f %21.2f\n", res[3][0] / res[2][0], res[3][1] / res[2][1]);
  std::printf("pheap heap after run: all memory deallocated: %s\n", m.all_memory_deallocated() ? "yes" : "NO");

  container_bench(m, ops);

  for (unsigned g : reopen_gib) reopen_bench(dir, g);
  std::filesystem::remove(bip_path);
  return 0;
}
