// scan_bench — a cold sequential pass over a persistent array: what fault read-ahead and the
// scan prefetch read per second, against the kernel's mmap path (not a test).
//
//   scan_bench create DIR MIB                 a datastore holding `data`, a pheap vector of
//                                             MIB MiB of uint64 (value i at index i), flushed
//   scan_bench scan DIR [--prefetch-all] [--stride WORDS] [--backward]
//                                             opens DIR read-only with pheap::options from the
//                                             environment (PHEAP_BACKEND, PHEAP_READ_AHEAD,
//                                             PHEAP_READ_ONLY_CACHE, PHEAP_BUFFER_SIZE, ...),
//                                             sums every STRIDE-th word (default 512: one per
//                                             4 KiB) forwards or backwards, checks the sum
// Prints one CSV line: mode,seconds,mib,mib_per_s,faults,pages_read,read_ahead_pages,
// read_ahead_windows,read_steps,read_step_pages,store_read_requests. The page cache is the
// caller's to drop (bench/pager/scan.sh does, and measures the disk in the same run).
#include <pheap/pheap.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

using vec = pheap::container::vector<std::uint64_t>;

int usage() {
  std::fprintf(stderr,
               "usage: scan_bench create DIR MIB\n"
               "       scan_bench scan DIR [--prefetch-all] [--stride WORDS] [--backward]\n");
  return 2;
}

int create(const std::string& dir, std::uint64_t mib) {
  pheap::options o = pheap::options::from_env();
  o.capacity = (mib + 256) << 20;
  pheap::manager m(pheap::create_only, dir, o);
  const std::uint64_t n = (mib << 20) / sizeof(std::uint64_t);
  vec* v = m.construct<vec>("data")(m.get_allocator<std::uint64_t>());
  v->reserve(n);
  for (std::uint64_t i = 0; i < n; ++i) v->push_back(i);
  m.flush();
  return 0;
}

int scan(const std::string& dir, bool prefetch_all, std::uint64_t stride, bool backward) {
  const auto t0 = std::chrono::steady_clock::now();
  pheap::manager m(pheap::open_read_only, dir);
  const vec* v = m.find<vec>("data").first;
  if (v == nullptr) {
    std::fprintf(stderr, "scan_bench: %s holds no vector 'data' (run create first)\n", dir.c_str());
    return 1;
  }
  if (prefetch_all) m.prefetch_all();
  const std::uint64_t n = v->size();
  const std::uint64_t* d = v->data();
  std::uint64_t sum = 0, want = 0, count = 0;
  for (std::uint64_t k = 0; k < n; k += stride) {
    const std::uint64_t i = backward ? n - 1 - k : k;
    sum += d[i];
    want += i;
    ++count;
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (sum != want) {
    std::fprintf(stderr, "scan_bench: wrong sum %llu, expected %llu\n", static_cast<unsigned long long>(sum),
                 static_cast<unsigned long long>(want));
    return 1;
  }
  const pheap::manager_stats st = m.stats();
  const double mib = static_cast<double>(n * sizeof(std::uint64_t)) / (1 << 20);
  std::printf("%s%s%s,%.3f,%.0f,%.0f,%llu,%llu,%llu,%llu,%llu,%llu,%llu\n", to_string(pheap::options::from_env().backend),
              prefetch_all ? "+prefetch_all" : "", backward ? "+backward" : "", s, mib, mib / s,
              static_cast<unsigned long long>(st.pager.read_faults + st.pager.write_faults),
              static_cast<unsigned long long>(st.pager.pages_read),
              static_cast<unsigned long long>(st.pager.read_ahead_pages),
              static_cast<unsigned long long>(st.pager.read_ahead_windows),
              static_cast<unsigned long long>(st.pager.read_steps),
              static_cast<unsigned long long>(st.pager.read_step_pages),
              static_cast<unsigned long long>(st.store.read_requests));
  (void)count;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return usage();
  const std::string cmd = argv[1], dir = argv[2];
  try {
    if (cmd == "create" && argc == 4) return create(dir, std::strtoull(argv[3], nullptr, 10));
    if (cmd != "scan") return usage();
    bool prefetch_all = false, backward = false;
    std::uint64_t stride = 512;
    for (int i = 3; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--prefetch-all") prefetch_all = true;
      else if (a == "--backward") backward = true;
      else if (a == "--stride" && i + 1 < argc) stride = std::max<std::uint64_t>(1, std::strtoull(argv[++i], nullptr, 10));
      else return usage();
    }
    return scan(dir, prefetch_all, stride, backward);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "scan_bench: %s\n", e.what());
    return 1;
  }
}
