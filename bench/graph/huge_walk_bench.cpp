// huge_walk_bench — one in-core graph query timed in its two parts: the read-only open with the
// heap read in (manager::prefetch_all, waited for until every page with data is resident), then
// the walk alone (pheap::graph::bfs from a source, or connected_components): the library calls
// `pheap-graph bfs` and `cc` make (tools/pheap-graph/queries.cpp, with_graph; in core it runs no
// look-ahead). Not a test: one CSV line per run, on stdout. bench/graph/huge_incore.sh runs it
// once per configuration and round, each run its own process, interleaved.
//
//   huge_walk_bench --datastore D --algo bfs|cc [--source S] [--huge-pages off|always|auto]
//                   [--settle 0|1] [--buffer-size BYTES] [--label L]
//
// --settle 1 (auto): the load also waits for the promoter to map the heap with 2 MiB entries
// (until no promotion for half a second): the walk of a heap that stayed in core a while,
// against --settle 0's walk that starts as soon as the heap is in (promotions run beside it).
//
// Columns: label, algo, page_size, huge_pages (asked), huge_in_force, heap_bytes (pages with
// data), load_s (open + prefetch until resident), walk_s and walk_cpu_s (the walk's wall and
// thread CPU time), pager_faults (the pager's missing faults of the whole run: read + write),
// faults_per_gib (of the heap), walk_minflt (the kernel's minor faults during the walk: the
// walk's own DRAM arrays, first touched), huge_fills, huge_fallback_fills, huge_mapped_bytes
// (from the page tables after the walk), resident_bytes, result (reached vertices for bfs,
// components for cc: the same in every configuration), huge_promotions (auto).
#include <sys/resource.h>
#include <time.h>

#include <pheap/graph/algorithms.hpp>
#include <pheap/graph/store.hpp>
#include <pheap/pheap.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

namespace {

double thread_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

long minflt() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int usage(const char* why) {
  std::fprintf(stderr,
               "huge_walk_bench: %s\nusage: huge_walk_bench --datastore D --algo bfs|cc [--source S] "
               "[--huge-pages off|always|auto] [--settle 0|1] [--buffer-size BYTES] [--label L]\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string ds, algo, huge = "off", label = "run";
  std::uint64_t source = 0, buffer = 0;
  bool settle = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--datastore") ds = v;
    else if (k == "--algo") algo = v;
    else if (k == "--source") source = std::stoull(v);
    else if (k == "--huge-pages") huge = v;
    else if (k == "--buffer-size") buffer = std::stoull(v);
    else if (k == "--label") label = v;
    else if (k == "--settle") settle = v == "1";
    else return usage(("unknown option " + k).c_str());
  }
  if (ds.empty() || (algo != "bfs" && algo != "cc")) return usage("--datastore and --algo bfs|cc are required");
  if (huge != "off" && huge != "always" && huge != "auto") return usage("--huge-pages takes off, always or auto");

  pheap::options o = pheap::graph::datastore_options();  // as pheap-graph's queries
  if (buffer) o.pager.buffer_size = buffer;
  o.pager.huge_pages = huge == "always" ? pheap::huge_pages_mode::always
                       : huge == "auto" ? pheap::huge_pages_mode::automatic
                                        : pheap::huge_pages_mode::off;
  const auto t0 = std::chrono::steady_clock::now();
  pheap::manager m(pheap::open_read_only, ds, o);
  m.prefetch_all();
  // Until every page with data is in (or nothing more arrives for a second: a buffer smaller
  // than the heap, which this in-core benchmark does not want, shows as resident < heap).
  const std::uint64_t live = m.stats().store.live_bytes;
  std::uint64_t last = 0;
  auto still = std::chrono::steady_clock::now();
  for (;;) {
    const pheap::manager_stats st = m.stats();
    const std::uint64_t resident = st.pager.resident_pages * st.page_size;
    if (resident >= live) break;
    if (resident != last) {
      last = resident;
      still = std::chrono::steady_clock::now();
    } else if (since(still) > 1.0) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (settle) {
    std::uint64_t promoted = 0;
    auto quiet = std::chrono::steady_clock::now();
    while (since(quiet) < 0.5 && since(t0) < 120) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      const std::uint64_t now = m.stats().pager.huge_promotions;
      if (now != promoted) {
        promoted = now;
        quiet = std::chrono::steady_clock::now();
      }
    }
  }
  const double load_s = since(t0);

  const long f0 = minflt();
  const double c0 = thread_cpu_s();
  const auto w0 = std::chrono::steady_clock::now();
  std::uint64_t result = 0;
  pheap::graph::visit_graph(m, "graph", [&](const auto& g) {
    if (algo == "bfs") {
      result = pheap::graph::bfs(g, source).reached;
    } else {
      result = pheap::graph::connected_components(g).components;
    }
  });
  const double walk_s = since(w0);
  const double walk_cpu_s = thread_cpu_s() - c0;
  const long walk_minflt = minflt() - f0;

  const pheap::manager_stats st = m.stats();
  const pheap::pager_stats& p = st.pager;
  const std::uint64_t faults = p.read_faults + p.write_faults;
  const double gib = static_cast<double>(live) / static_cast<double>(1ull << 30);
  std::printf("%s,%s,%llu,%s,%d,%llu,%.3f,%.3f,%.3f,%llu,%.1f,%ld,%llu,%llu,%llu,%llu,%llu,%llu\n", label.c_str(),
              algo.c_str(), static_cast<unsigned long long>(st.page_size), huge.c_str(), p.huge_pages ? 1 : 0,
              static_cast<unsigned long long>(live), load_s, walk_s, walk_cpu_s,
              static_cast<unsigned long long>(faults), gib > 0 ? static_cast<double>(faults) / gib : 0.0,
              walk_minflt, static_cast<unsigned long long>(p.huge_fills),
              static_cast<unsigned long long>(p.huge_fallback_fills),
              static_cast<unsigned long long>(p.huge_mapped_bytes),
              static_cast<unsigned long long>(p.resident_pages * st.page_size),
              static_cast<unsigned long long>(result), static_cast<unsigned long long>(p.huge_promotions));
  if (huge != "off" && !p.huge_pages) {
    std::fprintf(stderr, "huge_walk_bench: huge pages asked for, not in force: %s\n", p.huge_pages_why.c_str());
  }
  return 0;
}
