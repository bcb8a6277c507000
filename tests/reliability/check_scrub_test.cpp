// `pheap check` verifies every page of a datastore against its checksum before it maps the
// heap: damage in a data page that no allocator invariant reads is reported (exit 1, naming
// the segment file and the page) instead of passing as "sound" — or, had the heap read it
// through the pager, ending the tool by SIGBUS.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "common/test_util.hpp"
#include "pheap/pheap.hpp"
#include "reliability/reliability_util.hpp"

namespace pheap::test {
namespace {

namespace fs = std::filesystem;

#ifdef PHEAP_TOOL_BIN
const std::string kTool = PHEAP_TOOL_BIN;
#else
const std::string kTool;
#endif

constexpr char kFill = 0x3c;
constexpr std::size_t kBlob = 256u << 10;

// A heap holding one named 256 KiB array of kFill; closed, so its pages are in segments.
void make_heap(const std::string& path) {
  options o;
  o.pager.buffer_size = 8u << 20;
  manager m(create_only, path, o);
  char* blob = m.construct<char>("blob")[kBlob](kFill);
  ASSERT_NE(blob, nullptr);
  m.flush();
  m.flush();  // a second watermark: the data of the first is in the segments either way
}

// Offset of a page-aligned 4 KiB block made only of kFill in one of the datastore's segment
// files (a page of the blob), or npos.
std::pair<std::string, std::uint64_t> find_blob_page(const std::string& path) {
  for (const auto& e : fs::directory_iterator(path)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("segment-", 0) != 0) continue;
    std::ifstream f(e.path(), std::ios::binary);
    std::vector<char> page(4096);
    for (std::uint64_t off = 0; f.read(page.data(), 4096); off += 4096) {
      if (std::all_of(page.begin(), page.end(), [](char c) { return c == kFill; })) {
        return {e.path().string(), off};
      }
    }
  }
  return {"", std::string::npos};
}

TEST(PheapCheck, DamagedDataPageIsReportedNamingTheSegmentAndThePage) {
  ASSERT_FALSE(kTool.empty()) << "built without PHEAP_TOOL_BIN";
  scratch_dir d;
  const std::string ds = d / "heap";
  try {
    make_heap(ds);
  } catch (const error& e) {
    if (e.code() != errc::unavailable) throw;
    PHEAP_REQUIRE_FEATURE(std::string("userfaultfd pager: ") + e.what());
    return;
  }
  const auto sound = run_child({kTool, "check", ds});
  ASSERT_TRUE(sound.exited(0)) << sound.describe() << "\n" << sound.out << sound.err;
  EXPECT_NE(sound.out.find("sound"), std::string::npos) << sound.out;
  EXPECT_NE(sound.out.find("pages verified"), std::string::npos) << sound.out;

  const auto [seg, off] = find_blob_page(ds);
  ASSERT_FALSE(seg.empty()) << "no page of the blob found in the segments";
  {
    std::fstream f(seg, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(off + 1000));
    f.put(static_cast<char>(kFill ^ 0x01));
  }
  const auto damaged = run_child({kTool, "check", ds});
  EXPECT_TRUE(damaged.exited(1)) << damaged.describe() << "\n" << damaged.out << damaged.err;
  EXPECT_NE(damaged.out.find(seg), std::string::npos) << damaged.out;
  EXPECT_NE(damaged.out.find("fails its checksum"), std::string::npos) << damaged.out;
  EXPECT_NE(damaged.out.find("1 damaged page(s)"), std::string::npos) << damaged.out;
}

}  // namespace
}  // namespace pheap::test
