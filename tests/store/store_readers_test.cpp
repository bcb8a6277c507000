// Readers beside a writer (FORMAT.md "Readers beside a writer"): a read-only open succeeds
// while a writer holds the datastore and reads exactly the watermark it registered, for as
// long as it stays open, while the writer rewrites, frees and commits; the writer keeps a copy
// of what it overwrites that a reader still names (pins), bounded by the pin limit, past which
// the oldest reader gets errc::stale — never a wrong byte.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <fcntl.h>

#include "pheap/crc32c.hpp"
#include "store_test_util.hpp"

namespace pheap::test {
namespace {

constexpr std::uint32_t kPage = 4096;

class StoreReaders : public store_test {
 protected:
  std::string path() const { return dir_ / "ds"; }
  // 4 segments of 64 pages, 4 map blocks' worth of capacity would be too big: 2048 pages span
  // three map blocks (944 pages each).
  std::unique_ptr<sparse_store> make(std::uint64_t pages = 2048, std::uint64_t pin_limit = 64ull << 20) {
    store_options o = opts(pages * kPage, kPage, 256 * kPage);
    o.pin_limit = pin_limit;
    return sparse_store::create(path(), o);
  }
  std::unique_ptr<sparse_store> reader(std::uint64_t max_epoch = ~std::uint64_t{0}) {
    store_options o = open_opts(true);
    o.max_epoch = max_epoch;
    return sparse_store::open(path(), o);
  }
  // Writes pattern(seed, p, version) to every page in [first, end) and commits.
  static std::uint64_t write_epoch(sparse_store& s, std::uint64_t first, std::uint64_t end, std::uint64_t version) {
    std::vector<std::vector<std::uint8_t>> bufs;
    std::vector<page_write> ws;
    for (std::uint64_t p = first; p < end; ++p) bufs.push_back(pattern(kPage, 7, p, version));
    for (std::uint64_t p = first; p < end; ++p) ws.push_back({p, bufs[p - first].data()});
    s.write_pages(ws);
    return s.commit(bytes_of("v" + std::to_string(version)));
  }
  static void expect_version(sparse_store& s, std::uint64_t first, std::uint64_t end, std::uint64_t version) {
    std::vector<std::uint8_t> buf((end - first) * kPage);
    std::vector<page_read> rs;
    for (std::uint64_t p = first; p < end; ++p) rs.push_back({p, buf.data() + (p - first) * kPage});
    s.read_pages(rs);
    for (std::uint64_t p = first; p < end; ++p) {
      const std::vector<std::uint8_t> got(buf.begin() + static_cast<std::ptrdiff_t>((p - first) * kPage),
                                          buf.begin() + static_cast<std::ptrdiff_t>((p - first + 1) * kPage));
      ASSERT_EQ(got, pattern(kPage, 7, p, version)) << "page " << p << " version " << version;
    }
  }
  temp_dir dir_;
};
PHEAP_STORE_SUITE(StoreReaders);

TEST_P(StoreReaders, AReadOnlyOpenSucceedsWhileAWriterHoldsTheDatastoreAndSeesItsLastWatermark) {
  auto w = make();
  const std::uint64_t e1 = write_epoch(*w, 0, 2048, 1);
  write_epoch(*w, 0, 100, 2);
  const std::uint64_t e2 = w->epoch();
  for (std::uint64_t p = 0; p < 10; ++p) write_one(*w, p, 1, 99);  // not committed: not seen
  auto r = reader();
  EXPECT_EQ(r->epoch(), e2);
  EXPECT_EQ(e2, e1 + 1);
  EXPECT_EQ(r->root(), bytes_of("v2"));
  expect_version(*r, 0, 100, 2);
  expect_version(*r, 100, 2048, 1);
  EXPECT_EQ(sparse_store::readers(path()).size(), 1u);
  EXPECT_EQ(w->stats().readers, 1u);
}

TEST_P(StoreReaders, AReaderSeesItsWatermarkExactlyWhileTheWriterRewritesEveryPageInEveryEpoch) {
  auto w = make();
  write_epoch(*w, 0, 2048, 1);
  auto r = reader();
  const std::uint64_t at = r->epoch();
  expect_version(*r, 0, 64, 1);  // some pages and one block loaded before the writer moves on
  for (std::uint64_t v = 2; v <= 8; ++v) write_epoch(*w, 0, 2048, v);
  EXPECT_EQ(r->epoch(), at);
  expect_version(*r, 0, 2048, 1);  // every home of the first epoch was overwritten since
  const store_stats ws = w->stats();
  EXPECT_GE(ws.pins_made, 2048u) << "each page's first-epoch copy was kept once";
  EXPECT_LE(ws.pinned_bytes, (2048u + 64u) * kPage) << "at most one copy per page (and map block)";
  EXPECT_GT(r->stats().pinned_reads, 0u);
  // The writer itself reads its newest pages.
  expect_version(*w, 0, 2048, 8);
}

TEST_P(StoreReaders, ReadersAtDifferentWatermarksEachReadTheirOwn) {
  auto w = make();
  write_epoch(*w, 0, 2048, 1);
  auto r1 = reader();
  write_epoch(*w, 0, 1000, 2);
  write_epoch(*w, 500, 2048, 3);
  auto r3 = reader();
  for (std::uint64_t v = 4; v <= 6; ++v) write_epoch(*w, 0, 2048, v);
  expect_version(*r1, 0, 2048, 1);
  expect_version(*r3, 0, 500, 2);
  expect_version(*r3, 500, 2048, 3);
  const std::vector<reader_info> live = sparse_store::readers(path());
  ASSERT_EQ(live.size(), 2u);
  for (const reader_info& ri : live) {
    EXPECT_EQ(ri.pid, static_cast<std::uint32_t>(::getpid()));
    EXPECT_GT(ri.pinned_bytes, 0u);
    EXPECT_FALSE(ri.expired);
  }
}

TEST_P(StoreReaders, PagesTheWriterDiscardsStayReadableAtTheReadersWatermark) {
  auto w = make();
  write_epoch(*w, 0, 2048, 1);
  auto r = reader();
  w->discard(0, 1024);  // punched after the commit: both homes
  w->commit(bytes_of("freed"));
  write_epoch(*w, 1024, 2048, 2);
  write_epoch(*w, 1024, 2048, 3);
  expect_version(*r, 0, 2048, 1);
  EXPECT_TRUE(is_zero(read_one(*w, 5)));
}

// Counts the holes punched in files named `name`, forwarding everything to `inner`.
class punch_counter final : public io::engine {
 public:
  punch_counter(std::shared_ptr<io::engine> inner, std::string name) : in_(std::move(inner)), name_(std::move(name)) {}
  std::uint64_t holes() const { return holes_.load(); }
  std::string name() const override { return "punch_counter(" + in_->name() + ")"; }
  std::unique_ptr<io::file> open(const std::string& p, io::open_mode m) override { return in_->open(p, m); }
  bool exists(const std::string& p) override { return in_->exists(p); }
  void create_dir(const std::string& p) override { in_->create_dir(p); }
  void remove_file(const std::string& p) override { in_->remove_file(p); }
  void remove_dir(const std::string& p) override { in_->remove_dir(p); }
  void rename(const std::string& a, const std::string& b) override { in_->rename(a, b); }
  std::vector<std::string> list_dir(const std::string& p) override { return in_->list_dir(p); }
  void sync_dir(const std::string& p) override { in_->sync_dir(p); }
  void read(std::span<const io::read_request> b) override { in_->read(b); }
  void write(std::span<const io::write_request> b) override { in_->write(b); }
  void sync(io::file& f) override { in_->sync(f); }
  void sync_files(std::span<io::file* const> fs) override { in_->sync_files(fs); }
  std::uint64_t size(io::file& f) override { return in_->size(f); }
  void truncate(io::file& f, std::uint64_t n) override { in_->truncate(f, n); }
  void punch_hole(io::file& f, std::uint64_t off, std::uint64_t len) override {
    if (std::filesystem::path(f.path()).filename() == name_) ++holes_;
    in_->punch_hole(f, off, len);
  }
  std::uint64_t allocated_bytes(io::file& f) override { return in_->allocated_bytes(f); }
  bool clone_file(const std::string& a, const std::string& b) override { return in_->clone_file(a, b); }

