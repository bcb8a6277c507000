// huge_bench — random 8-byte reads over a heap resident in memory, mapped with 4 KiB entries
// (huge_pages = off) and with 2 MiB entries (huge_pages = always), in one run (not a test;
// prints CSV and ratios).
//
//   huge_bench [--dir DIR] [--mib N] [--chase M] [--reads M] [--reps R] [--modes LIST]
//
// A pager over a new sparse_store in DIR (default /tmp; nothing is flushed, so nothing is
// written there) maps N MiB (default 1024) with a buffer that holds it all. LIST (default
// off,always) names the configurations, comma-separated, in the order each repetition runs
// them: off and always are 2 MiB pages with 4 KiB and 2 MiB entries; off4k is 4 KiB pages (4 KiB
// entries: the page size of pheap-graph's datastores). The array is filled with one random
// cycle (Sattolo) of its 8-byte words, then, per repetition and per mode (interleaved: off,
// always, off, always, ...):
//   dependent    M (default 10 million) reads, each at the index the previous one returned
//                (pointer chasing: every TLB miss is on the critical path);
//   independent  M (default 50 million) reads at xorshift-random indices, summed (misses
//                overlap).
// CPU time of the reading thread (CLOCK_THREAD_CPUTIME_ID) per read. The bytes the page tables
// map with 2 MiB entries (pager_stats::huge_mapped_bytes, which HugePages.* in
// tests/pager/huge_pages_test.cpp checks against /proc/self/smaps) are printed per mode, to
// show the mapping is what it claims, and the pager's missing faults per GiB (those of the
// fill: the reads fault no more). The ratio off/always (and off4k/always) per repetition, and
// its median, close the output.
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
  double faults_per_gib;
};

result run(const std::string& dir, pheap::huge_pages_mode mode, std::size_t ps, std::size_t bytes,
           std::uint64_t chase, std::uint64_t reads, int rep) {
  const std::string path = dir + "/huge_bench_ds_" + std::to_string(::getpid());
  std::filesystem::remove_all(path);
  pheap::store_options so;
  so.capacity = bytes + ps;
  so.page_size = ps;
  so.segment_size = std::size_t{128} << 20;
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
    const auto filled = pg.stats();
    r.huge_bytes = filled.huge_mapped_bytes;
    r.faults_per_gib = static_cast<double>(filled.read_faults + filled.write_faults) /
                       (static_cast<double>(bytes) / static_cast<double>(1ull << 30));
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
  std::string dir = "/tmp", modes = "off,always";
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
    else if (k == "--modes") modes = v;
    else {
      std::fprintf(stderr, "huge_bench: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  struct config {
    std::string name;
    pheap::huge_pages_mode mode;
    std::size_t ps;
  };
  std::vector<config> configs;
  for (std::size_t a = 0; a <= modes.size();) {
    const std::size_t b = std::min(modes.find(',', a), modes.size());
    const std::string m = modes.substr(a, b - a);
    if (m == "off") configs.push_back({m, pheap::huge_pages_mode::off, std::size_t{2} << 20});
    else if (m == "always") configs.push_back({m, pheap::huge_pages_mode::always, std::size_t{2} << 20});
    else if (m == "off4k") configs.push_back({m, pheap::huge_pages_mode::off, 4096});
    else {
      std::fprintf(stderr, "huge_bench: unknown mode '%s' (off, always, off4k)\n", m.c_str());
      return 2;
    }
    a = b + 1;
  }
  const std::size_t bytes = mib << 20;
  std::printf("rep,mode,page_size,mib,dependent_ns_per_read,independent_ns_per_read,anon_huge_mib,faults_per_gib\n");
  std::vector<std::vector<result>> by_config(configs.size());
  for (int rep = 0; rep < reps; ++rep) {
    for (std::size_t c = 0; c < configs.size(); ++c) {
      const result r = run(dir, configs[c].mode, configs[c].ps, bytes, chase, reads, rep);
      std::printf("%d,%s,%zu,%zu,%.1f,%.2f,%zu,%.1f\n", rep, configs[c].name.c_str(), configs[c].ps, mib, r.dep_ns,
                  r.indep_ns, r.huge_bytes >> 20, r.faults_per_gib);
      std::fflush(stdout);
      by_config[c].push_back(r);
    }
  }
  std::size_t always = configs.size();
  for (std::size_t c = 0; c < configs.size(); ++c) {
    if (configs[c].name == "always") always = c;
  }
  if (always == configs.size()) return 0;
  for (std::size_t c = 0; c < configs.size(); ++c) {
    if (c == always) continue;
    std::vector<double> dep_ratio, indep_ratio;
    for (int rep = 0; rep < reps; ++rep) {
      dep_ratio.push_back(by_config[c][rep].dep_ns / by_config[always][rep].dep_ns);
      indep_ratio.push_back(by_config[c][rep].indep_ns / by_config[always][rep].indep_ns);
    }
    std::printf("# %s/always per read, median of %d: dependent %.2fx, independent %.2fx; faults per GiB %.0f / %.0f\n",
                configs[c].name.c_str(), reps, median(dep_ratio), median(indep_ratio),
                by_config[c].back().faults_per_gib, by_config[always].back().faults_per_gib);
  }
  return 0;
}
