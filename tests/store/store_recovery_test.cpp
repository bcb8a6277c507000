// SparseStore open-time validation and damaged datastores: every bad input gets its specific
// errc and a message naming the file (and the page or map block), or falls back to the other
// superblock slot; never a crash, never data of the wrong epoch. Also: flock rules, and the
// copies a crashed epoch left behind (never served, reused by the next writes).
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "pheap/crc32c.hpp"
#include "sparse_store/layout.hpp"
#include "sparse_store/superblock.hpp"
#include "store_test_util.hpp"
#include "support/fault_engine.hpp"

namespace pheap::test {
namespace {

namespace fs = std::filesystem;

class StoreRecovery : public store_test {
 protected:
  // A datastore with epochs 1 (pages 0..3 v1, root "e1") and 2 (pages 4, 20 v2, root "e2"),
  // closed after commit 2: slot 0 = epoch 2, slot 1 = epoch 1 (epoch E lives in slot E % 2).
  // Segment 1 is created by the first write of page 20.
  void make_two_epochs() {
    auto s = sparse_store::create(path(), opts(1 << 20, 4096, 64 << 10));
    for (std::uint64_t p = 0; p < 4; ++p) write_one(*s, p, 1, 1);
    s->commit(bytes_of("e1"));
    write_one(*s, 4, 1, 2);
    write_one(*s, 20, 1, 2);  // segment 1 is created by this write
    s->commit(bytes_of("e2"));
  }
  std::string path() const { return dir_ / "ds"; }
  std::string file(const std::string& name) const { return path() + "/" + name; }

  // Opens and expects failure with `code` and every string of `needles` in the message.
  void expect_open_error(errc code, std::vector<std::string> needles, bool read_only = false) {
    try {
      sparse_store::open(path(), open_opts(read_only));
      ADD_FAILURE() << "open succeeded";
    } catch (const error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      for (const auto& n : needles) {
        EXPECT_NE(std::string(e.what()).find(n), std::string::npos)
            << "message lacks '" << n << "': " << e.what();
      }
    }
  }

