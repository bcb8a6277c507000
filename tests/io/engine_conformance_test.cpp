// Every engine keeps the contract of pheap/io.hpp: the same suite runs over posix, io_uring and
// the fault engine (without rules) wrapping each of them.
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "common/test_util.hpp"
#include "pheap/error.hpp"
#include "pheap/io.hpp"
#include "base/posix_file.hpp"
#include "support/fault_engine.hpp"

namespace pheap {
namespace {

using io::engine;
using io::open_mode;
using test::temp_dir;

// Small on purpose, so that batches of a few dozen requests exceed it.
constexpr unsigned kUringDepth = 8;

struct engine_case {
  const char* name;
  std::function<std::shared_ptr<engine>()> make;
  bool direct;  // every file is opened with open_mode::direct
};

std::vector<engine_case> engine_cases() {
  std::vector<engine_case> v;
  for (const bool direct : {false, true}) {
    v.push_back({direct ? "posix_direct" : "posix", [] { return io::make_posix_engine(); }, direct});
    v.push_back({direct ? "io_uring_direct" : "io_uring",
                 [] { return io::make_uring_engine(kUringDepth); }, direct});
    v.push_back({direct ? "fault_posix_direct" : "fault_posix",
                 [] { return test::make_fault_engine(io::make_posix_engine()); }, direct});
    v.push_back({direct ? "fault_io_uring_direct" : "fault_io_uring",
                 [] { return test::make_fault_engine(io::make_uring_engine(kUringDepth)); },
                 direct});
  }
  return v;
}

class IoEngine : public ::testing::TestWithParam<engine_case> {
 protected:
  void SetUp() override {
    try {
      eng_ = GetParam().make();
    } catch (const error& e) {
      if (e.code() != errc::unavailable) throw;
      PHEAP_REQUIRE_FEATURE(std::string("io_uring: ") + e.what());
    }
  }

  // Opens through `e` in the case's mode (open_mode::direct added for the direct cases).
  std::unique_ptr<io::file> open(engine& e, const std::string& path, open_mode mode) const {
    return e.open(path, GetParam().direct ? mode | open_mode::direct : mode);
  }

  std::vector<std::uint8_t> read_back(io::file& f, std::uint64_t off, std::size_t len) {
    std::vector<std::uint8_t> v(len, 0xAA);
    eng_->read_at(f, off, v.data(), len);
    return v;
  }

