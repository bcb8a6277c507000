// `pheap check` verifies every page of a datastore against its checksum before it maps the
// heap: damage in a data page that no allocator invariant reads is reported (exit 1, naming
// the segment file and the page) instead of passing as "sound" — or, had the heap read it
// through the pager, ending the tool by SIGBUS.
#include <gtest/gtest.h>

#include "common/damage.hpp"
#include "common/test_util.hpp"
#include "pheap/pheap.hpp"
#include "reliability/reliability_util.hpp"

namespace pheap::test {
namespace {

#ifdef PHEAP_TOOL_BIN
const std::string kTool = PHEAP_TOOL_BIN;
#else
const std::string kTool;
#endif

constexpr char kFill = 0x3c;
constexpr std::size_t kBlob = 256u << 10;

TEST(PheapCheck, DamagedDataPageIsReportedNamingTheSegmentAndThePage) {
  ASSERT_FALSE(kTool.empty()) << "built without PHEAP_TOOL_BIN";
  scratch_dir d;
  const std::string ds = d / "heap";
  try {
    make_blob_heap(ds, "blob", kFill, kBlob);  // closed: its pages are in the segments
  } catch (const error& e) {
    if (e.code() != errc::unavailable) throw;
    PHEAP_REQUIRE_FEATURE(std::string("userfaultfd pager: ") + e.what());
    return;
  }
  const auto sound = run_child({kTool, "check", ds});
  ASSERT_TRUE(sound.exited(0)) << sound.describe() << "\n" << sound.out << sound.err;
  EXPECT_NE(sound.out.find("sound"), std::string::npos) << sound.out;
  EXPECT_NE(sound.out.find("pages verified"), std::string::npos) << sound.out;

  const std::string seg = damage_block_of(ds, kFill);
  ASSERT_FALSE(seg.empty()) << "no page of the blob found in the segments";
  const auto damaged = run_child({kTool, "check", ds});
  EXPECT_TRUE(damaged.exited(1)) << damaged.describe() << "\n" << damaged.out << damaged.err;
  EXPECT_NE(damaged.out.find(seg), std::string::npos) << damaged.out;
  EXPECT_NE(damaged.out.find("fails its checksum"), std::string::npos) << damaged.out;
  EXPECT_NE(damaged.out.find("1 damaged page(s)"), std::string::npos) << damaged.out;
}

}  // namespace
}  // namespace pheap::test
