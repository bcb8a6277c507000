// Format 2 → format 3: opening a format-2 datastore is errc::older_format saying how to convert
// it, and sparse_store::upgrade (pheap upgrade SRC DST) writes a format-3 copy with every page
// and the root equal — proven on a fixture written by the format-2 writer itself
// (fixtures/format2-ds, see fixtures/README.md). The copy is built under a temporary name:
// a failure or a crash at any operation leaves DST absent (or complete) and no temporary.
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <map>

#include "fixtures/format2_fixture.hpp"
#include "sparse_store/format2/format2.hpp"
#include "store_test_util.hpp"
#include "support/fault_engine.hpp"

namespace pheap::test {
namespace {

namespace fs = std::filesystem;

class StoreUpgrade : public store_test {
 protected:
  // A private copy of the fixture (opening takes a lock; the source tree may be read-only).
  std::string fixture_copy() {
    const std::string src = dir_ / "format2";
    fs::copy(PHEAP_FORMAT2_FIXTURE, src);
    return src;
  }
  std::map<std::string, std::vector<std::byte>> files_of(const std::string& dir) {
    std::map<std::string, std::vector<std::byte>> m;
    for (const auto& e : fs::directory_iterator(dir)) m[e.path().filename()] = read_file(e.path());
    return m;
  }
  std::vector<std::string> leftovers() {
    std::vector<std::string> v;
    for (const auto& e : fs::directory_iterator(dir_.path())) {
      if (e.path().filename().string().find(".creating-") != std::string::npos) v.push_back(e.path());
    }
    return v;
  }
  // Operations (of any kind) a complete upgrade of `src` performs.
  std::uint64_t upgrade_operations(const std::string& src) {
    auto f = make_fault_engine(engine());
    store_options o;
    o.engine = f;
    sparse_store::upgrade(src, dir_ / "probe", o);
    fs::remove_all(dir_ / "probe");
    return f->operations();
  }
  // Every page of `s` as the workload left it after the fixture's last epoch; "" or the first
  // difference.
  std::string check_fixture_content(sparse_store& s) {
    const workload w{kFixtureSeed, kFixturePages};
    const auto v = w.versions_at(kFixtureEpochs);
    if (s.root() != w.root(kFixtureEpochs)) return "root differs";
    std::vector<std::uint8_t> want(4096);
    for (std::uint64_t p = 0; p < kFixturePages; ++p) {
      if (v[p] == 0) {
        std::fill(want.begin(), want.end(), 0);
      } else {
        fill_pattern(want.data(), 4096, kFixtureSeed, p, v[p]);
      }
      if (read_one(s, p) != want) return "page " + std::to_string(p) + " differs";
      if (v[p] != 0 && !s.may_have_data(p)) return "page " + std::to_string(p) + " lost its data";
    }
    return {};
  }
  temp_dir dir_;
};
PHEAP_STORE_SUITE(StoreUpgrade);

TEST_P(StoreUpgrade, Format2DatastoreIsOlderFormatSayingHowToConvertIt) {
  const std::string src = fixture_copy();
  for (bool ro : {false, true}) {
    try {
      sparse_store::open(src, open_opts(ro));
      ADD_FAILURE() << "a format-2 datastore opened";
    } catch (const error& e) {
      EXPECT_EQ(e.code(), errc::older_format) << e.what();
      EXPECT_NE(std::string(e.what()).find("store format 2"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("pheap upgrade SRC DST"), std::string::npos) << e.what();
    }
  }
}

TEST_P(StoreUpgrade, Format2DatastoreUpgradesWithEveryPageAndTheRootEqual) {
  const std::string src = fixture_copy();
  const auto before = files_of(src);
  {
    // The format-2 reader itself serves the fixture's last commit exactly.
    auto old = store::format2::open_read_only(src, engine());
    EXPECT_EQ(old->epoch(), kFixtureEpochs);
    EXPECT_EQ(check_fixture_content(*old), "");
  }
  const std::string dst = dir_ / "format3";
  sparse_store::upgrade(src, dst, open_opts());
  EXPECT_EQ(files_of(src), before) << "the source is only read";
  EXPECT_TRUE(leftovers().empty());
  for (bool ro : {true, false}) {
    auto s = sparse_store::open(dst, open_opts(ro));
    EXPECT_EQ(s->page_size(), 4096u);
    EXPECT_EQ(s->segment_size(), 16u * 4096);
    EXPECT_EQ(s->capacity(), kFixturePages * 4096);
    EXPECT_EQ(s->epoch(), 1u) << "one commit";
    EXPECT_EQ(check_fixture_content(*s), "") << (ro ? "read-only" : "read-write");
  }
  // The copy is an ordinary format-3 datastore.
  auto s = sparse_store::open(dst, open_opts());
  write_one(*s, 0, 77, 1);
  EXPECT_EQ(s->commit({}), 2u);
}

TEST_P(StoreUpgrade, UpgradeRefusesAFormat3SourceAndAnExistingDestination) {
  const std::string f3 = dir_ / "f3";
  sparse_store::create(f3, opts(64 * 4096, 4096, 16 * 4096)).reset();
  try {
    sparse_store::upgrade(f3, dir_ / "out", open_opts());
    ADD_FAILURE() << "a format-3 source was upgraded";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::invalid_argument) << e.what();
    EXPECT_NE(std::string(e.what()).find("not a format-2 datastore"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir_ / "out"));
  const std::string src = fixture_copy();
  try {
    sparse_store::upgrade(src, f3, open_opts());
    ADD_FAILURE() << "upgrade over an existing path";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::already_exists) << e.what();
  }
}

TEST_P(StoreUpgrade, AFailureAtAnyOperationLeavesNoDestinationAndNoTemporary) {
  const std::string src = fixture_copy();
  const std::uint64_t ops = upgrade_operations(src);
  for (std::uint64_t n = 1; n <= ops; ++n) {
    const std::string dst = dir_ / ("out" + std::to_string(n));
    auto f = make_fault_engine(engine());
    f->add_rule({op_kind::any, n, fault_action::fail_enospc, false});
    store_options o;
    o.engine = f;
    try {
      sparse_store::upgrade(src, dst, o);
    } catch (const error& e) {
      EXPECT_EQ(e.code(), errc::no_space) << "op " << n << ": " << e.what();
      EXPECT_FALSE(fs::exists(dst)) << "op " << n;
    }
    if (fs::exists(dst)) {  // an ENOSPC on a read of the source only reaches here by success
      auto s = sparse_store::open(dst, open_opts(true));
      EXPECT_EQ(check_fixture_content(*s), "") << "op " << n;
    }
    EXPECT_TRUE(leftovers().empty()) << "op " << n;
  }
}

TEST_P(StoreUpgrade, ACrashAtAnyOperationLeavesTheDestinationAbsentOrComplete) {
  const std::string src = fixture_copy();
  const std::uint64_t ops = upgrade_operations(src);
  int complete = 0;
  for (std::uint64_t n = 1; n <= ops; n += 2) {
    const std::string dst = dir_ / ("out" + std::to_string(n));
    const std::string env = "any:" + std::to_string(n);
    const std::string name = GetParam();
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::setenv("PHEAP_FAULT_CRASH_AT", env.c_str(), 1);
      try {
        store_options o;
        o.engine = make_fault_engine(make_engine(name));
        sparse_store::upgrade(src, dst, o);
      } catch (...) {
        ::_exit(1);
      }
      ::_exit(0);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 86) << env << ": status " << status;
    if (fs::exists(dst)) {
      auto s = sparse_store::open(dst, open_opts(true));
      EXPECT_EQ(check_fixture_content(*s), "") << env;
      ++complete;
    }
  }
  EXPECT_GT(complete, 0) << "crashes after the rename leave a complete copy";
}

#ifdef PHEAP_TOOL_BIN
// Runs `pheap ARGS...` with stdout+stderr into `out`; returns the exit status.
int run_tool(const std::string& args, std::string& out, const std::string& scratch) {
  const std::string log = scratch + "/tool.log";
  const int rc = std::system((std::string(PHEAP_TOOL_BIN) + " " + args + " >" + log + " 2>&1").c_str());
  const auto bytes = read_file(log);
  out.assign(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

TEST_P(StoreUpgrade, PheapUpgradeConvertsAndEveryOtherCommandSaysToUseIt) {
  const std::string src = fixture_copy();
  std::string out;
  EXPECT_EQ(run_tool("info " + src, out, dir_.path()), 1) << out;  // a failure (tools/README.md)
  EXPECT_NE(out.find("pheap upgrade SRC DST"), std::string::npos) << out;
  const std::string dst = dir_ / "converted";
  EXPECT_EQ(run_tool("upgrade " + src + " " + dst, out, dir_.path()), 0) << out;
  EXPECT_NE(out.find("upgraded"), std::string::npos) << out;
  {
    auto s = sparse_store::open(dst, open_opts(true));
    EXPECT_EQ(check_fixture_content(*s), "");
  }
  EXPECT_EQ(run_tool("upgrade " + src + " " + dst, out, dir_.path()), 1) << "DST exists: " << out;
  EXPECT_NE(out.find(dst), std::string::npos) << out;
}
#endif

}  // namespace
}  // namespace pheap::test
