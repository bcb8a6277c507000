// fault_bench — what a pager fault costs, against the kernel mmap path and a bare userfaultfd
// loop (not a test; prints CSV and ratios).
//
//   fault_bench [--dir DIR] [--warm-dir DIR] [--mib N] [--reps R]
//
// For page sizes 4 KiB, 64 KiB, 2 MiB and a data set of N MiB (default 64):
//   pheap     pager over a real sparse_store holding the data; patterns seq/rand read/write
//             touching one 8-byte word per 4 KiB; in-core (buffer = data) and out-of-core
//             (buffer = data/8); plus "zero" (never-written store: fills without I/O) and
//             "in_core_warm": the same store on a memory file system (--warm-dir, default
//             /dev/shm; no O_DIRECT there, the store reads from the page cache), so a read
//             fault costs the pager's own work and a memcpy, comparable with the floor (the
//             in-core store on a disk reads every page from the device: O_DIRECT).
//   mmap      MAP_SHARED mmap of a plain file with the same data, same patterns; out-of-core
//             runs in a child process inside a memory cgroup v1 limited to data/8 + 8 MiB
//             (/sys/fs/cgroup/memory/pheap_fault_bench_<pid>, removed afterwards).
//   floor     one faulting thread + one handler thread doing poll/read/UFFDIO_COPY from a
//             prefilled buffer: the minimal userfaultfd round trip per page.
//   first-write cost of each dirty-tracking mode: resident clean pages, one write each.
//   fault path, interleaved: R rounds (default 5) of floor, zero fill and in_core_warm random
//             read at 4 KiB and 64 KiB, one after the other in each round, compared per fault
//             (a zero fill also fills the rest of its 64 KiB unit, so at 4 KiB there are fewer
//             faults than pages); the ratios to the floor are taken per round and their median
//             reported ("ratio_median"), so a loaded machine moves both sides of a ratio
//             together. floor_wp: the floor of a write-tracking pager (below).
// Every measurement reports ns per 4 KiB touched and MB/s; ratios follow at the end. The
// pager options start from the PHEAP_* variables (e.g. PHEAP_FAULT_FILL=faulting_thread);
// buffer sizes are set per measurement.
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "pheap/pager.hpp"
#include "pheap/sparse_store.hpp"

using namespace pheap;
using clk = std::chrono::steady_clock;

