// construct_bench — graph construction (R-MAT adjacency-list ingestion) across storage systems,
// in core and out of core, over page sizes. Not a test: prints CSV lines (and appends them to
// --csv FILE).
//
// Workload (Metall's bench/adjacency_list, as bench/graph/ingest_bench.cpp): R-MAT edges
// (a=0.57 b=0.19 c=0.19, scrambled ids, seed 123), edge factor 16, inserted undirected into the
// 1024-bank unordered_map<uint64, vector<uint64>> adjacency list, batches of 2^20 edges split
// over N threads; edge generation untimed.
//
// Systems (same adjacency_list code, each run in its own child process with a timeout):
//   dram         std::allocator
//   bip          Boost.Interprocess managed_mapped_file (sparse file in --dir)
//   uffd         pheap, userfaultfd pager + SparseStore (256 MiB segment files), page = P,
//                with a graph datastore's options (pheap::graph::datastore_options: fills on
//                the faulting thread unless PHEAP_FAULT_FILL says otherwise), as pheap-graph
//   uffd-1file   pheap, userfaultfd pager, one segment file covering the capacity, page = P
//   mmap         pheap, kernel mmap backend (backend_kind::mmap; the kernel's 4 KiB pages)
//   mmap-random  the same with PHEAP_MMAP_ADVICE=random (MADV_RANDOM: no fault read-around)
//   uffd-prefetch, mmap-random-prefetch
//                the same with ingestion prefetch: before each batch its adjacency lists are
//                looked up and handed to manager::prefetch (pager::prefetch / MADV_WILLNEED);
//                the look-ups are timed with the insertion
//   S-grouped    for any S above (uffd-grouped, mmap-random-grouped, dram-grouped, ...): the
//                same storage, each batch inserted grouped by source vertex as graph::ingest
//                does (pheap::graph::grouped_inserter: a counting sort by bank, a sort by
//                vertex within each bank, timed; then one add_arcs per vertex, the threads on
//                disjoint banks, no lock) instead of edge by edge in input order; the
//                grouping holds 8 MiB of DRAM more (4 bytes per arc of a 2^20-edge batch),
//                out of the same cgroup
//   S-grouped-prefetch  (pheap systems: uffd-grouped-prefetch, mmap-random-grouped-prefetch)
//                grouped, with the grouped inserter's look-ahead thread handing
//                manager::prefetch the lists of the banks ahead of the inserting threads, at
//                most --prefetch-window-kib ahead (default 4096)
//                A run compares per edge and grouped on one storage with e.g.
//                --systems uffd,uffd-grouped,uffd-grouped-prefetch
// Modes:
//   incore       no memory limit; pheap buffer = 1/4 of RAM (holds everything)
//   half         budget B = 1/2 of the final datastore, quarter: B = 1/4, eighth: B = 1/8. The final datastore
//                size D is the disk usage of the datastore after an in-core run of the mmap
//                backend (its sparse segment files hold exactly the heap's data; measured
//                first, or --datastore-bytes). uffd runs get buffer = B (--buffer BYTES: that buffer, in
//                every mode, incore too: the tiny-buffer runs), or with --buffer
//                auto no buffer_size: the pager sizes it from the cgroup's limit. EVERY
//                out-of-core run (all systems) executes in its own memory cgroup v1
//                (/sys/fs/cgroup/memory/pheap-bench-<pid>-<n>) limited to B + --slack-mib
//                (default 32 MiB ~ the process's own memory: binary, 16 MiB edge batch, stacks); the cgroup is removed
//                after the child is reaped, on every path (also on SIGINT/SIGTERM/SIGHUP,
//                which also remove the running child's datastore).
// Reported per run: ingest / flush / close seconds, arcs/s (2 per undirected edge), peak RSS,
// minor/major faults, bytes read/written by the process (/proc/self/io: read_bytes,
// write_bytes), and for uffd runs the pager's statistics (faults, zero fills, evictions, dirty
// evictions, bytes read/written, faults that waited for the evictor, worker time, CPU time of
// the fault workers and of the evictor, the buffer's size).
// "did not finish in T s" is a result (status dnf): its row carries the arcs inserted by then,
// the last counter sample and arcs_per_s = arcs done / T (an upper bound of its rate). A child
// that dies carries the same progress (arcs and counters as last shared with the parent, rate
// = arcs done / wall time until it died) with status oom (SIGKILL, and the run's memory cgroup
// counted an OOM kill in memory.oom_control), crash (any other signal) or error (an exception,
// a non-zero exit, or killed by the disk guard); the note says which.
//
//   construct_bench [--scale 18] [--threads 2] [--systems dram,bip,uffd,uffd-1file,mmap]
//                   [--page-sizes 4096,65536] [--modes incore,quarter,eighth] [--timeout 120]
//                   [--dir /tmp] [--csv FILE] [--datastore-bytes D] [--slack-mib 32]
//                   [--label TEXT] [--max-disk-gib 16] [--reps 1] [--progress S]
//                   [--buffer auto|BYTES] [--prefetch-window-kib 4096]
//                   (modes: incore, half, quarter, eighth)
#include <pheap/graph/adjacency_list.hpp>
#include <pheap/graph/grouped_insert.hpp>
#include <pheap/graph/rmat.hpp>
#include <pheap/graph/store.hpp>

