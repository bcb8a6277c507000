// Format 2 integrity: what the segment CRC tables, the segment headers (uuid, index, touch
// epochs) and the uuid in journal records detect. Each test damages a closed datastore the way
// a user or a disk could and proves the damage is reported as errc::corrupt naming the file
// (and the page), never served as data; and that the crash states the format must tolerate
// (a torn header slot of a cut-short checkpoint) still open exactly.
#include <filesystem>
#include <fstream>

#include "pheap/crc32c.hpp"
#include "sparse_store/layout.hpp"
#include "sparse_store/segment_set.hpp"
#include "sparse_store/superblock.hpp"
#include "store_test_util.hpp"

namespace pheap::test {
namespace {

namespace fs = std::filesystem;

constexpr std::uint32_t kPage = 4096;
constexpr std::uint64_t kSegment = 64 << 10;  // 16 pages per segment
constexpr std::uint64_t kCapacity = 1 << 20;  // 16 segments

void patch(const std::string& path, std::uint64_t offset, const void* data, std::size_t len) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  ASSERT_TRUE(f) << path;
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(len));
  ASSERT_TRUE(f) << path;
}

class StoreIntegrity : public store_test {
 protected:
  std::string path(const char* name = "ds") const { return dir_ / name; }
  std::string file(const std::string& name, const char* ds = "ds") const {
    return path(ds) + "/" + name;
  }