namespace {

constexpr std::size_t kOs = 4096;

double secs(clk::time_point a, clk::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Touches one word per 4 KiB in the given order; returns seconds per touch × (bytes / 4 KiB),
// i.e. seconds as if every 4 KiB had been touched. `limit` caps the number of touches (random
// out-of-core writes with large UPages write back a whole UPage per 8-byte store: capping keeps
// the journal within the disk).
double touch(std::byte* base, std::size_t bytes, const std::string& pattern, std::uint64_t seed,
             std::size_t limit = ~std::size_t(0)) {
  const std::size_t n = bytes / kOs;
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  if (pattern.rfind("rand", 0) == 0) std::shuffle(order.begin(), order.end(), std::mt19937_64(seed));
  const bool write = pattern.find("write") != std::string::npos;
  volatile std::uint64_t sink = 0;
  const std::size_t m = std::min(n, limit);
  const auto t0 = clk::now();
  for (std::size_t k = 0; k < m; ++k) {
    const std::size_t i = order[k];
    auto* w = reinterpret_cast<volatile std::uint64_t*>(base + i * kOs);
    if (write) *w = i; else sink = sink + *w;
  }
  return secs(t0, clk::now()) * static_cast<double>(n) / static_cast<double>(m);
}

void csv(const char* sys, std::size_t ps, const std::string& cfg, const std::string& pattern,
         std::size_t bytes, double s) {
  const double ns4k = s * 1e9 / static_cast<double>(bytes / kOs);
  std::printf("csv,%s,%zu,%s,%s,%.0f,%.1f\n", sys, ps, cfg.c_str(), pattern.c_str(), ns4k,
              static_cast<double>(bytes) / s / 1e6);
  std::fflush(stdout);
}

std::map<std::string, double> results;  // key → ns per 4 KiB
void keep(const std::string& key, std::size_t bytes, double s) {
  results[key] = s * 1e9 / static_cast<double>(bytes / kOs);
}

// A store of `bytes` at page size `ps` (64 MiB segments, or one page where pages are larger).
store_options store_of(std::size_t bytes, std::size_t ps) {
  store_options so;
  so.capacity = bytes;
  so.page_size = static_cast<std::uint32_t>(ps);
  so.segment_size = std::max<std::uint64_t>(64ull << 20, ps);
  return so;
}

// ---- floor: bare single-thread uffd + UFFDIO_COPY ------------------------------------------------
// `wp`: the floor of a pager that tracks writes as pheap's default mode does (WP_ASYNC on the
// uffd, the region registered for missing and write-protect faults, pages installed
// write-protected with UFFDIO_COPY_MODE_WP); -1 when the kernel has no WP_ASYNC.
double floor_loop(std::size_t ps, std::size_t bytes, bool wp = false) {
  const int uffd = static_cast<int>(::syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK));
  if (uffd < 0) return -1;
  constexpr std::uint64_t feat_wp_async = 1ull << 15;  // UFFD_FEATURE_WP_ASYNC (Linux 6.7)
  uffdio_api api{UFFD_API, wp ? UFFD_FEATURE_PAGEFAULT_FLAG_WP | feat_wp_async : 0, 0};
  if (::ioctl(uffd, UFFDIO_API, &api) != 0) {
    ::close(uffd);
    return -1;
  }
  void* region = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ::madvise(region, bytes, MADV_NOHUGEPAGE);
  uffdio_register reg{{reinterpret_cast<std::uint64_t>(region), bytes},
                      UFFDIO_REGISTER_MODE_MISSING | (wp ? UFFDIO_REGISTER_MODE_WP : 0), 0};
  ::ioctl(uffd, UFFDIO_REGISTER, &reg);
  const std::uint64_t copy_mode = wp ? UFFDIO_COPY_MODE_WP : 0;
  std::vector<std::byte> src(ps, std::byte{1});
  std::atomic<bool> stop{false};
  std::thread handler([&] {
    pollfd pfd{uffd, POLLIN, 0};
    while (!stop.load()) {
      if (::poll(&pfd, 1, 10) <= 0) continue;
      uffd_msg m;
      if (::read(uffd, &m, sizeof m) != sizeof m) continue;
      const std::uint64_t a = m.arg.pagefault.address & ~(std::uint64_t(ps) - 1);
      uffdio_copy c{a, reinterpret_cast<std::uint64_t>(src.data()), ps, copy_mode, 0};
      ::ioctl(uffd, UFFDIO_COPY, &c);
    }
  });
  const double s = touch(static_cast<std::byte*>(region), bytes, "seq_read", 0);
  stop = true;
  handler.join();
  ::munmap(region, bytes);
  ::close(uffd);
  return s;
}

// ---- mmap baseline (optionally in a memory cgroup) -------------------------------------------------
std::string make_cgroup(std::size_t limit) {
  const std::string cg = "/sys/fs/cgroup/memory/pheap_fault_bench_" + std::to_string(::getpid());
  if (::mkdir(cg.c_str(), 0755) != 0 && errno != EEXIST) return {};
  std::ofstream(cg + "/memory.limit_in_bytes") << limit;
  return cg;
}

// Runs the four mmap patterns over `file` (in a child inside `cgroup` if non-empty). Returns
// seconds per pattern, or -1 on failure/timeout (60 s).
std::vector<double> mmap_run(const std::string& file, std::size_t bytes, const std::string& cgroup,
                             const std::vector<std::string>& patterns) {
  int pfd[2];
  if (::pipe(pfd) != 0) return {};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pfd[0]);
    if (!cgroup.empty()) std::ofstream(cgroup + "/cgroup.procs") << ::getpid();
    const int fd = ::open(file.c_str(), O_RDWR);
    for (const auto& pat : patterns) {
      // Drop this file's cached pages so every run starts cold, like the pager's.
      ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
      void* m = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      const double s = touch(static_cast<std::byte*>(m), bytes, pat, 42);
      ::munmap(m, bytes);
      if (::write(pfd[1], &s, sizeof s) != sizeof s) ::_exit(1);
    }
    ::_exit(0);
  }
  ::close(pfd[1]);
  std::vector<double> out;
  const auto deadline = clk::now() + std::chrono::seconds(60);
  pollfd p{pfd[0], POLLIN, 0};
  while (out.size() < patterns.size()) {
    const int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clk::now()).count());
    if (left <= 0 || ::poll(&p, 1, left) <= 0) break;
    double s;
    if (::read(pfd[0], &s, sizeof s) != sizeof s) break;
    out.push_back(s);
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  ::close(pfd[0]);
  while (out.size() < patterns.size()) out.push_back(-1);  // did not finish in 60 s
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = "/tmp", warm_dir = "/dev/shm";
  std::size_t mib = 64;
  int reps = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--dir" && i + 1 < argc) dir = argv[++i];
    else if (a == "--warm-dir" && i + 1 < argc) warm_dir = argv[++i];
    else if (a == "--mib" && i + 1 < argc) mib = std::stoul(argv[++i]);
    else if (a == "--reps" && i + 1 < argc) reps = std::max(1, std::stoi(argv[++i]));
    else {
      std::fprintf(stderr, "usage: %s [--dir DIR] [--warm-dir DIR] [--mib N] [--reps R]\n", argv[0]);
      return a == "--help" || a == "-h" ? 0 : 2;
    }
  }
  const std::string warm = warm_dir + "/pheap_fault_bench_" + std::to_string(::getpid());
  const std::size_t bytes = mib << 20;
  const std::string work = dir + "/pheap_fault_bench_" + std::to_string(::getpid());
  std::filesystem::create_directories(work);
  const std::vector<std::string> patterns = {"seq_read", "rand_read", "seq_write", "rand_write"};
  std::printf("# fault_bench: data %zu MiB, dir %s; csv,system,page_size,config,pattern,ns_per_4KiB,MB_per_s\n",
              mib, work.c_str());
  std::vector<std::byte> chunk(1 << 20);
  for (std::size_t i = 0; i < chunk.size(); ++i) chunk[i] = std::byte(i * 131 + 7);

  // Plain data file for mmap.
  const std::string file = work + "/data.bin";
  {
    const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
    for (std::size_t o = 0; o < bytes; o += chunk.size()) {
      if (::pwrite(fd, chunk.data(), chunk.size(), static_cast<off_t>(o)) < 0) return 1;
    }
    ::fsync(fd);
    ::close(fd);
  }

  // A store at `ds` holding the data at page size `ps`.
  auto make_store = [&](const std::string& ds, std::size_t ps) {
    auto st = sparse_store::create(ds, store_of(bytes, ps));
    std::vector<page_write> w;
    for (std::size_t o = 0; o < bytes; o += ps) {
      w.push_back({o / ps, chunk.data() + (o % chunk.size())});
      if (w.size() == 64) { st->write_pages(w); w.clear(); }
    }
    if (!w.empty()) st->write_pages(w);
    st->commit({});
  };
  const bool have_warm = std::filesystem::create_directories(warm);
  for (std::size_t ps : {std::size_t(4096), std::size_t(65536), std::size_t(2) << 20}) {
    const std::string ds = work + "/ds" + std::to_string(ps);
    make_store(ds, ps);
    if (have_warm) {  // in core, the store in memory: the pager's own cost per read fault
      const std::string ws = warm + "/ds" + std::to_string(ps);
      make_store(ws, ps);
      for (const char* pat : {"seq_read", "rand_read"}) {
        pager_options po = pager_options::from_env();
        po.buffer_size = bytes;
        pager pg(sparse_store::open(ws, {}), po);
        const double s = touch(pg.base(), bytes, pat, 42);
        csv("pheap", ps, "in_core_warm", pat, bytes, s);
        keep("pheap/" + std::to_string(ps) + "/in_core_warm/" + pat, bytes, s);
      }
      std::filesystem::remove_all(ws);
    }
    for (const char* cfg : {"in_core", "out_of_core"}) {
      for (const auto& pat : patterns) {
        pager_options po = pager_options::from_env();
        po.buffer_size = std::string(cfg) == "in_core" ? bytes : bytes / 8;
        pager pg(sparse_store::open(ds, {}), po);
        const bool capped = std::string(cfg) == "out_of_core" && pat.rfind("rand", 0) == 0;
        const double s = touch(pg.base(), bytes, pat, 42,
                               capped ? std::max<std::size_t>(512, bytes / ps) : ~std::size_t(0));
        csv("pheap", ps, cfg, pat, bytes, s);
        keep("pheap/" + std::to_string(ps) + "/" + cfg + "/" + pat, bytes, s);
      }
    }
    {  // never-written store: pure pager overhead (zero fills)
      const std::string zs = work + "/zero" + std::to_string(ps);
      sparse_store::create(zs, store_of(bytes, ps));
      pager pg(sparse_store::open(zs, {}), pager_options::from_env());
      const double s = touch(pg.base(), bytes, "seq_read", 0);
      csv("pheap", ps, "zero_fill", "seq_read", bytes, s);
      keep("pheap/" + std::to_string(ps) + "/zero", bytes, s);
    }
    {
      const double s = floor_loop(ps, bytes);
      csv("floor", ps, "uffd_copy_1thread", "seq_read", bytes, s);
      keep("floor/" + std::to_string(ps), bytes, s);
    }
  }
  // mmap, in core and in a memory cgroup of data/8 (+8 MiB for the process itself).
  {
    auto in = mmap_run(file, bytes, "", patterns);
    const std::string cg = make_cgroup(bytes / 8 + (8u << 20));
    auto out = mmap_run(file, bytes, cg, patterns);
    if (!cg.empty()) ::rmdir(cg.c_str());
    for (std::size_t i = 0; i < patterns.size(); ++i) {
      csv("mmap", kOs, "in_core", patterns[i], bytes, in[i]);
      keep("mmap/in_core/" + patterns[i], bytes, in[i]);
      if (out[i] < 0) {
        std::printf("csv,mmap,%zu,out_of_core,%s,DNF_60s,\n", kOs, patterns[i].c_str());
      } else {
        csv("mmap", kOs, cg.empty() ? "out_of_core_NO_CGROUP" : "out_of_core", patterns[i], bytes, out[i]);
      }
      keep("mmap/out_of_core/" + patterns[i], bytes, out[i]);
    }
  }
  // First-write cost per dirty-tracking mode (resident, clean after a flush).
  for (auto mode : {dirty_tracking::wp_async, dirty_tracking::wp_sync, dirty_tracking::all_resident}) {
    const std::string zs = work + "/fw" + to_string(mode);
    sparse_store::create(zs, store_of(bytes, 4096));
    pager_options po = pager_options::from_env();
    po.tracking = mode;
    po.buffer_size = bytes;
    if (mode == dirty_tracking::wp_sync) po.fault_fill = fault_filling::workers;  // the only one it allows
    pager pg(sparse_store::open(zs, {}), po);
    touch(pg.base(), bytes, "seq_read", 0);  // resident, clean
    const double s = touch(pg.base(), bytes, "seq_write", 0);
    csv("first_write", 4096, to_string(mode), "seq_write", bytes, s);
    keep(std::string("first_write/") + to_string(mode), bytes, s);
    const auto t0 = clk::now();
    pg.flush({});
    std::printf("# %s: flush of %zu dirty 4 KiB pages took %.1f ms\n", to_string(mode), bytes / kOs,
                secs(t0, clk::now()) * 1e3);
  }
  // The fault path, interleaved rounds (see the header): medians of per-round ratios.
  if (have_warm) {
    for (std::size_t ps : {std::size_t(4096), std::size_t(65536)}) {
      const std::string ws = warm + "/fp" + std::to_string(ps);
      make_store(ws, ps);
      const std::string zs = warm + "/fz" + std::to_string(ps);
      sparse_store::create(zs, store_of(bytes, ps));
      std::vector<double> zero_r, warm_r, zero_wr, warm_wr;
      for (int k = 0; k < reps; ++k) {
        const double fl = floor_loop(ps, bytes);
        const double flw = floor_loop(ps, bytes, true);
        pager_options po = pager_options::from_env();
        po.buffer_size = bytes;
        // Seconds per fault: a zero fill also fills the rest of its 64 KiB unit (4 KiB pages:
        // one fault per 16 pages touched in order, fewer than one per page at random), so the
        // fault path is compared per fault, not per page touched.
        auto per_fault = [&](const std::string& ds) {
          pager pg(sparse_store::open(ds, {}), po);
          const double t = touch(pg.base(), bytes, "rand_read", 42 + k);
          const pager_stats st = pg.stats();
          const double faults = static_cast<double>(std::max<std::uint64_t>(1, st.read_faults + st.write_faults));
          return t / faults * static_cast<double>(bytes / ps);  // as if one fault per page, as the floor
        };
        const double z = per_fault(zs), w = per_fault(ws);
        zero_r.push_back(z / fl);
        warm_r.push_back(w / fl);
        zero_wr.push_back(z / flw);
        warm_wr.push_back(w / flw);
        const double per = 1e9 / static_cast<double>(bytes / ps);  // ns per fault (per page)
        std::printf("round,%zu,%d,ns_per_fault,floor,%.0f,floor_wp,%.0f,zero_fill,%.0f,warm_read,%.0f\n",
                    ps, k, fl * per, flw * per, z * per, w * per);
      }
      auto flw_ok = [](const std::vector<double>& v) { return !v.empty() && v.front() > 0; };
      auto median = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
      };
      std::printf("ratio_median,pheap/%zu/zero_fill / floor,%.2f,%d rounds\n", ps, median(zero_r), reps);
      std::printf("ratio_median,pheap/%zu/in_core_warm/rand_read / floor,%.2f,%d rounds\n", ps,
                  median(warm_r), reps);
      if (flw_ok(zero_wr)) {
        std::printf("ratio_median,pheap/%zu/zero_fill / floor_wp,%.2f,%d rounds\n", ps, median(zero_wr), reps);
        std::printf("ratio_median,pheap/%zu/in_core_warm/rand_read / floor_wp,%.2f,%d rounds\n", ps,
                    median(warm_wr), reps);
      }
      std::filesystem::remove_all(ws);
      std::filesystem::remove_all(zs);
    }
  }
  // Ratios.
  auto r = [&](const std::string& a, const std::string& b) {
    const double x = results[a], y = results[b];
    if (x > 0 && y > 0) std::printf("ratio,%s / %s,%.2f\n", a.c_str(), b.c_str(), x / y);
    else std::printf("ratio,%s / %s,n/a\n", a.c_str(), b.c_str());
  };
  for (std::size_t ps : {std::size_t(4096), std::size_t(65536), std::size_t(2) << 20}) {
    const std::string p = std::to_string(ps);
    r("pheap/" + p + "/zero", "floor/" + p);
    r("pheap/" + p + "/in_core/seq_read", "floor/" + p);
    r("pheap/" + p + "/in_core_warm/seq_read", "floor/" + p);
    r("pheap/" + p + "/in_core_warm/rand_read", "floor/" + p);
    for (const auto& pat : patterns) {
      r("pheap/" + p + "/in_core/" + pat, "mmap/in_core/" + pat);
      r("pheap/" + p + "/out_of_core/" + pat, "mmap/out_of_core/" + pat);
    }
  }
  std::filesystem::remove_all(work);
  if (have_warm) std::filesystem::remove_all(warm);
  return 0;
}
