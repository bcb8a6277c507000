// `pheap` end to end, as a user meets it: --help and --version, one-line usage errors, --json
// that parses and carries its fields, tables that survive long type names and say what their
// sizes are, damaged pages as
// errors naming the segment file and the page (never a signal), snapshots that refuse damage,
// ls, info, check and snapshot beside a writer (info listing the readers), `upgrade DIR` of a
// format-3 datastore, what info's open did with huge pages, and progress on a terminal, in a
// log and --quiet.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <filesystem>
#include <string>
#include <type_traits>
#include <vector>

#include "common/damage.hpp"
#include "pheap/crc32c.hpp"
#include "common/test_util.hpp"
#include "pheap/pheap.hpp"
#include "pheap/sparse_store.hpp"
#include "tools/tool_test_util.hpp"

namespace pheap::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kTool = PHEAP_TOOL_BIN;

// A type whose pheap::type_name is over 300 characters.
template <class... T>
struct wide_type {
  std::uint64_t v[2];
};
template <unsigned long long N>
using big = std::integral_constant<unsigned long long, N>;
using long_t = wide_type<big<1000000000001ull>, big<1000000000002ull>, big<1000000000003ull>,
                         big<1000000000004ull>, big<1000000000005ull>, big<1000000000006ull>,
                         big<1000000000007ull>>;

constexpr char kFill = 0x4e;  // 'N': the blob's bytes

class PheapTool : public ::testing::Test {
 protected:
  // A closed heap: the blob (256 KiB of kFill), an object of a 300+ character type name with a
  // description, and three anonymous arrays.
  void SetUp() override {
    try {
      make_blob_heap(ds_, "blob", kFill, 256u << 10);
      manager m(open_only, ds_);
      auto* w = m.construct<long_t>("wide")();
      m.set_instance_description(w, "an object with a long type name");
      for (int i = 0; i < 3; ++i) m.construct<std::uint32_t>(anonymous_instance)[10 + i](7u);
      m.flush();
      m.flush();  // the pages are checkpointed into the segment files, where tests damage them
    } catch (const error& e) {
      if (e.code() != errc::unavailable) throw;
      PHEAP_REQUIRE_FEATURE(std::string("userfaultfd pager: ") + e.what());
    }
  }
  child_result tool(std::vector<std::string> args) const {
    args.insert(args.begin(), kTool);
    return run_child(args);
  }
  temp_dir dir_;
  const std::string ds_ = dir_ / "heap";
};

TEST(PheapToolCli, HelpOnTheToolAndEveryCommandExitsZeroAndExplainsEveryOption) {
  expect_help_explains_every_option(kTool, "pheap", {"ls", "info", "check", "snapshot", "rm"});
}

TEST(PheapToolCli, VersionPrintsTheLibraryVersionFromCMake) {
  const auto r = run_child({kTool, "--version"});
  ASSERT_TRUE(r.exited(0)) << r.describe();
  EXPECT_EQ(r.out, std::string("pheap ") + PHEAP_VERSION_STRING + " (datastore format " +
                       std::to_string(sparse_store::format_version) + ")\n");
}

