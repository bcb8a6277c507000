// store_bench [DIR] — SparseStore write throughput, commit latency and sparseness, per engine.
//
// For each I/O engine (posix, io_uring):
//   throughput  1 GiB of 64 KiB pages written in 4 MiB batches, then one commit. Reports the
//               page write rate (O_DIRECT into their homes), the commit time and the end-to-end
//               rate (durable bytes / (write + commit) time).
//   commit      many small commits of 16 pages (1 MiB) each: median and p99 commit() latency.
//   sparse      every 97th 64 KiB page of a 4 GiB region: bytes on disk vs bytes written once
//               committed.
// One JSON object per line on stdout. The datastores live under DIR (default $TMPDIR or
// /tmp) and are removed afterwards. Not a test: figures depend on the disk and its load.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "pheap/error.hpp"
#include "pheap/io.hpp"
#include "pheap/sparse_store.hpp"

namespace {

using clock_type = std::chrono::steady_clock;
constexpr std::uint32_t kPage = 64 << 10;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

std::vector<std::byte> page_image(std::uint64_t page, std::uint64_t version) {
  std::vector<std::byte> buf(kPage);
  std::uint64_t x = page * 0x9E3779B97F4A7C15ull + version;
  for (std::size_t i = 0; i < buf.size(); i += 8) {
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    std::memcpy(buf.data() + i, &x, 8);
  }
  return buf;
}

pheap::store_options options(std::shared_ptr<pheap::io::engine> eng, std::uint64_t capacity) {
  pheap::store_options o;
  o.capacity = capacity;
  o.page_size = kPage;
  o.segment_size = 256ull << 20;
  o.engine = std::move(eng);
  return o;
}

void throughput(const std::string& name, std::shared_ptr<pheap::io::engine> eng,
                const std::string& dir) {
  constexpr std::uint64_t total = 1ull << 30;
  constexpr std::uint64_t pages = total / kPage;
  constexpr std::uint64_t batch = 64;  // 4 MiB per write_pages call
  auto s = pheap::sparse_store::create(dir, options(eng, 2 * total));
  std::vector<std::vector<std::byte>> images;
  for (std::uint64_t i = 0; i < batch; ++i) images.push_back(page_image(i, 1));
  std::vector<pheap::page_write> req(batch);

  const auto t0 = clock_type::now();
  for (std::uint64_t p = 0; p < pages; p += batch) {
    for (std::uint64_t i = 0; i < batch; ++i) req[i] = {p + i, images[i].data()};
    s->write_pages(req);
  }
  const double t_write = seconds_since(t0);
  const auto t1 = clock_type::now();
  s->commit({});
  const double t_commit = seconds_since(t1);
  const double mb = static_cast<double>(total) / 1e6;
  std::printf(
      "{\"bench\":\"throughput\",\"engine\":\"%s\",\"bytes\":%llu,\"page\":%u,\"batch_pages\":%llu,"
      "\"write_MBps\":%.0f,\"commit_ms\":%.1f,\"durable_MBps\":%.0f}\n",
      name.c_str(), static_cast<unsigned long long>(total), kPage,
      static_cast<unsigned long long>(batch), mb / t_write, t_commit * 1e3,
      mb / (t_write + t_commit));
}

void commit_latency(const std::string& name, std::shared_ptr<pheap::io::engine> eng,
                    const std::string& dir) {
  constexpr int commits = 200;
  constexpr std::uint64_t per_commit = 16;
  auto s = pheap::sparse_store::create(dir, options(eng, 1ull << 30));
  std::vector<std::vector<std::byte>> images;
  for (std::uint64_t i = 0; i < per_commit; ++i) images.push_back(page_image(i, 2));
  std::vector<pheap::page_write> req(per_commit);
  std::vector<double> lat;
  for (int c = 0; c < commits; ++c) {
    for (std::uint64_t i = 0; i < per_commit; ++i) {
      req[i] = {(c * per_commit + i) % ((1ull << 30) / kPage), images[i].data()};
    }
    s->write_pages(req);
    const auto t0 = clock_type::now();
    s->commit({});
    lat.push_back(seconds_since(t0) * 1e3);
  }
  std::sort(lat.begin(), lat.end());
  std::printf(
      "{\"bench\":\"commit\",\"engine\":\"%s\",\"commits\":%d,\"pages_per_commit\":%llu,"
      "\"median_ms\":%.2f,\"p99_ms\":%.2f,\"max_ms\":%.2f}\n",
      name.c_str(), commits, static_cast<unsigned long long>(per_commit), lat[lat.size() / 2],
      lat[lat.size() * 99 / 100], lat.back());
}

void sparseness(const std::string& name, std::shared_ptr<pheap::io::engine> eng,
                const std::string& dir) {
  constexpr std::uint64_t capacity = 4ull << 30;
  auto s = pheap::sparse_store::create(dir, options(eng, capacity));
  std::uint64_t written = 0;
  const auto img = page_image(0, 3);
  for (std::uint64_t p = 0; p < capacity / kPage; p += 97) {
    pheap::page_write w{p, img.data()};
    s->write_pages(std::span<const pheap::page_write>(&w, 1));
    written += kPage;
  }
  s->commit({});
  const std::uint64_t disk = s->disk_bytes();
  std::printf(
      "{\"bench\":\"sparse\",\"engine\":\"%s\",\"capacity\":%llu,\"bytes_written\":%llu,"
      "\"bytes_on_disk\":%llu,\"ratio\":%.3f}\n",
      name.c_str(), static_cast<unsigned long long>(capacity),
      static_cast<unsigned long long>(written), static_cast<unsigned long long>(disk),
      static_cast<double>(disk) / static_cast<double>(written));
}

}  // namespace

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  const char* tmp = std::getenv("TMPDIR");
  const fs::path base = fs::path(argc > 1 ? argv[1] : (tmp && *tmp ? tmp : "/tmp")) /
                        ("pheap-store-bench-" + std::to_string(::getpid()));
  int rc = 0;
  for (const std::string name : {"posix", "io_uring"}) {
    std::shared_ptr<pheap::io::engine> eng;
    try {
      eng = name == "posix" ? pheap::io::make_posix_engine() : pheap::io::make_uring_engine();
    } catch (const pheap::error& e) {
      std::printf("{\"bench\":\"skipped\",\"engine\":\"%s\",\"reason\":\"%s\"}\n", name.c_str(),
                  e.what());
      continue;
    }
    try {
      fs::create_directories(base);
      throughput(name, eng, (base / "tp").string());
      fs::remove_all(base / "tp");
      commit_latency(name, eng, (base / "commit").string());
      fs::remove_all(base / "commit");
      sparseness(name, eng, (base / "sparse").string());
      fs::remove_all(base / "sparse");
    } catch (const std::exception& e) {
      std::fprintf(stderr, "store_bench (%s): %s\n", name.c_str(), e.what());
      rc = 1;
    }
    std::fflush(stdout);
  }
  std::error_code ec;
  fs::remove_all(base, ec);
  return rc;
}
