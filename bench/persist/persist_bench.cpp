// persist_bench — what durability costs: flush vs dirty bytes, reopen vs datastore size,
// snapshot vs datastore size, for the uffd backend (pager + SparseStore) and the kernel-mmap
// backend; and, with --durability-gib, the numbers of store format 3's issue (bytes written per
// byte of data, flush and close against dd, reopen after a clean close and after kill -9). Not a
// test; prints CSV lines (and appends them to --csv FILE).
//
//   persist_bench [--dir /tmp] [--sizes-mib 16,64,256] [--page-sizes 4096,65536,1048576]
//                 [--backends uffd,mmap] [--csv FILE] [--label TEXT]
//                 [--durability-gib 1,4] [--buffer-mib N] [--help]
//
//   flush     a heap holding one block of max(sizes) MiB, fully written and flushed once;
//             then for each size D: quiesce (two empty flushes), write one word per 4 KiB in
//             the first D MiB and time manager::flush() (uffd: a new watermark; mmap: msync of
//             the mapping), then time the next, empty flush ("flush_next_empty": with store
//             format 2 it waited for the background checkpoint of D into the segment files).
//   reopen    a datastore holding D MiB of written heap, closed cleanly; time of the
//             open_only constructor + find of one object, and of open_read_only + find.
//   snapshot  time of manager::snapshot(dst) on a datastore holding D MiB (no writers).
//   durability (only these when --durability-gib is given; uffd backend, each page size):
//             for each size G GiB, a child process creates a heap holding a
//             pheap::container::vector<std::uint64_t> of G GiB, fills it, and times
//             manager::flush() ("dur_flush") and the close that follows ("dur_close");
//             "dur_device_write_ratio" is the bytes the process wrote to the device from the
//             fill on (/proc/self/io write_bytes: direct and buffered writes, io_uring workers
//             included) per byte of data — its value is in the seconds column. In the same run
//             `dd if=/dev/zero of=F bs=1M count=G*1024 oflag=direct conv=fdatasync` is timed
//             ("dd_direct_fdatasync"). Then, each in a fresh process: open_only + find of the
//             vector after that clean close ("dur_reopen_clean"), and after a child that
//             filled, flushed, printed "flushed" and was killed -9 right behind the flush while
//             it rewrote the vector ("dur_reopen_after_kill"). --buffer-mib bounds the pager's
//             buffer (default: the capacity, in core). "dur_disk_write_ratio_sys" is the same
//             ratio from the sectors written to the whole block device holding --dir
//             (/sys/dev/block/M:m/stat, file system journal included) while the writer ran: an
//             upper bound, since it also counts every other process writing to that disk.
// All steps run in this process (durability: its children), one datastore after another;
// caches are warm (page cache holds the files), as for a job that reopens what it just wrote.
//
// Every datastore and scratch file lives in a private directory DIR/persist-bench.XXXXXX, removed
// at exit, after an exception, and on SIGTERM/SIGINT/SIGHUP (a watcher thread kills the running
// child with SIGKILL, then removes the directory).
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "pheap/pheap.hpp"

using clk = std::chrono::steady_clock;