TEST(PheapToolCli, UsageErrorPrintsOneLineNamingTheProblemAndExitsTwo) {
  struct c {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<c> cases{
      {{"ls"}, "PATH is required"},
      {{"ls", "a", "b"}, "not expected: b"},
      {{"bogus"}, "unknown command 'bogus'"},
      {{"info", "--buffer-size", "5X", "p"}, "bad size '5X'"},
      {{"info", "--huge-pages", "sometimes", "p"}, "--huge-pages"},
      {{"check", "--nope", "p"}, "--nope"},
      {{}, "pheap: a command is required (one of: ls info check snapshot rm upgrade)"},
  };
  for (const auto& x : cases) {
    std::vector<std::string> argv{kTool};
    argv.insert(argv.end(), x.args.begin(), x.args.end());
    const auto r = run_child(argv);
    EXPECT_TRUE(r.exited(2)) << r.describe();
    EXPECT_EQ(lines_of(r.err).size(), 1u) << r.err;
    EXPECT_NE(r.err.find(x.says), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("--help)"), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

TEST_F(PheapTool, JsonOfLsInfoAndCheckParsesAndCarriesTheFields) {
  auto r = tool({"ls", "--json", ds_});
  ASSERT_TRUE(r.exited(0)) << r.describe();
  std::string why;
  json j = parse_json(r.out, &why);
  ASSERT_FALSE(j.is_null()) << why << "\n" << r.out;
  EXPECT_EQ(j["datastore"], ds_);
  EXPECT_EQ(j["counts"]["named"], 2);
  EXPECT_EQ(j["counts"]["anonymous"], 3);
  ASSERT_EQ(j["objects"].size(), 5u);  // two named, then the three anonymous arrays
  std::vector<std::uint64_t> anonymous_lengths;
  for (const auto& o : j["objects"]) {
    if (o["kind"] == "anonymous") {
      EXPECT_EQ(o["name"], "");
      EXPECT_EQ(o["type"], std::string(type_name<std::uint32_t>()));
      anonymous_lengths.push_back(o["length"].get<std::uint64_t>());
    }
    for (const char* k : {"kind", "name", "type", "length", "bytes", "offset", "description"}) {
      EXPECT_TRUE(o.contains(k)) << k << " missing in " << o.dump();
    }
    if (o["name"] == "blob") {
      EXPECT_EQ(o["length"], 256u << 10);
      EXPECT_EQ(o["bytes"], 256u << 10);
    }
    if (o["name"] == "wide") {
      EXPECT_EQ(o["type"], std::string(type_name<long_t>()));
      EXPECT_EQ(o["description"], "an object with a long type name");
    }
  }
  std::sort(anonymous_lengths.begin(), anonymous_lengths.end());
  EXPECT_EQ(anonymous_lengths, (std::vector<std::uint64_t>{10, 11, 12}));
  EXPECT_GE(j["heap_allocated_bytes"].get<std::uint64_t>(), 256u << 10);

  r = tool({"info", "--json", ds_});
  ASSERT_TRUE(r.exited(0)) << r.describe();
  j = parse_json(r.out, &why);
  ASSERT_FALSE(j.is_null()) << why << "\n" << r.out;
  EXPECT_EQ(j["source"], "open");
  EXPECT_EQ(j["uuid"], manager::get_uuid(ds_));
  EXPECT_EQ(j["objects"]["anonymous"], 3);
  EXPECT_EQ(j["page_size"], 64u << 10);
  for (const char* k : {"epoch", "capacity", "chunk_size", "store_format", "writer_version",
                        "created", "disk_bytes", "description", "chunks", "allocated", "huge_pages"}) {
    EXPECT_TRUE(j.contains(k)) << k;
  }

  r = tool({"check", "--json", "--quiet", ds_});
  ASSERT_TRUE(r.exited(0)) << r.describe();
  j = parse_json(r.out, &why);
  ASSERT_FALSE(j.is_null()) << why << "\n" << r.out;
  EXPECT_EQ(j["sound"], true);
  EXPECT_EQ(j["heap_checked"], true);
  EXPECT_GT(j["pages_verified"].get<int>(), 4);
  EXPECT_TRUE(j["damaged_pages"].empty());
  EXPECT_TRUE(j["problems"].empty());
}

TEST_F(PheapTool, LsTableKeepsItsColumnsWithA300CharacterTypeNameAndSaysWhatItsSizesAre) {
  ASSERT_GT(type_name<long_t>().size(), 300u);
  const auto r = tool({"ls", ds_});
  ASSERT_TRUE(r.exited(0)) << r.describe();
  const auto lines = lines_of(r.out);
  ASSERT_GE(lines.size(), 4u) << r.out;
  const std::size_t type_col = lines[0].find("TYPE");
  const std::size_t name_col = lines[0].find("NAME");
  bool wide_seen = false;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const auto& l = lines[i];
    if (l.rfind("named", 0) == 0) {
      ASSERT_GT(l.size(), type_col) << l;
      EXPECT_NE(l[name_col], ' ') << "NAME column moved: " << l;
      EXPECT_NE(l[type_col], ' ') << "TYPE column moved: " << l;
      EXPECT_EQ(l[type_col - 1], ' ') << l;
      if (l.find(" wide ") != std::string::npos) {
        EXPECT_EQ(l.substr(type_col), std::string(type_name<long_t>())) << "not a terminal: never clipped";
        wide_seen = true;
      }
    }
  }
  EXPECT_NE(r.out.find("2 named, 0 unique, 3 anonymous objects"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("counted, not listed"), std::string::npos) << "every anonymous object is listed";
  std::size_t anonymous_rows = 0;
  for (const auto& l : lines) anonymous_rows += l.rfind("anonymous", 0) == 0 ? 1 : 0;
  EXPECT_EQ(anonymous_rows, 3u) << r.out;
  EXPECT_TRUE(wide_seen) << r.out;
  EXPECT_NE(r.out.find("description: an object with a long type name"), std::string::npos);
  EXPECT_NE(r.out.find("the object itself, not the memory it owns"), std::string::npos);

  // On a terminal of 100 columns no line is longer than the terminal; --wide keeps the name.
  const auto t = run_on_pty({kTool, "ls", ds_}, 100);
  ASSERT_TRUE(t.exited(0)) << t.describe();
  for (auto l : lines_of(t.out)) {
    if (!l.empty() && l.back() == '\r') l.pop_back();
    EXPECT_LE(l.size(), 100u) << l;
  }
  EXPECT_NE(t.out.find("..."), std::string::npos) << t.out;
  const auto w = run_on_pty({kTool, "ls", "--wide", ds_}, 100);
  EXPECT_NE(w.out.find(std::string(type_name<long_t>())), std::string::npos) << w.out;
}

// Page 0 holds the heap's header, which every command reads first.
TEST_F(PheapTool, DamagedPageUnderEveryReadCommandIsAnErrorNamingSegmentAndPageNotASignal) {
  const std::string seg = ds_ + "/segment-000000";
  flip_bit(seg, 1000);
  for (const std::string cmd : {"ls", "info"}) {
    const auto r = tool({cmd, ds_});
    EXPECT_FALSE(WIFSIGNALED(r.status)) << cmd << ": " << r.describe();
    EXPECT_TRUE(r.exited(1)) << cmd << ": " << r.describe();
    const std::string last = lines_of(r.err).back();
    EXPECT_EQ(last.rfind("pheap " + cmd + ": ", 0), 0u) << r.err;
    EXPECT_NE(last.find(seg + ": page 0 (home 0, offset 0) fails its checksum"), std::string::npos) << r.err;
  }
  const auto c = tool({"check", "--quiet", ds_});
  EXPECT_TRUE(c.exited(1)) << c.describe();
  EXPECT_NE(c.out.find(seg + ": page 0 (home 0, offset 0) fails its checksum"), std::string::npos) << c.out;
  const auto s = tool({"snapshot", "--quiet", ds_, dir_ / "copy"});
  EXPECT_TRUE(s.exited(1)) << s.describe();
  EXPECT_NE(s.err.find("refusing to copy damaged data"), std::string::npos) << s.err;
  EXPECT_NE(s.err.find(seg + ": page 0"), std::string::npos) << s.err;
  EXPECT_FALSE(fs::exists(dir_ / "copy"));
}

// A damaged page met in the middle of a listing (a long name's bytes) rather than at open.
TEST_F(PheapTool, DamagedPageMetWhileListingIsAnErrorNamingSegmentAndPageNotASignal) {
  {
    manager m(open_only, ds_);
    ASSERT_NE(m.construct<int>(std::string(40000, 'Q'))(1), nullptr);
    m.flush();
    m.flush();
  }
  const std::string seg = damage_block_of(ds_, 'Q', which_block::last);
  ASSERT_FALSE(seg.empty());
  const auto r = tool({"ls", ds_});
  EXPECT_FALSE(WIFSIGNALED(r.status)) << r.describe();
  EXPECT_TRUE(r.exited(1)) << r.describe();
  EXPECT_NE(lines_of(r.err).back().find(seg + ": page "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("fails its checksum"), std::string::npos) << r.err;
}

// A damaged page is said once, in the tool's line: the pager's own line about the SIGBUS
// (which the tool's guard turns into the error) is for programs that do not guard; and a
// missing segment file is one problem for all its pages, not one line per page.
TEST_F(PheapTool, DamageIsSaidInOneLinePerProblemAndNotAgainByThePager) {
  const std::string seg = ds_ + "/segment-000000";
  flip_bit(seg, 1000);
  for (const std::string cmd : {"ls", "info"}) {
    const auto r = tool({cmd, ds_});
    EXPECT_TRUE(r.exited(1)) << cmd << ": " << r.describe();
    EXPECT_EQ(lines_of(r.err).size(), 1u) << cmd << ": " << r.err;
    EXPECT_EQ(r.err.find("pheap: pager"), std::string::npos) << cmd << ": " << r.err;
  }
  fs::remove(seg);
  const auto c = tool({"check", "--quiet", ds_});
  EXPECT_TRUE(c.exited(1)) << c.describe();
  const auto lines = lines_of(c.out);
  ASSERT_GE(lines.size(), 2u) << c.out;
  EXPECT_EQ(std::count_if(lines.begin(), lines.end(),
                          [&](const std::string& l) { return l.rfind("problem: " + seg + ": ", 0) == 0; }),
            1)
      << "the missing file is one problem: " << c.out;
  EXPECT_NE(c.out.find("missing segment file"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("more page(s) with data"), std::string::npos) << "its pages are counted: " << c.out;
  const auto i = tool({"info", ds_});
  EXPECT_TRUE(i.exited(1)) << "info on a datastore missing a segment: " << i.describe();
}

// `pheap info` checks every file that a page with data lives in, as the first read of that page
// would. A datastore whose open needs only segment 0 (the heap's header) and which is missing
// a later segment fails info with one line naming that file. An open alone does not see it.
TEST_F(PheapTool, InfoRefusesADatastoreMissingASegmentThatNoHeaderPageLivesIn) {
  const std::string ds = dir_ / "segmented";
  {
    options o;
    o.segment_size = 1u << 20;
    manager m(create_only, ds, o);
    std::memset(m.construct<char>("far")[6u << 20](0), 'x', 6u << 20);  // over several segments
    m.flush();
    m.flush();
  }
  std::vector<std::string> segments;
  for (const auto& e : fs::directory_iterator(ds)) {
    if (e.path().filename().string().rfind("segment-", 0) == 0) segments.push_back(e.path().string());
  }
  std::sort(segments.begin(), segments.end());
  ASSERT_GE(segments.size(), 3u);
  ASSERT_TRUE(tool({"info", ds}).exited(0));
  const std::string gone = segments.back();
  fs::remove(gone);
  { manager still_opens(open_read_only, ds); }
  for (const std::vector<std::string>& args : {std::vector<std::string>{"info", ds}, {"info", "--json", ds}}) {
    const auto r = tool(args);
    EXPECT_TRUE(r.exited(1)) << r.describe();
    EXPECT_EQ(lines_of(r.err).size(), 1u) << r.err;
    EXPECT_NE(r.err.find(gone + ": missing segment file, required by page "), std::string::npos) << r.err;
  }
}

// The tool's 64 MiB buffer is a default: PHEAP_BUFFER_SIZE wins over it (it used to be
// overridden by the default of --buffer-size), and --buffer-size wins over the variable. The
// pager's PHEAP_DEBUG line at open says which buffer it got.
TEST_F(PheapTool, PheapBufferSizeWinsOverTheToolsDefaultAndBufferSizeOptionWinsOverTheVariable) {
  ::setenv("PHEAP_DEBUG", "1", 1);
  const auto by_default = tool({"ls", ds_});
  ::setenv("PHEAP_BUFFER_SIZE", "3M", 1);
  const auto by_env = tool({"ls", ds_});
  const auto by_option = tool({"ls", "--buffer-size", "5M", ds_});
  ::unsetenv("PHEAP_BUFFER_SIZE");
  ::unsetenv("PHEAP_DEBUG");
  ASSERT_TRUE(by_default.exited(0)) << by_default.describe();
  ASSERT_TRUE(by_env.exited(0)) << by_env.describe();
  ASSERT_TRUE(by_option.exited(0)) << by_option.describe();
  EXPECT_NE(by_default.err.find(": buffer 64.0 MiB ("), std::string::npos) << by_default.err;
  EXPECT_NE(by_env.err.find(": buffer 3.0 MiB ("), std::string::npos) << by_env.err;
  EXPECT_NE(by_option.err.find(": buffer 5.0 MiB ("), std::string::npos) << by_option.err;
}

// `pheap info` says what its open did with huge pages (tools/README.md, "huge_pages"): on a
// datastore of 2 MiB pages with --huge-pages always, every page it read is one 2 MiB mapping
// (a read-only open: src/pager/huge_pool.hpp, "Read-only opens"); on 64 KiB pages it is not
// in force and says why; off says off, and whether the page size would allow them.
TEST_F(PheapTool, InfoSaysHowManyPagesItsOpenMappedWithHugePagesAndWhyNotWhereNot) {
  std::FILE* thp = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  char mode[128] = {};
  const bool have_thp = thp != nullptr && std::fgets(mode, sizeof mode, thp) && !std::strstr(mode, "[never]");
  if (thp) std::fclose(thp);
  if (!have_thp) PHEAP_REQUIRE_FEATURE("transparent huge pages (never here)");
  const std::string huge_ds = dir_ / "huge";
  {
    options o;
    o.page_size = 2u << 20;
    o.capacity = 64ull << 20;
    manager m(create_only, huge_ds, o);
    m.construct<std::uint64_t>("x")[1000](5u);
    m.flush();
  }
  auto r = tool({"info", "--json", "--huge-pages", "always", huge_ds});
  ASSERT_TRUE(r.exited(0)) << r.describe();
  std::string why;
  json j = parse_json(r.out, &why);
  ASSERT_FALSE(j.is_null()) << why << "\n" << r.out;
  json h = j["huge_pages"];
  EXPECT_EQ(h["asked"], "always") << h.dump();
  const std::string not_here = h["why"].get<std::string>();
  if (not_here.find("lacks") != std::string::npos || not_here.find("disabled") != std::string::npos) {
    PHEAP_REQUIRE_FEATURE(not_here);
  }
  ASSERT_EQ(h["in_force"], true) << h.dump();
  EXPECT_GE(h["fills"].get<std::uint64_t>(), 1u) << h.dump();
  EXPECT_EQ(h["fallback_fills"], 0) << h.dump();
  EXPECT_EQ(h["split"], 0) << h.dump();  // read faults only: the kernel makes no page table
  EXPECT_EQ(h["mapped_bytes"].get<std::uint64_t>(), h["fills"].get<std::uint64_t>() << 21) << h.dump();
  r = tool({"info", "--huge-pages", "always", huge_ds});
  ASSERT_TRUE(r.exited(0)) << r.describe();
  EXPECT_NE(r.out.find("huge pages:      always: " + std::to_string(h["fills"].get<std::uint64_t>()) +
                       " fills with 2 MiB entries, 0 at 4 KiB"),
            std::string::npos)
      << r.out;
  // auto: in force, fills at 4 KiB (a short command ends before its promoter's rounds).
  r = tool({"info", "--json", "--huge-pages", "auto", huge_ds});
  ASSERT_TRUE(r.exited(0)) << r.describe();
  j = parse_json(r.out, &why);
  ASSERT_FALSE(j.is_null()) << why << "\n" << r.out;
  h = j["huge_pages"];
  EXPECT_EQ(h["asked"], "auto") << h.dump();
  EXPECT_EQ(h["in_force"], true) << h.dump();
  EXPECT_EQ(h["fills"], 0) << h.dump();
  EXPECT_EQ(h["fallback_fills"], 0) << h.dump();
  EXPECT_TRUE(h.contains("promotions")) << h.dump();
  r = tool({"info", "--huge-pages", "auto", huge_ds});
  ASSERT_TRUE(r.exited(0)) << r.describe();
  EXPECT_NE(r.out.find("huge pages:      auto: fills at 4 KiB, "), std::string::npos) << r.out;
  r = tool({"info", huge_ds});
  ASSERT_TRUE(r.exited(0)) << r.describe();
  EXPECT_NE(r.out.find("huge pages:      off (--huge-pages always maps these pages with 2 MiB entries)"),
            std::string::npos)
      << r.out;

  r = tool({"info", "--json", "--huge-pages", "always", ds_});  // 64 KiB pages
  ASSERT_TRUE(r.exited(0)) << r.describe();
  j = parse_json(r.out, &why);
  ASSERT_FALSE(j.is_null()) << why << "\n" << r.out;
  h = j["huge_pages"];
  EXPECT_EQ(h["in_force"], false) << h.dump();
  EXPECT_NE(h["why"].get<std::string>().find("64 KiB"), std::string::npos) << h.dump();
  EXPECT_EQ(h["fills"], 0) << h.dump();
  EXPECT_EQ(h["mapped_bytes"], 0) << h.dump();
  r = tool({"info", ds_});
  ASSERT_TRUE(r.exited(0)) << r.describe();
  EXPECT_NE(r.out.find("huge pages:      off (they need a page size of 2 MiB or a multiple)"), std::string::npos)
      << r.out;
}

TEST_F(PheapTool, SnapshotOfASoundDatastoreVerifiesThenCopies) {
  const auto r = tool({"snapshot", ds_, dir_ / "copy"});
  ASSERT_TRUE(r.exited(0)) << r.describe();
  EXPECT_NE(r.out.find("verified against their checksums before the copy"), std::string::npos) << r.out;
  manager m(open_read_only, dir_ / "copy");
  EXPECT_EQ(m.find<char>("blob").second, 256u << 10);
  EXPECT_NE(m.get_uuid(), manager::get_uuid(ds_));
}

// Beside a writer (store format 4) ls, info, check and snapshot open the datastore read-only
// and read its last watermark — not the writer's unflushed objects —, and info lists the
// readers: the tool itself, and a reader of an older watermark with what the writer keeps for it.
TEST_F(PheapTool, LsInfoCheckAndSnapshotBesideAWriterReadItsLastWatermarkAndInfoListsTheReaders) {
  manager w(open_only, ds_);
  w.set_description("being written");
  const std::uint64_t first = w.flush();
  manager old_reader(open_read_only, ds_);  // stays at `first`
  for (int k = 0; k < 2; ++k) {  // the second rewrite comes back to the homes `first` names
    std::memset(w.find<char>("blob").first, 'a' + k, 256u << 10);
    w.flush();
  }
  const std::uint64_t epoch = w.epoch();
  w.construct<int>("unflushed")(1);  // not in the watermark
  auto r = tool({"info", "--json", ds_});
  ASSERT_TRUE(r.exited(0)) << r.describe();
  json j = parse_json(r.out);
  ASSERT_FALSE(j.is_null()) << r.out;
  EXPECT_EQ(j["source"], "open");
  EXPECT_EQ(j["epoch"], epoch);
  EXPECT_EQ(j["description"], "being written");
  EXPECT_EQ(j["objects"]["named"], 2) << "the writer's unflushed object is not in its watermark";
  EXPECT_EQ(j["pin_limit"], 4ull << 30);
  EXPECT_GE(j["pinned_bytes"].get<std::uint64_t>(), 256u << 10) << "the blob's old pages, kept for the old reader";
  ASSERT_EQ(j["readers"].size(), 2u) << j.dump();
  const json& oldest = j["readers"][0];
  EXPECT_EQ(oldest["epoch"], first);
  EXPECT_EQ(oldest["pid"], static_cast<unsigned>(::getpid()));
  EXPECT_EQ(oldest["this"], false);
  EXPECT_EQ(oldest["expired"], false);
  EXPECT_GE(oldest["pinned_bytes"].get<std::uint64_t>(), 256u << 10);
  EXPECT_EQ(j["readers"][1]["epoch"], epoch);
  EXPECT_EQ(j["readers"][1]["this"], true);
  for (const char* k : {"since", "since_ns"}) EXPECT_TRUE(oldest.contains(k)) << k;

  r = tool({"info", ds_});
  ASSERT_TRUE(r.exited(0)) << r.describe();
  EXPECT_NE(r.out.find("epoch:           " + std::to_string(epoch) + "\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("readers:         2 ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("epoch " + std::to_string(first)), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(this pheap info)"), std::string::npos) << r.out;

  r = tool({"ls", "--json", ds_});
  ASSERT_TRUE(r.exited(0)) << r.describe();
  j = parse_json(r.out);
  EXPECT_EQ(j["epoch"], epoch);
  EXPECT_EQ(j["counts"]["named"], 2);

  r = tool({"check", "--json", "--quiet", ds_});
  ASSERT_TRUE(r.exited(0)) << r.describe();
  j = parse_json(r.out);
  EXPECT_EQ(j["sound"], true) << r.out;
  EXPECT_EQ(j["epoch"], epoch);
  EXPECT_EQ(j["pages_epoch"], epoch);

  r = tool({"snapshot", "--quiet", ds_, dir_ / "copy"});
  ASSERT_TRUE(r.exited(0)) << r.describe();
  manager copy(open_read_only, dir_ / "copy");
  EXPECT_EQ(copy.find<char>("blob").first[0], 'b');
  EXPECT_EQ(copy.find<int>("unflushed").first, nullptr);
  EXPECT_EQ(old_reader.find<char>("blob").first[0], kFill) << "the old reader kept its watermark";
}

// A format-3 datastore (its superblock rewritten as format 3): info reports store format 3;
// `pheap upgrade DIR` (one argument) converts it in place and says so, a second run says there
// is nothing to do; then a writer opens and info reads beside it, while upgrade under that
// writer is exit 1 naming the datastore.
TEST_F(PheapTool, UpgradeOfOneDatastoreConvertsFormat3InPlaceAndInfoReadsBesideTheWriterThen) {
  {
    // Both superblock slots rewritten as format 3 (format 4 added no byte: the version and the CRC).
    const std::string super = ds_ + "/pheap.super";
    std::vector<char> sb(16384);
    std::FILE* f = std::fopen(super.c_str(), "r+b");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(std::fread(sb.data(), 1, sb.size(), f), sb.size());
    for (std::size_t slot = 0; slot < 2; ++slot) {
      char* sl = sb.data() + slot * 8192;
      if (sl[0] != 'P') continue;
      const std::uint32_t three = 3;
      std::memcpy(sl + 8, &three, 4);
      const std::uint32_t crc = crc32c(sl, 8188);
      std::memcpy(sl + 8188, &crc, 4);
    }
    std::rewind(f);
    ASSERT_EQ(std::fwrite(sb.data(), 1, sb.size(), f), sb.size());
    std::fclose(f);
  }
  EXPECT_EQ(manager::peek(ds_).store_format, 3u);
  auto r = tool({"info", "--json", ds_});
  ASSERT_TRUE(r.exited(0)) << r.describe();
  EXPECT_EQ(parse_json(r.out)["store_format"], 3);
  r = tool({"upgrade", ds_});
  ASSERT_TRUE(r.exited(0)) << r.describe();
  EXPECT_NE(r.out.find("upgraded in place from store format 3 to 4"), std::string::npos) << r.out;
  EXPECT_EQ(manager::peek(ds_).store_format, 4u);
  r = tool({"upgrade", ds_});
  ASSERT_TRUE(r.exited(0)) << r.describe();
  EXPECT_NE(r.out.find("store format 4 already"), std::string::npos) << r.out;
  manager w(open_only, ds_);  // a writer now opens, and the tools read beside it
  const std::uint64_t epoch = w.flush();
  r = tool({"info", "--json", ds_});
  ASSERT_TRUE(r.exited(0)) << r.describe();
  const json j = parse_json(r.out);
  EXPECT_EQ(j["source"], "open");
  EXPECT_EQ(j["epoch"], epoch);
  r = tool({"upgrade", ds_});
  EXPECT_TRUE(r.exited(1)) << r.describe();
  EXPECT_NE(r.err.find(ds_), std::string::npos) << r.err;
}

TEST_F(PheapTool, ProgressIsABarOnATerminalAPlainLineInALogAndNothingWithQuiet) {
  const auto t = run_on_pty({kTool, "check", ds_});
  ASSERT_TRUE(t.exited(0)) << t.describe() << t.out;
  const auto bar = t.out.find("\rcheck [");
  ASSERT_NE(bar, std::string::npos) << t.out;
  const std::string line = t.out.substr(bar + 1, t.out.find('\n', bar) - bar - 1);
  EXPECT_NE(line.find("100.0%"), std::string::npos) << line;
  EXPECT_NE(line.find("MiB/s"), std::string::npos) << line;
  EXPECT_NE(line.find("ETA 0:00"), std::string::npos) << line;
  EXPECT_NE(line.find("] "), std::string::npos) << line;

  const auto l = tool({"check", ds_});
  ASSERT_TRUE(l.exited(0)) << l.describe();
  EXPECT_EQ(l.err.find('\r'), std::string::npos) << l.err;
  const auto last = lines_of(l.err).back();
  EXPECT_EQ(last.rfind("check ", 0), 0u) << l.err;
  EXPECT_NE(last.find("100.0%"), std::string::npos) << l.err;
  EXPECT_NE(last.find("(done)"), std::string::npos) << l.err;

  const auto q = tool({"check", "--quiet", ds_});
  ASSERT_TRUE(q.exited(0)) << q.describe();
  EXPECT_TRUE(q.err.empty()) << q.err;
}

}  // namespace
}  // namespace pheap::test

namespace pheap::test {
namespace {

// The same datastore seen by both tools.
class Tools : public PheapTool {};

// `timeout` ends a child that hangs (exit 124 after SIGTERM, 137 after SIGKILL): a blocking
// open() would otherwise stall the suite instead of failing it.
child_result within_a_minute(const std::string& bin, std::vector<std::string> args) {
  args.insert(args.begin(), {"/usr/bin/timeout", "-s", "KILL", "60", bin});
  return run_child(args);
}

// Replaces `file` by each kind of non-regular file in turn and runs `commands` on `ds`: each
// must fail at once (exit 1, not a hang) with one line naming the file and what it is.
void expect_every_odd_file_refused(const std::string& ds, const std::string& file,
                                   const std::vector<std::string>& commands) {
  const std::string path = ds + "/" + file;
  const std::string keep = ds + "/../kept-" + file;
  fs::rename(path, keep);
  struct odd {
    const char* says;
    std::function<void()> make;
  };
  const std::vector<odd> kinds{
      {"is a FIFO (named pipe)", [&] { ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0); }},
      {"is a directory", [&] { fs::create_directory(path); }},
      {"is a character device", [&] { fs::create_symlink("/dev/zero", path); }},
  };
  for (const auto& k : kinds) {
    k.make();
    for (const auto& cmd : commands) {
      const auto r = within_a_minute(kTool, {cmd, ds});
      EXPECT_TRUE(r.exited(1)) << file << " " << k.says << ", pheap " << cmd << ": " << r.describe();
      const std::string all = r.out + r.err;
      EXPECT_NE(all.find(path + ": " + k.says + ", not the regular file"), std::string::npos)
          << "pheap " << cmd << ": " << all;
    }
    fs::remove(path);
  }
  fs::rename(keep, path);
}

TEST_F(Tools, ANonRegularFileWhereTheSuperblockOrTheMapBelongsIsAnErrorAtOnce) {
  expect_every_odd_file_refused(ds_, "pheap.super", {"info", "ls", "check"});
  expect_every_odd_file_refused(ds_, "pheap.map", {"info", "ls", "check"});
  EXPECT_TRUE(tool({"check", "--quiet", ds_}).exited(0)) << "restored, it is sound again";
}

TEST_F(Tools, ANonRegularFileWhereASegmentBelongsIsAnErrorAtOnce) {
  // Segment 0 holds the heap's header: every command reads it.
  expect_every_odd_file_refused(ds_, "segment-000000", {"info", "ls", "check"});
  // check says it once, with the pages it could not read, not once per page.
  ASSERT_EQ(::mkfifo((ds_ + "/x").c_str(), 0600), 0);
  fs::rename(ds_ + "/segment-000000", dir_ / "seg0");
  fs::rename(ds_ + "/x", ds_ + "/segment-000000");
  const auto r = within_a_minute(kTool, {"check", "--quiet", ds_});
  EXPECT_TRUE(r.exited(1)) << r.describe();
  const auto lines = lines_of(r.out);
  const auto problems = std::count_if(lines.begin(), lines.end(),
                                      [](const std::string& l) { return l.rfind("problem: ", 0) == 0; });
  EXPECT_EQ(problems, 1) << r.out;
  EXPECT_NE(r.out.find(" 1 problem(s), "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("pheap: open"), std::string::npos) << "in the user's terms: " << r.out;
}

}  // namespace
}  // namespace pheap::test