 private:
  std::shared_ptr<io::engine> in_;
  std::string name_;
  std::atomic<std::uint64_t> holes_{0};
};

// On a file system mounted with `discard` every hole waits for the device: the copies kept for
// a reader are freed in one hole per run of them, not one per page.
TEST_P(StoreReaders, TheCopiesKeptForALeavingReaderAreFreedInOneHoleAndTheWriterCountsTheirCost) {
  auto counter = std::make_shared<punch_counter>(engine(), "pheap.pinned");
  store_options o = opts(2048 * kPage, kPage, 256 * kPage);
  o.engine = counter;
  auto w = sparse_store::create(path(), o);
  write_epoch(*w, 0, 1024, 1);
  EXPECT_EQ(w->stats().reader_protect_ns, 0u) << "no reader yet";
  auto r = reader();
  write_epoch(*w, 0, 1024, 2);
  write_epoch(*w, 0, 1024, 3);  // the third copy goes back to the home the reader's epoch names
  const store_stats kept = w->stats();
  EXPECT_GE(kept.pins_made, 1024u);
  EXPECT_GE(kept.pin_bytes_written, 1024u * kPage);
  EXPECT_GT(kept.reader_protect_ns, 0u);
  EXPECT_GT(kept.pinned_bytes, 0u);
  expect_version(*r, 0, 1024, 1);
  r.reset();
  const std::uint64_t before = counter->holes();
  write_epoch(*w, 1024, 1025, 4);  // a commit reaps the reader's copies
  EXPECT_EQ(w->stats().pinned_bytes, 0u);
  EXPECT_EQ(counter->holes() - before, 1u) << "one hole for the " << kept.pins_made << " copies";
  auto f = engine()->open(path() + "/pheap.pinned", io::open_mode::read_only);
  EXPECT_EQ(engine()->allocated_bytes(*f), 0u);
}

// A reader of one rank of a distributed datastore moves to the epoch the job's manifest names,
// not past it to a prepared one (sparse_store::refresh_to).
TEST_P(StoreReaders, RefreshToAnEpochStopsThereKeepsItAsTheLimitAndNeverMovesBack) {
  auto w = make();
  const auto prepare_version = [&](std::uint64_t version) {
    std::vector<std::vector<std::uint8_t>> bufs;
    std::vector<page_write> ws;
    for (std::uint64_t p = 0; p < 64; ++p) bufs.push_back(pattern(kPage, 7, p, version));
    for (std::uint64_t p = 0; p < 64; ++p) ws.push_back({p, bufs[p].data()});
    w->write_pages(ws);
    return w->prepare(bytes_of("v" + std::to_string(version)));
  };
  write_epoch(*w, 0, 64, 1);
  EXPECT_EQ(prepare_version(2), 2u);
  auto r = reader(1);
  EXPECT_EQ(r->epoch(), 1u);
  EXPECT_FALSE(r->refresh().moved) << "the open's max_epoch is the limit";
  EXPECT_EQ(w->confirm(), 2u);  // replaces epoch 1's slot: a refresh() limited to 1 would find none
  const refresh_result to2 = r->refresh_to(2);
  EXPECT_TRUE(to2.moved);
  EXPECT_EQ(to2.epoch, 2u);
  expect_version(*r, 0, 64, 2);
  EXPECT_EQ(prepare_version(3), 3u);
  EXPECT_FALSE(r->refresh().moved) << "refresh_to(2) made 2 the limit";
  expect_version(*r, 0, 64, 2);
  try {
    r->refresh_to(1);
    ADD_FAILURE() << "moved back";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("never moves back"), std::string::npos) << e.what();
  }
  EXPECT_EQ(r->epoch(), 2u);
  EXPECT_EQ(w->confirm(), 3u);
  EXPECT_EQ(r->refresh_to(~std::uint64_t{0}).epoch, 3u);
  expect_version(*r, 0, 64, 3);
}

TEST_P(StoreReaders, RefreshMovesToTheNewestWatermarkAndNamesEveryPageThatChanged) {
  auto w = make();
  write_epoch(*w, 0, 2048, 1);
  auto r = reader();
  expect_version(*r, 0, 2048, 1);  // every block loaded
  write_epoch(*w, 10, 20, 2);
  write_epoch(*w, 1500, 1501, 3);
  const refresh_result got = r->refresh();
  EXPECT_TRUE(got.moved);
  EXPECT_EQ(got.epoch, w->epoch());
  EXPECT_EQ(r->epoch(), w->epoch());
  const std::vector<std::pair<std::uint64_t, std::uint64_t>> want = {{10, 20}, {1500, 1501}};
  EXPECT_EQ(got.changed, want);
  expect_version(*r, 10, 20, 2);
  expect_version(*r, 1500, 1501, 3);
  expect_version(*r, 0, 10, 1);
  EXPECT_EQ(sparse_store::readers(path()).size(), 1u) << "the old slot is released";
  const refresh_result again = r->refresh();
  EXPECT_FALSE(again.moved);
  EXPECT_TRUE(again.changed.empty());
}

TEST_P(StoreReaders, OverThePinLimitTheOldestReaderGetsStaleNeverAWrongByte) {
  auto w = make(2048, 64 * kPage);  // room for 64 copies
  write_epoch(*w, 0, 2048, 1);
  auto old = reader();
  write_epoch(*w, 0, 2048, 2);
  auto young = reader();
  write_epoch(*w, 0, 2048, 3);  // the old reader's copies cannot all be kept
  try {
    expect_version(*old, 0, 2048, 1);
    ADD_FAILURE() << "the old reader read its whole watermark although most of it was overwritten";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::stale) << e.what();
    EXPECT_NE(std::string(e.what()).find("pin limit"), std::string::npos) << e.what();
  }
  EXPECT_GE(w->stats().readers_expired, 1u);
  // Refreshing brings it back to the newest watermark.
  old->refresh();
  expect_version(*old, 0, 2048, 3);
  EXPECT_EQ(young->epoch(), 2u);
}

