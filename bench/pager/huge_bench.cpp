// huge_bench — random 8-byte reads over a heap resident in memory, mapped with 4 KiB entries
// (huge_pages = off) and with 2 MiB entries (huge_pages = always), in one run (not a test;
// prints CSV and ratios).
//
//   huge_bench [--dir DIR] [--mib N] [--chase M] [--reads M] [--reps R]
//
// A pager over a new sparse_store of 2 MiB pages in DIR (default /tmp; nothing is flushed, so
// nothing is written there) maps N MiB (default 1024) with a buffer that holds it all. The
// array is filled with one random cycle (Sattolo) of its 8-byte words, then, per repetition
// and per mode (interleaved: off, always, off, always, ...):
//   dependent    M (default 10 million) reads, each at the index the previous one returned
//                (pointer chasing: every TLB miss is on the critical path);
//   independent  M (default 50 million) reads at xorshift-random indices, summed (misses
//                overlap).
// CPU time of the reading thread (CLOCK_THREAD_CPUTIME_ID) per read. The bytes the page tables
// map with 2 MiB entries (pager_stats::huge_mapped_bytes, which HugePages.* in
// tests/pager/huge_pages_test.cpp checks against /proc/self/smaps) are printed per mode, to
// show the mapping is what it claims. The
// ratio off/always per repetition, and its median, close the output.
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "pheap/pager.hpp"
#include "pheap/sparse_store.hpp"

namespace {

std::uint64_t thread_cpu_ns() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<std::uint64_t>(t.tv_sec) * 1000000000ull + static_cast<std::uint64_t>(t.tv_nsec);
}

struct result {
  double dep_ns, indep_ns;
  std::size_t huge_bytes;
};

result run(const std::string& dir, pheap::huge_pages_mode mode, std::size_t bytes,
           std::uint64_t chase, std::uint64_t reads, int rep) {
  constexpr std::size_t ps = std::size_t{2} << 20;
  const std::string path = dir + "/huge_bench_ds_" + std::to_string(::getpid());
  std::filesystem::remove_all(path);
  pheap::store_options so;
  so.capacity = bytes + ps;
  so.page_size = ps;
  so.segment_size = 64 * ps;
  pheap::pager_options po = pheap::pager_options::from_env();
  po.buffer_size = bytes + ps;
  po.huge_pages = mode;
  result r{};
  {
    pheap::pager pg(pheap::sparse_store::create(path, so), po);
    auto* a = reinterpret_cast<std::uint64_t*>(pg.base());
    const std::uint64_t n = bytes / 8;
    for (std::uint64_t i = 0; i < n; ++i) a[i] = i;
    std::mt19937_64 rng(42);  // the same cycle in every run
    for (std::uint64_t i = n - 1; i > 0; --i) std::swap(a[i], a[rng() % i]);  // Sattolo
    r.huge_bytes = pg.stats().huge_mapped_bytes;
    std::uint64_t x = static_cast<std::uint64_t>(rep) % n;
    const std::uint64_t t0 = thread_cpu_ns();
    for (std::uint64_t i = 0; i < chase; ++i) x = a[x];
    const std::uint64_t t1 = thread_cpu_ns();
    std::uint64_t s = 0, z = 88172645463325252ull + static_cast<std::uint64_t>(rep);
    for (std::uint64_t i = 0; i < reads; ++i) {
      z ^= z << 13;
      z ^= z >> 7;
      z ^= z << 17;
      s += a[z % n];
    }
    const std::uint64_t t2 = thread_cpu_ns();
    if ((x ^ s) == 0x5eed) std::printf("#\n");  // keeps the loops
    r.dep_ns = static_cast<double>(t1 - t0) / static_cast<double>(chase);
    r.indep_ns = static_cast<double>(t2 - t1) / static_cast<double>(reads);
    const auto st = pg.stats();
    std::fprintf(stderr, "%s: huge fills %llu, fallbacks %llu, fresh %llu\n", pheap::to_string(mode),
                 static_cast<unsigned long long>(st.huge_fills),
                 static_cast<unsigned long long>(st.huge_fallback_fills),
                 static_cast<unsigned long long>(st.huge_fresh));
  }
  std::filesystem::remove_all(path);
  return r;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = "/tmp";
  std::size_t mib = 1024;
  std::uint64_t chase = 10000000, reads = 50000000;
  int reps = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--dir") dir = v;
    else if (k == "--mib") mib = std::stoul(v);
    else if (k == "--chase") chase = std::stoull(v);
    else if (k == "--reads") reads = std::stoull(v);
    else if (k == "--reps") reps = std::stoi(v);
    else {
      std::fprintf(stderr, "huge_bench: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  const std::size_t bytes = mib << 20;
  std::printf("rep,mode,mib,dependent_ns_per_read,independent_ns_per_read,anon_huge_mib\n");
  std::vector<double> dep_ratio, indep_ratio;
  for (int rep = 0; rep < reps; ++rep) {
    result off{}, on{};
    for (auto mode : {pheap::huge_pages_mode::off, pheap::huge_pages_mode::always}) {
      const result r = run(dir, mode, bytes, chase, reads, rep);
      std::printf("%d,%s,%zu,%.1f,%.2f,%zu\n", rep, pheap::to_string(mode), mib, r.dep_ns, r.indep_ns,
                  r.huge_bytes >> 20);
      std::fflush(stdout);
      (mode == pheap::huge_pages_mode::off ? off : on) = r;
    }
    dep_ratio.push_back(off.dep_ns / on.dep_ns);
    indep_ratio.push_back(off.indep_ns / on.indep_ns);
  }
  std::printf("# off/always per read, median of %d: dependent %.2fx, independent %.2fx\n", reps,
              median(dep_ratio), median(indep_ratio));
  return 0;
}
