// Format 3 integrity: what the page map's checksums (a CRC32C per page copy, each map block's
// CRC in the directory, the directory's in the superblock) and the identity headers (of map
// blocks, the directory, segments) detect. Each test damages a closed datastore the way a user
// or a disk could — a flipped bit, a zeroed or rewritten home, a stale or foreign map block or
// directory, a segment from elsewhere, an older copy of a file — and proves the damage is
// reported as errc::corrupt naming the file (and the page or the map block), never served as
// data of another epoch; and that what the format must tolerate still opens exactly.
#include <sys/stat.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "pheap/crc32c.hpp"
#include "sparse_store/layout.hpp"
#include "sparse_store/page_map.hpp"
#include "sparse_store/segment_header.hpp"
#include "store_test_util.hpp"

namespace pheap::test {
namespace {

namespace fs = std::filesystem;

constexpr std::uint32_t kPage = 4096;
constexpr std::uint64_t kSegment = 64 << 10;  // 16 pages per segment
constexpr std::uint64_t kCapacity = 8 << 20;  // 2048 pages: map blocks 0..2, 128 segments
const store::map_layout kMap(kCapacity / kPage);

void patch(const std::string& path, std::uint64_t offset, const void* data, std::size_t len) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  ASSERT_TRUE(f) << path;
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(len));
  ASSERT_TRUE(f) << path;
}

std::vector<std::byte> bytes_at(const std::string& path, std::uint64_t offset, std::size_t len) {
  std::ifstream f(path, std::ios::binary);
  std::vector<std::byte> v(len);
  f.seekg(static_cast<std::streamoff>(offset));
  f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(len));
  return v;
}

// Byte offset of home `h` of page `p` in its segment file.
std::uint64_t home(std::uint64_t p, unsigned h) { return h * kSegment + (p % 16) * kPage; }

class StoreIntegrity : public store_test {
 protected:
  std::string path(const char* name = "ds") const { return dir_ / name; }
  std::string file(const std::string& name, const char* ds = "ds") const {
    return path(ds) + "/" + name;
  }

  // Epoch 1: pages 0..3 (segment 0), 20 (segment 1) and 1000 (map block 1), all in home 0.
  // Epoch 2: page 1 again (home 1), page 21 (home 0). Epoch 3: root only. Map block 0 was
  // written by epochs 1 (home 0) and 2 (home 1); block 1 by epoch 1 (home 0).
  void make(const char* name = "ds") {
    auto s = sparse_store::create(path(name), opts(kCapacity, kPage, kSegment));
    for (std::uint64_t p : {0, 1, 2, 3, 20, 1000}) write_one(*s, p, 5, 1);
    s->commit(bytes_of("e1"));
    write_one(*s, 1, 5, 2);
    write_one(*s, 21, 5, 2);
    s->commit(bytes_of("e2"));
    s->commit(bytes_of("e3"));
  }

  // Runs `fn(store)` on a read-write and a read-only open and expects errc::corrupt naming
  // every needle, from the open or from `fn`.
  template <class Fn>
  void expect_corrupt(Fn fn, const std::vector<std::string>& needles) {
    for (bool ro : {false, true}) {
      try {
        auto s = sparse_store::open(path(), open_opts(ro));
        fn(*s);
        ADD_FAILURE() << "no error (read_only=" << ro << ")";
      } catch (const error& e) {
        EXPECT_EQ(e.code(), errc::corrupt) << e.what();
        for (const auto& n : needles) {
          EXPECT_NE(std::string(e.what()).find(n), std::string::npos)
              << "message lacks '" << n << "': " << e.what();
        }
      }
    }
  }

  temp_dir dir_;
};
PHEAP_STORE_SUITE(StoreIntegrity);