TEST_P(StoreReaders, AReadOnlyOpenBelowTheWritersNewestWatermarkIsRefusedAsStale) {
  auto w = make();
  write_epoch(*w, 0, 16, 1);
  write_epoch(*w, 0, 16, 2);
  try {
    reader(1);
    FAIL() << "opened an epoch the writer may be overwriting";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::stale) << e.what();
  }
}

TEST_P(StoreReaders, RemoveIsRefusedWhileAReaderIsAttachedAndSucceedsAfter) {
  {
    auto w = make();
    write_epoch(*w, 0, 16, 1);
  }
  auto r = reader();
  try {
    sparse_store::remove(path(), open_opts());
    FAIL() << "removed a datastore a reader reads";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::locked) << e.what();
    EXPECT_NE(std::string(e.what()).find("reader"), std::string::npos) << e.what();
  }
  expect_version(*r, 0, 16, 1);
  r.reset();
  sparse_store::remove(path(), open_opts());
  EXPECT_FALSE(std::filesystem::exists(path()));
}

TEST_P(StoreReaders, AKilledReaderLeavesNoSlotAndItsCopiesGo) {
  auto w = make();
  write_epoch(*w, 0, 2048, 1);
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(ready[0]);
    try {
      store_options o;
      o.read_only = true;
      auto r = sparse_store::open(path(), o);
      const char c = 'r';
      if (::write(ready[1], &c, 1) != 1) ::_exit(3);
      ::pause();
    } catch (...) {
    }
    ::_exit(2);
  }
  ::close(ready[1]);
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::close(ready[0]);
  write_epoch(*w, 0, 2048, 2);
  write_epoch(*w, 0, 2048, 3);
  EXPECT_GT(w->stats().pinned_bytes, 0u);
  ::kill(child, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(sparse_store::readers(path()).empty());
  write_epoch(*w, 0, 16, 4);  // a commit reaps the dead slot and the copies only it needed
  EXPECT_EQ(w->stats().pinned_bytes, 0u);
  EXPECT_EQ(w->stats().readers, 0u);
}

