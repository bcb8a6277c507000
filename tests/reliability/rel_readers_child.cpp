// rel_readers_child — the processes of the readers-beside-a-writer campaigns
// (readers_campaign_test.cpp), on the deterministic workload of tests/store/store_test_util.hpp.
//
//   rel_readers_child writer DIR SEED PAGES INTERVAL_US
//       Opens DIR read-write and runs the workload's epochs from the one after its watermark on,
//       one every INTERVAL_US, until killed. After each commit prints, flushed, the writer's log
//       line "epoch E CRC": CRC32C of the whole view of epoch E (every page, in order), computed
//       from the workload's schedule, not from the store.
//   rel_readers_child reader DIR SEED PAGES OPENS HOLD_MAX_US
//       OPENS times: opens DIR read-only through a fault-injecting engine over posix (so
//       PHEAP_FAULT_CRASH_AT=<kind>:<n> exits with 86 just before its n-th I/O), holds the open
//       for a random time below HOLD_MAX_US (the writer moves on meanwhile), reads the whole view
//       and prints "view E CRC" (E the epoch it reads), and "mismatch E WHAT" if it is not
//       byte for byte the workload's state of E; every 4th open then refreshes and checks again.
//       A stale reader prints "stale E". At the end: "done OPENS" and "ops ANY".
//
// Exit status: 0 done, 1 a pheap::error (message on stderr), 2 usage, 86 injected crash.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>

#include "pheap/crc32c.hpp"
#include "store/store_test_util.hpp"
#include "support/fault_engine.hpp"

namespace {

using namespace pheap;

void say(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

// CRC32C of the whole view of epoch e, from the workload's schedule.
std::uint32_t expected_crc(const test::workload& w, std::uint32_t ps, std::uint64_t e) {
  const std::vector<std::uint64_t> v = w.versions_at(e);
  std::vector<std::uint8_t> page(ps);
  std::uint32_t crc = 0;
  for (std::uint64_t p = 0; p < w.pages; ++p) {
    if (v[p] == 0) {
      std::fill(page.begin(), page.end(), 0);
    } else {
      test::fill_pattern(page.data(), ps, w.seed, p, v[p]);
    }
    crc = crc32c(page.data(), ps, crc);
  }
  return crc;
}

std::uint32_t view_crc(sparse_store& s, std::uint64_t pages) {
  const std::uint32_t ps = s.page_size();
  std::vector<std::uint8_t> buf(pages * ps);
  std::vector<page_read> rs;
  for (std::uint64_t p = 0; p < pages; ++p) rs.push_back({p, buf.data() + p * ps});
  s.read_pages(rs);
  return crc32c(buf.data(), buf.size());
}

int writer(const std::string& dir, const test::workload& w, std::uint64_t interval_us) {
  store_options o;
  auto s = sparse_store::open(dir, o);
  for (std::uint64_t e = s->epoch() + 1;; ++e) {
    const std::uint64_t got = w.run_epoch(*s, e);
    if (got != e) throw error(errc::invalid_argument, dir, "writer", "committed epoch " + std::to_string(got) + " for " + std::to_string(e));
    char line[64];
    std::snprintf(line, sizeof line, "epoch %llu %08x", static_cast<unsigned long long>(e), expected_crc(w, s->page_size(), e));
    say(line);
    std::this_thread::sleep_for(std::chrono::microseconds(interval_us));
  }
}

int reader(const std::string& dir, const test::workload& w, std::uint64_t opens, std::uint64_t hold_max_us) {
  auto fe = test::make_fault_engine(io::make_posix_engine());
  std::mt19937_64 rng(w.seed ^ static_cast<std::uint64_t>(::getpid()));
  for (std::uint64_t k = 0; k < opens; ++k) {
    store_options o;
    o.read_only = true;
    o.engine = fe;
    auto s = sparse_store::open(dir, o);
    const std::uint64_t e = s->epoch();
    try {
      if (hold_max_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(rng() % hold_max_us));
      char line[64];
      std::snprintf(line, sizeof line, "view %llu %08x", static_cast<unsigned long long>(e), view_crc(*s, w.pages));
      say(line);
      if (const std::string why = w.check(*s, e); !why.empty()) say("mismatch " + std::to_string(e) + " " + why);
      if (k % 4 == 3) {
        s->refresh();
        if (const std::string why = w.check(*s, s->epoch()); !why.empty()) {
          say("mismatch " + std::to_string(s->epoch()) + " after refresh: " + why);
        }
      }
    } catch (const error& x) {
      if (x.code() != errc::stale) throw;
      say("stale " + std::to_string(e));
    }
  }
  say("done " + std::to_string(opens));
  say("ops " + std::to_string(fe->operations(test::op_kind::any)));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (!((mode == "writer" && argc == 6) || (mode == "reader" && argc == 7))) {
    std::fprintf(stderr,
                 "usage: %s writer DIR SEED PAGES INTERVAL_US\n"
                 "       %s reader DIR SEED PAGES OPENS HOLD_MAX_US\n",
                 argv[0], argv[0]);
    return 2;
  }
  try {
    const test::workload w{std::strtoull(argv[3], nullptr, 10), std::strtoull(argv[4], nullptr, 10)};
    if (mode == "writer") return writer(argv[2], w, std::strtoull(argv[5], nullptr, 10));
    return reader(argv[2], w, std::strtoull(argv[5], nullptr, 10), std::strtoull(argv[6], nullptr, 10));
  } catch (const pheap::error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
