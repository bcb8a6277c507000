// Read-only managers beside a writer (pheap/manager.hpp "Processes", manager::refresh): a
// reader reads named containers exactly at its watermark while a writer process flushes; a
// refresh moves it to the newest watermark without closing, keeping resident the pages whose
// copy did not change; a reader the writer released past the pin limit gets errc::stale naming
// the datastore (an exception inside guard_faults, one line and SIGBUS outside), and reads
// again after a refresh; a refresh that finds the heap grown past what an RLIMIT_AS let the
// reader map says to reopen.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "manager_fixture.hpp"
#include "pheap/crc32c.hpp"
#include "pheap/fault_guard.hpp"

namespace pheap::test {
namespace {

using u64_vec = container::vector<std::uint64_t>;

// 4 KiB pages, a small buffer that holds the whole heap used here.
options reader_options(std::uint64_t capacity = 256ull << 20) {
  options o = small_options(capacity);
  o.page_size = 4096;
  o.pager.buffer_size = 64ull << 20;
  return o;
}

// The CRC32C of every element of the named vector, and its length: the reader's checksum of
// its whole view of it.
std::pair<std::uint32_t, std::uint64_t> view_of(const manager& m, std::string_view name) {
  const u64_vec* v = m.find<u64_vec>(name).first;
  if (v == nullptr) return {0, 0};
  return {crc32c(v->data(), v->size() * sizeof(std::uint64_t)), v->size()};
}

class ManagerReaders : public manager_test {};

// Two vectors of 1 MiB each; the writer rewrites one of them. After the refresh the reader
// reads both again: the pages of the unchanged one cost no store read (they stayed resident),
// the changed one is read from the new watermark.
TEST_F(ManagerReaders, RefreshSeesTheWritersNewWatermarkAndKeepsUnchangedPagesResident) {
  constexpr std::size_t kWords = (1u << 20) / 8;
  manager w(create_only, path_, reader_options());
  auto* a = w.construct<u64_vec>("a")(kWords, 1, w.get_allocator<>());
  auto* b = w.construct<u64_vec>("b")(kWords, 1, w.get_allocator<>());
  const std::uint64_t e1 = w.flush();

  manager r(open_read_only, path_, reader_options());
  EXPECT_EQ(r.epoch(), e1);
  const auto a1 = view_of(r, "a"), b1 = view_of(r, "b");
  EXPECT_EQ(a1.second, kWords);

  for (auto& x : *b) x = 2;
  w.construct<int>("new")(7);
  (void)a;
  const std::uint64_t e2 = w.flush();
  ASSERT_GT(e2, e1);
  EXPECT_EQ(r.epoch(), e1) << "a reader stays at its watermark until it refreshes";
  EXPECT_EQ(view_of(r, "b"), b1);
  EXPECT_EQ(r.find<int>("new").first, nullptr);

  const manager_stats before = r.stats();
  EXPECT_EQ(r.refresh(), e2);
  EXPECT_EQ(r.epoch(), e2);
  EXPECT_EQ(r.stats().epoch, e2);
  const manager_stats refreshed = r.stats();
  EXPECT_EQ(refreshed.pager.refreshes, 1u);
  const std::uint64_t b_pages = kWords * 8 / 4096;
  EXPECT_GE(refreshed.pager.invalidated_pages, b_pages) << "b's pages were dropped";
  EXPECT_LT(refreshed.pager.invalidated_pages, b_pages + 16) << "and little else: " << refreshed.pager;

  // Found again (the object directory's page changed: "new" went into it), then read whole.
  const u64_vec* ra = r.find<u64_vec>("a").first;
  ASSERT_NE(ra, nullptr);
  const manager_stats found = r.stats();
  EXPECT_EQ(crc32c(ra->data(), ra->size() * 8), a1.first);
  const manager_stats after_a = r.stats();
  EXPECT_EQ(after_a.pager.pages_read, found.pager.pages_read)
      << "a's pages stayed resident: no store read for them (" << after_a.pager << ")";
  const auto b2 = view_of(r, "b");
  EXPECT_NE(b2, b1);
  EXPECT_EQ(b2.first, crc32c(std::vector<std::uint64_t>(kWords, 2).data(), kWords * 8));
  EXPECT_GE(r.stats().pager.pages_read - after_a.pager.pages_read, b_pages);
  ASSERT_NE(r.find<int>("new").first, nullptr);
  EXPECT_EQ(*r.find<int>("new").first, 7);
  EXPECT_EQ(r.get_num_named_objects(), 3u);
  EXPECT_TRUE(r.check().empty());
  EXPECT_EQ(before.pager.refreshes, 0u);
  EXPECT_EQ(r.refresh(), e2) << "nothing new: the same epoch";
}

TEST_F(ManagerReaders, RefreshIsRefusedOnAReadWriteManagerAndWithTheMmapBackend) {
  { manager w(create_only, path_, reader_options()); }
  {
    manager w(open_only, path_, reader_options());
    EXPECT_EQ(code_of([&] { w.refresh(); }), errc::invalid_argument);
  }
  options mm = reader_options();
  mm.backend = backend_kind::mmap;
  manager r(open_read_only, path_, mm);
  try {
    r.refresh();
    ADD_FAILURE() << "the mmap backend refreshed";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::unavailable) << e.what();
    EXPECT_NE(std::string(e.what()).find("reopen"), std::string::npos) << e.what();
  }
}

// A read-only open reserves address space for the whole capacity, so that a refresh finds
// the part a writer grows the heap into mapped already.
TEST_F(ManagerReaders, AReadOnlyOpenReservesTheWholeCapacityAndARefreshReadsWhatTheWriterGrewInto) {
  constexpr std::uint64_t kCapacity = 1ull << 30;
  manager w(create_only, path_, reader_options(kCapacity));
  w.construct<int>("x")(1);
  w.flush();
  manager r(open_read_only, path_, reader_options(kCapacity));
  EXPECT_EQ(mapping_length_at(r.get_address()), kCapacity);
  const std::size_t words = (200u << 20) / 8;  // far past the part in use at the open
  auto* big = w.construct<u64_vec>("big")(words, 5, w.get_allocator<>());
  (*big)[words - 1] = 6;
  w.flush();
  r.refresh();
  const u64_vec* seen = r.find<u64_vec>("big").first;
  ASSERT_NE(seen, nullptr);
  ASSERT_EQ(seen->size(), words);
  EXPECT_EQ((*seen)[0], 5u);
  EXPECT_EQ(seen->back(), 6u);
}

// Under an address-space limit below the capacity a read-only open maps only the part of
// the heap in use (pager_options::read_only_map_bytes); a refresh that finds the heap grown
// past it throws errc::unavailable saying to reopen, and every later call throws the same.
// The reader is a child with RLIMIT_AS at its own size + 256 MiB (a sanitizer's shadow is in
// that size: the limit bounds what the reader maps next), the writer a second child; both are
// forked while this process has no datastore open (no pager threads).
TEST_F(ManagerReaders, UnderAnAddressSpaceLimitARefreshPastTheMappedPartSaysReopen) {
  constexpr std::uint64_t kCapacity = 4ull << 30;
  {
    manager w(create_only, path_, reader_options(kCapacity));
    w.construct<int>("x")(1);
  }
  int ready[2], go[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(go), 0);
  std::fflush(nullptr);
  const pid_t reader = ::fork();
  if (reader == 0) {
    int rc = 10;
    try {
      std::ifstream statm("/proc/self/statm");
      std::uint64_t pages = 0;
      statm >> pages;
      const rlim_t limit = pages * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE)) + (256ull << 20);
      const rlimit rl{limit, limit};
      if (::setrlimit(RLIMIT_AS, &rl) != 0) std::_Exit(11);
      manager r(open_read_only, path_, reader_options(kCapacity));
      if (mapping_length_at(r.get_address()) >= kCapacity / 4) std::_Exit(12);  // the part in use
      char c = 'r';
      if (::write(ready[1], &c, 1) != 1 || ::read(go[0], &c, 1) != 1) std::_Exit(13);
      try {
        r.refresh();
        std::_Exit(14);
      } catch (const error& e) {
        if (e.code() != errc::unavailable || std::string(e.what()).find("open the datastore again") == std::string::npos) {
          std::fprintf(stderr, "reader: %s\n", e.what());
          std::_Exit(15);
        }
      }
      rc = code_of([&] { (void)r.find<int>("x"); }) == errc::unavailable ? 0 : 16;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "reader: %s\n", e.what());
    }
    std::_Exit(rc);
  }
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  const int grown = run_in_child([&] {
    manager w(open_only, path_, reader_options(kCapacity));  // beside the reader
    return w.construct<u64_vec>("big")((1024u << 20) / 8, 5, w.get_allocator<>()) != nullptr ? 0 : 1;
  });
  EXPECT_EQ(grown, 0);
  ASSERT_EQ(::write(go[1], "g", 1), 1);
  int status = 0;
  ::waitpid(reader, &status, 0);
  EXPECT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the reader's step that failed (10 + n)";
  for (int fd : {ready[0], ready[1], go[0], go[1]}) ::close(fd);
}