  std::shared_ptr<engine> eng_;
  temp_dir dir_;
};

// Expects `fn` to throw pheap::error with `code` and `path` in its message.
template <class Fn>
void expect_error(Fn&& fn, errc code, const std::string& path) {
  try {
    fn();
    ADD_FAILURE() << "no exception thrown";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

TEST_P(IoEngine, WriteThenReadRoundTripsAtVariousSizesAndOffsets) {
  auto f = open(*eng_, dir_ / "a", open_mode::create);
  const std::size_t sizes[] = {1, 511, 512, 4096, 65536 + 7, 3 << 20};
  std::uint64_t off = 13;
  for (std::size_t i = 0; i < std::size(sizes); ++i) {
    const auto data = test::pattern(sizes[i], 1, i, 0);
    eng_->write_at(*f, off, data.data(), data.size());
    EXPECT_EQ(read_back(*f, off, sizes[i]), data) << "size " << sizes[i];
    off += sizes[i] + 4096;
  }
  EXPECT_EQ(eng_->size(*f), off - 4096);
  eng_->sync(*f);
  // Reopened through a new handle the bytes are the same.
  auto g = open(*eng_, dir_ / "a", open_mode::read_only);
  EXPECT_EQ(read_back(*g, 13, 1), test::pattern(1, 1, 0, 0));
}

TEST_P(IoEngine, BatchSpanningSeveralFilesAndExceedingQueueDepthRoundTrips) {
  constexpr int kFiles = 3;
  constexpr std::size_t kReqs = 10 * kUringDepth + 3;
  constexpr std::size_t kLen = 8192;
  std::vector<std::unique_ptr<io::file>> files;
  for (int i = 0; i < kFiles; ++i) {
    files.push_back(open(*eng_, dir_ / ("f" + std::to_string(i)), open_mode::create_new));
  }
  std::vector<std::vector<std::uint8_t>> data(kReqs);
  std::vector<io::write_request> writes;
  for (std::size_t i = 0; i < kReqs; ++i) {
    data[i] = test::pattern(kLen, 2, i, 0);
    // Reverse order of offsets inside each file: the batch is not sorted.
    writes.push_back({files[i % kFiles].get(), (kReqs - i) * kLen, data[i].data(), kLen});
  }
  eng_->write(writes);
  std::vector<std::vector<std::uint8_t>> got(kReqs, std::vector<std::uint8_t>(kLen, 0xAA));
  std::vector<io::read_request> reads;
  for (std::size_t i = 0; i < kReqs; ++i) {
    reads.push_back({files[i % kFiles].get(), (kReqs - i) * kLen, got[i].data(), kLen});
  }
  eng_->read(reads);
  for (std::size_t i = 0; i < kReqs; ++i) EXPECT_EQ(got[i], data[i]) << "request " << i;
}

TEST_P(IoEngine, ReadPastEndOfFileYieldsZeros) {
  auto f = open(*eng_, dir_ / "short", open_mode::create);
  const auto data = test::pattern(1000, 3, 0, 0);
  eng_->write_at(*f, 0, data.data(), data.size());

  // Straddling end of file: the file's bytes, then zeros (not the 0xAA the buffer held).
  auto v = read_back(*f, 500, 4096);
  EXPECT_TRUE(std::equal(data.begin() + 500, data.end(), v.begin()));
  EXPECT_TRUE(std::all_of(v.begin() + 500, v.end(), [](std::uint8_t b) { return b == 0; }));
  // Entirely beyond end of file, in a batch with an in-range request.
  std::vector<std::uint8_t> beyond(8192, 0xAA), inside(100, 0xAA);
  io::read_request reqs[] = {{f.get(), 1 << 20, beyond.data(), beyond.size()},
                             {f.get(), 0, inside.data(), inside.size()}};
  eng_->read(reqs);
  EXPECT_TRUE(std::all_of(beyond.begin(), beyond.end(), [](std::uint8_t b) { return b == 0; }));
  EXPECT_TRUE(std::equal(inside.begin(), inside.end(), data.begin()));
  // An empty file reads as zeros too.
  auto e = open(*eng_, dir_ / "empty", open_mode::create);
  auto z = read_back(*e, 0, 512);
  EXPECT_TRUE(std::all_of(z.begin(), z.end(), [](std::uint8_t b) { return b == 0; }));
}

TEST_P(IoEngine, ShortTransfersInjectedByFaultRulesAreAbsorbed) {
  auto fe = test::make_fault_engine(eng_);
  fe->add_rule({test::op_kind::any, 1, test::fault_action::short_transfer, /*sticky=*/true});
  auto f = open(*fe, dir_ / "s", open_mode::create);
  const auto data = test::pattern(3 * 4096 + 17, 4, 0, 0);
  fe->write_at(*f, 100, data.data(), data.size());
  std::vector<std::uint8_t> got(data.size() + 300, 0xAA);
  fe->read_at(*f, 100, got.data(), got.size());
  EXPECT_TRUE(std::equal(data.begin(), data.end(), got.begin()));
  EXPECT_TRUE(std::all_of(got.begin() + static_cast<std::ptrdiff_t>(data.size()), got.end(),
                          [](std::uint8_t b) { return b == 0; }));
  // The inner engine saw the untouched file contents too.
  EXPECT_EQ(eng_->size(*open(*eng_, dir_ / "s", open_mode::read_only)), 100 + data.size());
}

TEST_P(IoEngine, InterruptedTransfersInjectedByFaultRulesAreRetried) {
  auto fe = test::make_fault_engine(eng_);
  fe->add_rule({test::op_kind::write, 2, test::fault_action::interrupt, false});
  fe->add_rule({test::op_kind::read, 1, test::fault_action::interrupt, true});
  auto f = open(*fe, dir_ / "i", open_mode::create);
  std::vector<std::vector<std::uint8_t>> data;
  std::vector<io::write_request> w;
  for (int i = 0; i < 4; ++i) data.push_back(test::pattern(4096, 5, i, 0));
  for (int i = 0; i < 4; ++i) w.push_back({f.get(), i * 4096ull, data[i].data(), 4096});
  fe->write(w);
  for (int i = 0; i < 4; ++i) {
    std::vector<std::uint8_t> got(4096, 0xAA);
    fe->read_at(*f, i * 4096ull, got.data(), got.size());
    EXPECT_EQ(got, data[i]) << "page " << i;
  }
}

TEST_P(IoEngine, EioOnNthWriteSurfacesAsIoErrorNamingThePath) {
  auto fe = test::make_fault_engine(eng_);
  fe->add_rule({test::op_kind::write, 3, test::fault_action::fail_eio, false});
  const std::string path = dir_ / "eio";
  auto f = open(*fe, path, open_mode::create);
  const auto data = test::pattern(4096, 6, 0, 0);
  fe->write_at(*f, 0, data.data(), 4096);
  fe->write_at(*f, 4096, data.data(), 4096);
  expect_error([&] { fe->write_at(*f, 8192, data.data(), 4096); }, errc::io, path);
  EXPECT_EQ(fe->size(*f), 8192u) << "the failed write must have no effect";
  fe->write_at(*f, 8192, data.data(), 4096);  // not sticky: the next one succeeds
  EXPECT_EQ(fe->size(*f), 12288u);
}

TEST_P(IoEngine, EnospcOnNthOperationSurfacesAsNoSpaceNamingThePath) {
  auto fe = test::make_fault_engine(eng_);
  const std::string path = dir_ / "full";
  auto f = open(*fe, path, open_mode::create);  // operation 1
  fe->add_rule({test::op_kind::any, 3, test::fault_action::fail_enospc, false});
  const auto data = test::pattern(512, 7, 0, 0);
  fe->write_at(*f, 0, data.data(), 512);  // operation 2
  expect_error([&] { fe->sync(*f); }, errc::no_space, path);  // operation 3
  fe->add_rule({test::op_kind::read, 1, test::fault_action::fail_eio, false});
  std::vector<std::uint8_t> buf(512);
  expect_error([&] { fe->read_at(*f, 0, buf.data(), 512); }, errc::io, path);
}

// A datastore's files are regular files: anything else where one is opened (a FIFO that would
// block the open until a writer came, a directory, a device) is refused at once, naming it.
TEST_P(IoEngine, ANonRegularFileIsRefusedAtOpenWithoutBlocking) {
  const std::string d = dir_ / "subdir";
  eng_->create_dir(d);
  const std::string fifo = dir_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const auto mode : {open_mode::read_only, open_mode::read_write,
                          open_mode::read_only | open_mode::direct,
                          open_mode::read_write | open_mode::direct}) {
    for (const std::string& p : {d, fifo, std::string("/dev/zero")}) {
      // (a FIFO opened without O_NONBLOCK would wait here for a writer for ever)
      expect_error([&] { open(*eng_, p, mode); }, errc::corrupt, p);
    }
  }
}

TEST_P(IoEngine, KernelErrorsDuringTransfersNameThePath) {
  std::vector<std::uint8_t> buf(4096);
  // Writing through a read-only handle: EBADF.
  const std::string p = dir_ / "ro";
  open(*eng_, p, open_mode::create);
  auto r = open(*eng_, p, open_mode::read_only);
  expect_error([&] { eng_->write_at(*r, 0, buf.data(), buf.size()); }, errc::io, p);
}

// RLIMIT_FSIZE makes the kernel perform a write that straddles the limit partially (a real
// short write), and fail the resubmitted remainder with EFBIG. Run in a child: the limit and
// the ignored SIGXFSZ are process-wide.
TEST_P(IoEngine, WriteCutShortByTheKernelIsResumedAndItsFailureNamesThePath) {
  const std::string p = dir_ / "limited";
  auto f = open(*eng_, p, open_mode::create);
  const int rc = test::run_in_child([&] {
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit lim{10000, 10000};
    ::setrlimit(RLIMIT_FSIZE, &lim);
    const auto data = test::pattern(8192, 14, 0, 0);
    try {
      eng_->write_at(*f, 4096, data.data(), data.size());
    } catch (const error& e) {
      return (e.sys_errno() == EFBIG && std::string(e.what()).find(p) != std::string::npos) ? 0 : 2;
    }
    return 1;
  });
  EXPECT_EQ(rc, 0) << "1: no error, 2: wrong error";
  // The kernel wrote the part below the limit before refusing the rest.
  EXPECT_EQ(eng_->size(*f), 10000u);
  const auto data = test::pattern(8192, 14, 0, 0);
  auto v = read_back(*f, 4096, 10000 - 4096);
  EXPECT_TRUE(std::equal(v.begin(), v.end(), data.begin()));
}

TEST_P(IoEngine, MissingFilesAndDirectoriesNameThePath) {
  const std::string p = dir_ / "nope";
  expect_error([&] { open(*eng_, p, open_mode::read_only); }, errc::not_found, p);
  expect_error([&] { open(*eng_, p, open_mode::read_write); }, errc::not_found, p);
  expect_error([&] { eng_->remove_file(p); }, errc::not_found, p);
  expect_error([&] { eng_->list_dir(p); }, errc::not_found, p);
  expect_error([&] { eng_->sync_dir(p); }, errc::not_found, p);
  expect_error([&] { eng_->rename(p, dir_ / "x"); }, errc::not_found, p);
  expect_error([&] { eng_->clone_file(p, dir_ / "y"); }, errc::not_found, p);
  EXPECT_FALSE(eng_->exists(p));
  EXPECT_FALSE(eng_->exists(dir_ / "y"));
}

TEST_P(IoEngine, CreateNewAndCreateDirRefuseExistingPaths) {
  const std::string p = dir_ / "once";
  open(*eng_, p, open_mode::create_new);
  expect_error([&] { open(*eng_, p, open_mode::create_new); }, errc::already_exists, p);
  EXPECT_NO_THROW(open(*eng_, p, open_mode::create));
  const std::string d = dir_ / "d";
  eng_->create_dir(d);
  expect_error([&] { eng_->create_dir(d); }, errc::already_exists, d);
}

TEST_P(IoEngine, DirectoryOperationsListRenameAndRemove) {
  const std::string d = dir_ / "dir";
  eng_->create_dir(d);
  for (const char* n : {"c", "a", "b"}) open(*eng_, d + "/" + n, open_mode::create_new);
  eng_->sync_dir(d);
  EXPECT_EQ(eng_->list_dir(d), (std::vector<std::string>{"a", "b", "c"}));
  eng_->rename(d + "/a", d + "/z");
  EXPECT_FALSE(eng_->exists(d + "/a"));
  EXPECT_TRUE(eng_->exists(d + "/z"));
  for (const char* n : {"b", "c", "z"}) eng_->remove_file(d + "/" + n);
  EXPECT_TRUE(eng_->list_dir(d).empty());
  eng_->remove_dir(d);
  EXPECT_FALSE(eng_->exists(d));
}

TEST_P(IoEngine, TruncateSetsSizeAndCutsContent) {
  auto f = open(*eng_, dir_ / "t", open_mode::create);
  const auto data = test::pattern(10000, 8, 0, 0);
  eng_->write_at(*f, 0, data.data(), data.size());
  eng_->truncate(*f, 3000);
  EXPECT_EQ(eng_->size(*f), 3000u);
  eng_->truncate(*f, 20000);
  EXPECT_EQ(eng_->size(*f), 20000u);
  auto v = read_back(*f, 0, 20000);
  EXPECT_TRUE(std::equal(data.begin(), data.begin() + 3000, v.begin()));
  EXPECT_TRUE(std::all_of(v.begin() + 3000, v.end(), [](std::uint8_t b) { return b == 0; }));
  eng_->sync(*f);
}

TEST_P(IoEngine, PunchHoleShrinksAllocatedBytesAndReadsBackZeros) {
  auto f = open(*eng_, dir_ / "p", open_mode::create);
  constexpr std::size_t kLen = 4 << 20;
  const auto data = test::pattern(kLen, 9, 0, 0);
  eng_->write_at(*f, 0, data.data(), kLen);
  eng_->sync(*f);
  const auto before = eng_->allocated_bytes(*f);
  EXPECT_GE(before, kLen);
  eng_->punch_hole(*f, 1 << 20, 2 << 20);
  const auto after = eng_->allocated_bytes(*f);
  EXPECT_LE(after, before - (2 << 20) + 65536) << "before " << before << " after " << after;
  EXPECT_EQ(eng_->size(*f), kLen) << "punching keeps the size";
  auto v = read_back(*f, 0, kLen);
  EXPECT_TRUE(std::equal(v.begin(), v.begin() + (1 << 20), data.begin()));
  EXPECT_TRUE(std::all_of(v.begin() + (1 << 20), v.begin() + (3 << 20),
                          [](std::uint8_t b) { return b == 0; }));
  EXPECT_TRUE(std::equal(v.begin() + (3 << 20), v.end(), data.begin() + (3 << 20)));
}

TEST_P(IoEngine, CloneFileKeepsContentAndHoles) {
  const std::string src = dir_ / "src";
  const std::string dst = dir_ / "dst";
  constexpr std::uint64_t kSize = 16 << 20;
  {
    auto f = open(*eng_, src, open_mode::create);
    const auto a = test::pattern(65536, 10, 0, 0);
    const auto b = test::pattern(65536, 10, 1, 0);
    eng_->write_at(*f, 0, a.data(), a.size());
    eng_->write_at(*f, 8 << 20, b.data(), b.size());
    eng_->truncate(*f, kSize);
    eng_->sync(*f);
    ASSERT_LT(eng_->allocated_bytes(*f), 1u << 20) << "the source must be sparse";
  }
  eng_->clone_file(src, dst);
  auto s = open(*eng_, src, open_mode::read_only);
  auto d = open(*eng_, dst, open_mode::read_only);
  EXPECT_EQ(eng_->size(*d), kSize);
  EXPECT_EQ(read_back(*d, 0, kSize), read_back(*s, 0, kSize));
  EXPECT_LE(eng_->allocated_bytes(*d), eng_->allocated_bytes(*s) + 65536)
      << "holes of the source must stay holes";
  // The destination must not exist beforehand.
  expect_error([&] { eng_->clone_file(src, dst); }, errc::already_exists, dst);
}

TEST_P(IoEngine, ConcurrentBatchesFromManyThreadsRoundTrip) {
  constexpr int kThreads = 8;
  constexpr int kRounds = 20;
  constexpr std::size_t kPerBatch = 24;
  constexpr std::size_t kLen = 4096;
  auto f1 = open(*eng_, dir_ / "c1", open_mode::create);
  auto f2 = open(*eng_, dir_ / "c2", open_mode::create);
  std::atomic<int> mismatches{0};
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        for (int round = 0; round < kRounds; ++round) {
          std::vector<std::vector<std::uint8_t>> data(kPerBatch), got(kPerBatch);
          std::vector<io::write_request> w;
          std::vector<io::read_request> r;
          for (std::size_t i = 0; i < kPerBatch; ++i) {
            const std::uint64_t page = static_cast<std::uint64_t>(t) * kPerBatch + i;
            data[i] = test::pattern(kLen, 11, page, static_cast<std::uint64_t>(round));
            got[i].assign(kLen, 0xAA);
            io::file* f = (i % 2 == 0) ? f1.get() : f2.get();
            w.push_back({f, page * kLen, data[i].data(), kLen});
            r.push_back({f, page * kLen, got[i].data(), kLen});
          }
          eng_->write(w);
          eng_->read(r);
          for (std::size_t i = 0; i < kPerBatch; ++i) {
            if (got[i] != data[i]) ++mismatches;
          }
        }
      } catch (const std::exception& e) {
        ++errors;
        ADD_FAILURE() << e.what();
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(errors.load(), 0);
}


// A direct-mode file keeps every contract whatever the alignment of memory, offset and length:
// aligned requests take O_DIRECT (bounced when the memory is not aligned), the rest the
// buffered descriptor, and both see each other's bytes.
TEST_P(IoEngine, DirectModeFilesRoundTripEveryAlignmentOfMemoryOffsetAndLength) {
  auto f = open(*eng_, dir_ / "d", open_mode::create);
  EXPECT_EQ(f->direct(), GetParam().direct) << "this file system accepts O_DIRECT";
  io::aligned_buffer aligned(4096, 3 * 65536);
  std::vector<std::uint8_t> model(8 << 20, 0);
  struct req {
    std::uint64_t off;
    std::size_t len;
    bool aligned_mem;
  };
  const req reqs[] = {{0, 65536, true},          {65536, 65536, false},  // aligned, bounced
                      {131072 + 100, 5000, false}, {200000, 4096, true},  // buffered route
                      {4096 * 100, 3 * 65536, true}, {4096 * 7, 4096, false}};
  int i = 0;
  for (const auto& r : reqs) {
    const auto data = test::pattern(r.len, 21, static_cast<std::uint64_t>(i++), 0);
    std::vector<std::uint8_t> unaligned(r.len + 1);
    std::uint8_t* src = r.aligned_mem ? reinterpret_cast<std::uint8_t*>(aligned.data()) : unaligned.data() + 1;
    std::memcpy(src, data.data(), r.len);
    eng_->write_at(*f, r.off, src, r.len);
    std::memcpy(model.data() + r.off, data.data(), r.len);
  }
  const std::uint64_t end = 4096 * 100 + 3 * 65536;
  EXPECT_EQ(eng_->size(*f), end);
  for (const auto& r : reqs) {
    for (const bool aligned_mem : {true, false}) {
      std::vector<std::uint8_t> unaligned(r.len + 1, 0xAA);
      std::uint8_t* dst = aligned_mem ? reinterpret_cast<std::uint8_t*>(aligned.data()) : unaligned.data() + 1;
      std::memset(dst, 0xAA, r.len);
      eng_->read_at(*f, r.off, dst, r.len);
      EXPECT_TRUE(std::equal(dst, dst + r.len, model.begin() + static_cast<std::ptrdiff_t>(r.off)))
          << "offset " << r.off << " length " << r.len << (aligned_mem ? " aligned" : " unaligned");
    }
  }
  // An aligned read straddling the end of file: the bytes, then zeros.
  std::memset(aligned.data(), 0xAA, 65536);
  eng_->read_at(*f, end - 4096, aligned.data(), 65536);
  const auto* got = reinterpret_cast<const std::uint8_t*>(aligned.data());
  EXPECT_TRUE(std::equal(got, got + 4096, model.begin() + static_cast<std::ptrdiff_t>(end - 4096)));
  EXPECT_TRUE(std::all_of(got + 4096, got + 65536, [](std::uint8_t b) { return b == 0; }));
  eng_->sync(*f);
}

// Pages of `f` (by mmap + mincore) that are in the page cache.
std::size_t cached_pages(const io::file& f, std::size_t len) {
  void* m = ::mmap(nullptr, len, PROT_READ, MAP_SHARED, f.fd(), 0);
  if (m == MAP_FAILED) return ~std::size_t{0};
  std::vector<unsigned char> v(len / 4096);
  const int rc = ::mincore(m, len, v.data());
  ::munmap(m, len);
  if (rc != 0) return ~std::size_t{0};
  return static_cast<std::size_t>(std::count_if(v.begin(), v.end(), [](unsigned char c) { return c & 1; }));
}

TEST_P(IoEngine, DirectModeKeepsDataOutOfThePageCache) {
  if (!GetParam().direct) {
    EXPECT_FALSE(open(*eng_, dir_ / "b", open_mode::create)->direct());
    return;
  }
  struct statfs fs {};
  ASSERT_EQ(::statfs(dir_.path().c_str(), &fs), 0);
  const bool in_memory_fs = fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC;
  constexpr std::size_t kLen = 1 << 20;
  auto f = open(*eng_, dir_ / "c", open_mode::create);
  io::aligned_buffer buf(4096, kLen);
  std::memset(buf.data(), 0x5A, kLen);
  eng_->write_at(*f, 0, buf.data(), kLen);  // O_DIRECT
  std::vector<std::uint8_t> small(100, 0x11);
  eng_->write_at(*f, kLen - 200, small.data(), small.size());  // buffered route
  eng_->sync(*f);  // ...whose cached pages the sync drops
  if (!in_memory_fs) {
    EXPECT_EQ(cached_pages(*f, kLen), 0u) << "written bypassing the page cache";
    eng_->read_at(*f, 0, buf.data(), kLen);
    EXPECT_EQ(cached_pages(*f, kLen), 0u) << "read bypassing the page cache";
  }
  EXPECT_EQ(read_back(*f, kLen - 200, 100), small);
}

TEST_P(IoEngine, SyncOfSeveralFilesSyncsEachAndNamesAFailingOne) {
  std::vector<std::unique_ptr<io::file>> files;
  std::vector<io::file*> ptrs;
  for (int i = 0; i < 5; ++i) {
    files.push_back(open(*eng_, dir_ / ("s" + std::to_string(i)), open_mode::create));
    const auto data = test::pattern(4096, 22, static_cast<std::uint64_t>(i), 0);
    eng_->write_at(*files.back(), 0, data.data(), data.size());
    ptrs.push_back(files.back().get());
  }
  eng_->sync_files(ptrs);
  eng_->sync_files({});
  auto fe = test::make_fault_engine(eng_);
  std::vector<std::unique_ptr<io::file>> ffiles;
  std::vector<io::file*> fptrs;
  for (int i = 0; i < 3; ++i) {
    ffiles.push_back(open(*fe, dir_ / ("s" + std::to_string(i)), open_mode::read_write));
    fptrs.push_back(ffiles.back().get());
  }
  fe->add_rule({test::op_kind::sync, 2, test::fault_action::fail_eio, false});
  expect_error([&] { fe->sync_files(fptrs); }, errc::io, dir_ / "s1");
  EXPECT_EQ(fe->operations(test::op_kind::sync), 2u) << "one counted sync per file";
}

INSTANTIATE_TEST_SUITE_P(AllEngines, IoEngine, ::testing::ValuesIn(engine_cases()),
                         [](const auto& tp) { return std::string(tp.param.name); });

// ---- engine-specific --------------------------------------------------------------------

std::shared_ptr<engine> uring_or_skip(unsigned depth, std::string* why) {
  try {
    return io::make_uring_engine(depth);
  } catch (const error& e) {
    if (e.code() != errc::unavailable) throw;
    *why = e.what();
    return nullptr;
  }
}

TEST(IoUringEngine, QueueDepthOfOneStillCompletesLargeBatches) {
  std::string why;
  auto eng = uring_or_skip(1, &why);
  if (!eng) PHEAP_REQUIRE_FEATURE("io_uring: " + why);
  temp_dir dir;
  auto f = eng->open(dir / "q1", open_mode::create);
  std::vector<std::vector<std::uint8_t>> data(50);
  std::vector<io::write_request> w;
  for (std::size_t i = 0; i < data.size(); ++i) {
    data[i] = test::pattern(1000, 12, i, 0);
    w.push_back({f.get(), i * 1000, data[i].data(), 1000});
  }
  eng->write(w);
  std::vector<std::uint8_t> all(50 * 1000 + 24, 0xAA);
  eng->read_at(*f, 0, all.data(), all.size());
  for (std::size_t i = 0; i < data.size(); ++i) {
    EXPECT_TRUE(std::equal(data[i].begin(), data[i].end(), all.begin() + i * 1000)) << i;
  }
  EXPECT_TRUE(std::all_of(all.end() - 24, all.end(), [](std::uint8_t b) { return b == 0; }));
}

TEST(IoUringEngine, ZeroQueueDepthIsRejected) {
  try {
    io::make_uring_engine(0);
    ADD_FAILURE() << "no exception";
  } catch (const error& e) {
    EXPECT_TRUE(e.code() == errc::invalid_argument || e.code() == errc::unavailable) << e.what();
  }
}

TEST(IoUringEngine, ForkedChildGetsItsOwnRings) {
  std::string why;
  auto eng = uring_or_skip(4, &why);
  if (!eng) PHEAP_REQUIRE_FEATURE("io_uring: " + why);
  temp_dir dir;
  auto f = eng->open(dir / "fork", open_mode::create);
  const auto parent_data = test::pattern(4096, 13, 0, 0);
  eng->write_at(*f, 0, parent_data.data(), 4096);  // the pool now holds a parent ring
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int rc = 0;
    try {
      const auto child_data = test::pattern(4096, 13, 1, 0);
      eng->write_at(*f, 4096, child_data.data(), 4096);
      std::vector<std::uint8_t> got(4096);
      eng->read_at(*f, 4096, got.data(), 4096);
      rc = got == child_data ? 0 : 1;
    } catch (...) {
      rc = 2;
    }
    _exit(rc);
  }
  // The parent keeps using its ring while the child runs.
  std::vector<std::uint8_t> got(4096);
  for (int i = 0; i < 100; ++i) {
    eng->read_at(*f, 0, got.data(), 4096);
    ASSERT_EQ(got, parent_data);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  eng->read_at(*f, 4096, got.data(), 4096);
  EXPECT_EQ(got, test::pattern(4096, 13, 1, 0));
}

// default_engine() is a process-wide instance, so each choice is checked in a fresh child.
int default_engine_in_child(const char* env_value, const char* expect_name) {
  return test::run_in_child([&] {
    ::setenv("PHEAP_IO_ENGINE", env_value, 1);
    try {
      return io::default_engine()->name() == expect_name ? 0 : 1;
    } catch (const error& e) {
      return e.code() == errc::invalid_argument ? 10 : e.code() == errc::unavailable ? 11 : 12;
    }
  });
}

TEST(IoDefaultEngine, HonoursPheapIoEngineEnvironment) {
  EXPECT_EQ(default_engine_in_child("posix", "posix"), 0);
  EXPECT_EQ(default_engine_in_child("bogus", ""), 10);
  std::string why;
  const bool have_uring = uring_or_skip(4, &why) != nullptr;
  EXPECT_EQ(default_engine_in_child("uring", "io_uring"), have_uring ? 0 : 11);
  EXPECT_EQ(default_engine_in_child("", have_uring ? "io_uring" : "posix"), 0);
  EXPECT_EQ(io::default_engine(), io::default_engine()) << "one process-wide instance";
}

}  // namespace
}  // namespace pheap