TEST_P(StoreIntegrity, BitFlipInAPageCopyIsCorruptNamingTheSegmentThePageAndItsHome) {
  make();
  flip_bit(file("segment-000000"), home(2, 0) + 100, 0x04);
  expect_corrupt([](sparse_store& s) { read_one(s, 2); },
                 {file("segment-000000"), "page 2 ", "home 0", "fails its checksum"});
  flip_bit(file("segment-000000"), home(2, 0) + 100, 0x04);
  flip_bit(file("segment-000000"), home(1, 1) + 7, 0x01);  // page 1's copy is in home 1
  expect_corrupt([](sparse_store& s) { read_one(s, 1); },
                 {file("segment-000000"), "page 1 ", "home 1", "fails its checksum"});
  // The other pages of the segment are untouched and still served.
  auto s = sparse_store::open(path(), open_opts(true));
  EXPECT_EQ(read_one(*s, 2), pattern(kPage, 5, 2, 1));
  EXPECT_EQ(read_one(*s, 3), pattern(kPage, 5, 3, 1));
}

// Reads of consecutive pages into consecutive memory are coalesced (read_path.cpp "Runs"): one
// request per run of one home, several runs where the pages' homes differ, and every page of a
// run still verified on its own — a damaged page inside a run is named, never served.
TEST_P(StoreIntegrity, ARunOfConsecutivePagesIsOneReadRequestAndEachPageIsStillVerified) {
  auto s = sparse_store::create(path(), opts(kCapacity, kPage, kSegment));
  for (std::uint64_t p = 0; p < 16; ++p) write_one(*s, p, 5, 1);  // segment 0, home 0
  s->commit(bytes_of("e1"));
  write_one(*s, 5, 5, 2);  // page 5's copy moves to home 1
  s->commit(bytes_of("e2"));
  s.reset();
  std::vector<std::uint8_t> buf(16 * kPage);
  std::vector<page_read> batch;
  for (std::uint64_t p = 0; p < 16; ++p) batch.push_back({p, buf.data() + p * kPage});
  {
    auto r = sparse_store::open(path(), open_opts(true));
    const store_stats before = r->stats();
    r->read_pages(batch);
    const store_stats after = r->stats();
    EXPECT_EQ(after.pages_read - before.pages_read, 16u);
    EXPECT_EQ(after.read_requests - before.read_requests, 3u);  // pages 0-4, 5 (home 1), 6-15
    for (std::uint64_t p = 0; p < 16; ++p) {
      const auto want = pattern(kPage, 5, p, p == 5 ? 2 : 1);
      ASSERT_EQ(0, std::memcmp(buf.data() + p * kPage, want.data(), kPage)) << "page " << p;
    }
    // The same pages into memory that is not consecutive: a request each.
    std::vector<std::uint8_t> apart(2 * 2 * kPage);
    const page_read two[] = {{0, apart.data()}, {1, apart.data() + 2 * kPage}};
    r->read_pages(two);
    EXPECT_EQ(r->stats().read_requests - after.read_requests, 2u);
  }
  flip_bit(file("segment-000000"), home(9, 0) + 100, 0x04);
  expect_corrupt([&](sparse_store& st) { st.read_pages(batch); },
                 {file("segment-000000"), "page 9 ", "home 0", "fails its checksum"});
}

TEST_P(StoreIntegrity, AHomeRewrittenBehindTheMapsBackIsCorruptNotServed) {
  make();
  // A well-formed page of another version in page 20's current home: only the map's CRC
  // tells it is not what epoch 3 committed.
  const auto other = pattern(kPage, 5, 20, 7);
  patch(file("segment-000001"), home(20, 0), other.data(), other.size());
  expect_corrupt([](sparse_store& s) { read_one(s, 20); },
                 {file("segment-000001"), "page 20 ", "rewritten behind the map's back"});
}

TEST_P(StoreIntegrity, DataWrittenIntoTheHomesOfAPageWithoutDataIsNeverServed) {
  make();
  std::vector<std::uint8_t> junk(kPage, 0x5A);
  patch(file("segment-000000"), home(7, 0), junk.data(), junk.size());  // page 7: never written
  patch(file("segment-000000"), home(7, 1), junk.data(), junk.size());
  for (bool ro : {false, true}) {
    auto s = sparse_store::open(path(), open_opts(ro));
    EXPECT_FALSE(s->may_have_data(7)) << "the map, not the file's extents, says what has data";
    EXPECT_TRUE(is_zero(read_one(*s, 7)));
  }
}

