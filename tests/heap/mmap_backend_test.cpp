// The kernel-mmap backend (options::backend = backend_kind::mmap): the same heap over the
// segment files mapped MAP_SHARED. Checks: data round trip across processes and across
// backends, the clean-close requirement (an unclean close is refused by every later open),
// read-only opens, snapshots, freed chunks becoming holes, and PHEAP_BACKEND.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "manager_fixture.hpp"
#include "workload.hpp"

namespace {

using namespace pheap;
using namespace pheap::test;

options mmap_options(std::uint64_t capacity = 256ull << 20) {
  options o = small_options(capacity);
  o.backend = backend_kind::mmap;
  return o;
}

options uffd_options() {
  options o = small_options();
  o.backend = backend_kind::uffd;
  return o;
}

bool have_uffd(const std::string& probe_path) {
  try {
    manager probe(create_only, probe_path, uffd_options());
    return true;
  } catch (const error& e) {
    if (e.code() == errc::unavailable) return false;
    throw;
  }
}

class MmapBackend : public ::testing::Test {
 protected:
  temp_dir dir_;
  std::string path_ = dir_ / "ds";
};

TEST_F(MmapBackend, RoundTripAcrossProcessesAndBackends) {
  constexpr std::uint64_t n1 = 20000, n2 = 30000;
  ASSERT_EQ(run_in_child([&] {
              manager m(create_only, path_, mmap_options());
              if (m.stats().backend != backend_kind::mmap) return 2;
              heap_state s = open_state(m);
              for (std::uint64_t i = 1; i <= n1; ++i) apply_step(m, s, i);
              return 0;  // the destructor closes cleanly
            }),
            0);
  {
    manager r(open_read_only, path_, mmap_options());
    auto adj = r.find<adj_map>("adj");
    auto strs = r.find<str_map>("strs");
    ASSERT_NE(adj.first, nullptr);
    ASSERT_NE(strs.first, nullptr);
    heap_state s{adj.first, strs.first, r.find<std::uint64_t>("steps").first};
    EXPECT_EQ(*s.steps, n1);
    EXPECT_EQ(compare(s, reference(n1)), "");
  }
  // Continue in another process, read-write, with the mmap backend again.
  ASSERT_EQ(run_in_child([&] {
              manager m(open_only, path_, mmap_options());
              heap_state s = open_state(m);
              if (*s.steps != n1) return 2;
              for (std::uint64_t i = n1 + 1; i <= n2; ++i) apply_step(m, s, i);
              m.set_description("written by the mmap backend");
              return 0;
            }),
            0);
  EXPECT_TRUE(manager::consistent(path_));
  EXPECT_EQ(manager::get_description(path_), "written by the mmap backend");
  if (!have_uffd(dir_ / "probe")) { PHEAP_REQUIRE_FEATURE("userfaultfd, for the cross-backend half"); }
  // The uffd backend reads what the mmap backend wrote, and vice versa after a uffd write.
  {
    manager m(open_only, path_, uffd_options());
    heap_state s = open_state(m);
    ASSERT_EQ(*s.steps, n2);
    EXPECT_EQ(compare(s, reference(n2)), "");
    for (std::uint64_t i = n2 + 1; i <= n2 + 1000; ++i) apply_step(m, s, i);
  }
  {
    // A uffd close moved rewritten pages to their second homes: a read-only mmap open refuses.
    EXPECT_EQ(code_of([&] { manager r(open_read_only, path_, mmap_options()); }), errc::unavailable);
    manager m(open_only, path_, mmap_options());
    heap_state s = open_state(m);
    EXPECT_EQ(*s.steps, n2 + 1000);
    EXPECT_EQ(compare(s, reference(n2 + 1000)), "");
  }
  manager r(open_read_only, path_, uffd_options());
  heap_state s{r.find<adj_map>("adj").first, r.find<str_map>("strs").first, r.find<std::uint64_t>("steps").first};
  EXPECT_EQ(compare(s, reference(n2 + 1000)), "");
}

TEST_F(MmapBackend, UncleanCloseIsRefusedByEveryOpen) {
  for (const bool killed : {false, true}) {
    SCOPED_TRACE(killed ? "SIGKILL" : "_exit without close");
    temp_dir d;
    const std::string p = d / "ds";
    {
      manager m(create_only, p, mmap_options());
      heap_state s = open_state(m);
      for (std::uint64_t i = 1; i <= 100; ++i) apply_step(m, s, i);
    }
    ASSERT_TRUE(manager::consistent(p));
    const int rc = run_in_child([&] {
      manager m(open_only, p, mmap_options());
      heap_state s = open_state(m);
      for (std::uint64_t i = 101; i <= 5000; ++i) apply_step(m, s, i);
      m.flush();  // msync: the data is in the files, yet the datastore is not closed
      if (killed) ::kill(::getpid(), SIGKILL);
      std::_Exit(0);  // no destructor: an unclean close
      return 0;
    });
    EXPECT_EQ(rc, killed ? 128 + SIGKILL : 0);
    EXPECT_FALSE(manager::consistent(p));
    for (const backend_kind b : {backend_kind::mmap, backend_kind::uffd}) {
      options o = mmap_options();
      o.backend = b;
      try {
        manager m(open_only, p, o);
        ADD_FAILURE() << "read-write open of an unclean mmap datastore succeeded (" << to_string(b) << ")";
      } catch (const error& e) {
        EXPECT_EQ(e.code(), errc::corrupt) << e.what();
        EXPECT_NE(std::string(e.what()).find("not closed cleanly"), std::string::npos) << e.what();
      }
      EXPECT_EQ(code_of([&] { manager m(open_read_only, p, o); }), errc::corrupt);
    }
  }
}

TEST_F(MmapBackend, ReadOnlyOpenMapsReadOnlyAndRefusesMutation) {
  {
    manager m(create_only, path_, mmap_options());
    heap_state s = open_state(m);
    for (std::uint64_t i = 1; i <= 500; ++i) apply_step(m, s, i);
  }
  const auto before = std::filesystem::last_write_time(path_ + "/pheap.super");
  {
    manager r1(open_read_only, path_, mmap_options());
    manager r2(open_read_only, path_, mmap_options());  // many readers
    EXPECT_TRUE(r1.read_only());
    EXPECT_EQ(code_of([&] { manager w(open_only, path_, mmap_options()); }), errc::locked);
    EXPECT_EQ(code_of([&] { r1.flush(); }), errc::read_only);
    EXPECT_EQ(code_of([&] { r1.allocate(64); }), errc::read_only);
    EXPECT_EQ(code_of([&] { r1.set_description("x"); }), errc::read_only);
    EXPECT_EQ(*r2.find<std::uint64_t>("steps").first, 500u);
    heap_state s{r1.find<adj_map>("adj").first, r1.find<str_map>("strs").first, r1.find<std::uint64_t>("steps").first};
    EXPECT_EQ(compare(s, reference(500)), "");
    // The segment files are mapped read-only and shared: "r--s" in /proc/self/maps.
    std::ifstream maps("/proc/self/maps");
    int segment_maps = 0;
    for (std::string line; std::getline(maps, line);) {
      if (line.find(path_ + "/segment-") == std::string::npos) continue;
      ++segment_maps;
      EXPECT_EQ(line.substr(line.find(' ') + 1, 4), "r--s") << line;
    }
    EXPECT_GT(segment_maps, 0);
  }
  EXPECT_EQ(std::filesystem::last_write_time(path_ + "/pheap.super"), before);  // nothing written
  EXPECT_TRUE(manager::consistent(path_));
}

TEST_F(MmapBackend, SnapshotOpensCleanlyWithBothBackends) {
  const std::string snap = dir_ / "snap";
  {
    manager m(create_only, path_, mmap_options());
    heap_state s = open_state(m);
    for (std::uint64_t i = 1; i <= 3000; ++i) apply_step(m, s, i);
    m.snapshot(snap);
    for (std::uint64_t i = 3001; i <= 4000; ++i) apply_step(m, s, i);  // not in the snapshot
  }
  EXPECT_TRUE(manager::consistent(snap));
  EXPECT_NE(manager::get_uuid(snap), manager::get_uuid(path_));
  manager r(open_read_only, snap, mmap_options());
  heap_state s{r.find<adj_map>("adj").first, r.find<str_map>("strs").first, r.find<std::uint64_t>("steps").first};
  EXPECT_EQ(*s.steps, 3000u);
  EXPECT_EQ(compare(s, reference(3000)), "");
}

TEST_F(MmapBackend, FreedChunksBecomeHoles) {
  manager m(create_only, path_, mmap_options());
  constexpr std::size_t big = 32u << 20;
  void* p = m.allocate(big);
  ASSERT_NE(p, nullptr);
  std::memset(p, 0xAB, big);
  m.flush();
  const std::uint64_t full = m.stats().disk_bytes;
  m.deallocate(p);
  m.flush();
  const std::uint64_t after = m.stats().disk_bytes;
  EXPECT_GE(full, after + big / 2) << "full " << full << " after " << after;
}

TEST_F(MmapBackend, BackendFromEnvironment) {
  ::setenv("PHEAP_BACKEND", "mmap", 1);
  EXPECT_EQ(options::from_env().backend, backend_kind::mmap);
  EXPECT_EQ(options().backend, backend_kind::uffd) << "options{} reads no variable";
  ::setenv("PHEAP_BACKEND", "uffd", 1);
  EXPECT_EQ(options::from_env().backend, backend_kind::uffd);
  ::setenv("PHEAP_BACKEND", "kernel", 1);
  EXPECT_EQ(code_of([] { (void)options::from_env(); }), errc::invalid_argument);
  ::unsetenv("PHEAP_BACKEND");
  EXPECT_EQ(options::from_env().backend, backend_kind::uffd);
  EXPECT_STREQ(to_string(backend_kind::mmap), "mmap");
}

TEST_F(MmapBackend, OneFileCoveringTheCapacity) {
  options o = mmap_options(256ull << 20);
  o.segment_size = 256ull << 20;  // == capacity: one segment file
  {
    manager m(create_only, path_, o);
    heap_state s = open_state(m);
    for (std::uint64_t i = 1; i <= 2000; ++i) apply_step(m, s, i);
  }
  EXPECT_TRUE(std::filesystem::exists(path_ + "/segment-000000"));
  EXPECT_FALSE(std::filesystem::exists(path_ + "/segment-000001"));
  manager r(open_read_only, path_, o);
  heap_state s{r.find<adj_map>("adj").first, r.find<str_map>("strs").first, r.find<std::uint64_t>("steps").first};
  EXPECT_EQ(compare(s, reference(2000)), "");
}

}  // namespace
