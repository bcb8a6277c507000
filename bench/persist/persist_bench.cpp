// persist_bench — what durability costs: flush vs dirty bytes, reopen vs datastore size,
// snapshot vs datastore size, for the uffd backend (pager + SparseStore) and the kernel-mmap
// backend. Not a test; prints CSV lines (and appends them to --csv FILE).
//
//   persist_bench [--dir /tmp] [--sizes-mib 16,64,256] [--page-sizes 4096,65536,1048576]
//                 [--backends uffd,mmap] [--csv FILE] [--label TEXT]
//
//   flush     a heap holding one block of max(sizes) MiB, fully written and flushed once;
//             then for each size D: quiesce (two empty flushes), write one word per 4 KiB in
//             the first D MiB and time manager::flush() (uffd: a new watermark = journal
//             append + fdatasync + commit; mmap: msync of the mapping), then time the next,
//             empty flush ("flush_next_empty": with uffd it waits for the background
//             checkpoint of D into the segment files).
//   reopen    a datastore holding D MiB of written heap, closed cleanly; time of the
//             open_only constructor + find of one object, and of open_read_only + find.
//   snapshot  time of manager::snapshot(dst) on a datastore holding D MiB (no writers).
// All steps run in this process, one datastore after another;
// caches are warm (page cache holds the files), as for a job that reopens what it just wrote.
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <string>
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

pheap::options opts(const std::string& backend, std::uint64_t page, std::uint64_t max_bytes) {
  pheap::options o;
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
      // Quiesce: an empty flush waits for the background checkpoint of the previous epoch
      // (a commit first waits for its predecessor's checkpoint, FORMAT.md commit step 1).
      m.flush();
      m.flush();
      touch(blk, d, salt++);
      auto t0 = clk::now();
      m.flush();
      emit("flush", backend, page, d, secs(t0, clk::now()));
      // The deferred half: the next flush (nothing dirty) waits for D's checkpoint.
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

}  // namespace

int main(int argc, char** argv) {
  std::string dir = "/tmp", csv;
  std::vector<std::uint64_t> sizes{16, 64, 256}, pages{4096, 65536, 1048576};
  std::vector<std::string> backends{"uffd", "mmap"};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--dir") dir = v;
    else if (k == "--csv") csv = v;
    else if (k == "--label") g_label = v;
    else if (k == "--backends") backends = split(v);
    else if (k == "--sizes-mib") {
      sizes.clear();
      for (const auto& s : split(v)) sizes.push_back(std::stoull(s) << 20);
    } else if (k == "--page-sizes") {
      pages.clear();
      for (const auto& s : split(v)) pages.push_back(std::stoull(s));
    } else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      return 2;
    }
  }
  if (sizes.empty() || pages.empty()) return 2;
  for (auto& s : sizes) {
    if (s == 0) s = 1 << 20;
  }
  std::sort(sizes.begin(), sizes.end());
  const char* header = "label,bench,backend,page_size,bytes,seconds,MB_per_s";
  if (!csv.empty()) {
    const bool fresh = !std::filesystem::exists(csv);
    g_csv = std::fopen(csv.c_str(), "a");
    if (g_csv != nullptr && fresh) std::fprintf(g_csv, "%s\n", header);
  }
  std::printf("%s\n", header);
  int rc = 0;
  for (const auto& b : backends) {
    for (const std::uint64_t p : pages) {
      try {
        bench_flush(dir, b, p, sizes);
        for (const std::uint64_t s : sizes) bench_reopen_snapshot(dir, b, p, s);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "persist_bench %s page %" PRIu64 ": %s\n", b.c_str(), p, e.what());
        rc = 1;
      }
    }
  }
  if (g_csv != nullptr) std::fclose(g_csv);
  return rc;
}
