// Adjacency-list ingestion benchmark (Metall's bench/adjacency_list workload).
//
// Workload: R-MAT edges (a=0.57 b=0.19 c=0.19, scrambled ids, seed 123), edge factor 16,
// inserted undirected (each edge stored both ways) into the 1024-bank
// unordered_map<uint64, vector<uint64>> adjacency list, in batches of 2^20 edges by N threads.
// Edge generation is excluded from the timing (as in Metall: generated per batch, untimed).
//
// Systems, same code (pheap::graph::adjacency_list), one run, each in its own child process
// (fresh address space, per-run timeout, "did not finish" reported as a result):
//   dram          std::allocator
//   bip           Boost.Interprocess managed_mapped_file (sparse file in --dir)
//   pheap         pheap::manager, buffer large enough to stay in core
//   pheap-quarter pheap::manager, buffer = 1/4 of the final datastore size measured by the
//                 in-core pheap run (heap bytes in use after ingestion)
// Reported: ingest / flush / close seconds, arcs per second (Metall's "edges inserted",
// i.e. 2 per undirected edge) and the ratio to dram; one CSV line per system.
//
//   ingest_bench [--scale 20] [--edge-factor 16] [--threads 2] [--batch 1048576]
//                [--dir /tmp] [--timeout 900] [--systems dram,bip,pheap,pheap-quarter]
#include <pheap/graph/adjacency_list.hpp>
#include <pheap/graph/rmat.hpp>
#include <pheap/graph/store.hpp>

#include "bench_usage.hpp"
#include "rmat_ingest.hpp"

#include <boost/interprocess/managed_mapped_file.hpp>

#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace pg = pheap::graph;
using clk = std::chrono::steady_clock;