// The writer keeps at most 64 KiB of copies for readers (the pin limit of the reader table,
// fixed by the first process that attaches: the writer). Rewriting a 1 MiB vector twice needs
// more: the reader is released, and its next read of a page it had not read is errc::stale
// naming the datastore — an exception inside guard_faults — never the writer's bytes; after
// a refresh it reads the newest watermark.
TEST_F(ManagerReaders, AReaderReleasedPastThePinLimitGetsStaleNamingTheDatastoreAndReadsAgainAfterARefresh) {
  constexpr std::size_t kWords = (1u << 20) / 8;
  options o = reader_options();
  o.pin_limit = 64u << 10;
  manager w(create_only, path_, o);
  auto* v = w.construct<u64_vec>("v")(kWords, 1, w.get_allocator<>());
  w.flush();
  manager r(open_read_only, path_, o);
  const u64_vec* seen = r.find<u64_vec>("v").first;  // the vector's header; its elements unread
  ASSERT_NE(seen, nullptr);
  for (std::uint64_t k = 2; k <= 3; ++k) {
    for (auto& x : *v) x = k;
    w.flush();
  }
  EXPECT_EQ(w.stats().store.readers_expired, 1u);
  try {
    guard_faults([&] {
      std::uint64_t sum = 0;
      for (const std::uint64_t x : *seen) sum += x;
      return sum;
    });
    ADD_FAILURE() << "a released watermark was read";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::stale) << e.what();
    EXPECT_NE(std::string(e.what()).find(path_), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("released by the writer"), std::string::npos) << e.what();
  }
  r.refresh();
  seen = r.find<u64_vec>("v").first;
  ASSERT_NE(seen, nullptr);
  const std::uint64_t sum = guard_faults([&] {
    std::uint64_t s = 0;
    for (const std::uint64_t x : *seen) s += x;
    return s;
  });
  EXPECT_EQ(sum, 3 * kWords);
  EXPECT_GE(r.stats().pager.unpoisoned_pages, 1u);
}

