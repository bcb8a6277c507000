// Thread safety: writers racing commits, and snapshots taken while writers run.
#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include "store_test_util.hpp"

namespace pheap::test {
namespace {

constexpr std::uint32_t kPs = 4096;

// A page image that names its own version in the first 8 bytes; the rest is the pattern of
// (seed, page, version), so any read can be checked without knowing which version to expect.
std::vector<std::uint8_t> versioned(std::uint64_t seed, std::uint64_t page, std::uint64_t v) {
  auto buf = pattern(kPs, seed, page, v);
  std::memcpy(buf.data(), &v, 8);
  return buf;
}
// The version a page image claims (0 for an all-zero page); throws if the image is torn.
std::uint64_t version_of(const std::vector<std::uint8_t>& buf, std::uint64_t seed,
                         std::uint64_t page) {
  if (is_zero(buf)) return 0;
  std::uint64_t v;
  std::memcpy(&v, buf.data(), 8);
  if (buf != versioned(seed, page, v)) {
    throw std::runtime_error("page " + std::to_string(page) + " is torn or foreign");
  }
  return v;
}

using StoreConcurrency = store_test;
PHEAP_STORE_SUITE(StoreConcurrency);

TEST_P(StoreConcurrency, WritersRacingRepeatedCommitsKeepTheLastVersionOfEveryPage) {
  temp_dir dir;
  const std::string path = dir / "ds";
  constexpr int kThreads = 4;
  constexpr std::uint64_t kPages = 512;  // thread t owns pages p with p % kThreads == t
  constexpr int kBatches = 300;
  const std::uint64_t seed = 5;
  std::vector<std::uint64_t> last(kPages, 0);  // each entry written by its owner only
  std::uint64_t commits = 0;
  {
    auto s = sparse_store::create(path, opts(kPages * kPs, kPs, 32 * kPs));
    std::atomic<int> running{kThreads};
    std::atomic<int> commits_seen{0};
    std::atomic<bool> failed{false};
    std::vector<std::thread> writers;
    for (int t = 0; t < kThreads; ++t) {
      writers.emplace_back([&, t] {
        std::mt19937_64 rng(t);
        try {
          // At least kBatches batches, and on until several commits have raced them.
          for (int b = 0; b < kBatches || commits_seen < 5; ++b) {
            std::vector<std::vector<std::uint8_t>> bufs;
            std::vector<page_write> batch;
            const std::size_t n = 1 + rng() % 8;
            for (std::size_t i = 0; i < n; ++i) {
              const std::uint64_t p = (rng() % (kPages / kThreads)) * kThreads + t;
              bufs.push_back(versioned(seed, p, ++last[p] + 0));
              batch.push_back({p, nullptr});
            }
            for (std::size_t i = 0; i < n; ++i) batch[i].buf = bufs[i].data();
            s->write_pages(batch);
            // Read-your-writes while commits and checkpoints run underneath.
            const std::uint64_t p = batch.back().page;
            if (version_of(read_one(*s, p), seed, p) != last[p]) failed = true;
          }
        } catch (const std::exception& e) {
          ADD_FAILURE() << "writer " << t << ": " << e.what();
          failed = true;
        }
        --running;
      });
    }
    std::uint64_t prev = 0;
    while (running > 0) {
      const std::uint64_t e = s->commit({});
      EXPECT_EQ(e, prev + 1);
      prev = e;
      ++commits;
      ++commits_seen;
    }
    for (auto& th : writers) th.join();
    EXPECT_FALSE(failed) << "a writer read back a stale or torn page";
    s->commit(bytes_of("final"));
  }
  EXPECT_GT(commits, 3u) << "commits must actually have raced the writers";
  auto s = sparse_store::open(path, open_opts());
  EXPECT_EQ(s->root(), bytes_of("final"));
  for (std::uint64_t p = 0; p < kPages; ++p) {
    ASSERT_EQ(version_of(read_one(*s, p), seed, p), last[p]) << "page " << p;
  }
}

TEST_P(StoreConcurrency, WriteBatchRacingACommitLandsWhollyInOneEpoch) {
  temp_dir dir;
  const std::string path = dir / "ds";
  constexpr int kThreads = 3;
  constexpr std::uint64_t kGroup = 6;  // thread t rewrites pages [t*kGroup, (t+1)*kGroup)
  const std::uint64_t seed = 8;
  std::vector<std::uint64_t> written(kThreads, 0);
  {
    auto s = sparse_store::create(path, opts(64 * kPs, kPs, 16 * kPs));
    std::atomic<bool> stop{false};
    std::vector<std::thread> writers;
    for (int t = 0; t < kThreads; ++t) {
      writers.emplace_back([&, t] {
        for (std::uint64_t v = 1; !stop; ++v) {
          std::vector<std::vector<std::uint8_t>> bufs;
          std::vector<page_write> batch;
          for (std::uint64_t i = 0; i < kGroup; ++i) bufs.push_back(versioned(seed, t * kGroup + i, v));
          for (std::uint64_t i = 0; i < kGroup; ++i) batch.push_back({t * kGroup + i, bufs[i].data()});
          s->write_pages(batch);
          written[t] = v;
          std::this_thread::sleep_for(std::chrono::microseconds(50));  // let commits interleave
        }
      });
    }
    for (int c = 0; c < 15; ++c) s->commit({});
    stop = true;
    for (auto& th : writers) th.join();
    // No final commit: whatever the last commit caught is what survives.
  }
  auto s = sparse_store::open(path, open_opts());
  for (int t = 0; t < kThreads; ++t) {
    const std::uint64_t v0 = version_of(read_one(*s, t * kGroup), seed, t * kGroup);
    EXPECT_LE(v0, written[t]);
    for (std::uint64_t i = 1; i < kGroup; ++i) {
      EXPECT_EQ(version_of(read_one(*s, t * kGroup + i), seed, t * kGroup + i), v0)
          << "thread " << t << ": a batch was split across epochs";
    }
  }
}

TEST_P(StoreConcurrency, SnapshotWhileWritersRunHoldsExactlyTheLastCommit) {
  temp_dir dir;
  const std::string path = dir / "ds";
  const std::string snap = dir / "snap";
  constexpr std::uint64_t kPages = 256;
  const std::uint64_t seed = 9;
  std::uint64_t snap_epoch = 0;
  uuid src_id{};
  {
    auto s = sparse_store::create(path, opts(kPages * kPs, kPs, 16 * kPs));
    src_id = s->id();
    std::atomic<bool> stop{false};
    std::atomic<int> writes{0};
    std::vector<std::uint64_t> v(kPages, 0);
    std::thread writer([&] {
      std::mt19937_64 rng(1);
      try {
        while (!stop) {
          const std::uint64_t p = rng() % kPages;
          auto buf = versioned(seed, p, ++v[p]);
          page_write w{p, buf.data()};
          s->write_pages(std::span<const page_write>(&w, 1));
          ++writes;
          if (rng() % 50 == 0) s->discard(rng() % (kPages - 3), 3);
          std::this_thread::sleep_for(std::chrono::microseconds(20));
        }
      } catch (const std::exception& e) {
        ADD_FAILURE() << "writer: " << e.what();
      }
    });
    // The commits must catch some writes however slowly the writer thread gets scheduled
    // (sanitizer builds, a loaded machine): wait for its first few.
    while (writes.load() < 16) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    for (int i = 0; i < 5; ++i) s->commit(bytes_of("e" + std::to_string(i + 1)));
    s->snapshot(snap);  // the writer keeps going meanwhile
    snap_epoch = s->epoch();
    for (int i = 0; i < 50; ++i) std::this_thread::yield();
    stop = true;
    writer.join();
    // Closing without a commit leaves the source at exactly the snapshotted epoch.
  }
  auto src = sparse_store::open(path, open_opts(true));
  auto dst = sparse_store::open(snap, open_opts());
  EXPECT_EQ(src->epoch(), snap_epoch);
  EXPECT_EQ(dst->epoch(), snap_epoch);
  EXPECT_EQ(dst->root(), bytes_of("e5"));
  EXPECT_NE(dst->id(), src_id) << "a snapshot is a new datastore";
  EXPECT_EQ(src->id(), src_id);
  int nonzero = 0;
  for (std::uint64_t p = 0; p < kPages; ++p) {
    const auto a = read_one(*src, p);
    ASSERT_EQ(read_one(*dst, p), a) << "page " << p;
    version_of(a, seed, p);
    nonzero += !is_zero(a);
  }
  EXPECT_GT(nonzero, 0) << "the snapshot must have caught some writes";
  // The snapshot is independent: writing it leaves the source alone.
  write_one(*dst, 0, 99, 99);
  EXPECT_EQ(dst->commit({}), snap_epoch + 1);
  EXPECT_NE(read_one(*src, 0), pattern(kPs, 99, 0, 99));
  try {
    src->snapshot(snap);
    ADD_FAILURE() << "snapshot onto an existing path";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::already_exists);
  }
}

TEST_P(StoreConcurrency, SnapshotOfAReadOnlyStoreHoldsTheLastCommit) {
  temp_dir dir;
  const std::string path = dir / "ds";
  {
    auto s = sparse_store::create(path, opts(64 * kPs, kPs, 16 * kPs));
    for (std::uint64_t p = 0; p < 40; p += 3) write_one(*s, p, 4, 1);
    s->commit(bytes_of("one"));
  }
  {
    auto ro = sparse_store::open(path, open_opts(true));
    ro->snapshot(dir / "snap");
  }
  auto s = sparse_store::open(dir / "snap", open_opts());
  EXPECT_EQ(s->epoch(), 1u);
  EXPECT_EQ(s->root(), bytes_of("one"));
  for (std::uint64_t p = 0; p < 40; ++p) {
    EXPECT_EQ(read_one(*s, p), p % 3 == 0 ? pattern(kPs, 4, p, 1) : std::vector<std::uint8_t>(kPs))
        << p;
  }
}

}  // namespace
}  // namespace pheap::test