namespace {

double secs(clk::time_point a, clk::time_point b) { return std::chrono::duration<double>(b - a).count(); }

std::vector<std::string> split(const std::string& v) {
  std::vector<std::string> out;
  std::stringstream ss(v);
  for (std::string s; std::getline(ss, s, ',');) out.push_back(s);
  return out;
}

FILE* g_csv = nullptr;
std::string g_label;

void emit(const char* bench, const std::string& backend, std::uint64_t page, std::uint64_t bytes, double s) {
  char line[512];
  std::snprintf(line, sizeof line, "%s,%s,%s,%" PRIu64 ",%" PRIu64 ",%.6f,%.1f", g_label.c_str(), bench,
                backend.c_str(), page, bytes, s, s > 0 ? static_cast<double>(bytes) / s / 1e6 : 0.0);
  std::printf("%s\n", line);
  std::fflush(stdout);
  if (g_csv != nullptr) {
    std::fprintf(g_csv, "%s\n", line);
    std::fflush(g_csv);
  }
}

// ---- scratch directory, removed on every way out -------------------------------------------

std::string g_work;             // DIR/persist-bench.XXXXXX, set once before any thread
std::atomic<pid_t> g_child{0};  // the running child (durability writer/reader, dd), if any
std::mutex g_cleanup;           // held by whoever removes g_work; the signal watcher never lets go

// Removes the scratch directory; retried while another thread may still be creating files in it.
void remove_work() {
  std::error_code ec;
  for (int i = 0; i < 100 && std::filesystem::exists(g_work, ec); ++i) {
    std::filesystem::remove_all(g_work, ec);
    if (std::filesystem::exists(g_work, ec)) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// Blocks the termination signals in every thread (call first in main, before any thread exists)
// and starts a thread that waits for them: it kills the running child, removes the scratch
// directory and exits with 128 + the signal.
void watch_termination_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (const int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, s);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread([set] {
    int sig = 0;
    sigwait(&set, &sig);
    g_cleanup.lock();  // from here on main() cannot start its own removal and return
    if (const pid_t c = g_child.load(); c > 0) ::kill(c, SIGKILL);  // main's waitpid reaps it
    remove_work();
    std::fprintf(stderr, "persist_bench: signal %d, removed %s\n", sig, g_work.c_str());
    std::_Exit(128 + sig);
  }).detach();
}

pheap::options opts(const std::string& backend, std::uint64_t page, std::uint64_t max_bytes) {
  pheap::options o = pheap::options::from_env();
  o.capacity = 1ull << 30;
  while (o.capacity < 2 * max_bytes + (256ull << 20)) o.capacity <<= 1;
  o.page_size = static_cast<std::uint32_t>(page);
  o.backend = backend == "mmap" ? pheap::backend_kind::mmap : pheap::backend_kind::uffd;
  o.pager.buffer_size = o.capacity;  // in core: this bench measures durability, not paging
  return o;
}

void touch(std::byte* p, std::uint64_t bytes, std::uint64_t salt) {
  for (std::uint64_t off = 0; off < bytes; off += 4096) {
    std::uint64_t v = off ^ salt;
    std::memcpy(p + off, &v, sizeof v);
  }
}

void bench_flush(const std::string& dir, const std::string& backend, std::uint64_t page,
                 const std::vector<std::uint64_t>& sizes) {
  const std::uint64_t max = sizes.back();
  const std::string path = dir + "/persist-bench-flush.ds";
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  {
    pheap::manager m(pheap::create_only, path, opts(backend, page, max));
    auto* blk = static_cast<std::byte*>(m.allocate(max));
    if (blk == nullptr) throw std::runtime_error("allocation failed");
    touch(blk, max, 1);
    m.flush();
    std::uint64_t salt = 2;
    for (const std::uint64_t d : sizes) {
      // Quiesce: two empty flushes (store format 2 waited here for the background checkpoint of
      // the previous epoch; format 3 has none).
      m.flush();
      m.flush();
      touch(blk, d, salt++);
      auto t0 = clk::now();
      m.flush();
      emit("flush", backend, page, d, secs(t0, clk::now()));
      // The deferred half, if any: the next flush (nothing dirty).
      t0 = clk::now();
      m.flush();
      emit("flush_next_empty", backend, page, d, secs(t0, clk::now()));
    }
  }
  std::filesystem::remove_all(path, ec);
}

void bench_reopen_snapshot(const std::string& dir, const std::string& backend, std::uint64_t page,
                           std::uint64_t bytes) {
  const std::string path = dir + "/persist-bench-reopen.ds", snap = dir + "/persist-bench-snap.ds";
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  std::filesystem::remove_all(snap, ec);
  const pheap::options o = opts(backend, page, bytes);
  {
    pheap::manager m(pheap::create_only, path, o);
    auto* blk = static_cast<std::byte*>(m.allocate(bytes));
    if (blk == nullptr) throw std::runtime_error("allocation failed");
    touch(blk, bytes, 7);
    m.construct<std::uint64_t>("marker")(bytes);
  }
  {
    const auto t0 = clk::now();
    pheap::manager m(pheap::open_only, path, o);
    const auto* v = m.find<std::uint64_t>("marker").first;
    const double s = secs(t0, clk::now());
    if (v == nullptr || *v != bytes) throw std::runtime_error("reopen: marker lost");
    emit("reopen_rw", backend, page, bytes, s);
    const auto t1 = clk::now();
    m.snapshot(snap);
    emit("snapshot", backend, page, bytes, secs(t1, clk::now()));
  }
  {
    const auto t0 = clk::now();
    pheap::manager m(pheap::open_read_only, path, o);
    const auto* v = m.find<std::uint64_t>("marker").first;
    const double s = secs(t0, clk::now());
    if (v == nullptr || *v != bytes) throw std::runtime_error("reopen ro: marker lost");
    emit("reopen_ro", backend, page, bytes, s);
  }
  std::filesystem::remove_all(path, ec);
  std::filesystem::remove_all(snap, ec);
}

// ---- durability (--durability-gib) ----------------------------------------------------------

using numbers = pheap::container::vector<std::uint64_t>;

std::uint64_t process_write_bytes() {
  std::ifstream io("/proc/self/io");
  std::string k;
  std::uint64_t v = 0;
  while (io >> k >> v) {
    if (k == "write_bytes:") return v;
  }
  return 0;
}

// Sectors written to the whole block device holding `dir` (/sys/dev/block/M:m/stat, field 7;
// a partition's own stat has the same layout), in bytes; 0 if it cannot be read (tmpfs).
std::uint64_t device_write_bytes(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return 0;
  std::ifstream f("/sys/dev/block/" + std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev)) +
                  "/stat");
  std::uint64_t v[7] = {};
  for (auto& x : v) f >> x;
  return f ? v[6] * 512 : 0;
}