// Outside guard_faults, the released reader dies of SIGBUS after one line on stderr naming the
// datastore and the cause — not silent zeros, not a hang. (Writer and reader in the child.)
TEST_F(ManagerReaders, AReleasedReaderOutsideAGuardDiesOfSigbusAfterOneLineNamingTheDatastore) {
  const child_outcome out = run_in_child_capturing_stderr([&] {
    constexpr std::size_t kWords = (1u << 20) / 8;
    options o = reader_options();
    o.pin_limit = 64u << 10;
    manager w(create_only, path_, o);
    auto* v = w.construct<u64_vec>("v")(kWords, 1, w.get_allocator<>());
    w.flush();
    manager r(open_read_only, path_, o);
    const u64_vec* seen = r.find<u64_vec>("v").first;
    for (std::uint64_t k = 2; k <= 3; ++k) {
      for (auto& x : *v) x = k;
      w.flush();
    }
    std::uint64_t sum = 0;
    for (const std::uint64_t x : *seen) sum += x;
    return static_cast<int>(sum & 0x3f);  // not reached
  });
  // The default action after pheap's line is death by SIGBUS; under AddressSanitizer its own
  // SIGBUS handler reports and exits with status 1 instead (as in fault_guard_test.cpp).
#ifdef __SANITIZE_ADDRESS__
  EXPECT_EQ(out.status, 1) << out.err;
  EXPECT_NE(out.err.find("AddressSanitizer: BUS"), std::string::npos) << out.err;
#else
  EXPECT_EQ(out.status, 128 + SIGBUS) << out.err;
#endif
  EXPECT_NE(out.err.find(path_), std::string::npos) << out.err;
  EXPECT_NE(out.err.find("released by the writer"), std::string::npos) << out.err;
}

TEST_F(ManagerReaders, StatsOfTheReaderAndOfTheWriterNameTheReadersAndThePinLimit) {
  options o = reader_options();
  o.pin_limit = 32ull << 20;
  manager w(create_only, path_, o);
  auto* v = w.construct<u64_vec>("v")(4096, 1, w.get_allocator<>());
  const std::uint64_t e1 = w.flush();
  manager r(open_read_only, path_, o);
  (void)view_of(r, "v");
  // The first rewrite goes to the homes the reader's epoch does not use; the second comes back
  // to those it does: the writer keeps a copy of each first.
  for (std::uint64_t k = 2; k <= 3; ++k) {
    for (auto& x : *v) x = k;
    w.flush();
  }
  const manager_stats ws = w.stats(), rs = r.stats();
  for (const manager_stats& s : {ws, rs}) {
    EXPECT_EQ(s.store.readers, 1u);
    EXPECT_EQ(s.store.oldest_reader_epoch, e1);
    EXPECT_EQ(s.store.pin_limit, 32ull << 20);
    EXPECT_GT(s.store.pinned_bytes, 0u) << "the writer kept v's old pages for the reader";
  }
  EXPECT_GT(ws.store.pins_made, 0u);
  r.refresh();
  EXPECT_EQ(w.stats().store.oldest_reader_epoch, w.epoch()) << "the reader moved";
}

