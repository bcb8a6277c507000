// A read-only pager moved to a newer watermark (pheap::pager::refresh, src/pager/refresh.cpp):
// the pages whose copy changed are dropped wherever the pager held them — resident, kept in the
// victim cache, being read ahead — and read again from the new watermark, the others stay
// resident without a store read; pages whose read failed (a reader the writer released:
// errc::stale) are read again. The writer is a sparse_store of the same process, writing and
// committing beside the reader (sparse_store/FORMAT.md "Readers beside a writer").
// Parameterised by where fills run: the fault workers, or the faulting thread.
#include <atomic>
#include <thread>
#include <vector>

#include "pager/test_access.hpp"
#include "pager_test_util.hpp"
#include "pheap/fault_guard.hpp"

namespace pheap::test {
namespace {

constexpr std::size_t kPs = 4096;
constexpr std::size_t kPages = 512;  // a map block (944 pages) and a bit: one loaded block

// Every word of page p at version v: p << 32 | v.
std::vector<std::uint64_t> page_of(std::uint64_t p, std::uint64_t v) {
  return std::vector<std::uint64_t>(kPs / 8, p << 32 | v);
}

class PagerRefresh : public ::testing::TestWithParam<fault_filling> {
 protected:
  void SetUp() override { PHEAP_REQUIRE_UFFD(dirty_tracking::automatic); }

