// Victim process of pager_crash_test: writes deterministic page versions through a pager over a
// real sparse_store and flushes, forever, until SIGKILLed.
//
//   pager_crash_child DIR ENGINE MODE SEED [huge|wbehind]
//
// With `huge`: pager_options::huge_pages = always and a buffer of 4 pages (the datastore's
// pages are 2 MiB then), so that huge fills, evictions and the pool are all in play.
// With `wbehind` (MODE wp_async): in core (the default buffer), write-behind every 1 ms, and
// each iteration waits 3 ms between its writes and its flush, so that rounds write some of
// them into the working epoch before the flush commits it (exit 5 if none did by iteration 20).
// Iteration k (k = 1, 2, ...) writes version k of a seed-determined subset of pages (whole
// pages, fill_pattern(seed, page, k)) and then flush(root = k). After flush() returns it prints
// "k\n" to stdout (the acknowledgement). The datastore is created by the parent.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>

#include "common/test_util.hpp"
#include "pheap/pager.hpp"

using namespace pheap;

int main(int argc, char** argv) {
  if (argc != 5 && argc != 6) return 2;
  const bool huge = argc == 6 && std::string(argv[5]) == "huge";
  const bool wbehind = argc == 6 && std::string(argv[5]) == "wbehind";
  store_options so;
  so.engine = std::string(argv[2]) == "io_uring" ? io::make_uring_engine() : io::make_posix_engine();
  pager_options po;
  const std::string m = argv[3];
  po.tracking = m == "wp_async" ? dirty_tracking::wp_async
                : m == "wp_sync" ? dirty_tracking::wp_sync
                                 : dirty_tracking::all_resident;
  po.buffer_size = 16 * 4096;  // evictions happen between flushes
  const std::uint64_t seed = std::strtoull(argv[4], nullptr, 10);
  auto st = sparse_store::open(argv[1], so);
  if (huge) {
    po.huge_pages = huge_pages_mode::always;
    po.buffer_size = 4 * std::size_t{st->page_size()};
  }
  if (wbehind) {
    po.buffer_size = 0;  // automatic: in core
    po.write_behind_ms = 1;
  }
  pager pg(std::move(st), po);
  if (wbehind && !pg.stats().write_behind) return 4;
  if (huge && !pg.stats().huge_pages) return 4;  // the parent says why
  const std::size_t ps = pg.page_size(), npages = pg.size() / ps;
  for (std::uint64_t k = 1;; ++k) {
    std::mt19937_64 rng(seed * 1000003 + k);
    const std::size_t n = 1 + rng() % 24;
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t p = rng() % npages;
      test::fill_pattern(pg.base() + p * ps, ps, seed, p, k);
    }
    if (wbehind) {
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
      if (k == 20 && pg.stats().write_behind_pages == 0) return 5;
    }
    const std::uint64_t root = k;
    pg.flush(std::as_bytes(std::span(&root, 1)));
    char line[32];
    const int len = std::snprintf(line, sizeof line, "%llu\n", static_cast<unsigned long long>(k));
    if (::write(1, line, static_cast<std::size_t>(len)) != len) return 3;
  }
}