// A writer process constructs, grows, rewrites and destroys named vectors and flushes every
// few milliseconds, appending each watermark's epoch and the CRC32C of every vector to a log
// after its flush returns. A reader in this process opens beside it, refreshes again and
// again, and after each refresh compares the checksum of its whole view (every vector,
// re-found by name) with the log's line for its epoch: it must equal it exactly.
TEST_F(ManagerReaders, AReaderRefreshingBesideAFlushingWriterProcessSeesExactlyTheWritersLoggedWatermarks) {
  const std::string log = dir_ / "log";
  { manager w(create_only, path_, reader_options()); }
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  std::fflush(nullptr);
  const pid_t writer = ::fork();
  if (writer == 0) {
    int rc = 0;
    try {
      manager w(open_only, path_, reader_options());
      std::FILE* f = std::fopen(log.c_str(), "w");
      std::uint64_t seed = 1;
      auto next = [&] { return seed = seed * 6364136223846793005ull + 1442695040888963407ull; };
      for (int k = 0; k < 600; ++k) {
        const std::string name = "v" + std::to_string(next() % 6);
        u64_vec* v = w.find_or_construct<u64_vec>(name.c_str())(w.get_allocator<>());
        switch (next() % 4) {
          case 0: v->resize(v->size() + next() % 20000, k); break;  // grows (may move)
          case 1: for (std::size_t i = next() % 7; i < v->size(); i += 7) (*v)[i] = next(); break;
          case 2: if (!v->empty()) v->resize(v->size() / 2); break;
          default: w.destroy<u64_vec>(name.c_str()); break;
        }
        const std::uint64_t e = w.flush();
        std::fprintf(f, "%llu", static_cast<unsigned long long>(e));
        for (int i = 0; i < 6; ++i) {
          const auto [crc, n] = view_of(w, "v" + std::to_string(i));
          std::fprintf(f, " %u:%llu", crc, static_cast<unsigned long long>(n));
        }
        std::fprintf(f, "\n");
        std::fflush(f);
        if (k == 0 && ::write(ready[1], "r", 1) != 1) rc = 3;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      std::fclose(f);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "writer: %s\n", e.what());
      rc = 2;
    }
    std::_Exit(rc);
  }
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  int writer_status = -1;  // once reaped
  auto writer_gone = [&] {
    int st = 0;
    if (writer_status == -1 && ::waitpid(writer, &st, WNOHANG) == writer) writer_status = st;
    return writer_status != -1;
  };
  // The log's line for `epoch`, waiting for the writer to write it.
  auto logged = [&](std::uint64_t epoch) {
    for (;;) {
      const bool gone = writer_gone();  // before this read of the log: then no line can come
      std::ifstream in(log);
      std::string line;
      while (std::getline(in, line)) {
        std::istringstream ls(line);
        std::uint64_t e = 0;
        ls >> e;
        if (e == epoch) return line.substr(line.find(' '));
      }
      if (gone) return std::string(" (not in the writer's log)");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  };
  manager r(open_read_only, path_, reader_options());
  std::uint64_t refreshes = 0, moved = 0, mismatches = 0, last = r.epoch();
  // Until the writer is done and the reader has its last watermark (a few ms apart: the writer
  // gets the CPU too).
  for (bool done = false; !done && mismatches == 0; ++refreshes) {
    done = writer_gone();
    const std::uint64_t e = r.refresh();
    if (done && e != manager::peek(path_).epoch) done = false;  // one more, at the last one
    moved += e != last;
    last = e;
    std::ostringstream mine;
    for (int i = 0; i < 6; ++i) {
      const auto [crc, n] = view_of(r, "v" + std::to_string(i));
      mine << ' ' << crc << ':' << n;
    }
    const std::string theirs = logged(e);
    if (mine.str() != theirs) {
      ++mismatches;
      ADD_FAILURE() << "epoch " << e << ": the reader sees" << mine.str() << ", the writer logged" << theirs;
    }
    EXPECT_TRUE(r.check().empty());
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
  }
  if (writer_status == -1) ::waitpid(writer, &writer_status, 0);
  EXPECT_TRUE(WIFEXITED(writer_status) && WEXITSTATUS(writer_status) == 0) << writer_status;
  EXPECT_EQ(mismatches, 0u);
  EXPECT_GT(moved, 20u) << "the reader moved with the writer (" << refreshes << " refreshes)";
  EXPECT_GT(r.stats().pager.invalidated_pages, 0u);
  ::close(ready[0]);
  ::close(ready[1]);
}

}  // namespace
}  // namespace pheap::test
