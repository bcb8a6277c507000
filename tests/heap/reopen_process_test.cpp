// Containers of containers built in one process are found intact in another process that maps
// the heap at a different address, compared with a reference built in DRAM; and the
// one-writer / many-readers rule holds across processes.
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "manager_fixture.hpp"
#include "workload.hpp"

namespace {

using namespace pheap;
using namespace pheap::test;

class ReopenProcess : public manager_test {};

TEST_F(ReopenProcess, ContainersOfContainersMatchADramReferenceAtAnotherAddress) {
  constexpr std::uint64_t steps = 20000;
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const int rc = run_in_child([&] {
    manager m(create_only, path_, small_options());
    heap_state s = open_state(m);
    for (std::uint64_t i = 1; i <= steps; ++i) apply_step(m, s, i);
    const std::uintptr_t base = reinterpret_cast<std::uintptr_t>(m.get_address());
    if (::write(fds[1], &base, sizeof base) != sizeof base) return 3;
    return 0;  // the destructor flushes
  });
  ASSERT_EQ(rc, 0);
  std::uintptr_t child_base = 0;
  ASSERT_EQ(::read(fds[0], &child_base, sizeof child_base), static_cast<ssize_t>(sizeof child_base));
  ::close(fds[0]);
  ::close(fds[1]);

  // Occupy the child's address range so our mapping must land elsewhere.
  void* block = ::mmap(reinterpret_cast<void*>(child_base), 256ull << 20, PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ASSERT_NE(block, MAP_FAILED);
  const dram_state ref = reference(steps);
  {
    manager m(open_read_only, path_);
    EXPECT_NE(reinterpret_cast<std::uintptr_t>(m.get_address()), child_base);
    heap_state s{m.find<adj_map>("adj").first, m.find<str_map>("strs").first, m.find<std::uint64_t>("steps").first};
    ASSERT_NE(s.adj, nullptr);
    EXPECT_EQ(*s.steps, steps);
    EXPECT_EQ(compare(s, ref), "");
    EXPECT_TRUE(m.check().empty());
  }
  // Keep growing in this process (allocators stored inside the heap still work here).
  {
    manager m(open_only, path_);
    heap_state s = open_state(m);
    for (std::uint64_t i = steps + 1; i <= steps + 5000; ++i) apply_step(m, s, i);
  }
  ::munmap(block, 256ull << 20);
  manager m(open_read_only, path_);
  heap_state s{m.find<adj_map>("adj").first, m.find<str_map>("strs").first, m.find<std::uint64_t>("steps").first};
  EXPECT_EQ(compare(s, reference(steps + 5000)), "");
}

// Readers beside a writer (sparse_store/FORMAT.md): a read-only open succeeds while another
// process holds the datastore read-write, and reads its last watermark, not its unflushed
// writes; a second writer and remove() are refused; a writer opens beside a reader process.
TEST_F(ReopenProcess, AReaderOpensBesideAWriterProcessAtItsWatermarkWhileSecondWritersAndRemoveAreRefused) {
  { manager m(create_only, path_, small_options()); m.construct<int>("x")(1); }
  int ready[2], go[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(go), 0);
  std::fflush(nullptr);
  const pid_t writer = ::fork();
  if (writer == 0) {
    int rc = 1;
    try {
      manager m(open_only, path_);
      *m.find<int>("x").first = 2;  // not flushed yet
      char c = 'r';
      if (::write(ready[1], &c, 1) == 1 && ::read(go[0], &c, 1) == 1) {
        m.flush();
        if (::write(ready[1], &c, 1) == 1 && ::read(go[0], &c, 1) == 1) rc = 0;
      }
    } catch (...) {
    }
    std::_Exit(rc);
  }
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  {
    manager r(open_read_only, path_);
    EXPECT_EQ(*r.find<int>("x").first, 1) << "the watermark, not the writer's unflushed write";
  }
  EXPECT_EQ(code_of([&] { manager w(open_only, path_); }), errc::locked);
  EXPECT_EQ(code_of([&] { manager::remove(path_); }), errc::locked);
  EXPECT_TRUE(manager::consistent(path_)) << "inspected beside the writer";
  ASSERT_EQ(::write(go[1], "g", 1), 1);
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  {
    manager r(open_read_only, path_);
    EXPECT_EQ(*r.find<int>("x").first, 2) << "the writer's new watermark";
  }
  ASSERT_EQ(::write(go[1], "g", 1), 1);
  int status = 0;
  ::waitpid(writer, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);

  // Now a reader (child) holds it: another reader may join, a writer opens beside it, remove is
  // refused. The child is forked while this process has no datastore open (no pager threads:
  // fork-safe, TSan-safe).
  int ready2[2], go2[2];
  ASSERT_EQ(::pipe(ready2), 0);
  ASSERT_EQ(::pipe(go2), 0);
  std::fflush(nullptr);
  const pid_t reader = ::fork();
  if (reader == 0) {
    int rc = 1;
    try {
      manager r(open_read_only, path_);
      char byte = 'r';
      if (*r.find<int>("x").first == 2 && ::write(ready2[1], &byte, 1) == 1 && ::read(go2[0], &byte, 1) == 1 &&
          *r.find<int>("x").first == 2) {
        rc = 0;
      }
    } catch (...) {
    }
    std::_Exit(rc);
  }
  ASSERT_EQ(::read(ready2[0], &c, 1), 1);
  {
    manager r2(open_read_only, path_);
    EXPECT_EQ(*r2.find<int>("x").first, 2);
  }
  {
    manager w(open_only, path_);  // beside the reader
    *w.find<int>("x").first = 3;
    w.flush();
    *w.find<int>("x").first = 4;
    w.flush();
  }
  EXPECT_EQ(code_of([&] { manager::remove(path_); }), errc::locked);
  ASSERT_EQ(::write(go2[1], "g", 1), 1);
  ::waitpid(reader, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the reader kept its watermark";
  for (int fd : {ready2[0], ready2[1], go2[0], go2[1]}) ::close(fd);
  manager::remove(path_);  // and once everyone is gone, remove gets in
  ::close(ready[0]); ::close(ready[1]); ::close(go[0]); ::close(go[1]);
}

}  // namespace
