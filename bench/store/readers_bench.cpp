// readers_bench [DIR [CASES]] — readers beside a writer (sparse_store/FORMAT.md "Readers beside a
// writer"), the store-level targets of issue 50. Pages of 4 KiB; one JSON object per line.
//
//   open      a read-only open (registration + the directory) while a writer thread commits
//             a 16-page epoch every few ms, at capacities of 1 GiB, 64 GiB and 1 TiB (the
//             directory grows with the capacity: 16 bytes per 944 pages): median and p99 of
//             `opens` opens (target: ≤ 50 ms at any size).
//   refresh   1 GiB, every page with data; a reader opens and reads every page (a fresh open's
//             cost to reach the pages), the writer changes 1 % of the pages in one epoch, the
//             reader refreshes and reads the pages refresh() says changed — what a refreshed
//             reader must read again, its other pages staying where it had them — against a
//             fresh open reading every page; both interleaved, `reps` times (target: ≤ 10 %).
//   pinned    256 MiB, every page with data; a reader holds epoch E while the writer commits
//             10 epochs each rewriting a random 1 % of the pages; the bytes pinned for it
//             against the pages changed since E (target: ≤ 1.1x), and the reader checks its
//             whole view still reads epoch E.
//   writer    the same 10-epoch writer alone and with the reader attached: commit throughput
//             ratio (the cost of keeping copies, store level).
// CASES: a comma-separated subset of open,refresh,pinned (default all).
// Not a test: figures depend on the disk and its load. Datastores live under DIR (default
// $TMPDIR or /tmp) and are removed afterwards.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "pheap/error.hpp"
#include "pheap/sparse_store.hpp"

namespace {

using clock_type = std::chrono::steady_clock;
constexpr std::uint32_t kPage = 4096;

double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

void fill(std::byte* buf, std::uint64_t page, std::uint64_t version) {
  std::uint64_t x = page * 0x9E3779B97F4A7C15ull + version * 0xD1B54A32D192ED03ull + 1;
  for (std::size_t i = 0; i < kPage; i += 8) {
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    std::memcpy(buf + i, &x, 8);
  }
}

struct aligned {
  std::byte* p;
  explicit aligned(std::size_t n) : p(static_cast<std::byte*>(std::aligned_alloc(4096, n))) {}
  ~aligned() { std::free(p); }
};

pheap::store_options create_opts(std::uint64_t capacity) {
  pheap::store_options o;
  o.capacity = capacity;
  o.page_size = kPage;
  o.segment_size = 1ull << 30;
  return o;
}

pheap::store_options reader_opts() {
  pheap::store_options o;
  o.read_only = true;
  o.page_cache_reads = false;  // every read from the device, as a cold reader's
  return o;
}

// Writes pages (version v) in batches of 256.
void write_pages(pheap::sparse_store& s, const std::vector<std::uint64_t>& pages, std::uint64_t v) {
  aligned buf(256 * kPage);
  std::vector<pheap::page_write> ws;
  for (std::size_t i = 0; i < pages.size(); i += 256) {
    ws.clear();
    for (std::size_t k = i; k < std::min(pages.size(), i + 256); ++k) {
      fill(buf.p + (k - i) * kPage, pages[k], v);
      ws.push_back({pages[k], buf.p + (k - i) * kPage});
    }
    s.write_pages(ws);
  }
}

std::vector<std::uint64_t> all_pages(std::uint64_t n) {
  std::vector<std::uint64_t> v(n);
  for (std::uint64_t p = 0; p < n; ++p) v[p] = p;
  return v;
}

std::vector<std::uint64_t> random_pages(std::uint64_t n, std::uint64_t count, std::mt19937_64& rng) {
  std::set<std::uint64_t> s;
  while (s.size() < count) s.insert(rng() % n);
  return {s.begin(), s.end()};
}

// Reads `pages` (batches of 256 consecutive buffer slots); returns ms.
double read_pages(pheap::sparse_store& s, const std::vector<std::uint64_t>& pages) {
  aligned buf(256 * kPage);
  const auto t0 = clock_type::now();
  std::vector<pheap::page_read> rs;
  for (std::size_t i = 0; i < pages.size(); i += 256) {
    rs.clear();
    for (std::size_t k = i; k < std::min(pages.size(), i + 256); ++k) rs.push_back({pages[k], buf.p + (k - i) * kPage});
    s.read_pages(rs);
  }
  return ms_since(t0);
}

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
}