TEST_P(StoreIntegrity, ZeroedPageIsCorrupt) {
  make();
  std::vector<std::uint8_t> zeros(kPage, 0);
  patch(file("segment-000001"), home(20, 0), zeros.data(), zeros.size());
  expect_corrupt([](sparse_store& s) { read_one(s, 20); }, {file("segment-000001"), "page 20 "});
}

TEST_P(StoreIntegrity, StaleMapBlockWrittenBackIsCorruptNamingTheBlockAndItsPages) {
  make();
  // Block 0's current copy (epoch 2, home 1) replaced by its epoch-1 copy (home 0): a lost
  // write, or an old copy of the file's bytes put back. Its own checksum is fine.
  const auto old_copy = bytes_at(file("pheap.map"), kMap.block_offset(0, 0), 4096);
  patch(file("pheap.map"), kMap.block_offset(0, 1), old_copy.data(), old_copy.size());
  expect_corrupt([](sparse_store& s) { read_one(s, 1); },
                 {file("pheap.map"), "map block 0", "pages 0 to 943", "written by epoch 1",
                  "directory names epoch 2", "stale copy"});
  auto s = sparse_store::open(path(), open_opts(true));
  EXPECT_EQ(read_one(*s, 1000), pattern(kPage, 5, 1000, 1)) << "block 1 is unaffected";
}

TEST_P(StoreIntegrity, TornMapBlockIsCorruptNamingTheBlock) {
  make();
  // The first 512-byte sector of block 0's current copy (home 1, epoch 2) still holds what
  // was there before (the epoch-1 copy's sector): the write was torn.
  const auto old_sector = bytes_at(file("pheap.map"), kMap.block_offset(0, 0), 512);
  patch(file("pheap.map"), kMap.block_offset(0, 1), old_sector.data(), old_sector.size());
  expect_corrupt([](sparse_store& s) { read_one(s, 2); },
                 {file("pheap.map"), "map block 0", "torn or damaged"});
}

TEST_P(StoreIntegrity, TornDirectoryIsCorruptAtOpen) {
  make();
  // The directory of epoch 3 is the one epoch 2 wrote (epoch 3 changed no map block): home 0.
  std::vector<std::uint8_t> junk(32, 0x77);
  patch(file("pheap.map"), kMap.directory_offset(0) + 64, junk.data(), junk.size());
  expect_corrupt([](sparse_store&) {}, {file("pheap.map"), "directory", "checksum"});
}

TEST_P(StoreIntegrity, MapBlockOfAnotherDatastoreIsCorruptNamingBothUuids) {
  make("ds");
  make("other");  // the same workload: the same map contents under another uuid
  const uuid mine = sparse_store::open(path("ds"), open_opts(true))->id();
  const uuid theirs = sparse_store::open(path("other"), open_opts(true))->id();
  const auto foreign = bytes_at(file("pheap.map", "other"), kMap.block_offset(0, 1), 4096);
  patch(file("pheap.map"), kMap.block_offset(0, 1), foreign.data(), foreign.size());
  expect_corrupt([](sparse_store& s) { read_one(s, 1); },
                 {file("pheap.map"), "map block 0", to_string(theirs), to_string(mine),
                  "another datastore"});
}

TEST_P(StoreIntegrity, MisdirectedMapBlockIsCorrupt) {
  make();
  // Block 0's epoch-1 copy written where block 1's current copy (epoch 1, home 0) lives.
  const auto copy = bytes_at(file("pheap.map"), kMap.block_offset(0, 0), 4096);
  patch(file("pheap.map"), kMap.block_offset(1, 0), copy.data(), copy.size());
  expect_corrupt([](sparse_store& s) { read_one(s, 1000); },
                 {file("pheap.map"), "map block 1", "names map block 0", "misdirected"});
}

TEST_P(StoreIntegrity, DirectoryOfAnotherDatastoreIsCorruptAtOpen) {
  make("ds");
  make("other");
  const uuid theirs = sparse_store::open(path("other"), open_opts(true))->id();
  fs::copy_file(file("pheap.map", "other"), file("pheap.map"), fs::copy_options::overwrite_existing);
  expect_corrupt([](sparse_store&) {},
                 {file("pheap.map"), "directory", to_string(theirs), "another datastore"});
}