  temp_dir dir_;
};
PHEAP_STORE_SUITE(StoreRecovery);

TEST_P(StoreRecovery, MissingDirectoryIsNotFound) {
  expect_open_error(errc::not_found, {path(), "does not exist"});
}

TEST_P(StoreRecovery, ForeignDirectoryIsNotADatastore) {
  fs::create_directory(path());
  expect_open_error(errc::not_a_datastore, {path()});
  std::ofstream(file("notes.txt")) << "hello";
  expect_open_error(errc::not_a_datastore, {path()});
  // A pheap.super that is not ours (full size, no magic).
  write_file(file("pheap.super"), std::vector<std::byte>(16384, std::byte{'x'}));
  expect_open_error(errc::not_a_datastore, {"pheap.super", "bad magic"});
}

TEST_P(StoreRecovery, NewerFormatVersionIsRejected) {
  make_two_epochs();
  auto data = read_file(file("pheap.super"));
  auto sb = store::decode_slot(data.data() + 8192).sb;
  sb.version = sparse_store::format_version + 1;
  const auto slot = store::encode_slot(sb);
  std::memcpy(data.data() + 8192, slot.data(), slot.size());
  write_file(file("pheap.super"), data);
  expect_open_error(errc::newer_format,
                    {"pheap.super",
                     "format version " + std::to_string(sparse_store::format_version + 1)});
}

TEST_P(StoreRecovery, FormatOneDatastoreIsRejectedAsOlderFormat) {
  make_two_epochs();
  auto data = read_file(file("pheap.super"));
  for (std::size_t slot = 0; slot < 2; ++slot) {
    std::byte* b = data.data() + slot * 8192;
    store::put<std::uint32_t>(b, 8, 1u);  // version field, CRC fixed below
    store::put<std::uint32_t>(b, store::off_crc, crc32c(b, store::off_crc));
  }
  write_file(file("pheap.super"), data);
  expect_open_error(errc::older_format, {"pheap.super", "format version 1", "older pheap"});
  expect_open_error(errc::older_format, {"pheap.super"}, true);
}

TEST_P(StoreRecovery, TornNewestSlotFallsBackToTheOlderEpoch) {
  // Epoch 1 committed; then commit 2 dies while writing its slot. Recreate that moment: slot 0
  // receives the epoch-2 record of a root-only commit, once intact and once torn.
  {
    auto s = sparse_store::create(path(), opts(1 << 20, 4096, 64 << 10));
    for (std::uint64_t p = 0; p < 4; ++p) write_one(*s, p, 1, 1);
    s->commit(bytes_of("e1"));
  }
  auto data = read_file(file("pheap.super"));
  auto sb = store::decode_slot(data.data() + 8192).sb;
  ASSERT_EQ(sb.epoch, 1u);
  sb.epoch = 2;
  sb.base_epoch = 1;
  sb.root = bytes_of("e2");
  const auto slot = store::encode_slot(sb);
  std::memcpy(data.data(), slot.data(), slot.size());
  write_file(file("pheap.super"), data);
  {
    auto s = sparse_store::open(path(), open_opts(true));
    EXPECT_EQ(s->epoch(), 2u) << "the intact record is the newest commit";
  }
  flip_bit(file("pheap.super"), 4000);  // a sector of slot 0 never reached the disk
  auto s = sparse_store::open(path(), open_opts());
  EXPECT_EQ(s->epoch(), 1u);
  EXPECT_EQ(s->root(), bytes_of("e1"));
  for (std::uint64_t p = 0; p < 4; ++p) EXPECT_EQ(read_one(*s, p), pattern(4096, 1, p, 1));
  EXPECT_EQ(s->commit({}), 2u) << "epoch 2 is committed afresh into the damaged slot";
}

TEST_P(StoreRecovery, NewestSlotDamagedFallsBackToTheExactOlderEpoch) {
  // Media damage to the newest slot: epoch 1 is still whole — its map blocks, directory and
  // page copies are in the homes epoch 2 did not use — so open yields it exactly.
  make_two_epochs();
  flip_bit(file("pheap.super"), 40);  // slot 0 = epoch 2
  auto s = sparse_store::open(path(), open_opts(true));
  EXPECT_EQ(s->epoch(), 1u);
  EXPECT_EQ(s->root(), bytes_of("e1"));
  for (std::uint64_t p = 0; p < 4; ++p) EXPECT_EQ(read_one(*s, p), pattern(4096, 1, p, 1));
  EXPECT_TRUE(is_zero(read_one(*s, 4)));
  EXPECT_TRUE(is_zero(read_one(*s, 20)));
}

TEST_P(StoreRecovery, FallbackToAnEpochWhosePagesTheNewerOneFreedReportsThemNotZeros) {
  // Epoch 2 discarded page 1 and its homes were punched once epoch 2 was durable: if epoch 2's
  // slot is then destroyed, epoch 1 names a copy that is gone. Reads of it fail naming the
  // page; never zeros or another version (FORMAT.md "Limits").
  make_two_epochs();
  {
    auto s = sparse_store::open(path(), open_opts());
    s->discard(1, 1);
    s->commit(bytes_of("e3"));  // slot 1: epoch 3
  }
  flip_bit(file("pheap.super"), 8192 + 40);  // slot 1 = epoch 3
  auto s = sparse_store::open(path(), open_opts(true));
  EXPECT_EQ(s->epoch(), 2u);
  EXPECT_EQ(read_one(*s, 0), pattern(4096, 1, 0, 1));
  try {
    read_one(*s, 1);
    ADD_FAILURE() << "a punched copy was served";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::corrupt) << e.what();
    EXPECT_NE(std::string(e.what()).find("segment-000000"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("page 1 "), std::string::npos) << e.what();
  }
}

TEST_P(StoreRecovery, CorruptOlderSlotIsIgnored) {
  make_two_epochs();
  flip_bit(file("pheap.super"), 8192 + 100);  // root area of slot 1 (epoch 1)
  auto s = sparse_store::open(path(), open_opts());
  EXPECT_EQ(s->epoch(), 2u);
  EXPECT_EQ(s->root(), bytes_of("e2"));
  EXPECT_EQ(read_one(*s, 4), pattern(4096, 1, 4, 2));
  EXPECT_EQ(s->commit(bytes_of("e3")), 3u) << "epoch 3 rewrites slot 1";
  s.reset();
  auto data = read_file(file("pheap.super"));
  EXPECT_EQ(store::decode_slot(data.data() + 8192).status, store::slot_status::ok);
}

TEST_P(StoreRecovery, BothSlotsCorruptIsCorruptNamingBothCauses) {
  make_two_epochs();
  flip_bit(file("pheap.super"), 33);
  flip_bit(file("pheap.super"), 8192 + 33);
  expect_open_error(errc::corrupt, {"pheap.super", "slot 0 crc mismatch", "slot 1 crc mismatch"});
  expect_open_error(errc::corrupt, {"pheap.super"}, true);
}

TEST_P(StoreRecovery, TruncatedSuperblockFallsBackOrIsCorrupt) {
  make_two_epochs();
  fs::resize_file(file("pheap.super"), 8192);  // slot 1 (epoch 1) gone, slot 0 intact
  {
    auto s = sparse_store::open(path(), open_opts(true));
    EXPECT_EQ(s->epoch(), 2u);
    EXPECT_EQ(s->root(), bytes_of("e2"));
  }
  fs::resize_file(file("pheap.super"), 100);
  expect_open_error(errc::corrupt, {"pheap.super", "truncated to 100"});
  fs::resize_file(file("pheap.super"), 0);
  expect_open_error(errc::corrupt, {"pheap.super", "truncated to 0"});
}

TEST_P(StoreRecovery, DamagedDirectoryIsCorruptAtOpenNamingTheMapFile) {
  make_two_epochs();
  // The directory of epoch 2 is in home 0 (epoch 1 wrote home 1, epoch 0 home 0... each commit
  // that changes the map alternates); damage both copies' first bytes to be sure.
  flip_bit(file("pheap.map"), 8);
  flip_bit(file("pheap.map"), 4096 + 8);
  expect_open_error(errc::corrupt, {file("pheap.map"), "directory", "checksum"});
  expect_open_error(errc::corrupt, {file("pheap.map"), "directory"}, true);
}

TEST_P(StoreRecovery, MissingMapFileIsCorrupt) {
  make_two_epochs();
  fs::remove(file("pheap.map"));
  expect_open_error(errc::corrupt, {file("pheap.map"), "missing pheap.map, required by epoch 2"});
}

TEST_P(StoreRecovery, TruncatedMapFileIsCorruptNamingTheBlockAndItsPagesOnFirstUse) {
  make_two_epochs();
  fs::resize_file(file("pheap.map"), 2 * 4096);  // both directory homes survive, no map block
  auto s = sparse_store::open(path(), open_opts(true));  // the directory is intact
  EXPECT_TRUE(s->may_have_data(0)) << "a block that cannot be loaded is not called empty";
  try {
    read_one(*s, 0);
    ADD_FAILURE() << "a page whose map block is lost was served";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::corrupt) << e.what();
    for (const char* n : {"pheap.map", "map block 0", "pages 0 to 255", "all zeros"}) {
      EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << n << ": " << e.what();
    }
  }
}

TEST_P(StoreRecovery, MissingOrTruncatedSegmentIsCorruptNamingTheFileAndThePage) {
  make_two_epochs();
  const std::string seg = file("segment-000001");
  fs::resize_file(seg, 4096);
  {
    auto s = sparse_store::open(path(), open_opts());  // segments are opened on first use
    EXPECT_EQ(read_one(*s, 4), pattern(4096, 1, 4, 2)) << "segment 0 is fine";
    try {
      read_one(*s, 20);
      ADD_FAILURE() << "a page of a truncated segment was served";
    } catch (const error& e) {
      EXPECT_EQ(e.code(), errc::corrupt) << e.what();
      EXPECT_NE(std::string(e.what()).find(seg), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("4096 bytes"), std::string::npos) << e.what();
    }
  }
  fs::remove(seg);
  auto s = sparse_store::open(path(), open_opts(true));
  try {
    read_one(*s, 20);
    ADD_FAILURE() << "a page of a missing segment was served";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::corrupt) << e.what();
    EXPECT_NE(std::string(e.what()).find(seg), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("required by page 20 of epoch 2"), std::string::npos)
        << e.what();
  }
}