namespace {

struct config {
  unsigned scale = 20;
  std::uint64_t edge_factor = 16;
  unsigned threads = 2;
  std::size_t batch = std::size_t{1} << 20;
  std::string dir = "/tmp";
  double timeout = 900;
  std::vector<std::string> systems{"dram", "bip", "pheap", "pheap-quarter"};
};

struct result {
  double ingest_s = 0, flush_s = 0, close_s = 0;
  std::uint64_t arcs = 0, vertices = 0, bytes = 0, peak_rss_kb = 0;
};

double secs(clk::time_point a, clk::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// Inserts all edges batch by batch; returns summed insert time (generation untimed).
template <class G>
double ingest_all(G& g, const config& c) {
  return pheap::bench::ingest_rmat(g, {c.scale, c.edge_factor, c.threads, c.batch});
}

std::uint64_t peak_rss_kb() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<std::uint64_t>(ru.ru_maxrss);
}

result run_dram(const config& c) {
  result r;
  auto* g = new pg::adjacency_list<void, std::allocator<std::byte>>(false, 1024, {});
  r.ingest_s = ingest_all(*g, c);
  r.arcs = g->num_arcs();
  r.vertices = g->num_vertices();
  const auto t0 = clk::now();
  delete g;
  r.close_s = secs(t0, clk::now());
  return r;
}

result run_bip(const config& c) {
  namespace bip = boost::interprocess;
  using alloc = bip::allocator<std::byte, bip::managed_mapped_file::segment_manager>;
  using G = pg::adjacency_list<void, alloc>;
  const std::string path = c.dir + "/pheap-graph-bench.bip";
  std::filesystem::remove(path);
  result r;
  {
    // Size as Metall's bench does for BIP: generous, sparse (only touched pages use disk).
    const std::uint64_t size = std::max<std::uint64_t>(1ull << 30, (c.edge_factor << c.scale) * 2 * 8 * 8);
    bip::managed_mapped_file mf(bip::create_only, path.c_str(), size);
    G* g = mf.construct<G>("graph")(false, 1024, alloc(mf.get_segment_manager()));
    r.ingest_s = ingest_all(*g, c);
    r.arcs = g->num_arcs();
    r.vertices = g->num_vertices();
    const auto t0 = clk::now();
    mf.flush();
    r.flush_s = secs(t0, clk::now());
    r.bytes = mf.get_size() - mf.get_free_memory();
  }
  std::filesystem::remove(path);
  return r;
}

result run_pheap(const config& c, std::uint64_t buffer) {
  const std::string path = c.dir + "/pheap-graph-bench.ds";
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  result r;
  pheap::options o = pheap::options::from_env();
  o.capacity = 64ull << 30;
  if (buffer != 0) o.pager.buffer_size = buffer;
  auto t_close = clk::now();
  {
    pheap::manager m(pheap::create_only, path, o);
    auto& g = pg::open_or_create_graph<void>(m, "graph", false, 1024);
    r.ingest_s = ingest_all(g, c);
    r.arcs = g.num_arcs();
    r.vertices = g.num_vertices();
    const auto t0 = clk::now();
    m.flush();
    r.flush_s = secs(t0, clk::now());
    const auto st = m.stats();
    r.bytes = st.small_bytes + st.large_bytes;
    t_close = clk::now();
  }
  r.close_s = secs(t_close, clk::now());
  std::filesystem::remove_all(path, ec);
  return r;
}

std::string encode(const result& r) {
  std::ostringstream s;
  s.precision(17);
  s << r.ingest_s << ' ' << r.flush_s << ' ' << r.close_s << ' ' << r.arcs << ' ' << r.vertices << ' ' << r.bytes
    << ' ' << r.peak_rss_kb;
  return s.str();
}

// The datastores a child works on (run_bip, run_pheap): removed by the parent after every
// child, also one that was killed (timeout, SIGINT/SIGTERM/SIGHUP).
void remove_datastores(const config& c) {
  std::error_code ec;
  std::filesystem::remove(c.dir + "/pheap-graph-bench.bip", ec);
  std::filesystem::remove_all(c.dir + "/pheap-graph-bench.ds", ec);
}

// SIGINT/SIGTERM/SIGHUP: kill the running child (async-signal-safe) and note the signal;
// run_child reaps it and main removes its datastores, then exits by the same signal.
volatile sig_atomic_t g_signal = 0;
volatile pid_t g_child = 0;
void on_signal(int sig) {
  g_signal = sig;
  if (g_child > 0) ::kill(g_child, SIGKILL);
}

// Runs fn in a child process with a timeout. Returns false when it did not finish (or failed).
bool run_child(const std::function<result()>& fn, double timeout, result& out, std::string& why) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = ::fork();
  if (pid == 0) {
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::signal(sig, SIG_DFL);  // the parent cleans up
    ::close(fds[0]);
    std::string line;
    try {
      result r = fn();
      r.peak_rss_kb = peak_rss_kb();
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
  std::string buf;
  const auto deadline = clk::now() + std::chrono::duration_cast<clk::duration>(std::chrono::duration<double>(timeout));
  for (;;) {
    const double left = secs(clk::now(), deadline);
    if (left <= 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
      g_child = 0;
      ::close(fds[0]);
      why = "did not finish in " + std::to_string(static_cast<int>(timeout)) + " s";
      return false;
    }
    pollfd p{fds[0], POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::min(left, 1.0) * 1000) + 1) > 0) {
      char tmp[512];
      const ssize_t n = ::read(fds[0], tmp, sizeof tmp);
      if (n > 0) {
        buf.append(tmp, static_cast<std::size_t>(n));
        continue;
      }
      break;  // EOF
    }
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  g_child = 0;
  if (buf.rfind("ok ", 0) != 0) {
    why = buf.empty() ? "child died (status " + std::to_string(status) + ")" : buf.substr(0, buf.size() - 1);
    return false;
  }
  std::istringstream s(buf.substr(3));
  s >> out.ingest_s >> out.flush_s >> out.close_s >> out.arcs >> out.vertices >> out.bytes >> out.peak_rss_kb;
  return true;
}

}  // namespace

const char* kUsage =
    "ingest_bench: R-MAT adjacency-list ingestion, DRAM vs Boost.Interprocess vs pheap (in core and\n"
    "with 1/4 of the datastore as buffer); one CSV line per system.\n"
    "  ingest_bench [--scale 20] [--edge-factor 16] [--threads 2] [--batch 1048576]\n"
    "               [--dir /tmp] [--timeout 900] [--systems dram,bip,pheap,pheap-quarter]\n";