TEST_P(StoreIntegrity, SegmentFromAnotherDatastoreIsCorruptNamingBothUuids) {
  make("ds");
  make("other");  // same geometry and contents, another uuid
  const uuid mine = sparse_store::open(path("ds"), open_opts(true))->id();
  fs::copy_file(file("segment-000001", "other"), file("segment-000001"),
                fs::copy_options::overwrite_existing);
  expect_corrupt([](sparse_store& s) { read_one(s, 20); },
                 {file("segment-000001"), "belongs to datastore", to_string(mine)});
}

TEST_P(StoreIntegrity, SegmentCopiedOverAnotherIndexIsCorrupt) {
  make();
  fs::copy_file(file("segment-000000"), file("segment-000001"), fs::copy_options::overwrite_existing);
  expect_corrupt([](sparse_store& s) { read_one(s, 20); },
                 {file("segment-000001"), "names segment 0"});
}

TEST_P(StoreIntegrity, DestroyedIdentityHeaderIsCorruptNamingTheSegment) {
  make();
  std::vector<std::uint8_t> zeros(store::segment_header_size, 0);
  patch(file("segment-000001"), 2 * kSegment, zeros.data(), zeros.size());
  expect_corrupt([](sparse_store& s) { read_one(s, 20); },
                 {file("segment-000001"), "no segment header"});
}

TEST_P(StoreIntegrity, OlderCopyOfASegmentIsCorruptWhereItDiffersAndExactElsewhere) {
  make();
  const std::string old_copy = path() + ".segment-000000.old";
  fs::copy_file(file("segment-000000"), old_copy);
  {
    auto s = sparse_store::open(path(), open_opts());
    write_one(*s, 2, 5, 4);  // into page 2's home 1, which the old copy has as a hole
    s->commit(bytes_of("e4"));
  }
  fs::copy_file(old_copy, file("segment-000000"), fs::copy_options::overwrite_existing);
  expect_corrupt([](sparse_store& s) { read_one(s, 2); },
                 {file("segment-000000"), "page 2 ", "home 1"});
  auto s = sparse_store::open(path(), open_opts(true));
  EXPECT_EQ(read_one(*s, 3), pattern(kPage, 5, 3, 1)) << "pages the copy holds as committed";
}

TEST_P(StoreIntegrity, OlderSuperblockOpensItsEpochExactlyOrIsCorrupt) {
  make();
  const std::string e3 = path() + ".super.e3";
  fs::copy_file(file("pheap.super"), e3);
  {
    auto s = sparse_store::open(path(), open_opts());
    write_one(*s, 2, 5, 4);
    s->commit(bytes_of("e4"));
  }
  const std::string e4 = path() + ".super.e4";
  fs::copy_file(file("pheap.super"), e4);
  // The superblock of epoch 3 put back: epoch 4 wrote only homes epoch 3 does not name.
  fs::copy_file(e3, file("pheap.super"), fs::copy_options::overwrite_existing);
  {
    auto s = sparse_store::open(path(), open_opts(true));
    EXPECT_EQ(s->epoch(), 3u);
    EXPECT_EQ(read_one(*s, 2), pattern(kPage, 5, 2, 1));
    EXPECT_EQ(read_one(*s, 1), pattern(kPage, 5, 1, 2));
  }
  // Two more commits later, the homes epoch 3's map lived in have been reused: the old
  // superblock's directory no longer checks out.
  fs::copy_file(e4, file("pheap.super"), fs::copy_options::overwrite_existing);
  {
    auto s = sparse_store::open(path(), open_opts());
    write_one(*s, 3, 5, 5);
    s->commit(bytes_of("e5"));
    write_one(*s, 3, 5, 6);
    s->commit(bytes_of("e6"));
  }
  fs::copy_file(e3, file("pheap.super"), fs::copy_options::overwrite_existing);
  expect_corrupt([](sparse_store& s) { read_one(s, 2); }, {file("pheap.map")});
}