TEST_P(StoreRecovery, UnknownFilesAreIgnored) {
  make_two_epochs();
  std::ofstream(file("README")) << "mine";
  std::ofstream(file("segment-xyz")) << "not a segment";
  std::ofstream(file("segment-000001.creating")) << "a creation cut short";
  fs::create_directory(file("subdir"));
  {
    auto s = sparse_store::open(path(), open_opts());
    EXPECT_EQ(s->epoch(), 2u);
    EXPECT_EQ(read_one(*s, 20), pattern(4096, 1, 20, 2));
  }
  EXPECT_TRUE(fs::exists(file("README")));
  EXPECT_TRUE(fs::exists(file("segment-xyz")));
}

TEST_P(StoreRecovery, CopiesOfAnEpochThatNeverCommittedAreNeverServedAndTheirHomesAreReused) {
  make_two_epochs();
  const std::string seg = file("segment-000000");
  std::uint64_t allocated = 0;
  for (int round = 0; round < 5; ++round) {
    {
      auto s = sparse_store::open(path(), open_opts());
      EXPECT_EQ(s->epoch(), 2u);
      EXPECT_TRUE(is_zero(read_one(*s, 7))) << "round " << round;
      EXPECT_FALSE(s->may_have_data(7));
      EXPECT_EQ(read_one(*s, 4), pattern(4096, 1, 4, 2)) << "round " << round;
      write_one(*s, 7, 1, 10 + static_cast<std::uint64_t>(round));  // never committed
      write_one(*s, 4, 1, 10 + static_cast<std::uint64_t>(round));  // its other home
    }
    struct stat st {};
    ASSERT_EQ(::stat(seg.c_str(), &st), 0);
    if (round == 0) allocated = static_cast<std::uint64_t>(st.st_blocks);
    EXPECT_EQ(static_cast<std::uint64_t>(st.st_blocks), allocated)
        << "round " << round << ": the lost epoch's homes are reused, not piled up";
  }
  auto ro = sparse_store::open(path(), open_opts(true));
  EXPECT_TRUE(is_zero(read_one(*ro, 7)));
  ro.reset();
  auto s = sparse_store::open(path(), open_opts());
  write_one(*s, 7, 1, 4);
  EXPECT_EQ(s->commit({}), 3u);
  s.reset();
  s = sparse_store::open(path(), open_opts());
  EXPECT_EQ(read_one(*s, 7), pattern(4096, 1, 7, 4));
  EXPECT_EQ(read_one(*s, 4), pattern(4096, 1, 4, 2));
}

