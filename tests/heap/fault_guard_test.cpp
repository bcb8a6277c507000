// Damaged data and read-only writes meet their documented outcomes (pheap/fault_guard.hpp):
// a damaged page read inside guard_faults is the store's error naming the segment file and the
// page, and consistent() turns false; outside a guard it stays SIGBUS; a SIGBUS that is not
// pheap's goes to the action installed before (the default one, or a sanitizer's); a store
// into a read-only heap (or an access from a fork() child) dies by SIGSEGV after one line
// naming the datastore and the address.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "common/damage.hpp"
#include "common/test_util.hpp"
#include "pheap/pheap.hpp"

namespace pheap::test {
namespace {

// The outcome of a SIGBUS that is not pheap's: the action installed before pheap's handler.
// That is the default action (death by SIGBUS), except under AddressSanitizer, whose own SIGBUS
// handler reports and exits with status 1.
#ifdef __SANITIZE_ADDRESS__
constexpr int kForeignSigbus = 1;
#else
constexpr int kForeignSigbus = 128 + SIGBUS;
#endif

constexpr char kFill = 0x5a;
constexpr std::size_t kBlob = 256u << 10;

// Sums the blob: reads every one of its pages. The tests damage the blob's last page, not the
// first, which also holds the object's header: a SIGBUS while find() holds the directory lock
// would leave it locked (the caveat of fault_guard.hpp).
std::uint64_t sum_blob(const manager& m) {
  const auto [p, n] = m.find<char>("blob");
  if (p == nullptr) throw std::runtime_error("no blob");
  std::uint64_t s = 0;
  for (std::size_t i = 0; i < n; ++i) s += static_cast<unsigned char>(p[i]);
  return s;
}

constexpr which_block kLast = which_block::last;

class FaultGuard : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      make_blob_heap(ds_, "blob", kFill, kBlob);
    } catch (const error& e) {
      if (e.code() != errc::unavailable) throw;
      PHEAP_REQUIRE_FEATURE(std::string("userfaultfd pager: ") + e.what());
    }
  }
  temp_dir dir_;
  const std::string ds_ = dir_ / "heap";
};

TEST_F(FaultGuard, ReadsThroughTheGuardReturnTheValueWhenNothingIsDamaged) {
  manager m(open_read_only, ds_);
  EXPECT_EQ(guard_faults([&] { return sum_blob(m); }), kBlob * static_cast<unsigned char>(kFill));
  EXPECT_TRUE(m.consistent());
}

TEST_F(FaultGuard, DamagedPageReadInsideTheGuardThrowsTheStoresErrorNamingSegmentAndPage) {
  const std::string seg = damage_block_of(ds_, kFill, kLast);
  ASSERT_FALSE(seg.empty());
  manager m(open_read_only, ds_);
  EXPECT_TRUE(m.consistent());
  try {
    guard_faults([&] { return sum_blob(m); });
    ADD_FAILURE() << "the damaged page was read without an error";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::corrupt) << e.what();
    EXPECT_NE(std::string(e.what()).find(seg), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("page "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("fails its checksum"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(m.consistent());
  // The page stays poisoned: a second guarded read fails the same way; the manager still works.
  EXPECT_EQ(code_of([&] { guard_faults([&] { return sum_blob(m); }); }), errc::corrupt);
  EXPECT_EQ(m.get_num_named_objects(), 1u);
}

TEST_F(FaultGuard, DamagedPageReadOutsideAGuardIsStillSigbus) {
  ASSERT_FALSE(damage_block_of(ds_, kFill, kLast).empty());
  const int rc = run_in_child([&] {
    ::close(STDERR_FILENO);  // the pager's line about the page is expected; keep the log clean
    manager m(open_read_only, ds_);
    return static_cast<int>(sum_blob(m) & 0x7f);
  });
  EXPECT_EQ(rc, kForeignSigbus);
}

TEST_F(FaultGuard, ASigbusThatIsNotAPagersGoesToThePreviousAction) {
  const int rc = run_in_child([&] {
    manager m(open_read_only, ds_);  // the handlers are installed
    guard_faults([] { ::raise(SIGBUS); });
    return 0;
  });
  EXPECT_EQ(rc, kForeignSigbus);
}

TEST_F(FaultGuard, StoreIntoAReadOnlyHeapDiesBySigsegvAfterOneLineNamingDatastoreAndAddress) {
  const std::string log = dir_ / "stderr.txt";
  const int rc = run_in_child([&] {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, STDERR_FILENO);
    manager m(open_read_only, ds_);
    char* p = m.find<char>("blob").first;
    std::fprintf(stderr, "target %p\n", static_cast<void*>(p + 100));
    std::fflush(stderr);
    *reinterpret_cast<volatile char*>(p + 100) = 1;
    return 0;
  });
  EXPECT_EQ(rc, 128 + SIGSEGV);
  std::ifstream f(log);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string err = ss.str();
  const auto t = err.find("target 0x");
  ASSERT_NE(t, std::string::npos) << err;
  const std::string addr = err.substr(t + 7, err.find('\n', t) - t - 7);
  EXPECT_NE(err.find("pheap: SIGSEGV at " + addr + ": write into the heap of datastore " + ds_ +
                     ", which is open read-only"),
            std::string::npos)
      << err;
}

TEST_F(FaultGuard, AccessFromAForkChildDiesBySigsegvAfterOneLineSayingWhy) {
  manager m(open_read_only, ds_);
  const char* p = m.find<char>("blob").first;
  const std::string log = dir_ / "stderr.txt";
  const int rc = run_in_child([&] {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, STDERR_FILENO);
    return static_cast<int>(*reinterpret_cast<const volatile char*>(p));
  });
  EXPECT_EQ(rc, 128 + SIGSEGV);
  std::ifstream f(log);
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_NE(ss.str().find("in the heap of datastore " + ds_ + ", which a fork() child does not inherit"),
            std::string::npos)
      << ss.str();
}

}  // namespace
}  // namespace pheap::test