// Runs `body(fd)` in a forked child writing its report lines to `fd`; returns the pipe's read
// end and the child's pid.
template <class Body>
std::pair<int, pid_t> spawn(Body body) {
  int p[2];
  if (::pipe(p) != 0) throw std::runtime_error("pipe failed");
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::close(p[0]);
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_UNBLOCK, &all, nullptr);  // the child dies of SIGTERM; the parent cleans up
    int rc = 0;
    try {
      body(p[1]);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "persist_bench child: %s\n", e.what());
      rc = 1;
    }
    std::_Exit(rc);
  }
  ::close(p[1]);
  g_child = pid;
  return {p[0], pid};
}

void say(int fd, const std::string& line) {
  const std::string l = line + "\n";
  if (::write(fd, l.data(), l.size()) != static_cast<ssize_t>(l.size())) std::_Exit(3);
}

// Reads the child's report until EOF (or until `until` is read, then returns at once).
std::vector<std::string> report(int fd, const std::string& until = "") {
  std::vector<std::string> lines;
  std::string buf;
  char c;
  while (::read(fd, &c, 1) == 1) {
    if (c != '\n') {
      buf += c;
      continue;
    }
    lines.push_back(buf);
    if (!until.empty() && buf == until) break;
    buf.clear();
  }
  return lines;
}

double value_of(const std::vector<std::string>& lines, const std::string& key) {
  for (const auto& l : lines) {
    if (l.rfind(key + " ", 0) == 0) return std::stod(l.substr(key.size() + 1));
  }
  throw std::runtime_error("child did not report " + key);
}

void wait_child(pid_t pid, bool killed) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  g_child = 0;
  const bool ok = killed ? (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
                         : (WIFEXITED(status) && WEXITSTATUS(status) == 0);
  if (!ok) throw std::runtime_error("child " + std::to_string(pid) + " failed, status " + std::to_string(status));
}

// Fills `v` with `n` values of `salt`.
void fill(numbers& v, std::uint64_t n, std::uint64_t salt) {
  if (v.size() != n) {
    v.clear();
    v.reserve(n);
    for (std::uint64_t i = 0; i < n; ++i) v.push_back(i ^ salt);
  } else {
    for (std::uint64_t i = 0; i < n; ++i) v[i] = i ^ salt;
  }
}

double reopen_and_find(const std::string& path, const pheap::options& o, std::uint64_t n) {
  auto [fd, pid] = spawn([&](int out) {
    const auto t0 = clk::now();
    pheap::manager m(pheap::open_only, path, o);
    const numbers* v = m.find<numbers>("v").first;
    const double s = secs(t0, clk::now());
    if (v == nullptr || v->size() != n || (*v)[n / 2] != ((n / 2) ^ 1)) {
      throw std::runtime_error("reopen: the vector is not the flushed one");
    }
    say(out, "reopen " + std::to_string(s));
  });
  const auto lines = report(fd);
  ::close(fd);
  wait_child(pid, false);
  return value_of(lines, "reopen");
}