  std::unique_ptr<sparse_store> make_writer(std::uint64_t pin_limit = 64ull << 20) {
    store_options o;
    o.capacity = 2 * kPages * kPs;  // room for a buffer that holds every page written
    o.page_size = kPs;
    o.segment_size = 64 * kPs;
    o.pin_limit = pin_limit;
    o.engine = io::make_posix_engine();
    return sparse_store::create(path(), o);
  }
  std::unique_ptr<sparse_store> open_reader() {
    store_options o;
    o.read_only = true;
    o.engine = io::make_posix_engine();
    return sparse_store::open(path(), o);
  }
  pager_options opts(std::size_t buffer_pages) const {
    pager_options o;
    o.buffer_size = buffer_pages * kPs;
    o.fault_fill = GetParam();
    o.fault_threads = 2;
    return o;
  }
  // Writes version v of the pages [first, end) and commits; returns the epoch.
  static std::uint64_t write(sparse_store& w, std::uint64_t first, std::uint64_t end, std::uint64_t v) {
    std::vector<std::vector<std::uint64_t>> bufs;
    std::vector<page_write> ws;
    for (std::uint64_t p = first; p < end; ++p) bufs.push_back(page_of(p, v));
    for (std::uint64_t p = first; p < end; ++p) ws.push_back({p, bufs[p - first].data()});
    w.write_pages(ws);
    return w.commit({});
  }
  // The version page p shows in the reader's region (every word must agree), or ~0.
  static std::uint64_t version_at(const pager& r, std::uint64_t p) {
    const auto* w = reinterpret_cast<const volatile std::uint64_t*>(r.base() + p * kPs);
    const std::uint64_t first = w[0];
    for (std::size_t i = 1; i < kPs / 8; ++i) {
      if (w[i] != first) return ~std::uint64_t{0};
    }
    return (first >> 32) == p ? (first & 0xffffffffu) : ~std::uint64_t{0};
  }
  std::string path() const { return dir_ / "ds"; }
  temp_dir dir_;
};

TEST_P(PagerRefresh, RefreshDropsOnlyThePagesWhoseCopyChangedAndTheOthersStayResidentWithoutAStoreRead) {
  auto w = make_writer();
  write(*w, 0, kPages, 1);
  pager r(open_reader(), opts(2 * kPages));
  ASSERT_TRUE(r.read_only());
  for (std::uint64_t p = 0; p < kPages; ++p) ASSERT_EQ(version_at(r, p), 1u) << p;
  paging::test_access::impl(r).wait_evictor_idle();
  const pager_stats before = r.stats();
  ASSERT_EQ(before.resident_pages, kPages) << before;

  write(*w, 40, 60, 2);
  const std::uint64_t e = write(*w, 200, 201, 3);
  const refresh_result res = r.refresh();
  EXPECT_TRUE(res.moved);
  EXPECT_EQ(res.epoch, e);
  EXPECT_EQ(r.store().epoch(), e);
  std::uint64_t changed = 0;
  for (const auto& [a, b] : res.changed) changed += b - a;
  EXPECT_EQ(changed, 21u) << "the block was loaded: compared page by page";
  const pager_stats after = r.stats();
  EXPECT_EQ(after.refreshes, 1u);
  EXPECT_EQ(after.invalidated_pages, 21u);
  EXPECT_EQ(after.resident_pages, kPages - 21);

  for (std::uint64_t p = 0; p < kPages; ++p) {
    const std::uint64_t want = p >= 40 && p < 60 ? 2 : p == 200 ? 3 : 1;
    ASSERT_EQ(version_at(r, p), want) << "page " << p;
  }
  const pager_stats again = r.stats();
  EXPECT_EQ(again.pages_read - after.pages_read, 21u)
      << "only the changed pages were read again; the others stayed resident: " << again;
  EXPECT_EQ(paging::test_access::impl(r).check_invariants(), "");
}

TEST_P(PagerRefresh, ARefreshWithNothingNewMovesNothingAndDropsNothing) {
  auto w = make_writer();
  const std::uint64_t e = write(*w, 0, 64, 1);
  pager r(open_reader(), opts(2 * kPages));
  for (std::uint64_t p = 0; p < 64; ++p) ASSERT_EQ(version_at(r, p), 1u);
  const refresh_result res = r.refresh();
  EXPECT_FALSE(res.moved);
  EXPECT_EQ(res.epoch, e);
  EXPECT_TRUE(res.changed.empty());
  EXPECT_EQ(r.stats().invalidated_pages, 0u);
}

// With a buffer of a tenth of the pages and the victim cache on, most pages the reader read
// were evicted with a copy kept; the writer then changes every page: no kept copy may be
// served after the refresh (their `kept` bits go, I7), every page shows the new version.
TEST_P(PagerRefresh, AVictimCacheCopyOfAPageWhoseCopyChangedIsNeverServedAfterTheRefresh) {
  auto w = make_writer();
  write(*w, 0, kPages, 1);
  pager_options o = opts(kPages / 10);
  o.victim_cache = victim_caching::on;
  o.read_ahead = 0;  // each page by its own fault: hits count what the cache did
  pager r(open_reader(), o);
  if (!r.stats().victim_cache) PHEAP_REQUIRE_FEATURE("the victim cache (PAGEMAP_SCAN with PAGE_IS_PFNZERO)");
  for (int pass = 0; pass < 2; ++pass) {
    for (std::uint64_t p = 0; p < kPages; ++p) ASSERT_EQ(version_at(r, p), 1u) << p;
  }
  const pager_stats before = r.stats();
  ASSERT_GT(before.victim_hits, 0u) << "the second pass took kept copies: " << before;

  write(*w, 0, kPages, 2);
  ASSERT_TRUE(r.refresh().moved);
  for (std::uint64_t p = 0; p < kPages; ++p) ASSERT_EQ(version_at(r, p), 2u) << "page " << p;
  const pager_stats after = r.stats();
  EXPECT_EQ(after.victim_hits, before.victim_hits) << "no copy of the old watermark was taken: " << after;
  paging::test_access::impl(r).wait_evictor_idle();
  EXPECT_EQ(paging::test_access::impl(r).check_invariants(), "");
}

// The writer keeps at most 64 KiB of copies for readers; rewriting every page twice needs more,
// so it releases the reader's watermark: the reader's next read is errc::stale naming the
// datastore (inside guard_faults; never a wrong byte), the page is poisoned — and after a
// refresh the same access reads the newest watermark.
TEST_P(PagerRefresh, AReaderReleasedByTheWriterGetsStaleAndReadsTheNewWatermarkAfterARefresh) {
  auto w = make_writer(64u << 10);
  write(*w, 0, kPages, 1);
  pager r(open_reader(), opts(2 * kPages));
  ASSERT_EQ(version_at(r, 0), 1u);  // page 0 resident; the rest not read yet
  write(*w, 0, kPages, 2);
  write(*w, 0, kPages, 3);
  ASSERT_EQ(w->stats().readers_expired, 1u);
  try {
    (void)guard_faults([&] { return version_at(r, 7); });
    ADD_FAILURE() << "a released watermark was read";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::stale) << e.what();
    EXPECT_EQ(e.path(), path()) << e.what();
    EXPECT_NE(std::string(e.what()).find("released by the writer"), std::string::npos) << e.what();
  }
  EXPECT_GE(r.stats().poisoned_pages, 1u);
  const refresh_result res = r.refresh();
  EXPECT_TRUE(res.moved);
  EXPECT_GE(r.stats().unpoisoned_pages, 1u);
  for (std::uint64_t p = 0; p < kPages; ++p) {
    ASSERT_EQ(guard_faults([&] { return version_at(r, p); }), 3u) << "page " << p;
  }
}

// The writer commits an epoch every few hundred microseconds, each rewriting a quarter of the
// pages (which ones is a function of the epoch); the reader, with a buffer of a quarter of
// the pages (evicting all the time), read-ahead, prefetch and the victim cache on, refreshes
// and checks every page against the version its watermark must show, again and again. A page
// left from an older watermark anywhere in the pager (resident, kept, filled by a read step
// claimed before the refresh) is a mismatch.
TEST_P(PagerRefresh, AReaderRefreshingUnderAWriterAlwaysSeesExactlyItsWatermark) {
  watchdog dog(240);
  auto w = make_writer(1ull << 30);
  const auto written = [](std::uint64_t p, std::uint64_t e) { return e == 1 || ((p * 2654435761u) ^ (e * 40503u)) % 4 == 0; };
  std::vector<std::uint64_t> epoch_of_version{0};  // version k (1..) was committed as epoch[k]
  std::mutex log_mu;
  // Version k writes the pages written(p, k); committed epochs are logged by version.
  const auto commit_version = [&](std::uint64_t k) {
    std::vector<std::vector<std::uint64_t>> bufs;
    std::vector<page_write> ws;
    for (std::uint64_t p = 0; p < kPages; ++p) {
      if (written(p, k)) bufs.push_back(page_of(p, k));
    }
    std::size_t i = 0;
    for (std::uint64_t p = 0; p < kPages; ++p) {
      if (written(p, k)) ws.push_back({p, bufs[i++].data()});
    }
    w->write_pages(ws);
    const std::uint64_t e = w->commit({});
    std::lock_guard lk(log_mu);
    epoch_of_version.push_back(e);
  };
  commit_version(1);
  pager_options o = opts(kPages / 4);
  o.victim_cache = victim_caching::on;
  pager r(open_reader(), o);
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (std::uint64_t k = 2; !stop.load(); ++k) {
      commit_version(k);
      std::this_thread::sleep_for(std::chrono::microseconds(300));
    }
  });
  std::uint64_t mismatches = 0, refreshes = 0;
  for (int round = 0; round < 120 && mismatches == 0; ++round) {
    const refresh_result res = r.refresh();
    ++refreshes;
    std::uint64_t version = 0;
    while (version == 0) {  // the writer logs an epoch just after its commit returns
      {
        std::lock_guard lk(log_mu);
        for (std::uint64_t k = 1; k < epoch_of_version.size(); ++k) {
          if (epoch_of_version[k] == res.epoch) version = k;
        }
        ASSERT_TRUE(version != 0 || epoch_of_version.back() < res.epoch)
            << "epoch " << res.epoch << " is not in the writer's log";
      }
      if (version == 0) std::this_thread::yield();
    }
    // Read steps in flight across the next refresh: a prefetch of everything, then a pass
    // over the pages in an order that varies per round (read-ahead follows the forward ones).
    const std::pair<std::size_t, std::size_t> all{0, kPages * kPs};
    r.prefetch(std::span(&all, 1));
    for (std::uint64_t i = 0; i < kPages; ++i) {
      const std::uint64_t p = round % 2 == 0 ? i : (i * 97 + static_cast<std::uint64_t>(round)) % kPages;
      std::uint64_t want = 0;
      for (std::uint64_t k = version; k >= 1; --k) {
        if (written(p, k)) {
          want = k;
          break;
        }
      }
      const std::uint64_t got = version_at(r, p);
      if (got != want) {
        ++mismatches;
        ADD_FAILURE() << "round " << round << " epoch " << res.epoch << " page " << p << ": version "
                      << got << ", its watermark holds " << want;
        break;
      }
    }
    if (round % 3 == 0) r.prefetch(std::span(&all, 1));  // in flight when the next refresh starts
  }
  stop = true;
  writer.join();
  EXPECT_EQ(mismatches, 0u);
  const pager_stats s = r.stats();
  EXPECT_EQ(s.refreshes, refreshes);
  EXPECT_GT(s.invalidated_pages, 0u) << s;
  EXPECT_GT(s.evictions, 0u) << s;
}

INSTANTIATE_TEST_SUITE_P(Fills, PagerRefresh,
                         ::testing::Values(fault_filling::workers, fault_filling::faulting_thread),
                         [](const auto& p) { return p.param == fault_filling::faulting_thread ? std::string("FaultingThread") : std::string("Workers"); });

}  // namespace
}  // namespace pheap::test