#include "bench_usage.hpp"
#include "rmat_ingest.hpp"

#include <boost/interprocess/managed_mapped_file.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace pg = pheap::graph;
using clk = std::chrono::steady_clock;

namespace {

struct config {
  unsigned scale = 18;
  std::uint64_t edge_factor = 16;
  unsigned threads = 2;
  std::size_t batch = std::size_t{1} << 20;
  std::string dir = "/tmp";
  double timeout = 120;
  std::vector<std::string> systems{"dram", "bip", "uffd", "uffd-1file", "mmap"};
  std::vector<std::uint64_t> page_sizes{65536};
  std::vector<std::string> modes{"incore", "quarter", "eighth"};
  std::string csv;
  std::uint64_t datastore_bytes = 0;
  std::uint64_t slack = 32ull << 20;
  std::string label;
  std::uint64_t max_disk = 16ull << 30;  // kill a run whose files grow past this (disk guard)
  unsigned reps = 1;  // best of N (ok runs only)
  bool auto_buffer = false;  // uffd: no buffer_size (sized from the cgroup by the pager) instead of B
  std::uint64_t fixed_buffer = 0;  // uffd: --buffer BYTES, this buffer in every mode (incore too)
  double progress = 0;  // > 0: the child prints pager statistics to stderr every `progress` s
  std::size_t prefetch_window = pg::grouped_insert_options::default_window;  // -grouped-prefetch
};

// A system of the header: a storage base and how the stream is inserted.
struct system_spec {
  std::string base;       // dram, bip, uffd, uffd-1file, mmap, mmap-random
  bool grouped = false;   // -grouped: pheap::graph::grouped_inserter instead of edge by edge
  bool prefetch = false;  // -prefetch: ingestion prefetch (pheap storage only)
  bool paged() const { return base == "uffd" || base == "uffd-1file"; }
  bool kernel() const { return base == "mmap" || base == "mmap-random"; }
};

// NAME = BASE[-grouped][-prefetch]; false when NAME is no system of the header.
bool parse_system(const std::string& name, system_spec& s) {
  std::string n = name;
  auto strip = [&n](const std::string& suffix) {
    if (!n.ends_with(suffix)) return false;
    n.resize(n.size() - suffix.size());
    return true;
  };
  s.prefetch = strip("-prefetch");
  s.grouped = strip("-grouped");
  s.base = n;
  if (s.paged() || s.kernel()) return true;
  return (s.base == "dram" || s.base == "bip") && !s.prefetch;
}

// What a child reports (whitespace-separated on a pipe).
struct result {
  double ingest_s = 0, flush_s = 0, close_s = 0;
  std::uint64_t arcs = 0, footprint = 0, disk_bytes = 0, peak_rss_kb = 0, minflt = 0, majflt = 0,
                io_read = 0, io_write = 0;
  // pager (uffd only)
  std::uint64_t faults = 0, zero_fills = 0, pages_read = 0, evictions = 0, evicted_dirty = 0,
                bytes_read = 0, bytes_written = 0, buffer_waits = 0, fault_ns = 0, evict_ns = 0,
                evict_verify_reads = 0, fault_cpu_ns = 0, evict_cpu_ns = 0, buffer_bytes = 0,
                buffer_lowest = 0, prefetched = 0, victim_hits = 0, evict_runs = 0,
                write_faults = 0, thread_fill_retries = 0, evict_waits = 0, write_back_hits = 0;
};

// Written by the running child (MAP_SHARED, set up before fork), read by the parent when the
// child does not finish: how far it got and what it cost until then.
struct shared_progress {
  std::atomic<std::uint64_t> arcs{0};
  std::atomic<double> ingest_s{0};
  std::atomic<bool> valid{false};
  result snap;  // rusage / io / pager counters, refreshed by the child's monitor (racy: a sample)
};
shared_progress* g_prog = nullptr;

double secs(clk::time_point a, clk::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// The R-MAT stream of `c`, inserted into g (rmat_ingest.hpp); the shared progress record
// follows it so that a run that does not finish says how far it got.
template <class G>
double ingest_all(G& g, const config& c, bool grouped, pheap::manager* prefetch_from = nullptr) {
  pheap::bench::rmat_stream s{c.scale, c.edge_factor, c.threads, c.batch, {}, grouped, c.prefetch_window};
  if (prefetch_from != nullptr) s.prefetch = [prefetch_from](auto r) { prefetch_from->prefetch(r); };
  if (g_prog == nullptr) return pheap::bench::ingest_rmat(g, s);
  return pheap::bench::ingest_rmat(g, s, &g_prog->arcs, [](std::uint64_t edges, double seconds) {
    g_prog->arcs = 2 * edges;
    g_prog->ingest_s = seconds;
  });
}

std::uint64_t dir_disk_bytes(const std::string& p) {
  namespace fs = std::filesystem;
  std::uint64_t sum = 0;
  std::error_code ec;
  auto add = [&](const fs::path& f) {
    struct stat st {};
    if (::stat(f.c_str(), &st) == 0 && S_ISREG(st.st_mode)) sum += static_cast<std::uint64_t>(st.st_blocks) * 512;
  };
  if (fs::is_directory(p, ec)) {
    for (const auto& e : fs::recursive_directory_iterator(p, ec)) add(e.path());
  } else {
    add(p);
  }
  return sum;
}

void self_usage(result& r) {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  r.peak_rss_kb = static_cast<std::uint64_t>(ru.ru_maxrss);
  r.minflt = static_cast<std::uint64_t>(ru.ru_minflt);
  r.majflt = static_cast<std::uint64_t>(ru.ru_majflt);
  std::ifstream io("/proc/self/io");
  for (std::string k; io >> k;) {
    std::uint64_t v = 0;
    io >> v;
    if (k == "read_bytes:") r.io_read = v;
    if (k == "write_bytes:") r.io_write = v;
  }
}

void fill_pager(result& r, const pheap::pager_stats& p) {
  r.faults = p.read_faults + p.write_faults;
  r.zero_fills = p.zero_fills;
  r.pages_read = p.pages_read;
  r.evictions = p.evictions;
  r.evicted_dirty = p.evicted_dirty;
  r.bytes_read = p.bytes_read;
  r.bytes_written = p.bytes_written;
  r.buffer_waits = p.buffer_waits;
  r.fault_ns = p.fault_ns;
  r.evict_ns = p.evict_ns;
  r.evict_verify_reads = p.evict_verify_reads;
  r.fault_cpu_ns = p.fault_cpu_ns;
  r.evict_cpu_ns = p.evict_cpu_ns;
  r.buffer_bytes = p.buffer_bytes;
  r.buffer_lowest = p.buffer_lowest_target_bytes;
  r.prefetched = p.prefetched_pages;
  r.victim_hits = p.victim_hits;
  r.evict_runs = p.evict_runs;
  r.write_faults = p.write_faults;
  r.thread_fill_retries = p.thread_fill_retries;
  r.evict_waits = p.evict_waits;
  r.write_back_hits = p.write_back_hits;
}

// Samples the child's counters into g_prog every 0.5 s (and every --progress s prints them)
// until stop(); `extra` adds system-specific counters.
class monitor {
 public:
  monitor(const config& c, std::function<void(result&)> extra) : extra_(std::move(extra)) {
    const double every = c.progress > 0 ? c.progress : 0.5;
    th_ = std::thread([this, every] {
      while (!done_.load()) {
        std::this_thread::sleep_for(std::chrono::duration<double>(every));
        if (g_prog == nullptr) continue;
        result r;
        self_usage(r);
        if (extra_) extra_(r);
        g_prog->snap = r;
        g_prog->valid = true;
      }
    });
  }
  void stop() {
    done_ = true;
    if (th_.joinable()) th_.join();
  }
  ~monitor() { stop(); }

 private:
  std::function<void(result&)> extra_;
  std::atomic<bool> done_{false};
  std::thread th_;
};

std::uint64_t bench_capacity(const config& c) {
  std::uint64_t cap = 1ull << 30;
  while (cap < (c.edge_factor << c.scale) * 2 * 8 * 8) cap <<= 1;
  return cap;
}

result run_dram(const config& c, bool grouped) {
  result r;
  auto* g = new pg::adjacency_list<void, std::allocator<std::byte>>(false, 1024, {});
  monitor mon(c, {});
  r.ingest_s = ingest_all(*g, c, grouped);
  mon.stop();
  r.arcs = g->num_arcs();
  const auto t0 = clk::now();
  delete g;
  r.close_s = secs(t0, clk::now());
  return r;
}

result run_bip(const config& c, bool grouped) {
  namespace bip = boost::interprocess;
  using alloc = bip::allocator<std::byte, bip::managed_mapped_file::segment_manager>;
  using G = pg::adjacency_list<void, alloc>;
  const std::string path = c.dir + "/construct-bench-" + std::to_string(::getpid()) + ".bip";
  std::filesystem::remove(path);
  result r;
  const std::uint64_t size = bench_capacity(c);
  auto t_close = clk::now();
  {
    bip::managed_mapped_file mf(bip::create_only, path.c_str(), size);
    G* g = mf.construct<G>("graph")(false, 1024, alloc(mf.get_segment_manager()));
    monitor mon(c, {});
    r.ingest_s = ingest_all(*g, c, grouped);
    mon.stop();
    r.arcs = g->num_arcs();
    const auto t0 = clk::now();
    mf.flush();
    r.flush_s = secs(t0, clk::now());
    r.footprint = mf.get_size() - mf.get_free_memory();
    t_close = clk::now();
  }
  r.close_s = secs(t_close, clk::now());
  r.disk_bytes = dir_disk_bytes(path);
  std::filesystem::remove(path);
  return r;
}

result run_pheap(const config& c, const system_spec& sys, std::uint64_t page, std::uint64_t buffer) {
  const std::string path = c.dir + "/construct-bench-" + std::to_string(::getpid()) + ".ds";
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  result r;
  pheap::options o = pg::datastore_options();
  // Capacity sized to the graph (like the BIP file): the pager keeps 4 bytes of DRAM per page
  // of capacity, which at 4 KiB pages and 64 GiB would cost 64 MiB of the memory budget.
  o.capacity = bench_capacity(c);
  o.page_size = static_cast<std::uint32_t>(page);
  o.backend = sys.kernel() ? pheap::backend_kind::mmap : pheap::backend_kind::uffd;
  if (sys.base == "mmap-random") o.mmap_advice = pheap::mmap_advice_kind::random;
  if (sys.base == "uffd-1file") o.segment_size = o.capacity;  // one file covering the capacity
  if (buffer != 0) o.pager.buffer_size = buffer;
  auto t_close = clk::now();
  {
    pheap::manager m(pheap::create_only, path, o);
    auto& g = pg::open_or_create_graph<void>(m, "graph", false, 1024);
    monitor mon(c, [&](result& sample) {
      const auto st = m.stats();
      fill_pager(sample, st.pager);
      if (c.progress > 0) {
        const auto& p = st.pager;
        std::fprintf(stderr,
                     "arcs %" PRIu64 " faults %" PRIu64 " zero %" PRIu64 " read %" PRIu64 " evict %" PRIu64
                     " dirty-evict %" PRIu64 " verify %" PRIu64 " MiB-read %" PRIu64 " MiB-written %" PRIu64
                     " waits %" PRIu64 " resident %" PRIu64 " map %" PRIu64 " MiB fault_ms %" PRIu64
                     " evict_ms %" PRIu64 " cpu_ms fault %" PRIu64 " evict %" PRIu64 "\n",
                     g.num_arcs(), p.read_faults + p.write_faults, p.zero_fills, p.pages_read, p.evictions,
                     p.evicted_dirty, p.evict_verify_reads, p.bytes_read >> 20, p.bytes_written >> 20,
                     p.buffer_waits, p.resident_pages, st.store.map_bytes_written >> 20, p.fault_ns / 1000000,
                     p.evict_ns / 1000000, p.fault_cpu_ns / 1000000, p.evict_cpu_ns / 1000000);
      }
    });
    r.ingest_s = ingest_all(g, c, sys.grouped, sys.prefetch ? &m : nullptr);
    mon.stop();
    r.arcs = g.num_arcs();
    const auto t0 = clk::now();
    m.flush();
    r.flush_s = secs(t0, clk::now());
    const auto st = m.stats();
    r.footprint = st.chunks_in_use * st.chunk_size;
    fill_pager(r, st.pager);
    t_close = clk::now();
  }
  r.close_s = secs(t_close, clk::now());
  r.disk_bytes = dir_disk_bytes(path);
  std::filesystem::remove_all(path, ec);
  return r;
}

std::string encode(const result& r) {
  std::ostringstream s;
  s.precision(17);
  s << r.ingest_s << ' ' << r.flush_s << ' ' << r.close_s << ' ' << r.arcs << ' ' << r.footprint << ' '
    << r.disk_bytes << ' ' << r.peak_rss_kb << ' ' << r.minflt << ' ' << r.majflt << ' ' << r.io_read << ' '
    << r.io_write << ' ' << r.faults << ' ' << r.zero_fills << ' ' << r.pages_read << ' ' << r.evictions << ' '
    << r.evicted_dirty << ' ' << r.bytes_read << ' ' << r.bytes_written << ' ' << r.buffer_waits << ' '
    << r.fault_ns << ' ' << r.evict_ns << ' ' << r.evict_verify_reads << ' ' << r.fault_cpu_ns << ' '
    << r.evict_cpu_ns << ' ' << r.buffer_bytes << ' ' << r.buffer_lowest << ' ' << r.prefetched << ' ' << r.victim_hits << ' ' << r.evict_runs
    << ' ' << r.write_faults << ' ' << r.thread_fill_retries << ' ' << r.evict_waits << ' '
    << r.write_back_hits;
  return s.str();
}
void decode(std::istream& s, result& r) {
  s >> r.ingest_s >> r.flush_s >> r.close_s >> r.arcs >> r.footprint >> r.disk_bytes >> r.peak_rss_kb >> r.minflt >>
      r.majflt >> r.io_read >> r.io_write >> r.faults >> r.zero_fills >> r.pages_read >> r.evictions >>
      r.evicted_dirty >> r.bytes_read >> r.bytes_written >> r.buffer_waits >> r.fault_ns >> r.evict_ns >>
      r.evict_verify_reads >> r.fault_cpu_ns >> r.evict_cpu_ns >> r.buffer_bytes >> r.buffer_lowest >> r.prefetched >> r.victim_hits >> r.evict_runs >>
      r.write_faults >> r.thread_fill_retries >> r.evict_waits >> r.write_back_hits;
}

// ---- memory cgroup v1 ----------------------------------------------------------------------

std::string g_cgroup;          // the cgroup of the running child ("" = none)
volatile pid_t g_child = 0;    // for the signal handler

bool write_file(const std::string& p, const std::string& v) {
  const int fd = ::open(p.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, v.data(), v.size()) == static_cast<ssize_t>(v.size());
  ::close(fd);
  return ok;
}

std::string make_cgroup(std::uint64_t limit) {
  static int n = 0;
  const std::string p = "/sys/fs/cgroup/memory/pheap-bench-" + std::to_string(::getpid()) + "-" + std::to_string(n++);
  if (::mkdir(p.c_str(), 0755) != 0) return {};
  // Also cap memory+swap when the controller has it (no swap here, harmless otherwise).
  if (!write_file(p + "/memory.limit_in_bytes", std::to_string(limit))) {
    ::rmdir(p.c_str());
    return {};
  }
  write_file(p + "/memory.memsw.limit_in_bytes", std::to_string(limit));
  return p;
}

// How many tasks of cgroup `p` its OOM killer killed: the oom_kill line of memory.oom_control
// (Linux >= 4.13). Older kernels have no such line: then 1 if the limit was ever hit (memory or
// memory+swap failcnt), else 0.
std::uint64_t cgroup_oom_kills(const std::string& p) {
  std::ifstream in(p + "/memory.oom_control");
  for (std::string k; in >> k;) {
    std::uint64_t v = 0;
    in >> v;
    if (k == "oom_kill") return v;
  }
  for (const char* f : {"/memory.failcnt", "/memory.memsw.failcnt"}) {
    std::ifstream fc(p + f);
    std::uint64_t v = 0;
    if (fc >> v && v > 0) return 1;
  }
  return 0;
}

// "cgroup peak X MiB (limit Y MiB), rss Z MiB, cache W MiB at exit" for the note column.
std::string cgroup_report(const std::string& p) {
  if (p.empty()) return {};
  auto num = [&](const std::string& f) -> std::uint64_t {
    std::ifstream in(p + "/" + f);
    std::uint64_t v = 0;
    in >> v;
    return v;
  };
  std::uint64_t rss = 0, cache = 0;
  {
    std::ifstream st(p + "/memory.stat");
    for (std::string k; st >> k;) {
      std::uint64_t v = 0;
      st >> v;
      if (k == "total_rss") rss = v;
      if (k == "total_cache") cache = v;
    }
  }
  char buf[240];
  std::snprintf(buf, sizeof buf, "cgroup peak %" PRIu64 " MiB of %" PRIu64 " MiB (failcnt %" PRIu64
                " oom_kill %" PRIu64 ") rss %" PRIu64 " cache %" PRIu64 " MiB at exit; ",
                num("memory.max_usage_in_bytes") >> 20, num("memory.limit_in_bytes") >> 20,
                num("memory.failcnt"), cgroup_oom_kills(p), rss >> 20, cache >> 20);
  return buf;
}

void remove_cgroup(const std::string& p) {
  if (p.empty()) return;
  // Charged page cache is reparented on rmdir; retry briefly while the reaped child's tasks
  // leave the group.
  for (int i = 0; i < 100 && ::rmdir(p.c_str()) != 0 && errno == EBUSY; ++i) ::usleep(20000);
}

// SIGINT/SIGTERM/SIGHUP: only what is async-signal-safe here (kill the child, note the
// signal); run_child then reaps the child and removes its files and cgroup as on every other
// path, and main exits by the same signal (exit_if_signalled).
volatile sig_atomic_t g_signal = 0;
void on_signal(int sig) {
  g_signal = sig;
  if (g_child > 0) ::kill(g_child, SIGKILL);
}
void exit_if_signalled() {
  if (g_signal == 0) return;
  if (!g_cgroup.empty()) remove_cgroup(g_cgroup);
  ::signal(g_signal, SIG_DFL);
  ::raise(g_signal);
}

// Runs fn in a child (inside `cgroup` when non-empty) with a timeout.
// Returns "ok", "dnf", "oom", "crash" or "error"; `why` explains. Unless "ok", `out` holds the
// progress the child last shared (arcs, ingest seconds, counter sample).
std::string run_child(const config& c, const std::function<result()>& fn, double timeout, const std::string& cgroup,
                      result& out, std::string& why, double& wall) {
  int fds[2], go[2];
  if (::pipe(fds) != 0 || ::pipe(go) != 0) throw std::runtime_error("pipe failed");
  std::fflush(nullptr);
  if (g_prog != nullptr) {
    g_prog->arcs = 0;
    g_prog->ingest_s = 0;
    g_prog->valid = false;
  }
  const auto start = clk::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::signal(sig, SIG_DFL);  // the parent cleans up
    ::close(fds[0]);
    ::close(go[1]);
    char b;
    if (::read(go[0], &b, 1) != 1) ::_exit(4);  // wait until we are in the cgroup
    std::string line;
    try {
      result r = fn();
      self_usage(r);
      line = "ok " + encode(r) + "\n";
    } catch (const std::exception& e) {
      line = std::string("error ") + e.what() + "\n";
    }
    if (::write(fds[1], line.data(), line.size()) < 0) ::_exit(3);
    ::_exit(0);
  }
  g_child = pid;
  if (g_signal != 0) ::kill(pid, SIGKILL);  // signalled between fork and here
  ::close(fds[1]);
  ::close(go[0]);
  if (!cgroup.empty() && !write_file(cgroup + "/cgroup.procs", std::to_string(pid))) {
    std::fprintf(stderr, "construct_bench: could not move the child into %s\n", cgroup.c_str());
  }
  if (::write(go[1], "g", 1) != 1) {
  }
  ::close(go[1]);
  std::string buf;
  const auto deadline = start + std::chrono::duration_cast<clk::duration>(std::chrono::duration<double>(timeout));
  std::string status = "ok";
  const std::string prefix = c.dir + "/construct-bench-" + std::to_string(pid);
  for (;;) {
    const double left = secs(clk::now(), deadline);
    const std::uint64_t disk = dir_disk_bytes(prefix + ".ds") + dir_disk_bytes(prefix + ".bip");
    if (disk > c.max_disk) {
      ::kill(pid, SIGKILL);
      status = "error";
      why = "killed: its files reached " + std::to_string(disk >> 20) + " MiB on disk (--max-disk-gib)";
      break;
    }
    if (left <= 0) {
      ::kill(pid, SIGKILL);
      status = "dnf";
      why = "did not finish in " + std::to_string(static_cast<int>(timeout)) + " s";
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::min(left, 1.0) * 1000) + 1) > 0) {
      char tmp[1024];
      const ssize_t n = ::read(fds[0], tmp, sizeof tmp);
      if (n > 0) {
        buf.append(tmp, static_cast<std::size_t>(n));
        continue;
      }
      break;  // EOF
    }
  }
  ::close(fds[0]);
  int st = 0;
  ::waitpid(pid, &st, 0);
  g_child = 0;
  wall = secs(start, clk::now());
  {  // a killed child leaves its files behind
    std::error_code ec;
    std::filesystem::remove_all(prefix + ".ds", ec);
    std::filesystem::remove(prefix + ".bip", ec);
  }
  // Partial progress of a run that did not report: arcs inserted so far (counted every 8192
  // edges per thread), and the last counter sample (so a DNF still shows faults and I/O).
  auto take_progress = [&] {
    if (g_prog == nullptr) return;
    if (g_prog->valid) out = g_prog->snap;
    out.arcs = g_prog->arcs;
    out.ingest_s = g_prog->ingest_s;
  };
  if (status != "ok") {  // timeout or disk guard: the parent killed it
    take_progress();
    return status;
  }
  if (buf.rfind("ok ", 0) != 0) {
    take_progress();
    status = "error";
    if (!buf.empty()) {
      why = buf.substr(0, buf.size() - 1);
    } else if (WIFSIGNALED(st)) {
      const int sig = WTERMSIG(st);
      const std::uint64_t kills = cgroup.empty() ? 0 : cgroup_oom_kills(cgroup);
      if (sig == SIGKILL && kills > 0) {
        status = "oom";
        why = "OOM-killed in its memory cgroup (oom_kill " + std::to_string(kills) + ")";
      } else {
        status = "crash";
        why = std::string("child killed by signal ") + std::to_string(sig) + " (" + ::strsignal(sig) + ")" +
              (sig == SIGKILL && !cgroup.empty() ? "; its cgroup counted no OOM kill" : "");
      }
    } else {
      why = "child exited with status " + std::to_string(WEXITSTATUS(st));
    }
    for (char& ch : why) {
      if (ch == ',' || ch == '\n') ch = ';';
    }
    return status;
  }
  std::istringstream s(buf.substr(3));
  decode(s, out);
  return "ok";
}