TEST_P(StoreReaders, AReaderKeepsReadingWhenTheWriterIsKilledAndTheNextWriterHonoursIt) {
  {
    auto w = make();
    write_epoch(*w, 0, 2048, 1);
  }
  auto r = reader();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    try {
      store_options o;
      auto w = sparse_store::open(path(), o);
      write_epoch(*w, 0, 2048, 2);
      write_epoch(*w, 0, 2048, 3);
      write_epoch(*w, 0, 1024, 4);  // written, not committed: then killed
      std::vector<std::uint8_t> b = pattern(kPage, 7, 0, 5);
      page_write pw{0, b.data()};
      w->write_pages(std::span<const page_write>(&pw, 1));
      ::raise(SIGKILL);
    } catch (...) {
    }
    ::_exit(2);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  expect_version(*r, 0, 2048, 1);
  auto w = sparse_store::open(path(), open_opts());
  EXPECT_EQ(w->epoch(), 4u);
  for (std::uint64_t v = 5; v <= 7; ++v) write_epoch(*w, 0, 2048, v);
  expect_version(*r, 0, 2048, 1);
  expect_version(*w, 0, 2048, 7);
}

TEST_P(StoreReaders, AFormat3DatastoreOpensReadOnlyAsBeforeAndUpgradesInPlace) {
  {
    auto w = make(64);
    write_epoch(*w, 0, 64, 1);
  }
  // Rewrite both superblock slots as format 3 (the same bytes but the version and the CRC).
  {
    const std::string super = path() + "/pheap.super";
    std::vector<std::byte> sb = read_file(super);
    for (std::size_t slot = 0; slot < 2; ++slot) {
      std::byte* s = sb.data() + slot * 8192;
      if (s[0] != std::byte{'P'}) continue;
      const std::uint32_t three = 3;
      std::memcpy(s + 8, &three, 4);
      const std::uint32_t crc = crc32c(s, 8188);
      std::memcpy(s + 8188, &crc, 4);
    }
    write_file(super, sb);
  }
  try {
    sparse_store::open(path(), open_opts());
    FAIL() << "a format-3 datastore opened read-write";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::older_format) << e.what();
    EXPECT_NE(std::string(e.what()).find("pheap upgrade"), std::string::npos) << e.what();
  }
  {
    auto r = reader();
    expect_version(*r, 0, 64, 1);
    try {
      sparse_store::open(path(), open_opts());
      FAIL() << "format 3 keeps the exclusive protocol: no writer beside a reader";
    } catch (const error& e) {
      EXPECT_TRUE(e.code() == errc::locked || e.code() == errc::older_format) << e.what();
    }
    EXPECT_THROW(r->refresh(), error);
  }
  EXPECT_TRUE(sparse_store::upgrade_in_place(path(), open_opts()));
  EXPECT_FALSE(sparse_store::upgrade_in_place(path(), open_opts()));
  auto w = sparse_store::open(path(), open_opts());
  EXPECT_EQ(sparse_store::peek(path()).format_version, 4u);
  auto r = reader();
  write_epoch(*w, 0, 64, 2);
  write_epoch(*w, 0, 64, 3);
  expect_version(*r, 0, 64, 1);
}

TEST_P(StoreReaders, ADirectMappingWriterAndReadersExcludeEachOther) {
  auto w = make(256);
  write_epoch(*w, 0, 256, 1);
  {
    auto r = reader();
    try {
      w->prepare_direct_mapping(bytes_of("m"));
      FAIL() << "mapped directly while a reader reads";
    } catch (const error& e) {
      EXPECT_EQ(e.code(), errc::locked) << e.what();
      EXPECT_NE(std::string(e.what()).find("kernel-mmap"), std::string::npos) << e.what();
    }
    EXPECT_THROW(r->direct_extents(), error) << "a reader beside a writer maps nothing directly";
  }
  w->prepare_direct_mapping(bytes_of("m"));
  try {
    reader();
    FAIL() << "a reader attached beside a direct mapping";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::locked) << e.what();
  }
  w->finish_direct_mapping(bytes_of("m2"));
  auto r = reader();
  EXPECT_EQ(r->root(), bytes_of("m2"));
}

}  // namespace
}  // namespace pheap::test
