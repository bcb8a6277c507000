// Regressions found by the reliability campaign in the store layer, one test per fix:
//   * the journal of an epoch grew by one page image per eviction of a page (905 MB journal for
//     a 6.5 MB datastore): format 3 writes a page rewritten within an epoch in place, and a
//     page holds at most its two homes on disk;
//   * a write failure (ENOSPC) poisoned reads too, and the pager turned every later page fault
//     into SIGBUS: reads now keep returning the newest good content;
//   * a superblock with a valid CRC but an absurd capacity made open allocate a bitmap sized to
//     it: the capacity is bounded at create and at open;
//   * a crash during snapshot() left a destination that opened as not_a_datastore and blocked
//     a retry: snapshots are built under a temporary name and renamed into place.
#include <filesystem>
#include <fstream>
#include <thread>

#include <sys/stat.h>

#include "sparse_store/layout.hpp"
#include "sparse_store/superblock.hpp"
#include "store_test_util.hpp"
#include "support/fault_engine.hpp"

namespace pheap::test {
namespace {

namespace fs = std::filesystem;

// Bytes allocated on disk by `path` (0 if it does not exist).
std::uint64_t allocated(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<std::uint64_t>(st.st_blocks) * 512 : 0;
}

class StoreRegression : public store_test {
 protected:
  std::string path() const { return dir_ / "ds"; }
  store_options with(std::shared_ptr<io::engine> eng) const {
    store_options o;
    o.engine = std::move(eng);
    return o;
  }
  void expect_page(sparse_store& s, std::uint64_t page, std::uint64_t seed, std::uint64_t v,
                   const std::string& what) {
    const auto got = read_one(s, page);
    if (v == 0) {
      EXPECT_TRUE(is_zero(got)) << what << ": page " << page << " should be zeros";
    } else {
      EXPECT_EQ(got, pattern(s.page_size(), seed, page, v))
          << what << ": page " << page << " should hold version " << v;
    }
  }
  temp_dir dir_;
};
PHEAP_STORE_SUITE(StoreRegression);

// --- 1. disk space bounded by two homes per page ----------------------------------------------

TEST_P(StoreRegression, RewritingTheSamePagesManyTimesBetweenCommitsKeepsEachPageInItsTwoHomes) {
  constexpr std::uint32_t ps = 4096;
  constexpr std::uint64_t N = 16, rounds = 100, seed = 5;
  auto s = sparse_store::create(path(), opts(256 * ps, ps, 64 * ps));
  const std::string seg = path() + "/segment-000000";
  // Round 0 writes all N pages in one batch. Later rounds rewrite them in batches of varying
  // shape (single pages, pairs, all N, a page twice in one batch): always in place.
  for (std::uint64_t r = 0; r < rounds; ++r) {
    std::vector<std::vector<std::uint8_t>> bufs;
    std::vector<page_write> batch;
    for (std::uint64_t p = 0; p < N; ++p) {
      bufs.push_back(pattern(ps, seed, p, r + 1));
    }
    if (r == 0 || r % 3 == 0) {
      for (std::uint64_t p = 0; p < N; ++p) batch.push_back({p, bufs[p].data()});
      if (r != 0) {  // a stale copy of page 3 first: the later occurrence must win
        auto stale = pattern(ps, seed, 3, 999);
        batch.insert(batch.begin(), page_write{3, stale.data()});
        s->write_pages(batch);
      } else {
        s->write_pages(batch);
      }
    } else {
      for (std::uint64_t p = 0; p < N; p += (r % 2) + 1) {
        std::vector<page_write> b{{p, bufs[p].data()}};
        if (r % 2 == 1 && p + 1 < N) b.push_back({p + 1, bufs[p + 1].data()});
        s->write_pages(b);
      }
    }
    ASSERT_LE(allocated(seg), N * ps + 4096) << "round " << r << ": one home per page";
    for (std::uint64_t p = 0; p < N; ++p) expect_page(*s, p, seed, r + 1, "before commit");
  }
  EXPECT_EQ(s->stats().pages_written, N * rounds);  // a page twice in a batch counts once
  EXPECT_EQ(s->commit(bytes_of("r")), 1u);
  for (std::uint64_t p = 0; p < N; ++p) expect_page(*s, p, seed, rounds, "after commit");

  // The next epoch writes the other home, in place however often.
  for (std::uint64_t r = 0; r < 50; ++r) write_one(*s, 7, seed, 1000 + r);
  EXPECT_LE(allocated(seg), (N + 1) * ps + 4096);
  s.reset();  // uncommitted epoch 2 is dropped

  auto re = sparse_store::open(path(), open_opts());
  EXPECT_EQ(re->epoch(), 1u);
  for (std::uint64_t p = 0; p < N; ++p) expect_page(*re, p, seed, rounds, "after reopen");
}

TEST_P(StoreRegression, RewriteAfterADiscardInTheSameEpochWinsAndSurvivesReopen) {
  constexpr std::uint32_t ps = 4096;
  constexpr std::uint64_t seed = 9;
  {
    auto s = sparse_store::create(path(), opts(64 * ps, ps, 16 * ps));
    for (std::uint64_t v = 1; v <= 10; ++v) write_one(*s, 2, seed, v);
    write_one(*s, 3, seed, 1);
    s->discard(2, 2);  // both zero
    expect_page(*s, 2, seed, 0, "discarded");
    for (std::uint64_t v = 11; v <= 20; ++v) write_one(*s, 2, seed, v);
    expect_page(*s, 2, seed, 20, "rewritten after discard");
    expect_page(*s, 3, seed, 0, "discarded");
    s->commit({});
    // Page 3, freed by the commit, is punched; page 2 is in one home.
    EXPECT_LE(allocated(path() + "/segment-000000"), ps + 4096);
  }
  auto s = sparse_store::open(path(), open_opts());
  expect_page(*s, 2, seed, 20, "after reopen");
  expect_page(*s, 3, seed, 0, "after reopen");
}

// Writers hammer a small hot set while commits seal epochs under them (a write of a page the
// running commit changed waits until that commit is durable): every write must land in
// exactly one epoch, and the pages stay within their two homes.
TEST_P(StoreRegression, RewritesRacingCommitsStayInTwoHomesAndRecoverable) {
  constexpr std::uint32_t ps = 4096;
  constexpr std::uint64_t hot = 8, seed = 11;
  constexpr int threads = 2;
  auto s = sparse_store::create(path(), opts(64 * ps, ps, 16 * ps));
  const std::string seg = path() + "/segment-000000";
  std::atomic<bool> stop{false};
  std::uint64_t max_allocated = 0;
  std::vector<std::thread> ws;
  // Thread t owns pages t, t + threads, ... (no two threads write one page at once).
  std::vector<std::atomic<std::uint64_t>> last(hot);
  for (int t = 0; t < threads; ++t) {
    ws.emplace_back([&, t] {
      for (std::uint64_t v = 1; !stop.load(); ++v) {
        std::vector<std::vector<std::uint8_t>> bufs;
        std::vector<page_write> b;
        for (std::uint64_t p = static_cast<std::uint64_t>(t); p < hot; p += threads) {
          bufs.push_back(pattern(ps, seed, p, v));
        }
        std::size_t i = 0;
        for (std::uint64_t p = static_cast<std::uint64_t>(t); p < hot; p += threads) {
          b.push_back({p, bufs[i++].data()});
        }
        s->write_pages(b);
        for (std::uint64_t p = static_cast<std::uint64_t>(t); p < hot; p += threads) last[p] = v;
      }
    });
  }
  std::uint64_t e = 0;
  for (int c = 0; c < 40; ++c) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    e = s->commit({});
    max_allocated = std::max(max_allocated, allocated(seg));
  }
  stop = true;
  for (auto& t : ws) t.join();
  e = s->commit({});
  // (+ one block the file system may hold for its extent tree while holes fill in)
  EXPECT_LE(max_allocated, 2 * hot * ps + 4096 + 4096) << "two homes per page at most";
  for (std::uint64_t p = 0; p < hot; ++p) expect_page(*s, p, seed, last[p], "live");
  s.reset();
  auto re = sparse_store::open(path(), open_opts());
  EXPECT_EQ(re->epoch(), e);
  for (std::uint64_t p = 0; p < hot; ++p) expect_page(*re, p, seed, last[p], "reopened");
}

// --- 3. a failed write publishes nothing; reads keep working --------------------------------

TEST_P(StoreRegression, NoSpaceOnAPageWriteKeepsReadsWorkingAndRejectsWritesNamingTheCause) {
  constexpr std::uint32_t ps = 4096;
  constexpr std::uint64_t seed = 3;
  sparse_store::create(path(), opts(64 * ps, ps, 16 * ps)).reset();
  auto f = test::make_fault_engine(engine());
  {
    auto s = sparse_store::open(path(), with(f));
    for (std::uint64_t p = 0; p < 4; ++p) write_one(*s, p, seed, 1);
    s->commit({});             // epoch 1: pages 0..3 v1
    write_one(*s, 0, seed, 2);  // into page 0's other home
    write_one(*s, 0, seed, 3);  // rewritten in place
    write_one(*s, 2, seed, 2);
    s->discard(3, 1);

    // The next write (pages 1 and 9) fails with ENOSPC on its first request.
    f->add_rule({test::op_kind::write, f->operations(test::op_kind::write) + 1,
                 test::fault_action::fail_enospc, false});
    auto b1 = pattern(ps, seed, 1, 2), b9 = pattern(ps, seed, 9, 2);
    std::vector<page_write> batch{{1, b1.data()}, {9, b9.data()}};
    try {
      s->write_pages(batch);
      FAIL() << "the injected ENOSPC did not surface";
    } catch (const error& e) {
      EXPECT_EQ(e.code(), errc::no_space) << e.what();
    }
    // Reads: the newest GOOD content of every page, as if the failed write never happened.
    expect_page(*s, 0, seed, 3, "rewritten before the failure");
    expect_page(*s, 1, seed, 1, "its write failed: the committed version");
    expect_page(*s, 2, seed, 2, "written before the failure");
    expect_page(*s, 3, seed, 0, "discarded before the failure");
    expect_page(*s, 9, seed, 0, "never written successfully");
    EXPECT_FALSE(s->may_have_data(3));

    // Writes, discards and commits are refused, naming the original cause.
    auto expect_poisoned = [&](const char* what, auto&& fn) {
      try {
        fn();
        ADD_FAILURE() << what << " on a poisoned store succeeded";
      } catch (const error& e) {
        EXPECT_EQ(e.code(), errc::poisoned) << what << ": " << e.what();
        EXPECT_NE(std::string(e.what()).find("writing page copies failed"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("injected"), std::string::npos) << e.what();
      }
    };
    expect_poisoned("write_pages", [&] { write_one(*s, 5, seed, 1); });
    expect_poisoned("discard", [&] { s->discard(0, 1); });
    expect_poisoned("commit", [&] { s->commit({}); });
    expect_page(*s, 0, seed, 3, "after the rejected calls");
  }
  auto s = sparse_store::open(path(), open_opts());
  EXPECT_EQ(s->epoch(), 1u);
  for (std::uint64_t p = 0; p < 4; ++p) expect_page(*s, p, seed, 1, "reopened at epoch 1");
}

TEST_P(StoreRegression, AFailedInPlaceRewriteKeepsReadingTheVersionOnDisk) {
  constexpr std::uint32_t ps = 4096;
  constexpr std::uint64_t seed = 4;
  for (const auto action : {test::fault_action::fail_eio, test::fault_action::fail_enospc}) {
    temp_dir d;
    const std::string p = d / "ds";
    sparse_store::create(p, opts(64 * ps, ps, 16 * ps)).reset();
    auto f = test::make_fault_engine(engine());
    auto s = sparse_store::open(p, with(f));
    write_one(*s, 1, seed, 1);
    write_one(*s, 2, seed, 1);
    s->commit({});
    write_one(*s, 1, seed, 2);  // page 1's other home, rewritten in place below
    write_one(*s, 2, seed, 2);
    f->add_rule({test::op_kind::write, f->operations(test::op_kind::write) + 1, action, false});
    EXPECT_THROW(write_one(*s, 1, seed, 3), error);
    // The failed write had no effect on disk: version 2 is still there, and readable (the map
    // accepts either version of a page whose in-place rewrite failed).
    expect_page(*s, 1, seed, 2, "failed rewrite");
    expect_page(*s, 2, seed, 2, "failed rewrite");
    EXPECT_TRUE(s->may_have_data(1));
    EXPECT_THROW(s->discard(1, 2), error);  // poisoned
    expect_page(*s, 1, seed, 2, "after the refused discard");
    EXPECT_THROW(s->commit({}), error);
  }
}

// --- 4. bounded capacity -------------------------------------------------------------------

TEST_P(StoreRegression, ImpossibleCapacityIsRejectedAtCreateAndAtOpen) {
  auto expect_invalid = [&](std::uint64_t cap, std::uint32_t ps, std::uint64_t seg) {
    try {
      sparse_store::create(path(), opts(cap, ps, seg));
      ADD_FAILURE() << "capacity " << cap << " accepted";
    } catch (const error& e) {
      EXPECT_EQ(e.code(), errc::invalid_argument) << e.what();
      EXPECT_NE(std::string(e.what()).find("impossible capacity"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(fs::exists(path()));
  };
  expect_invalid(1ull << 51, 64 << 10, 1ull << 40);   // > 2^50 bytes
  expect_invalid(1ull << 62, 4096, 1ull << 60);       // 4 segments, 2^50 pages
  expect_invalid(1ull << 45, 4096, 1ull << 35);       // 2^33 pages: the map beyond the budget
  // The largest accepted: 2^50 bytes in 2^32 pages of 256 KiB (validated only; a store of
  // that geometry would hold a 72 MiB directory).
  EXPECT_NO_THROW(store::validate_geometry(path(), 256 << 10, 1ull << 40, 1ull << 50));

  // Open: slot 0 of a real datastore rewritten with a valid CRC and capacity 2^62 (the other
  // slot is empty at epoch 0) must be corrupt, not an attempt to allocate 2^47 bytes.
  sparse_store::create(path(), opts(1 << 20, 4096, 64 << 10)).reset();
  const std::string super = path() + "/pheap.super";
  auto data = read_file(super);
  auto sb = store::decode_slot(data.data()).sb;
  sb.capacity = 1ull << 62;
  sb.segment_size = 1ull << 60;
  const auto slot = store::encode_slot(sb);
  std::memcpy(data.data(), slot.data(), slot.size());
  write_file(super, data);
  try {
    sparse_store::open(path(), open_opts());
    ADD_FAILURE() << "a superblock with capacity 2^62 opened";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::corrupt) << e.what();
    EXPECT_NE(std::string(e.what()).find("impossible capacity"), std::string::npos) << e.what();
  }
}

// --- 2. atomic snapshot (the crash sweep is tests/reliability CrashDuringSnapshot...) --------

TEST_P(StoreRegression, SnapshotRemovesLeftoversOfACrashedSnapshotAndLeavesNoTemporary) {
  constexpr std::uint64_t seed = 6;
  auto s = sparse_store::create(path(), opts(64 * 4096, 4096, 16 * 4096));
  write_one(*s, 5, seed, 1);
  s->commit(bytes_of("one"));
  // What a snapshot killed mid-clone leaves behind: a half-built temporary directory.
  const std::string leftover = dir_ / ".snap.creating-abc123";
  fs::create_directory(leftover);
  std::ofstream(leftover + "/segment-000000") << "partial";
  const std::string snap = dir_ / "snap";
  s->snapshot(snap);
  EXPECT_FALSE(fs::exists(leftover)) << "the leftover of the crashed snapshot is removed";
  for (const auto& e : fs::directory_iterator(dir_.path())) {
    EXPECT_EQ(e.path().filename().string().find(".creating-"), std::string::npos)
        << "temporary left behind: " << e.path();
  }
  try {
    s->snapshot(snap);
    ADD_FAILURE() << "snapshot over an existing destination succeeded";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::already_exists) << e.what();
  }
  auto d = sparse_store::open(snap, open_opts());
  EXPECT_EQ(d->epoch(), 1u);
  EXPECT_EQ(d->root(), bytes_of("one"));
  expect_page(*d, 5, seed, 1, "snapshot");
  EXPECT_NE(d->id(), s->id());
}

// Found by the heap write-fault sweep (rel_fault_write_error_test): an I/O error inside
// snapshot() named the temporary directory or the destination's parent, not the path the
// caller passed. Every failing operation of a snapshot must name the destination, keep its
// cause, and leave no destination and no temporary behind.
TEST_P(StoreRegression, EveryFailedOperationOfASnapshotNamesTheDestinationAndLeavesNothing) {
  {
    auto s = sparse_store::create(path(), opts(64 * 4096, 4096, 16 * 4096));
    for (std::uint64_t p : {1, 20, 40}) write_one(*s, p, 9, 1);
    s->commit(bytes_of("one"));
    s->commit(bytes_of("two"));
  }
  std::uint64_t ops = 0;
  {
    auto f = test::make_fault_engine(engine());
    store_options o = open_opts(true);
    o.engine = f;
    auto s = sparse_store::open(path(), o);
    const std::uint64_t before = f->operations();
    s->snapshot(dir_ / "probe");
    ops = f->operations() - before;
  }
  ASSERT_GT(ops, 5u);
  for (std::uint64_t n = 1; n <= ops; ++n) {
    auto f = test::make_fault_engine(engine());
    store_options o = open_opts(true);
    o.engine = f;
    auto s = sparse_store::open(path(), o);
    f->add_rule({test::op_kind::any, f->operations() + n, test::fault_action::fail_eio, false});
    const std::string dst = dir_ / ("snap-" + std::to_string(n));
    try {
      s->snapshot(dst);
      // An injected failure of a best-effort step (removing a leftover) may be swallowed;
      // the snapshot must then be complete.
      auto d = sparse_store::open(dst, open_opts(true));
      EXPECT_EQ(d->root(), bytes_of("two")) << "op " << n;
    } catch (const error& e) {
      EXPECT_NE(std::string(e.what()).find(dst), std::string::npos) << "op " << n << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find("injected"), std::string::npos) << "op " << n << ": " << e.what();
      EXPECT_FALSE(fs::exists(dst)) << "op " << n << ": failed snapshot left " << dst;
    }
  }
  for (const auto& e : fs::directory_iterator(dir_.path())) {
    EXPECT_EQ(e.path().filename().string().find(".creating-"), std::string::npos)
        << "temporary left behind: " << e.path();
  }
}

}  // namespace
}  // namespace pheap::test