// Open reads the superblock and the directory, nothing else — after a clean close and after a
// process died mid-epoch alike (there is no journal to replay and nothing to repair). Counted
// with the fault engine: every read, write and sync of the open.
TEST_P(StoreRecovery, ReadWriteOpenAfterACrashCostsTheSameAsAfterACleanCloseAndReadsNoData) {
  auto workload_in = [&](const std::string& p, bool die_mid_epoch) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      store_options o = opts(16 << 20, 4096, 1 << 20);
      auto s = sparse_store::create(p, o);
      for (std::uint64_t e = 1; e <= 3; ++e) {
        for (std::uint64_t pg = 0; pg < 4096; pg += 7) write_one(*s, pg, e, e);
        s->commit(bytes_of("e" + std::to_string(e)));
      }
      for (std::uint64_t pg = 0; pg < 4096; pg += 3) write_one(*s, pg, 9, 9);  // epoch 4...
      if (die_mid_epoch) ::_exit(0);  // ...never committed: the process dies, nothing closes
      s.reset();
      ::_exit(0);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  };
  const std::string clean = dir_ / "clean", crashed = dir_ / "crashed";
  workload_in(clean, false);
  workload_in(crashed, true);
  std::uint64_t cost[2][4];
  int k = 0;
  for (const std::string& p : {clean, crashed}) {
    auto f = test::make_fault_engine(engine());
    store_options o;
    o.engine = f;
    auto s = sparse_store::open(p, o);
    for (auto kind : {test::op_kind::read, test::op_kind::write, test::op_kind::sync,
                      test::op_kind::metadata}) {
      cost[k][static_cast<int>(kind) - 1] = f->operations(kind);
    }
    EXPECT_EQ(s->epoch(), 3u);
    EXPECT_EQ(read_one(*s, 7), pattern(4096, 3, 7, 3));
    ++k;
  }
  EXPECT_EQ(cost[0][0], 2u) << "reads: one superblock read, one directory read";
  EXPECT_EQ(cost[0][1], 0u) << "no writes";
  EXPECT_EQ(cost[0][2], 0u) << "no syncs";
  for (int i = 0; i < 4; ++i) EXPECT_EQ(cost[1][i], cost[0][i]) << "operation kind " << i;
}