void bench_durability(const std::string& dir, std::uint64_t page, std::uint64_t gib,
                      std::uint64_t buffer_mib) {
  const std::uint64_t bytes = gib << 30, n = bytes / sizeof(std::uint64_t);
  const std::string path = dir + "/persist-bench-durability.ds";
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  pheap::options o = opts("uffd", page, bytes);
  if (buffer_mib != 0) o.pager.buffer_size = std::min<std::uint64_t>(o.capacity, buffer_mib << 20);

  // The writer: fill, flush, close; device bytes from the fill on.
  {
    const std::uint64_t dev0 = device_write_bytes(dir);
    auto [fd, pid] = spawn([&](int out) {
      const std::uint64_t wb0 = process_write_bytes();
      auto m = std::make_unique<pheap::manager>(pheap::create_only, path, o);
      numbers* v = m->construct<numbers>("v")(m->get_allocator<std::uint64_t>());
      fill(*v, n, 1);
      auto t0 = clk::now();
      m->flush();
      say(out, "flush " + std::to_string(secs(t0, clk::now())));
      t0 = clk::now();
      m.reset();  // the close
      say(out, "close " + std::to_string(secs(t0, clk::now())));
      say(out, "written " + std::to_string(process_write_bytes() - wb0));
    });
    const auto lines = report(fd);
    ::close(fd);
    wait_child(pid, false);
    const std::uint64_t dev = device_write_bytes(dir) - dev0;
    const double flush = value_of(lines, "flush"), close = value_of(lines, "close");
    emit("dur_flush", "uffd", page, bytes, flush);
    emit("dur_close", "uffd", page, bytes, close);
    emit("dur_flush_close", "uffd", page, bytes, flush + close);
    emit("dur_device_write_ratio", "uffd", page, bytes, value_of(lines, "written") / static_cast<double>(bytes));
    if (dev0 != 0) emit("dur_disk_write_ratio_sys", "uffd", page, bytes, static_cast<double>(dev) / static_cast<double>(bytes));
  }
  // dd of the same bytes, same file system, same run.
  {
    const std::string f = dir + "/persist-bench-dd.bin";
    const std::string of = "of=" + f, count = "count=" + std::to_string(gib * 1024);
    const auto t0 = clk::now();
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
      sigset_t all;
      sigfillset(&all);
      pthread_sigmask(SIG_UNBLOCK, &all, nullptr);
      ::execlp("dd", "dd", "if=/dev/zero", of.c_str(), "bs=1M", count.c_str(), "oflag=direct", "conv=fdatasync",
               "status=none", static_cast<char*>(nullptr));
      std::_Exit(127);
    }
    g_child = pid;
    wait_child(pid, false);  // throws if dd failed
    emit("dd_direct_fdatasync", "dd", page, bytes, secs(t0, clk::now()));
    std::filesystem::remove(f, ec);
  }
  emit("dur_reopen_clean", "uffd", page, bytes, reopen_and_find(path, o, n));
  // Killed right behind a flush, while rewriting the vector.
  {
    auto [fd, pid] = spawn([&](int out) {
      pheap::manager m(pheap::open_only, path, o);
      numbers* v = m.find<numbers>("v").first;
      fill(*v, n, 1);  // rewrite: every page dirty again
      m.flush();
      say(out, "flushed");
      for (std::uint64_t salt = 2;; ++salt) fill(*v, n, salt == 1 ? 2 : salt);
    });
    report(fd, "flushed");
    ::kill(pid, SIGKILL);
    ::close(fd);
    wait_child(pid, true);
  }
  emit("dur_reopen_after_kill", "uffd", page, bytes, reopen_and_find(path, o, n));
  std::filesystem::remove_all(path, ec);
}

const char* const k_usage =
    "usage: persist_bench [--dir DIR] [--sizes-mib LIST] [--page-sizes LIST] [--backends LIST]\n"
    "                     [--csv FILE] [--label TEXT] [--durability-gib LIST] [--buffer-mib N]\n"
    "  --dir DIR             where the datastores go, in DIR/persist-bench.XXXXXX (default /tmp)\n"
    "  --sizes-mib LIST      dirty / datastore sizes for flush, reopen, snapshot (default 16,64,256 MiB)\n"
    "  --page-sizes LIST     bytes (default 4096,65536,1048576)\n"
    "  --backends LIST       uffd,mmap (default both)\n"
    "  --csv FILE            also append the CSV lines to FILE\n"
    "  --label TEXT          first CSV column\n"
    "  --durability-gib LIST run only the durability suite (uffd), for these vector sizes in GiB\n"
    "  --buffer-mib N        pager buffer of the durability suite (default: the capacity, in core)\n"
    "CSV: label,bench,backend,page_size,bytes,seconds,MB_per_s (ratios are in the seconds column)\n";