void bench_open(const std::string& dir, std::uint64_t capacity, int opens) {
  const std::string ds = dir + "/open";
  auto w = pheap::sparse_store::create(ds, create_opts(capacity));
  std::atomic<bool> stop{false};
  std::uint64_t commits = 0;
  std::thread writer([&] {
    std::mt19937_64 rng(1);
    const std::uint64_t n = capacity / kPage;
    for (std::uint64_t v = 1; !stop.load(); ++v) {
      write_pages(*w, random_pages(std::min<std::uint64_t>(n, 1u << 20), 16, rng), v);
      w->commit({});
      ++commits;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  std::vector<double> ms;
  for (int i = 0; i < opens; ++i) {
    const auto t0 = clock_type::now();
    auto r = pheap::sparse_store::open(ds, reader_opts());
    ms.push_back(ms_since(t0));
  }
  stop = true;
  writer.join();
  std::printf("{\"case\":\"open\",\"capacity_gib\":%llu,\"opens\":%d,\"writer_commits\":%llu,"
              "\"median_ms\":%.3f,\"p99_ms\":%.3f,\"max_ms\":%.3f}\n",
              static_cast<unsigned long long>(capacity >> 30), opens, static_cast<unsigned long long>(commits),
              percentile(ms, 0.5), percentile(ms, 0.99), percentile(ms, 1.0));
  std::fflush(stdout);
  w.reset();
  pheap::sparse_store::remove(ds);
}

void bench_refresh(const std::string& dir, int reps) {
  const std::string ds = dir + "/refresh";
  constexpr std::uint64_t n = (1ull << 30) / kPage;
  auto w = pheap::sparse_store::create(ds, create_opts(1ull << 30));
  write_pages(*w, all_pages(n), 1);
  w->commit({});
  std::mt19937_64 rng(2);
  for (int rep = 0; rep < reps; ++rep) {
    auto r = pheap::sparse_store::open(ds, reader_opts());
    read_pages(*r, all_pages(n));
    write_pages(*w, random_pages(n, n / 100, rng), 2 + static_cast<std::uint64_t>(rep));
    w->commit({});
    // A fresh open reaching every page, and a refresh reaching the changed ones, interleaved.
    const auto t0 = clock_type::now();
    auto fresh = pheap::sparse_store::open(ds, reader_opts());
    const double fresh_open_ms = ms_since(t0);
    const double fresh_read_ms = read_pages(*fresh, all_pages(n));
    fresh.reset();
    const auto t1 = clock_type::now();
    const pheap::refresh_result got = r->refresh();
    const double refresh_ms = ms_since(t1);
    std::vector<std::uint64_t> changed;
    for (const auto& [a, b] : got.changed) {
      for (std::uint64_t p = a; p < b; ++p) changed.push_back(p);
    }
    const double reread_ms = read_pages(*r, changed);
    const double fresh_ms = fresh_open_ms + fresh_read_ms, refreshed_ms = refresh_ms + reread_ms;
    std::printf("{\"case\":\"refresh\",\"rep\":%d,\"pages\":%llu,\"changed_pages\":%zu,\"fresh_open_ms\":%.2f,"
                "\"fresh_read_ms\":%.1f,\"refresh_ms\":%.2f,\"reread_ms\":%.2f,\"ratio\":%.4f}\n",
                rep, static_cast<unsigned long long>(n), changed.size(), fresh_open_ms, fresh_read_ms,
                refresh_ms, reread_ms, refreshed_ms / fresh_ms);
    std::fflush(stdout);
  }
  w.reset();
  pheap::sparse_store::remove(ds);
}

// The 10-epoch writer: returns its seconds; with `reader`, a reader holds the first epoch.
double ten_epochs(const std::string& ds, bool reader, std::uint64_t seed, std::uint64_t* pinned,
                  std::uint64_t* changed_pages, bool* exact) {
  constexpr std::uint64_t n = (256ull << 20) / kPage;
  auto w = pheap::sparse_store::create(ds, create_opts(256ull << 20));
  write_pages(*w, all_pages(n), 1);
  w->commit({});
  std::unique_ptr<pheap::sparse_store> r;
  if (reader) r = pheap::sparse_store::open(ds, reader_opts());
  std::mt19937_64 rng(seed);
  std::set<std::uint64_t> changed;
  const auto t0 = clock_type::now();
  for (std::uint64_t e = 0; e < 10; ++e) {
    const std::vector<std::uint64_t> pages = random_pages(n, n / 100, rng);
    changed.insert(pages.begin(), pages.end());
    write_pages(*w, pages, 2 + e);
    w->commit({});
  }
  const double s = ms_since(t0) / 1000;
  if (pinned != nullptr) *pinned = w->stats().pinned_bytes;
  if (changed_pages != nullptr) *changed_pages = changed.size();
  if (r && exact != nullptr) {
    aligned buf(kPage), want(kPage);
    *exact = true;
    for (std::uint64_t p = 0; p < n && *exact; ++p) {
      const pheap::page_read pr{p, buf.p};
      r->read_pages(std::span(&pr, 1));
      fill(want.p, p, 1);
      *exact = std::memcmp(buf.p, want.p, kPage) == 0;
    }
  }
  r.reset();
  w.reset();
  pheap::sparse_store::remove(ds);
  return s;
}

void bench_pinned(const std::string& dir, int reps) {
  for (int rep = 0; rep < reps; ++rep) {
    std::uint64_t pinned = 0, changed = 0;
    bool exact = false;
    // Interleaved, the order alternating per round, the same page choices.
    const std::uint64_t seed = 3 + static_cast<std::uint64_t>(rep);
    double alone = 0, with = 0;
    if (rep % 2 == 0) alone = ten_epochs(dir + "/alone", false, seed, nullptr, nullptr, nullptr);
    with = ten_epochs(dir + "/with", true, seed, &pinned, &changed, &exact);
    if (rep % 2 == 1) alone = ten_epochs(dir + "/alone", false, seed, nullptr, nullptr, nullptr);
    std::printf("{\"case\":\"pinned\",\"rep\":%d,\"changed_pages\":%llu,\"changed_bytes\":%llu,\"pinned_bytes\":%llu,"
                "\"pinned_per_changed\":%.4f,\"reader_exact\":%s,\"writer_alone_s\":%.3f,\"writer_with_reader_s\":%.3f,"
                "\"writer_ratio\":%.3f}\n",
                rep, static_cast<unsigned long long>(changed), static_cast<unsigned long long>(changed * kPage),
                static_cast<unsigned long long>(pinned), static_cast<double>(pinned) / static_cast<double>(changed * kPage),
                exact ? "true" : "false", alone, with, alone / with);
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string base = argc > 1 ? argv[1] : (tmp != nullptr && *tmp != '\0' ? tmp : "/tmp");
  const std::string dir = base + "/readers-bench-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string cases = argc > 2 ? argv[2] : "open,refresh,pinned";
  const auto want = [&](const char* c) { return ("," + cases + ",").find(std::string(",") + c + ",") != std::string::npos; };
  try {
    if (want("open")) {
      for (std::uint64_t gib : {1ull, 64ull, 1024ull}) bench_open(dir, gib << 30, 200);
    }
    if (want("refresh")) bench_refresh(dir, 3);
    if (want("pinned")) bench_pinned(dir, 6);
  } catch (const pheap::error& e) {
    std::fprintf(stderr, "readers_bench: %s\n", e.what());
    std::filesystem::remove_all(dir);
    return 1;
  }
  std::filesystem::remove_all(dir);
  return 0;
}