TEST_P(StoreIntegrity, SnapshotFilesCarryTheSnapshotsIdentity) {
  make();
  {
    auto s = sparse_store::open(path(), open_opts());
    write_one(*s, 3, 5, 9);  // not committed: not in the snapshot
    s->snapshot(path("snap"));
  }
  {
    auto snap = sparse_store::open(path("snap"), open_opts(true));
    EXPECT_EQ(read_one(*snap, 20), pattern(kPage, 5, 20, 1));
    EXPECT_EQ(read_one(*snap, 1), pattern(kPage, 5, 1, 2));
    EXPECT_EQ(read_one(*snap, 3), pattern(kPage, 5, 3, 1));
  }
  // A segment of the snapshot is not the source's, though its committed bytes are identical.
  fs::copy_file(file("segment-000000", "snap"), file("segment-000000"),
                fs::copy_options::overwrite_existing);
  expect_corrupt([](sparse_store& s) { read_one(s, 0); },
                 {file("segment-000000"), "belongs to datastore"});
}

TEST_P(StoreIntegrity, SnapshotOfAReadOnlyStoreOpensExactly) {
  {
    auto s = sparse_store::create(path(), opts(kCapacity, kPage, kSegment));
    write_one(*s, 0, 5, 1);
    s->commit(bytes_of("e1"));
    write_one(*s, 17, 5, 2);
    write_one(*s, 0, 5, 2);
    s->commit(bytes_of("e2"));
  }
  {
    auto ro = sparse_store::open(path(), open_opts(true));
    ro->snapshot(path("snap"));
  }
  for (bool ro : {true, false}) {
    auto snap = sparse_store::open(path("snap"), open_opts(ro));
    EXPECT_EQ(snap->epoch(), 2u);
    EXPECT_EQ(read_one(*snap, 0), pattern(kPage, 5, 0, 2));
    EXPECT_EQ(read_one(*snap, 17), pattern(kPage, 5, 17, 2));
  }
}

TEST_P(StoreIntegrity, ASegmentCreationCutShortIsReplacedByTheNextOne) {
  make();
  // A crash while segment 5 was being created leaves its temporary file, complete or not.
  std::ofstream(file("segment-000005.creating")) << "cut short";
  {
    auto s = sparse_store::open(path(), open_opts());
    write_one(*s, 5 * 16 + 3, 5, 4);
    s->commit(bytes_of("e4"));
  }
  EXPECT_FALSE(fs::exists(file("segment-000005.creating")));
  auto s = sparse_store::open(path(), open_opts(true));
  EXPECT_EQ(read_one(*s, 5 * 16 + 3), pattern(kPage, 5, 5 * 16 + 3, 4));
}

TEST_P(StoreIntegrity, ReopenAfterADiscardThenAnotherCommitStillOpens) {
  {
    auto s = sparse_store::create(path(), opts(kCapacity, kPage, kSegment));
    for (std::uint64_t p : {16, 17, 18}) write_one(*s, p, 5, 1);  // segment 1
    s->commit(bytes_of("e1"));
    s->discard(16, 3);
    s->commit(bytes_of("e2"));  // punched after it is durable
  }
  {
    auto s = sparse_store::open(path(), open_opts());
    EXPECT_EQ(s->epoch(), 2u);
    s->commit(bytes_of("e3"));
  }
  for (bool ro : {true, false}) {
    auto s = sparse_store::open(path(), open_opts(ro));
    EXPECT_EQ(s->epoch(), 3u);
    EXPECT_TRUE(is_zero(read_one(*s, 17)));
    EXPECT_FALSE(s->may_have_data(17));
  }
}

TEST_P(StoreIntegrity, DiscardedPageReadsZerosAfterItsHolesArePunched) {
  {
    auto s = sparse_store::create(path(), opts(kCapacity, kPage, kSegment));
    write_one(*s, 5, 5, 1);
    s->commit(bytes_of("e1"));
    write_one(*s, 5, 5, 2);
    s->commit(bytes_of("e2"));
    s->discard(5, 1);
    s->commit(bytes_of("e3"));
  }
  struct stat st {};
  ASSERT_EQ(::stat(file("segment-000000").c_str(), &st), 0);
  EXPECT_LE(st.st_blocks * 512, 4096) << "both homes punched: only the identity header remains";
  for (bool ro : {true, false}) {
    auto s = sparse_store::open(path(), open_opts(ro));
    EXPECT_TRUE(is_zero(read_one(*s, 5)));
  }
}

}  // namespace
}  // namespace pheap::test