int run(const std::vector<std::uint64_t>& sizes, const std::vector<std::uint64_t>& pages,
        const std::vector<std::string>& backends, const std::vector<std::uint64_t>& durability,
        std::uint64_t buffer_mib) {
  int rc = 0;
  for (const std::uint64_t p : pages) {
    for (const std::uint64_t g : durability) {
      try {
        bench_durability(g_work, p, g, buffer_mib);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "persist_bench durability %" PRIu64 " GiB page %" PRIu64 ": %s\n", g, p, e.what());
        rc = 1;
      }
    }
  }
  for (const auto& b : backends) {
    for (const std::uint64_t p : pages) {
      try {
        bench_flush(g_work, b, p, sizes);
        for (const std::uint64_t s : sizes) bench_reopen_snapshot(g_work, b, p, s);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "persist_bench %s page %" PRIu64 ": %s\n", b.c_str(), p, e.what());
        rc = 1;
      }
    }
  }
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = "/tmp", csv;
  std::vector<std::uint64_t> sizes{16ull << 20, 64ull << 20, 256ull << 20}, pages{4096, 65536, 1048576};
  std::vector<std::string> backends{"uffd", "mmap"};
  std::vector<std::uint64_t> durability;
  std::uint64_t buffer_mib = 0;
  try {
    for (int i = 1; i < argc; i += 2) {
      const std::string k = argv[i];
      if (k == "--help" || k == "-h") {
        std::fputs(k_usage, stdout);
        return 0;
      }
      static const char* const known[] = {"--dir",        "--csv",            "--label",     "--backends",
                                          "--sizes-mib", "--durability-gib", "--buffer-mib", "--page-sizes"};
      if (std::find(std::begin(known), std::end(known), k) == std::end(known)) {
        throw std::invalid_argument("unknown option " + k);
      }
      if (i + 1 >= argc) throw std::invalid_argument(k + " needs a value");
      const std::string v = argv[i + 1];
      if (k == "--dir") dir = v;
      else if (k == "--csv") csv = v;
      else if (k == "--label") g_label = v;
      else if (k == "--backends") backends = split(v);
      else if (k == "--sizes-mib") {
        sizes.clear();
        for (const auto& s : split(v)) sizes.push_back(std::max<std::uint64_t>(std::stoull(s), 1) << 20);
      } else if (k == "--durability-gib") {
        for (const auto& s : split(v)) durability.push_back(std::stoull(s));
      } else if (k == "--buffer-mib") {
        buffer_mib = std::stoull(v);
      } else {  // --page-sizes
        pages.clear();
        for (const auto& s : split(v)) pages.push_back(std::stoull(s));
      }
    }
    if (sizes.empty() || pages.empty()) throw std::invalid_argument("empty --sizes-mib or --page-sizes");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "persist_bench: %s\n%s", e.what(), k_usage);
    return 2;
  }
  std::sort(sizes.begin(), sizes.end());
  if (!durability.empty()) backends.clear();  // --durability-gib runs that suite only

  std::string tmpl = dir + "/persist-bench.XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) {
    std::fprintf(stderr, "persist_bench: cannot create a directory in %s: %s\n", dir.c_str(), std::strerror(errno));
    return 1;
  }
  g_work = tmpl;
  watch_termination_signals();

  const char* header = "label,bench,backend,page_size,bytes,seconds,MB_per_s";
  if (!csv.empty()) {
    const bool fresh = !std::filesystem::exists(csv);
    g_csv = std::fopen(csv.c_str(), "a");
    if (g_csv != nullptr && fresh) std::fprintf(g_csv, "%s\n", header);
  }
  std::printf("%s\n", header);
  int rc = 1;
  try {
    rc = run(sizes, pages, backends, durability, buffer_mib);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "persist_bench: %s\n", e.what());
  }
  const std::lock_guard<std::mutex> hold(g_cleanup);
  remove_work();
  if (g_csv != nullptr) std::fclose(g_csv);
  return rc;
}
