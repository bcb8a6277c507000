// White-box tests of the posix transfer loops (base/posix_file.hpp): injected syscalls return
// short counts, EINTR, EAGAIN and end of file, which real local files rarely do on demand.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "common/test_util.hpp"
#include "base/posix_file.hpp"
#include "pheap/error.hpp"

namespace pheap {
namespace {

// A fake file of `g_file.size()` bytes. Every call moves at most 3 bytes; every second call
// fails with EINTR and every fifth with EAGAIN first.
std::vector<char> g_file;
int g_calls = 0;

int injected_errno() {
  ++g_calls;
  if (g_calls % 2 == 0) return EINTR;
  if (g_calls % 5 == 0) return EAGAIN;
  return 0;
}

ssize_t fake_pread(int, void* buf, size_t len, off_t off) {
  if (int e = injected_errno()) {
    errno = e;
    return -1;
  }
  if (static_cast<std::size_t>(off) >= g_file.size()) return 0;
  const std::size_t n = std::min({len, std::size_t{3}, g_file.size() - static_cast<std::size_t>(off)});
  std::memcpy(buf, g_file.data() + off, n);
  return static_cast<ssize_t>(n);
}

ssize_t fake_pwrite(int, const void* buf, size_t len, off_t off) {
  if (int e = injected_errno()) {
    errno = e;
    return -1;
  }
  const std::size_t n = std::min(len, std::size_t{3});
  if (g_file.size() < static_cast<std::size_t>(off) + n) g_file.resize(off + n);
  std::memcpy(g_file.data() + off, buf, n);
  return static_cast<ssize_t>(n);
}

ssize_t failing_pwrite(int, const void*, size_t, off_t) {
  errno = ENOSPC;
  return -1;
}

ssize_t stuck_pwrite(int, const void*, size_t, off_t) { return 0; }

ssize_t failing_pread(int, void*, size_t, off_t) {
  errno = EIO;
  return -1;
}

TEST(IoTransferLoop, ShortWritesEintrAndEagainAreRetriedUntilComplete) {
  g_file.clear();
  g_calls = 0;
  const auto data = test::pattern(1001, 1, 0, 0);
  io::pwrite_full(-1, "fake", 10, data.data(), data.size(), &fake_pwrite);
  ASSERT_EQ(g_file.size(), 1011u);
  EXPECT_EQ(std::memcmp(g_file.data() + 10, data.data(), data.size()), 0);
  EXPECT_GT(g_calls, 2 * 334) << "the fake must really have split and interrupted the write";
}

TEST(IoTransferLoop, ShortReadsAreRetriedAndEndOfFileZeroFillsTheRest) {
  g_file.assign(100, 'x');
  g_calls = 0;
  std::vector<char> buf(250, '\xAA');
  io::pread_full(-1, "fake", 40, buf.data(), buf.size(), &fake_pread);
  EXPECT_TRUE(std::all_of(buf.begin(), buf.begin() + 60, [](char c) { return c == 'x'; }));
  EXPECT_TRUE(std::all_of(buf.begin() + 60, buf.end(), [](char c) { return c == 0; }));
}

TEST(IoTransferLoop, ErrorsNameThePathOffsetAndErrno) {
  std::vector<char> buf(64);
  try {
    io::pwrite_full(-1, "/x/seg-1", 4096, buf.data(), buf.size(), &failing_pwrite);
    ADD_FAILURE() << "no exception";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::no_space);
    EXPECT_EQ(e.sys_errno(), ENOSPC);
    EXPECT_NE(std::string(e.what()).find("/x/seg-1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("4096"), std::string::npos) << e.what();
  }
  try {
    io::pread_full(-1, "/x/seg-2", 0, buf.data(), buf.size(), &failing_pread);
    ADD_FAILURE() << "no exception";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::io);
    EXPECT_EQ(e.sys_errno(), EIO);
    EXPECT_NE(std::string(e.what()).find("/x/seg-2"), std::string::npos) << e.what();
  }
}

TEST(IoTransferLoop, WriteWithoutProgressFailsInsteadOfSpinning) {
  std::vector<char> buf(64);
  try {
    io::pwrite_full(-1, "/x/stuck", 0, buf.data(), buf.size(), &stuck_pwrite);
    ADD_FAILURE() << "no exception";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::io);
    EXPECT_NE(std::string(e.what()).find("/x/stuck"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace pheap