int main(int argc, char** argv) {
  config c;
  if (const int code = pheap::bench::usage_exit(argc, argv, kUsage); code >= 0) return code;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::signal(sig, on_signal);
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--scale") c.scale = static_cast<unsigned>(std::stoul(v));
    else if (k == "--edge-factor") c.edge_factor = std::stoull(v);
    else if (k == "--threads") c.threads = static_cast<unsigned>(std::stoul(v));
    else if (k == "--batch") c.batch = std::stoull(v);
    else if (k == "--dir") c.dir = v;
    else if (k == "--timeout") c.timeout = std::stod(v);
    else if (k == "--systems") {
      c.systems.clear();
      std::stringstream ss(v);
      for (std::string s; std::getline(ss, s, ',');) c.systems.push_back(s);
    } else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      return 2;
    }
  }
  const std::uint64_t edges = c.edge_factor << c.scale;
  std::printf("R-MAT SCALE %u, edge factor %" PRIu64 ", %" PRIu64 " edges undirected (%" PRIu64
              " arcs), a=0.57 b=0.19 c=0.19, batches of %zu, %u threads, dir %s\n",
              c.scale, c.edge_factor, edges, 2 * edges, c.batch, c.threads, c.dir.c_str());
  double dram_rate = 0;
  std::uint64_t final_bytes = 0;
  for (const auto& sys : c.systems) {
    result r;
    std::string why;
    std::function<result()> fn;
    std::string label = sys;
    if (sys == "dram") fn = [&] { return run_dram(c); };
    else if (sys == "bip") fn = [&] { return run_bip(c); };
    else if (sys == "pheap") fn = [&] { return run_pheap(c, 0); };  // 0 = 1/4 of RAM: in core here
    else if (sys == "pheap-quarter") {
      if (final_bytes == 0) {
        std::printf("%-14s skipped: needs the in-core pheap run first for the datastore size\n", sys.c_str());
        continue;
      }
      const std::uint64_t buf = final_bytes / 4;
      label = "pheap-quarter";
      fn = [&, buf] { return run_pheap(c, buf); };
      std::printf("(pheap-quarter buffer = %.1f MiB = 1/4 of %.1f MiB in use)\n", static_cast<double>(buf) / (1 << 20),
                  static_cast<double>(final_bytes) / (1 << 20));
    } else {
      std::fprintf(stderr, "unknown system %s\n", sys.c_str());
      return 2;
    }
    std::fflush(stdout);
    const bool ok = run_child(fn, c.timeout, r, why);
    remove_datastores(c);  // a killed child leaves its files behind
    if (g_signal != 0) {
      ::signal(g_signal, SIG_DFL);
      ::raise(g_signal);
    }
    if (!ok) {
      std::printf("%-14s %s\n", label.c_str(), why.c_str());
      std::printf("csv,%s,%u,%" PRIu64 ",dnf,,,,,\n", label.c_str(), c.scale, edges);
      continue;
    }
    const double rate = static_cast<double>(r.arcs) / r.ingest_s;
    if (sys == "dram") dram_rate = rate;
    if (sys == "pheap") final_bytes = r.bytes;
    const double ratio = dram_rate > 0 ? rate / dram_rate : 0;
    std::printf("%-14s ingest %7.2f s  flush %6.3f s  close %6.3f s  %6.2f M arcs/s  x%.2f of dram  "
                "vertices %" PRIu64 "  heap %.0f MiB  peak RSS %.0f MiB\n",
                label.c_str(), r.ingest_s, r.flush_s, r.close_s, rate / 1e6, ratio, r.vertices,
                static_cast<double>(r.bytes) / (1 << 20), static_cast<double>(r.peak_rss_kb) / 1024);
    std::printf("csv,%s,%u,%" PRIu64 ",%" PRIu64 ",%.4f,%.4f,%.4f,%.0f,%.3f\n", label.c_str(), c.scale, edges, r.arcs,
                r.ingest_s, r.flush_s, r.close_s, rate, ratio);
    std::fflush(stdout);
  }
  return 0;
}
