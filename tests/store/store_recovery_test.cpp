// SparseStore open-time validation and recovery from damaged datastores: every bad input gets
// its specific errc and a message naming the file, or falls back to the other superblock slot;
// never a crash. Also: flock rules and the clean-up of stale and uncommitted journals.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "pheap/crc32c.hpp"
#include "sparse_store/layout.hpp"
#include "sparse_store/superblock.hpp"
#include "store_test_util.hpp"

namespace pheap::test {
namespace {

namespace fs = std::filesystem;

class StoreRecovery : public store_test {
 protected:
  // A datastore with epochs 1 (pages 0..3 v1, root "e1") and 2 (pages 4, 20 v2, root "e2"),
  // closed after commit 2: slot 0 = epoch 2, slot 1 = epoch 1 (epoch E lives in slot E % 2),
  // journal-2 still present (it is unlinked once epoch 3 is durable).
  void make_two_epochs() {
    auto s = sparse_store::create(path(), opts(1 << 20, 4096, 64 << 10));
    for (std::uint64_t p = 0; p < 4; ++p) write_one(*s, p, 1, 1);
    s->commit(bytes_of("e1"));
    write_one(*s, 4, 1, 2);
    write_one(*s, 20, 1, 2);  // segment 1 is created by the checkpoint of epoch 2
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
  sb.journal_length = 0;
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

TEST_P(StoreRecovery, NewestSlotDamagedAfterItsCheckpointIsReportedNotMixed) {
  // Media damage to the newest slot after its epoch was checkpointed: the older epoch cannot
  // be reconstructed any more (its journal is gone, the segments moved on). Open refuses with
  // a specific error instead of serving a mix of the two epochs.
  make_two_epochs();
  flip_bit(file("pheap.super"), 40);  // slot 0 = epoch 2
  expect_open_error(errc::corrupt, {"missing journal-000000000001 required by epoch 1"});
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

TEST_P(StoreRecovery, TruncatedJournalIsCorruptNamingJournalAndLength) {
  make_two_epochs();
  const std::string j = file(store::journal_name(2));
  ASSERT_TRUE(fs::exists(j)) << "journal 2 is kept until epoch 3 commits";
  fs::resize_file(j, fs::file_size(j) - 1);
  expect_open_error(errc::corrupt, {j, "truncated"});
  expect_open_error(errc::corrupt, {j, "truncated"}, true);
}

TEST_P(StoreRecovery, BitFlipInJournalPageImageIsCorruptNamingOffset) {
  make_two_epochs();
  const std::string j = file(store::journal_name(2));
  flip_bit(j, fs::file_size(j) - 10);  // inside the last page image
  expect_open_error(errc::corrupt, {j, "crc mismatch in the image of page", "offset"});
}

TEST_P(StoreRecovery, BitFlipInJournalHeaderIsCorrupt) {
  make_two_epochs();
  const std::string j = file(store::journal_name(2));
  flip_bit(j, 20);  // count field of the first record
  expect_open_error(errc::corrupt, {j, "offset 0"});
}

TEST_P(StoreRecovery, MissingJournalIsCorrupt) {
  make_two_epochs();
  fs::remove(file(store::journal_name(2)));
  expect_open_error(errc::corrupt, {"missing journal-000000000002 required by epoch 2"});
}

TEST_P(StoreRecovery, MissingOrTruncatedSegmentIsCorruptNamingTheFile) {
  make_two_epochs();
  {
    // Epoch 3 declares both segments (segment 1 was created by the checkpoint of epoch 2).
    auto s = sparse_store::open(path(), open_opts());
    s->commit(bytes_of("e3"));
  }
  const std::string seg = file("segment-000001");
  fs::resize_file(seg, 4096);
  expect_open_error(errc::corrupt, {seg, "4096 bytes"});
  fs::remove(seg);
  expect_open_error(errc::corrupt, {seg, "missing segment file required by epoch 3"});
}

TEST_P(StoreRecovery, UnknownFilesAreIgnored) {
  make_two_epochs();
  std::ofstream(file("README")) << "mine";
  std::ofstream(file("segment-xyz")) << "not a segment";
  std::ofstream(file("journal-zz")) << "not a journal";
  fs::create_directory(file("subdir"));
  {
    auto s = sparse_store::open(path(), open_opts());
    EXPECT_EQ(s->epoch(), 2u);
    EXPECT_EQ(read_one(*s, 20), pattern(4096, 1, 20, 2));
  }
  EXPECT_TRUE(fs::exists(file("README")));
  EXPECT_TRUE(fs::exists(file("journal-zz")));
}

TEST_P(StoreRecovery, ReadWriteOpenRemovesStaleAndUncommittedJournals) {
  make_two_epochs();
  {
    auto s = sparse_store::open(path(), open_opts());
    write_one(*s, 7, 1, 3);  // journal-3, never committed
  }
  // A stale journal from an epoch long checkpointed.
  fs::copy_file(file(store::journal_name(2)), file(store::journal_name(1)));
  ASSERT_TRUE(fs::exists(file(store::journal_name(3))));
  {
    auto s = sparse_store::open(path(), open_opts(true));
    EXPECT_TRUE(fs::exists(file(store::journal_name(3)))) << "read-only opens delete nothing";
  }
  {
    auto s = sparse_store::open(path(), open_opts());
    EXPECT_FALSE(fs::exists(file(store::journal_name(3))));
    EXPECT_FALSE(fs::exists(file(store::journal_name(1))));
    EXPECT_TRUE(fs::exists(file(store::journal_name(2)))) << "still named by epoch 2";
    EXPECT_TRUE(is_zero(read_one(*s, 7)));
    write_one(*s, 7, 1, 4);  // a new journal-3 is created afresh
    EXPECT_EQ(s->commit({}), 3u);
    EXPECT_FALSE(fs::exists(file(store::journal_name(2)))) << "unlinked after epoch 3";
  }
  auto s = sparse_store::open(path(), open_opts());
  EXPECT_EQ(read_one(*s, 7), pattern(4096, 1, 7, 4));
}

TEST_P(StoreRecovery, FlockAllowsOneWriterOrManyReaders) {
  make_two_epochs();
  {
    auto w = sparse_store::open(path(), open_opts());
    expect_open_error(errc::locked, {"open by another process"});
    expect_open_error(errc::locked, {"open read-write by another process"}, true);
  }
  {
    auto r1 = sparse_store::open(path(), open_opts(true));
    auto r2 = sparse_store::open(path(), open_opts(true));
    EXPECT_EQ(r1->epoch(), r2->epoch());
    expect_open_error(errc::locked, {path()});
  }
  EXPECT_NO_THROW(sparse_store::open(path(), open_opts())) << "locks are released on close";
}

TEST_P(StoreRecovery, FlockHoldsAcrossProcesses) {
  make_two_epochs();
  auto w = sparse_store::open(path(), open_opts());
  int pipefd[2];
  ASSERT_EQ(::pipe(pipefd), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Child: a second process must be refused both ways. Report one byte per outcome.
    char res[2] = {'?', '?'};
    for (int ro = 0; ro < 2; ++ro) {
      try {
        store_options o;
        o.read_only = ro != 0;
        o.engine = io::make_posix_engine();
        sparse_store::open(path(), o);
        res[ro] = 'o';
      } catch (const error& e) {
        res[ro] = e.code() == errc::locked ? 'L' : 'x';
      }
    }
    (void)!::write(pipefd[1], res, 2);
    ::_exit(0);
  }
  ::close(pipefd[1]);
  char res[2] = {0, 0};
  EXPECT_EQ(::read(pipefd[0], res, 2), 2);
  ::close(pipefd[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_EQ(res[0], 'L') << "second read-write opener in another process";
  EXPECT_EQ(res[1], 'L') << "read-only opener while a writer holds the datastore";
}

}  // namespace
}  // namespace pheap::test
