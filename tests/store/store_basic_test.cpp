// SparseStore basics: round trips, sparseness, zero pages, overwrites, epochs, root blobs,
// discard, read-only opens and argument checking — for each I/O engine.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>

#include "pheap/crc32c.hpp"
#include "store_test_util.hpp"

namespace pheap::test {
namespace {

namespace fs = std::filesystem;

std::set<std::string> files_in(const std::string& dir) {
  std::set<std::string> s;
  for (const auto& e : fs::directory_iterator(dir)) s.insert(e.path().filename().string());
  return s;
}

std::uint64_t allocated(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return static_cast<std::uint64_t>(st.st_blocks) * 512;
}

using StoreBasic = store_test;
PHEAP_STORE_SUITE(StoreBasic);

TEST_P(StoreBasic, RoundTripAtSeveralPageSizesAndGranularities) {
  struct geometry {
    std::uint32_t page;
    std::uint64_t segment;
    std::uint64_t capacity;
  };
  const geometry geos[] = {
      {4096, 64 << 10, 1 << 20},         // 16 pages per segment
      {4096, 4096, 64 << 10},            // one page per segment
      {64 << 10, 1 << 20, 8 << 20},      // the pager's default page size
      {64 << 10, 256ull << 20, 1ull << 30},
      {2 << 20, 4 << 20, 16 << 20},      // huge pages
  };
  for (const auto& g : geos) {
    SCOPED_TRACE("page " + std::to_string(g.page) + " segment " + std::to_string(g.segment));
    temp_dir dir;
    const std::string path = dir / "ds";
    const std::uint64_t pages = g.capacity / g.page;
    const std::uint64_t pps = g.segment / g.page;
    // First and last page, both sides of a segment boundary, and one in between.
    std::set<std::uint64_t> chosen = {0, pages - 1, std::min(pps, pages - 1), pps - 1,
                                      pages / 2};
    {
      auto s = sparse_store::create(path, opts(g.capacity, g.page, g.segment));
      EXPECT_EQ(s->page_size(), g.page);
      EXPECT_EQ(s->segment_size(), g.segment);
      EXPECT_EQ(s->capacity(), g.capacity);
      std::vector<std::vector<std::uint8_t>> bufs;
      std::vector<page_write> batch;
      for (auto p : chosen) bufs.push_back(pattern(g.page, 1, p, 1));
      std::size_t i = 0;
      for (auto p : chosen) batch.push_back({p, bufs[i++].data()});
      s->write_pages(batch);
      for (auto p : chosen) EXPECT_EQ(read_one(*s, p), pattern(g.page, 1, p, 1)) << p;
      EXPECT_EQ(s->commit({}), 1u);
      for (auto p : chosen) EXPECT_EQ(read_one(*s, p), pattern(g.page, 1, p, 1)) << p;
    }
    auto s = sparse_store::open(path, open_opts());
    EXPECT_EQ(s->page_size(), g.page);
    EXPECT_EQ(s->segment_size(), g.segment);
    EXPECT_EQ(s->capacity(), g.capacity);
    EXPECT_EQ(s->epoch(), 1u);
    for (auto p : chosen) EXPECT_EQ(read_one(*s, p), pattern(g.page, 1, p, 1)) << p;
    std::uint64_t unwritten = 0;
    while (chosen.count(unwritten)) ++unwritten;
    EXPECT_TRUE(is_zero(read_one(*s, unwritten))) << "an unwritten page";
  }
}

TEST_P(StoreBasic, OnePageWrittenAllocatesAboutOnePageAndItsMapBlock) {
  temp_dir dir;
  const std::string path = dir / "ds";
  const std::uint32_t ps = 64 << 10;
  const std::uint64_t seg_size = 256ull << 20;
  {
    auto s = sparse_store::create(path, opts(1ull << 30, ps, seg_size));
    write_one(*s, 5000, 7, 1);  // in segment 1
    s->commit({});
    // Superblock file, the page, its map block, the directory, the segment's identity header.
    EXPECT_GE(s->disk_bytes(), ps);
    EXPECT_LE(s->disk_bytes(), 16384 + ps + 3 * 4096 + 4096) << "written " << ps;
    EXPECT_EQ(s->stats().live_bytes, ps);
    EXPECT_EQ(s->stats().disk_bytes, s->disk_bytes());
  }
  EXPECT_EQ(files_in(path),
            (std::set<std::string>{"pheap.super", "pheap.map", "pheap.readers", "segment-000001"}));
  const std::string seg = path + "/segment-000001";
  EXPECT_EQ(fs::file_size(seg), 2 * seg_size + 4096)
      << "a segment is created at full size: two homes and the identity header";
  EXPECT_GE(allocated(seg), ps);
  EXPECT_LE(allocated(seg), ps + 4096) << "the segment must stay sparse";
  auto s = sparse_store::open(path, open_opts());
  EXPECT_EQ(read_one(*s, 5000), pattern(ps, 7, 5000, 1));
}

TEST_P(StoreBasic, SparsePatternDiskBytesTrackBytesWritten) {
  temp_dir dir;
  const std::string path = dir / "ds";
  const std::uint32_t ps = 64 << 10;
  auto s = sparse_store::create(path, opts(4ull << 30, ps, 256ull << 20));
  // Every 97th page of a 4 GiB region: 676 pages ≈ 42 MiB written across all 16 segments.
  std::uint64_t written = 0;
  for (std::uint64_t p = 0; p < (4ull << 30) / ps; p += 97) {
    write_one(*s, p, 3, 1);
    written += ps;
  }
  s->commit({});
  const std::uint64_t disk = s->disk_bytes();
  EXPECT_GE(disk, written);
  EXPECT_LE(disk, written + written / 10 + 16384) << "disk " << disk << " written " << written;
  EXPECT_EQ(s->stats().live_bytes, written);
  // Every page rewritten in the next epoch: each holds its two homes at most.
  for (std::uint64_t p = 0; p < (4ull << 30) / ps; p += 97) write_one(*s, p, 3, 2);
  s->commit({});
  for (std::uint64_t p = 0; p < (4ull << 30) / ps; p += 97) write_one(*s, p, 3, 3);
  s->commit({});
  EXPECT_LE(s->disk_bytes(), 2 * written + written / 10 + 16384) << "two homes per page at most";
  EXPECT_EQ(s->stats().live_bytes, written);
}

TEST_P(StoreBasic, NeverWrittenPagesReadZerosWithoutIoAndCreateNoFile) {
  temp_dir dir;
  const std::string path = dir / "ds";
  auto s = sparse_store::create(path, opts(64 << 20, 4096, 1 << 20));
  const auto before = files_in(path);
  EXPECT_EQ(before, (std::set<std::string>{"pheap.super", "pheap.map", "pheap.readers"}));
  std::vector<std::vector<std::uint8_t>> bufs(32, std::vector<std::uint8_t>(4096, 0xAB));
  std::vector<page_read> batch;
  for (std::uint64_t i = 0; i < 32; ++i) batch.push_back({i * 509, bufs[i].data()});
  s->read_pages(batch);
  for (const auto& b : bufs) EXPECT_TRUE(is_zero(b));
  for (std::uint64_t i = 0; i < 32; ++i) EXPECT_FALSE(s->may_have_data(i * 509));
  EXPECT_EQ(s->stats().zero_pages_read, 32u);
  EXPECT_EQ(s->stats().pages_read, 0u);
  s->commit({});  // an empty commit creates no segment either
  EXPECT_EQ(files_in(path), before);
}

TEST_P(StoreBasic, ManyOverwritesBetweenCommitsYieldNewestContentAlsoAfterReopen) {
  temp_dir dir;
  const std::string path = dir / "ds";
  {
    auto s = sparse_store::create(path, opts(1 << 20, 4096, 64 << 10));
    for (std::uint64_t v = 1; v <= 200; ++v) {
      write_one(*s, 3, 11, v);
      write_one(*s, v % 7 + 10, 11, v);
      ASSERT_EQ(read_one(*s, 3), pattern(4096, 11, 3, v)) << "version " << v;
      if (v == 100) s->commit({});  // overwrites spanning a commit and its checkpoint
    }
    s->commit({});
    EXPECT_EQ(read_one(*s, 3), pattern(4096, 11, 3, 200));
  }
  auto s = sparse_store::open(path, open_opts());
  EXPECT_EQ(read_one(*s, 3), pattern(4096, 11, 3, 200));
  for (std::uint64_t v = 194; v <= 200; ++v) {
    EXPECT_EQ(read_one(*s, v % 7 + 10), pattern(4096, 11, v % 7 + 10, v));
  }
}

TEST_P(StoreBasic, UncommittedWritesVanishOnReopenAndEpochsIncrease) {
  temp_dir dir;
  const std::string path = dir / "ds";
  {
    auto s = sparse_store::create(path, opts(1 << 20, 4096, 64 << 10));
    EXPECT_EQ(s->epoch(), 0u);
    EXPECT_TRUE(s->root().empty());
    write_one(*s, 1, 5, 1);
    EXPECT_EQ(s->commit(bytes_of("first")), 1u);
    write_one(*s, 1, 5, 2);
    write_one(*s, 2, 5, 2);
    EXPECT_EQ(s->commit(bytes_of("second")), 2u);
    EXPECT_EQ(s->commit(bytes_of("third")), 3u);
    EXPECT_EQ(s->epoch(), 3u);
    EXPECT_EQ(s->root(), bytes_of("third"));
    write_one(*s, 1, 5, 99);  // never committed
    write_one(*s, 9, 5, 99);
    s->discard(2, 1);
    EXPECT_TRUE(is_zero(read_one(*s, 2)));
  }
  auto s = sparse_store::open(path, open_opts());
  EXPECT_EQ(s->epoch(), 3u);
  EXPECT_EQ(s->root(), bytes_of("third"));
  EXPECT_EQ(read_one(*s, 1), pattern(4096, 5, 1, 2));
  EXPECT_EQ(read_one(*s, 2), pattern(4096, 5, 2, 2));
  EXPECT_TRUE(is_zero(read_one(*s, 9)));
  EXPECT_FALSE(s->may_have_data(9));
  EXPECT_EQ(s->commit({}), 4u) << "epochs continue after reopen";
}

TEST_P(StoreBasic, RootBlobRoundTripsUpToTheMaximumSize) {
  temp_dir dir;
  const std::string path = dir / "ds";
  std::vector<std::byte> root(sparse_store::max_root_size);
  for (std::size_t i = 0; i < root.size(); ++i) root[i] = std::byte(i * 31 + 7);
  {
    auto s = sparse_store::create(path, opts(1 << 20, 4096, 64 << 10));
    s->commit(root);
    std::vector<std::byte> too_big(sparse_store::max_root_size + 1);
    try {
      s->commit(too_big);
      FAIL() << "oversized root accepted";
    } catch (const error& e) {
      EXPECT_EQ(e.code(), errc::invalid_argument);
    }
    EXPECT_EQ(s->epoch(), 1u) << "a rejected argument is not a failed commit";
    s->commit(root);
  }
  auto s = sparse_store::open(path, open_opts());
  EXPECT_EQ(s->root(), root);
}

TEST_P(StoreBasic, DiscardZeroesPagesAndPunchesBothHomesOnceCommitted) {
  temp_dir dir;
  const std::string path = dir / "ds";
  const std::string seg = path + "/segment-000000";
  {
    auto s = sparse_store::create(path, opts(4 << 20, 4096, 4 << 20));
    for (std::uint64_t p = 0; p < 256; ++p) write_one(*s, p, 9, 1);
    s->commit({});
    for (std::uint64_t p = 0; p < 256; ++p) write_one(*s, p, 9, 2);  // the other homes
    s->commit({});
    const std::uint64_t full = allocated(seg);
    EXPECT_GE(full, 2 * 256u * 4096);
    s->discard(10, 200);
    for (std::uint64_t p : {10, 100, 209}) {
      EXPECT_TRUE(is_zero(read_one(*s, p))) << "discard is visible at once";
      EXPECT_FALSE(s->may_have_data(p));
    }
    EXPECT_EQ(read_one(*s, 9), pattern(4096, 9, 9, 2));
    EXPECT_EQ(read_one(*s, 210), pattern(4096, 9, 210, 2));
    EXPECT_EQ(allocated(seg), full) << "nothing is punched before the commit that frees it";
    write_one(*s, 50, 9, 3);  // a write after the discard wins
    s->commit({});
    // (+ one block: the file system's extent tree may need an index block for the holes)
    EXPECT_LE(allocated(seg), full - 2 * 199u * 4096 + 4096) << "both homes of each freed page punched";
    EXPECT_EQ(s->stats().freed_pages, 199u);
  }
  auto s = sparse_store::open(path, open_opts());
  EXPECT_TRUE(is_zero(read_one(*s, 10)));
  EXPECT_TRUE(is_zero(read_one(*s, 209)));
  EXPECT_FALSE(s->may_have_data(100)) << "the committed map says no data";
  EXPECT_TRUE(s->may_have_data(9));
  EXPECT_EQ(read_one(*s, 50), pattern(4096, 9, 50, 3));
  EXPECT_EQ(read_one(*s, 210), pattern(4096, 9, 210, 2));
}

// page_crc() is what the pager judges eviction victims with: it must be the CRC of exactly
// what read_pages() returns, known without reading the page — in the working epoch, after a
// commit, and after a reopen (from the page map alone).
TEST_P(StoreBasic, PageCrcIsTheCrcOfWhatReadPagesReturnsWithoutReadingThePage) {
  temp_dir dir;
  const std::string path = dir / "ds";
  auto crc_of = [](const std::vector<std::uint8_t>& v) { return crc32c(v.data(), v.size()); };
  const std::uint32_t zeros = crc_of(std::vector<std::uint8_t>(4096));
  auto check = [&](sparse_store& s, const std::string& when) {
    for (std::uint64_t p = 0; p < 12; ++p) {
      const std::uint64_t before = s.stats().pages_read;
      const std::optional<std::uint32_t> c = s.page_crc(p);
      EXPECT_EQ(s.stats().pages_read, before) << when << ": page_crc read page " << p;
      ASSERT_TRUE(c.has_value()) << when << ", page " << p;
      EXPECT_EQ(*c, crc_of(read_one(s, p))) << when << ", page " << p;
    }
  };
  {
    auto s = sparse_store::create(path, opts(4 << 20, 4096, 1 << 20));
    EXPECT_EQ(s->page_crc(7), zeros) << "never written";
    for (std::uint64_t p = 0; p < 10; ++p) write_one(*s, p, 3, 1);
    write_one(*s, 4, 3, 2);  // rewritten in place in the working epoch
    s->discard(5, 1);
    EXPECT_EQ(s->page_crc(5), zeros) << "discarded";
    EXPECT_EQ(s->page_crc(4), crc_of(pattern(4096, 3, 4, 2))) << "the rewrite's CRC";
    check(*s, "working epoch");
    s->commit({});
    write_one(*s, 2, 3, 3);  // a new copy in the other home
    check(*s, "after a commit");
    s->commit({});
  }
  auto s = sparse_store::open(path, open_opts());
  EXPECT_EQ(s->page_crc(2), crc_of(pattern(4096, 3, 2, 3))) << "reopened, before any read";
  check(*s, "reopened");
  EXPECT_EQ(s->page_crc(1u << 20), std::nullopt) << "beyond the capacity";
}

TEST_P(StoreBasic, ReadOnlyOpenServesTheLastCommitPastAnEpochACrashEndedAndWritesNothing) {
  temp_dir dir;
  const std::string path = dir / "ds";
  {
    auto s = sparse_store::create(path, opts(1 << 20, 4096, 64 << 10));
    write_one(*s, 1, 2, 1);
    s->commit(bytes_of("r1"));
    write_one(*s, 1, 2, 2);
    s->discard(0, 256);
    write_one(*s, 17, 2, 2);
    s->commit(bytes_of("r2"));
    // An epoch that never commits (as if the writer died): copies in homes no durable map
    // names — page 17 in its other home, page 30 new, page 1 (discarded in 2) again.
    write_one(*s, 30, 2, 3);
    write_one(*s, 17, 2, 3);
    write_one(*s, 1, 2, 3);
  }
  auto snapshot_of_files = [&] {
    std::map<std::string, std::pair<std::uintmax_t, fs::file_time_type>> m;
    for (const auto& e : fs::directory_iterator(path)) {
      // The reader table is shared memory the open registers in, not data (FORMAT.md).
      if (e.path().filename() == "pheap.readers") continue;
      m[e.path().filename()] = {fs::file_size(e.path()), fs::last_write_time(e.path())};
    }
    return m;
  };
  const auto before = snapshot_of_files();
  {
    auto s = sparse_store::open(path, open_opts(true));
    EXPECT_TRUE(s->read_only());
    EXPECT_EQ(s->epoch(), 2u);
    EXPECT_EQ(s->root(), bytes_of("r2"));
    EXPECT_TRUE(is_zero(read_one(*s, 1)));
    EXPECT_EQ(read_one(*s, 17), pattern(4096, 2, 17, 2));
    EXPECT_TRUE(s->may_have_data(17));
    EXPECT_FALSE(s->may_have_data(1));
    EXPECT_FALSE(s->may_have_data(30));
    EXPECT_TRUE(is_zero(read_one(*s, 30)));
    for (auto call : {0, 1, 2, 3}) {
      try {
        if (call == 0) write_one(*s, 1, 2, 9);
        if (call == 1) s->commit({});
        if (call == 2) s->discard(0, 1);
        if (call == 3) s->prepare({});
        FAIL() << "mutation through a read-only handle";
      } catch (const error& e) {
        EXPECT_EQ(e.code(), errc::read_only);
      }
    }
  }
  EXPECT_EQ(snapshot_of_files(), before) << "a read-only open must touch no file but its reader-table slot";
}

TEST_P(StoreBasic, BadArgumentsAreRejectedWithInvalidArgument) {
  temp_dir dir;
  auto expect_code = [](errc want, auto&& fn) {
    try {
      fn();
      ADD_FAILURE() << "no error";
    } catch (const error& e) {
      EXPECT_EQ(e.code(), want) << e.what();
    }
  };
  expect_code(errc::invalid_argument, [&] { sparse_store::create(dir / "a", opts(0, 4096, 1 << 20)); });
  expect_code(errc::invalid_argument, [&] { sparse_store::create(dir / "a", opts(1 << 20, 5000, 1 << 20)); });
  expect_code(errc::invalid_argument, [&] { sparse_store::create(dir / "a", opts(1 << 20, 2048, 1 << 20)); });
  expect_code(errc::invalid_argument, [&] { sparse_store::create(dir / "a", opts(1 << 20, 8192, 4096)); });
  expect_code(errc::invalid_argument, [&] { sparse_store::create(dir / "a", opts(12288, 8192, 8192)); });
  expect_code(errc::invalid_argument,
              [&] { sparse_store::create(dir / "a", opts(1ull << 40, 4096, 4096)); })
      ;  // 2^28 segments: more than the 6-digit segment names allow
  EXPECT_FALSE(fs::exists(dir / "a")) << "rejected creation leaves nothing behind";

  auto s = sparse_store::create(dir / "ds", opts(1 << 20, 4096, 64 << 10));
  std::vector<std::uint8_t> buf(4096);
  expect_code(errc::invalid_argument, [&] {
    page_write w{256, buf.data()};
    s->write_pages(std::span<const page_write>(&w, 1));
  });
  expect_code(errc::invalid_argument, [&] {
    page_read r{1ull << 40, buf.data()};
    s->read_pages(std::span<const page_read>(&r, 1));
  });
  expect_code(errc::invalid_argument, [&] { s->discard(250, 7); });
  expect_code(errc::invalid_argument, [&] { s->discard(~0ull, 2); });
  EXPECT_FALSE(s->may_have_data(1ull << 40));
  // The store is still usable after rejected arguments.
  write_one(*s, 255, 1, 1);
  EXPECT_EQ(s->commit({}), 1u);

  fs::create_directory(dir / "full");
  std::ofstream(dir / "full/x") << "x";
  expect_code(errc::already_exists, [&] { sparse_store::create(dir / "full", opts(1 << 20, 4096, 64 << 10)); });
  fs::create_directory(dir / "empty");
  EXPECT_NO_THROW(sparse_store::create(dir / "empty", opts(1 << 20, 4096, 64 << 10)));
}

}  // namespace
}  // namespace pheap::test