  // Epoch 1: pages 0..3 (segment 0) and 20 (segment 1). Epoch 2: page 1 again, page 21.
  // Epoch 3: root only (so the checkpoint of 2 is done and journal-2 is gone after close).
  void make(const char* name = "ds") {
    auto s = sparse_store::create(path(name), opts(kCapacity, kPage, kSegment));
    for (std::uint64_t p : {0, 1, 2, 3, 20}) write_one(*s, p, 5, 1);
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
  void expect_open_corrupt(const std::vector<std::string>& needles) {
    expect_corrupt([](sparse_store&) {}, needles);
  }

  temp_dir dir_;
};
PHEAP_STORE_SUITE(StoreIntegrity);

TEST_P(StoreIntegrity, BitFlipInACheckpointedPageIsCorruptNamingTheSegmentAndThePage) {
  make();
  flip_bit(file("segment-000000"), 2 * kPage + 100, 0x04);  // page 2
  expect_corrupt([](sparse_store& s) { read_one(s, 2); },
                 {file("segment-000000"), "page 2 ", "fails its checksum"});
  // The other pages of the segment are untouched and still served.
  auto s = sparse_store::open(path(), open_opts(true));
  EXPECT_EQ(read_one(*s, 3), pattern(kPage, 5, 3, 1));
  EXPECT_EQ(read_one(*s, 1), pattern(kPage, 5, 1, 2));
}

TEST_P(StoreIntegrity, DataWrittenIntoAHoleIsCorruptNotServed) {
  make();
  std::vector<std::uint8_t> junk(kPage, 0x5A);
  patch(file("segment-000000"), 7 * kPage, junk.data(), junk.size());  // page 7: never written
  // may_have_data() now says yes (SEEK_DATA finds the extent): the read must not return it.
  expect_corrupt([](sparse_store& s) { read_one(s, 7); },
                 {file("segment-000000"), "page 7 ", "should be a hole"});
}

TEST_P(StoreIntegrity, ZeroedPageIsCorrupt) {
  make();
  std::vector<std::uint8_t> zeros(kPage, 0);
  patch(file("segment-000001"), 4 * kPage, zeros.data(), zeros.size());  // page 20
  expect_corrupt([](sparse_store& s) { read_one(s, 20); },
                 {file("segment-000001"), "page 20 "});
}

TEST_P(StoreIntegrity, DamagedCrcTableEntryIsCorruptNotSilentlyAccepted) {
  make();
  flip_bit(file("segment-000000"), kSegment + 2 * 4096 + 3 * 4);  // entry of page 3
  expect_corrupt([](sparse_store& s) { read_one(s, 3); }, {file("segment-000000"), "page 3 "});
}

TEST_P(StoreIntegrity, SegmentFromAnotherDatastoreIsRejectedNamingBothUuids) {
  make("ds");
  make("other");  // same geometry and contents, another uuid
  const uuid mine = sparse_store::open(path("ds"), open_opts(true))->id();
  fs::copy_file(file("segment-000001", "other"), file("segment-000001"),
                fs::copy_options::overwrite_existing);
  expect_open_corrupt({file("segment-000001"), "belongs to datastore", to_string(mine)});
}

TEST_P(StoreIntegrity, SegmentCopiedOverAnotherIndexIsRejected) {
  make();
  fs::copy_file(file("segment-000000"), file("segment-000001"),
                fs::copy_options::overwrite_existing);
  expect_open_corrupt({file("segment-000001"), "names segment 0"});
}

TEST_P(StoreIntegrity, OlderCopyOfASegmentIsRejected) {
  make();
  const std::string old_copy = path() + ".segment-000000.old";
  fs::copy_file(file("segment-000000"), old_copy);
  {
    auto s = sparse_store::open(path(), open_opts());
    write_one(*s, 2, 5, 4);
    s->commit(bytes_of("e4"));
    s->commit(bytes_of("e5"));  // checkpoint of 4 done: segment 0 touched at 4
  }
  fs::copy_file(old_copy, file("segment-000000"), fs::copy_options::overwrite_existing);
  expect_open_corrupt({"checkpoint epochs", "segment-000000 at 2", "epoch 5",
                       "older or newer copy"});
}

TEST_P(StoreIntegrity, NewerCopyOfASegmentIsRejected) {
  make();
  fs::copy_file(file("pheap.super"), path() + ".super.old");
  {
    auto s = sparse_store::open(path(), open_opts());
    write_one(*s, 2, 5, 4);
    s->commit(bytes_of("e4"));
    s->commit(bytes_of("e5"));
  }
  // The superblock of epoch 3 with today's segments: segment 0 was written at epoch 4.
  fs::copy_file(path() + ".super.old", file("pheap.super"), fs::copy_options::overwrite_existing);
  expect_open_corrupt({file("segment-000000"), "checkpoint of epoch 4", "newer state"});
}

TEST_P(StoreIntegrity, JournalFromAnotherDatastoreIsRejectedEvenWhenItTilesTheLength) {
  // Identical workloads: journal-2 of both datastores have the same length and record layout.
  for (const char* name : {"ds", "other"}) {
    auto s = sparse_store::create(path(name), opts(kCapacity, kPage, kSegment));
    write_one(*s, 0, 5, 1);
    s->commit(bytes_of("e1"));
    write_one(*s, 1, 5, 2);
    s->commit(bytes_of("e2"));  // closed here: journal-2 is the committed journal
  }
  const std::string j = "journal-000000000002";
  ASSERT_EQ(fs::file_size(file(j)), fs::file_size(file(j, "other")));
  fs::copy_file(file(j, "other"), file(j), fs::copy_options::overwrite_existing);
  expect_open_corrupt({file(j), "written by datastore", "another datastore"});
}

TEST_P(StoreIntegrity, SnapshotSegmentsCarryTheSnapshotsIdentity) {
  make();
  {
    auto s = sparse_store::open(path(), open_opts());
    s->snapshot(path("snap"));
  }
  {
    auto snap = sparse_store::open(path("snap"), open_opts(true));
    EXPECT_EQ(read_one(*snap, 20), pattern(kPage, 5, 20, 1));
    EXPECT_EQ(read_one(*snap, 1), pattern(kPage, 5, 1, 2));
  }
  // A segment of the snapshot is not the source's, though its bytes are identical.
  fs::copy_file(file("segment-000000", "snap"), file("segment-000000"),
                fs::copy_options::overwrite_existing);
  expect_open_corrupt({file("segment-000000"), "belongs to datastore"});
}

TEST_P(StoreIntegrity, SnapshotOfAReadOnlyStoreWithACommittedJournalOpensExactly) {
  {
    auto s = sparse_store::create(path(), opts(kCapacity, kPage, kSegment));
    write_one(*s, 0, 5, 1);
    s->commit(bytes_of("e1"));
    write_one(*s, 17, 5, 2);
    s->commit(bytes_of("e2"));  // journal-2 committed; its checkpoint ran (segments at 2)
  }
  {
    auto ro = sparse_store::open(path(), open_opts(true));
    ro->snapshot(path("snap"));
  }
  for (bool ro : {true, false}) {
    auto snap = sparse_store::open(path("snap"), open_opts(ro));
    EXPECT_EQ(snap->epoch(), 2u);
    EXPECT_EQ(read_one(*snap, 0), pattern(kPage, 5, 0, 1));
    EXPECT_EQ(read_one(*snap, 17), pattern(kPage, 5, 17, 2));
  }
}

// The checkpoint of epoch E writes a segment's header slot with touch epoch E. A crash can
// tear that write; the other slot keeps the previous touch, so the datastore still opens and
// recovery replays journal E.
TEST_P(StoreIntegrity, TornHeaderSlotOfACutShortCheckpointLosesNothing) {
  {
    auto s = sparse_store::create(path(), opts(kCapacity, kPage, kSegment));
    write_one(*s, 0, 5, 1);
    s->commit(bytes_of("e1"));
    s->commit(bytes_of("e1b"));  // epoch 2: the checkpoint of 1 created segment 0 (touch 1)
    write_one(*s, 3, 5, 3);
    s->commit(bytes_of("e3"));  // closed after the checkpoint of 3 (touch 3): journal-3 kept
  }
  // Find the slot holding touch 3 and tear it.
  const std::string seg = file("segment-000000");
  std::vector<std::byte> slots(2 * store::segment_header_size);
  {
    std::ifstream f(seg, std::ios::binary);
    f.seekg(static_cast<std::streamoff>(kSegment));
    f.read(reinterpret_cast<char*>(slots.data()), static_cast<std::streamsize>(slots.size()));
  }
  int torn = -1;
  for (int k = 0; k < 2; ++k) {
    store::segment_header h;
    if (store::decode_segment_header(slots.data() + k * store::segment_header_size, h).empty() &&
        h.touch_epoch == 3) {
      torn = k;
    }
  }
  ASSERT_GE(torn, 0) << "no header slot records the checkpoint of epoch 3";
  std::vector<std::uint8_t> garbage(512, 0xA5);
  patch(seg, kSegment + static_cast<std::uint64_t>(torn) * store::segment_header_size + 512,
        garbage.data(), garbage.size());
  for (bool ro : {true, false}) {
    auto s = sparse_store::open(path(), open_opts(ro));
    EXPECT_EQ(s->epoch(), 3u);
    EXPECT_EQ(read_one(*s, 0), pattern(kPage, 5, 0, 1));
    EXPECT_EQ(read_one(*s, 3), pattern(kPage, 5, 3, 3));
  }
  // The read-write open replayed journal-3 and rewrote the slot: the next epochs work.
  {
    auto s = sparse_store::open(path(), open_opts());
    write_one(*s, 4, 5, 4);
    s->commit(bytes_of("e4"));
    s->commit(bytes_of("e5"));
  }
  auto s = sparse_store::open(path(), open_opts(true));
  EXPECT_EQ(read_one(*s, 4), pattern(kPage, 5, 4, 4));
}

// Found by the heap kill campaign (rel_heap_kill_test): the checkpoint of a journal holding
// only a discard had punched the hole and recorded its epoch in the segment's header; the
// replay at the next read-write open found no data left to discard (SEEK_DATA decides which
// pages a discard record covers), so it did not touch the segment, the store kept the older
// touch epoch, and the commit after it recorded a digest the headers contradicted: the
// datastore no longer opened ("checkpoint epochs ... do not match").
TEST_P(StoreIntegrity, ReopenAfterACheckpointedDiscardThenAnotherCommitStillOpens) {
  {
    auto s = sparse_store::create(path(), opts(kCapacity, kPage, kSegment));
    for (std::uint64_t p : {16, 17, 18}) write_one(*s, p, 5, 1);  // segment 1
    s->commit(bytes_of("e1"));
    s->commit(bytes_of("e2"));  // checkpoint of 1: segment 1 touched at 1
    s->discard(16, 3);
    s->commit(bytes_of("e3"));  // closed after the checkpoint of 3 punched the hole (touch 3)
  }
  {
    auto s = sparse_store::open(path(), open_opts());  // replays journal-3: nothing left to do
    EXPECT_EQ(s->epoch(), 3u);
    s->commit(bytes_of("e4"));
  }
  for (bool ro : {true, false}) {
    auto s = sparse_store::open(path(), open_opts(ro));
    EXPECT_EQ(s->epoch(), 4u);
    EXPECT_TRUE(is_zero(read_one(*s, 17)));
  }
}

TEST_P(StoreIntegrity, BothHeaderSlotsDestroyedIsCorruptNamingTheSegment) {
  make();
  std::vector<std::uint8_t> zeros(2 * store::segment_header_size, 0);
  patch(file("segment-000001"), kSegment, zeros.data(), zeros.size());
  expect_open_corrupt({file("segment-000001"), "no valid segment header"});
}

TEST_P(StoreIntegrity, DiscardedPageReadsZerosAfterItsHoleIsPunched) {
  {
    auto s = sparse_store::create(path(), opts(kCapacity, kPage, kSegment));
    write_one(*s, 5, 5, 1);
    s->commit(bytes_of("e1"));
    s->discard(5, 1);
    s->commit(bytes_of("e2"));
    s->commit(bytes_of("e3"));  // checkpoint of 2 punched the hole and set the entry to 0
  }
  for (bool ro : {true, false}) {
    auto s = sparse_store::open(path(), open_opts(ro));
    EXPECT_TRUE(is_zero(read_one(*s, 5)));
  }
}

}  // namespace
}  // namespace pheap::test