// One writer at a time (flock LOCK_EX), any number of readers beside it (the reader table);
// a reader that excludes writers (beside_writer = false, flock LOCK_SH) as format 3's did.
TEST_P(StoreRecovery, OneWriterAtATimeAnyNumberOfReadersBesideItAndExclusiveReadersExcludeWriters) {
  make_two_epochs();
  store_options exclusive = open_opts(true);
  exclusive.beside_writer = false;
  {
    auto w = sparse_store::open(path(), open_opts());
    expect_open_error(errc::locked, {"open by another process"});
    auto r = sparse_store::open(path(), open_opts(true));
    EXPECT_EQ(r->epoch(), w->epoch());
    try {
      sparse_store::open(path(), exclusive);
      ADD_FAILURE() << "an exclusive reader opened beside a writer";
    } catch (const error& e) {
      EXPECT_EQ(e.code(), errc::locked);
      EXPECT_NE(std::string(e.what()).find("open read-write by another process"), std::string::npos) << e.what();
    }
  }
  {
    auto r1 = sparse_store::open(path(), open_opts(true));
    auto r2 = sparse_store::open(path(), open_opts(true));
    EXPECT_EQ(r1->epoch(), r2->epoch());
    EXPECT_NO_THROW(sparse_store::open(path(), open_opts())) << "a writer beside readers";
    auto x = sparse_store::open(path(), exclusive);
    expect_open_error(errc::locked, {path()});
  }
  EXPECT_NO_THROW(sparse_store::open(path(), open_opts())) << "locks are released on close";
}

TEST_P(StoreRecovery, TheWritersFlockHoldsAcrossProcessesAndReadersOpenBesideIt) {
  make_two_epochs();
  auto w = sparse_store::open(path(), open_opts());
  int pipefd[2];
  ASSERT_EQ(::pipe(pipefd), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Child: a second writer and an exclusive reader are refused, a reader opens beside the
    // writer. Report one byte per outcome.
    char res[3] = {'?', '?', '?'};
    for (int k = 0; k < 3; ++k) {
      try {
        store_options o;
        o.read_only = k != 0;
        o.beside_writer = k != 2;
        o.engine = io::make_posix_engine();
        sparse_store::open(path(), o);
        res[k] = 'o';
      } catch (const error& e) {
        res[k] = e.code() == errc::locked ? 'L' : 'x';
      }
    }
    (void)!::write(pipefd[1], res, 3);
    ::_exit(0);
  }
  ::close(pipefd[1]);
  char res[3] = {0, 0, 0};
  EXPECT_EQ(::read(pipefd[0], res, 3), 3);
  ::close(pipefd[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_EQ(res[0], 'L') << "second read-write opener in another process";
  EXPECT_EQ(res[1], 'o') << "a reader opens beside the writer";
  EXPECT_EQ(res[2], 'L') << "an exclusive reader (beside_writer = false) while a writer holds the datastore";
}

}  // namespace
}  // namespace pheap::test