std::vector<std::string> split(const std::string& v) {
  std::vector<std::string> out;
  std::stringstream ss(v);
  for (std::string s; std::getline(ss, s, ',');) out.push_back(s);
  return out;
}

const char* kHeader =
    "label,system,mode,scale,threads,page_size,budget_bytes,status,ingest_s,flush_s,close_s,arcs,arcs_per_s,"
    "footprint_bytes,disk_bytes,peak_rss_kb,minflt,majflt,io_read_bytes,io_write_bytes,pager_faults,"
    "pager_zero_fills,pager_pages_read,pager_evictions,pager_evicted_dirty,pager_bytes_read,"
    "pager_bytes_written,pager_buffer_waits,pager_fault_ns,pager_evict_ns,pager_evict_verify_reads,"
    "pager_fault_cpu_ns,pager_evict_cpu_ns,pager_buffer_bytes,wall_s,note";

}  // namespace

const char* kUsage =
    "construct_bench: graph construction (R-MAT adjacency list) across storage systems, in core\n"
    "and out of core (one memory cgroup per run); CSV lines on stdout. Systems and modes: the\n"
    "header of bench/graph/construct_bench.cpp.\n"
    "  construct_bench [--scale 18] [--edge-factor 16] [--threads 2] [--batch 1048576]\n"
    "                  [--systems dram,bip,uffd,uffd-1file,mmap,mmap-random,uffd-prefetch,...]\n"
    "                  (any system S also as S-grouped; uffd-grouped-prefetch, ...)\n"
    "                  [--page-sizes 4096,65536] [--modes incore,half,quarter,eighth]\n"
    "                  [--timeout 120] [--dir /tmp] [--csv FILE] [--datastore-bytes D]\n"
    "                  [--slack-mib 32] [--label TEXT] [--max-disk-gib 16] [--reps 1]\n"
    "                  [--progress S] [--buffer auto|BYTES] [--prefetch-window-kib 4096]\n";

int main(int argc, char** argv) {
  config c;
  if (const int code = pheap::bench::usage_exit(argc, argv, kUsage); code >= 0) return code;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--scale") c.scale = static_cast<unsigned>(std::stoul(v));
    else if (k == "--edge-factor") c.edge_factor = std::stoull(v);
    else if (k == "--threads") c.threads = static_cast<unsigned>(std::stoul(v));
    else if (k == "--batch") c.batch = std::stoull(v);
    else if (k == "--dir") c.dir = v;
    else if (k == "--timeout") c.timeout = std::stod(v);
    else if (k == "--systems") c.systems = split(v);
    else if (k == "--modes") c.modes = split(v);
    else if (k == "--csv") c.csv = v;
    else if (k == "--datastore-bytes") c.datastore_bytes = std::stoull(v);
    else if (k == "--slack-mib") c.slack = std::stoull(v) << 20;
    else if (k == "--label") c.label = v;
    else if (k == "--max-disk-gib") c.max_disk = std::stoull(v) << 30;
    else if (k == "--progress") c.progress = std::stod(v);
    else if (k == "--reps") c.reps = static_cast<unsigned>(std::stoul(v));
    else if (k == "--buffer") {
      c.auto_buffer = v == "auto";
      if (!c.auto_buffer) c.fixed_buffer = std::stoull(v);
    }
    else if (k == "--prefetch-window-kib") c.prefetch_window = std::stoull(v) << 10;
    else if (k == "--page-sizes") {
      c.page_sizes.clear();
      for (const auto& s : split(v)) c.page_sizes.push_back(std::stoull(s));
    } else {
      std::fprintf(stderr, "unknown option %s (see the header of construct_bench.cpp)\n", k.c_str());
      return 2;
    }
  }
  for (const auto& sys : c.systems) {
    system_spec spec;
    if (!parse_system(sys, spec)) {
      std::fprintf(stderr, "unknown system %s (see the header of construct_bench.cpp)\n", sys.c_str());
      return 2;
    }
  }
  {
    void* m = ::mmap(nullptr, sizeof(shared_progress), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m != MAP_FAILED) g_prog = new (m) shared_progress();
  }
  ::signal(SIGINT, on_signal);
  ::signal(SIGTERM, on_signal);
  ::signal(SIGHUP, on_signal);
  FILE* csv = nullptr;
  if (!c.csv.empty()) {
    const bool fresh = !std::filesystem::exists(c.csv);
    csv = std::fopen(c.csv.c_str(), "a");
    if (csv == nullptr) {
      std::perror(c.csv.c_str());
      return 1;
    }
    if (fresh) std::fprintf(csv, "%s\n", kHeader);
  }
  std::printf("# construct_bench: R-MAT SCALE %u, edge factor %" PRIu64 ", undirected, %u thread(s), dir %s\n",
              c.scale, c.edge_factor, c.threads, c.dir.c_str());
  std::printf("%s\n", kHeader);

  auto emit = [&](const std::string& sys, const std::string& mode, std::uint64_t page, std::uint64_t budget,
                  const std::string& status, const result& r, double wall, const std::string& note) {
    // A run that did not finish (dnf, oom, crash, error) reports arcs done / wall time: for a
    // dnf an upper bound of its rate, for the others the rate until it died.
    const double rate = status == "ok" ? (r.ingest_s > 0 ? static_cast<double>(r.arcs) / r.ingest_s : 0)
                        : wall > 0     ? static_cast<double>(r.arcs) / wall
                                       : 0;
    char line[2048];
    std::snprintf(line, sizeof line,
                  "%s,%s,%s,%u,%u,%" PRIu64 ",%" PRIu64 ",%s,%.4f,%.4f,%.4f,%" PRIu64 ",%.0f,%" PRIu64 ",%" PRIu64
                  ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
                  ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
                  ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.2f,%s",
                  c.label.c_str(), sys.c_str(), mode.c_str(), c.scale, c.threads, page, budget, status.c_str(),
                  r.ingest_s, r.flush_s, r.close_s, r.arcs, rate, r.footprint, r.disk_bytes, r.peak_rss_kb,
                  r.minflt, r.majflt, r.io_read, r.io_write, r.faults, r.zero_fills, r.pages_read, r.evictions,
                  r.evicted_dirty, r.bytes_read, r.bytes_written, r.buffer_waits, r.fault_ns, r.evict_ns,
                  r.evict_verify_reads, r.fault_cpu_ns, r.evict_cpu_ns, r.buffer_bytes, wall, note.c_str());
    std::printf("%s\n", line);
    std::fflush(stdout);
    if (csv != nullptr) {
      std::fprintf(csv, "%s\n", line);
      std::fflush(csv);
    }
  };

  std::uint64_t final_bytes = c.datastore_bytes;
  for (const auto& mode : c.modes) {
    std::uint64_t budget = 0;
    if (mode != "incore") {
      const std::uint64_t div = mode == "half" ? 2 : mode == "quarter" ? 4 : mode == "eighth" ? 8 : 0;
      if (div == 0) {
        std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
        return 2;
      }
      if (final_bytes == 0) {
        // Measure the final datastore once: the bytes on disk after an in-core run of the mmap
        // backend (its segment files hold exactly the heap's data; sparse).
        result r;
        std::string why;
        double wall = 0;
        const std::string st = run_child(c, [&] { return run_pheap(c, system_spec{"mmap"}, 65536, 0); }, c.timeout, "", r, why, wall);
        exit_if_signalled();
        if (st != "ok") {
          std::fprintf(stderr, "could not measure the datastore size: %s\n", why.c_str());
          return 1;
        }
        final_bytes = r.disk_bytes;
      }
      budget = final_bytes / div;
      std::printf("# mode %s: datastore %.1f MiB, budget %.1f MiB (+%.0f MiB slack in the cgroup)\n", mode.c_str(),
                  static_cast<double>(final_bytes) / (1 << 20), static_cast<double>(budget) / (1 << 20),
                  static_cast<double>(c.slack) / (1 << 20));
    }
    for (const auto& sys : c.systems) {
      system_spec spec;
      parse_system(sys, spec);  // checked before the first run
      if (spec.base == "dram" && mode != "incore") continue;  // DRAM has no out-of-core mode
      const std::vector<std::uint64_t> pages = spec.paged() ? c.page_sizes : std::vector<std::uint64_t>{4096};
      for (const std::uint64_t page : pages) {
        std::function<result()> fn;
        if (spec.base == "dram") {
          fn = [&, spec] { return run_dram(c, spec.grouped); };
        } else if (spec.base == "bip") {
          fn = [&, spec] { return run_bip(c, spec.grouped); };
        } else {
          const std::uint64_t buffer = c.fixed_buffer != 0 ? c.fixed_buffer : c.auto_buffer ? 0 : budget;
          fn = [&, page, buffer, spec] { return run_pheap(c, spec, page, buffer); };
        }
        // Best of --reps runs (by ingest time) on this noisy shared machine; a run that does
        // not finish or fails is not repeated.
        std::string status, note;
        result r;
        double wall = 0;
        for (unsigned rep = 0; rep < std::max(1u, c.reps); ++rep) {
          std::string cg, n;
          if (budget != 0) {
            cg = make_cgroup(budget + c.slack);
            if (cg.empty()) n = "NO_CGROUP(" + std::string(std::strerror(errno)) + ")";
          }
          g_cgroup = cg;
          result ri;
          std::string why;
          double wi = 0;
          const std::string st = run_child(c, fn, c.timeout, cg, ri, why, wi);
          exit_if_signalled();
          if (st != "ok") n += why + "; ";
          n += cgroup_report(cg);
          remove_cgroup(cg);
          g_cgroup.clear();
          if (rep == 0 || (st == "ok" && ri.ingest_s < r.ingest_s)) {
            status = st;
            r = ri;
            wall = wi;
            note = n;
          }
          if (st != "ok") break;
        }
        if (c.reps > 1 && status == "ok") note += "best of " + std::to_string(c.reps) + "; ";
        if (r.buffer_lowest != 0 && r.buffer_lowest != r.buffer_bytes) {
          note += "buffer target down to " + std::to_string(r.buffer_lowest >> 20) + " MiB; ";
        }
        if (r.prefetched != 0) note += std::to_string(r.prefetched) + " pages prefetched; ";
        if (r.victim_hits != 0) note += std::to_string(r.victim_hits) + " fills from the victim cache; ";
        if (r.evict_runs != 0) note += "evicted in " + std::to_string(r.evict_runs) + " runs; ";
        if (r.write_faults != 0) note += std::to_string(r.write_faults) + " of the faults writes; ";
        if (r.thread_fill_retries != 0) {
          note += std::to_string(r.thread_fill_retries) + " faulting-thread fills waited for the page; ";
        }
        if (r.evict_waits != 0) {
          note += std::to_string(r.evict_waits) + " faults waited for the evictor; ";
        }
        if (r.write_back_hits != 0) {
          note += std::to_string(r.write_back_hits) + " fills from a write-back in flight; ";
        }
        emit(sys, mode, page, budget, status, r, wall, note);
        if (mode == "incore" && sys == "mmap" && status == "ok" && final_bytes == 0) {
          final_bytes = r.disk_bytes;
        }
      }
    }
  }
  if (csv != nullptr) std::fclose(csv);
  return 0;
}
