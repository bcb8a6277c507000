// metall::manager over pheap: Metall's run-time behaviour where pheap's native API differs
// (noexcept results, create_only over a datastore, remove of a missing path, failed opens),
// pheap's stronger durability kept, the fallback allocator and the logger.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>

#include <metall/container/string.hpp>
#include <metall/container/vector.hpp>
#include <metall/metall.hpp>

#include "common/test_util.hpp"

namespace {

namespace fs = std::filesystem;
using pheap::test::temp_dir;

// Captures what the layer logs to stderr while alive, at the given level.
class captured_log {
 public:
  explicit captured_log(metall::logger::level_filter f) : old_(std::cerr.rdbuf(out_.rdbuf())) {
    metall::logger::set_log_level(f);
  }
  ~captured_log() {
    std::cerr.rdbuf(old_);
    metall::logger::set_log_level(metall::logger::level_filter::error);
  }
  std::string text() const { return out_.str(); }

 private:
  std::ostringstream out_;
  std::streambuf* old_;
};

class MetallManager : public ::testing::Test {
 protected:
  void SetUp() override {
    captured_log quiet(metall::logger::level_filter::silent);
    metall::manager probe(metall::create_only, dir_ / "probe");
    if (!probe.check_sanity()) PHEAP_REQUIRE_FEATURE("userfaultfd pager (metall::manager could not create)");
  }
  temp_dir dir_;
  std::string path_ = dir_ / "ds";
};

TEST_F(MetallManager, CreateOnlyReplacesAnExistingDatastore) {
  {
    metall::manager m(metall::create_only, path_);
    ASSERT_NE(m.construct<int>("old")(1), nullptr);
  }
  metall::manager m(metall::create_only, path_);
  ASSERT_TRUE(m.check_sanity());
  EXPECT_EQ(m.find<int>("old").first, nullptr);
  EXPECT_EQ(m.get_num_named_objects(), 0u);
}

TEST_F(MetallManager, CreateOnlyUsesAnEmptyDirectoryAndRefusesOneWithForeignFiles) {
  fs::create_directory(dir_ / "empty");
  EXPECT_TRUE(metall::manager(metall::create_only, dir_ / "empty").check_sanity());
  fs::create_directory(dir_ / "foreign");
  std::ofstream(dir_ / "foreign/notes.txt") << "keep me";
  captured_log log(metall::logger::level_filter::error);
  EXPECT_FALSE(metall::manager(metall::create_only, dir_ / "foreign").check_sanity());
  EXPECT_TRUE(fs::exists(dir_ / "foreign/notes.txt"));
  EXPECT_NE(log.text().find("not a pheap datastore"), std::string::npos) << log.text();
}

TEST_F(MetallManager, RemoveReturnsFalseSilentlyForAMissingPathAndTrueForADatastore) {
  {
    metall::manager m(metall::create_only, path_);
  }
  captured_log log(metall::logger::level_filter::error);
  EXPECT_FALSE(metall::manager::remove(dir_ / "missing"));
  EXPECT_TRUE(log.text().empty()) << log.text();
  EXPECT_TRUE(metall::manager::remove(path_));
  EXPECT_FALSE(fs::exists(path_));
  {
    metall::manager m(metall::create_only, path_);
  }
  EXPECT_TRUE(metall::manager::remove_async(path_).get());
  EXPECT_FALSE(metall::manager::consistent(path_));
}

TEST_F(MetallManager, AFailedOpenLeavesAnInsaneManagerWhoseCallsReturnFailureValues) {
  captured_log log(metall::logger::level_filter::error);
  metall::manager m(metall::open_only, dir_ / "missing");
  EXPECT_FALSE(m.check_sanity());
  EXPECT_NE(log.text().find("missing"), std::string::npos) << log.text();
  EXPECT_EQ(m.construct<int>("x")(1), nullptr);
  EXPECT_EQ(m.find<int>("x").first, nullptr);
  EXPECT_EQ(m.allocate(8), nullptr);
  EXPECT_FALSE(m.destroy<int>("x"));
  EXPECT_FALSE(m.snapshot(dir_ / "snap"));
  EXPECT_FALSE(m.set_description("d"));
  EXPECT_EQ(m.get_uuid(), "");
  EXPECT_EQ(m.get_version(), 0u);
  EXPECT_EQ(m.get_allocator<int>().anchor(), nullptr);
  EXPECT_TRUE(m.named_begin() == m.named_end());
  m.flush();
  m.deallocate(nullptr);
  EXPECT_FALSE(m.read_only());
}

TEST_F(MetallManager, ReadOnlyMisuseReturnsNullptrAndFalseAndKeepsTheManager) {
  {
    metall::manager m(metall::create_only, path_);
  }
  metall::manager m(metall::open_read_only, path_);
  captured_log log(metall::logger::level_filter::error);
  EXPECT_TRUE(m.read_only());
  EXPECT_EQ(m.construct<int>("x")(1), nullptr);
  EXPECT_EQ(m.allocate(8), nullptr);
  EXPECT_FALSE(m.set_description("d"));
  EXPECT_TRUE(m.check_sanity());
  EXPECT_NE(log.text().find("read-only"), std::string::npos) << log.text();
}

TEST_F(MetallManager, CapacityConstructorBoundsTheHeapAndAFullHeapGivesNullptr) {
  metall::manager m(metall::create_only, path_, 64ull << 20);
  ASSERT_TRUE(m.check_sanity());
  EXPECT_LE(m.get_size(), 65ull << 20);
  captured_log log(metall::logger::level_filter::silent);
  EXPECT_EQ(m.allocate(128ull << 20), nullptr);
  EXPECT_EQ(m.construct<char>("big")[128ull << 20]('x'), nullptr);
  EXPECT_TRUE(m.check_sanity());
  EXPECT_NE(m.construct<char>("small")[1024]('x'), nullptr);
}

TEST_F(MetallManager, ExceptionsOfTheConstructedTypePropagateAndLeaveNoObject) {
  struct throws {
    throws() { throw std::runtime_error("constructor failed"); }
  };
  metall::manager m(metall::create_only, path_);
  EXPECT_THROW(m.construct<throws>("t")(), std::runtime_error);
  EXPECT_EQ(m.get_num_named_objects(), 0u);
  EXPECT_TRUE(m.all_memory_deallocated());
}

// Stronger than Metall (whose datastore is inconsistent until close): flush() is a watermark
// that a kill -9 keeps.
TEST_F(MetallManager, FlushIsAWatermarkThatSurvivesKillNine) {
  const int rc = pheap::test::run_in_child([&] {
    metall::manager m(metall::create_only, path_);
    *m.construct<int>("kept")(0) = 42;
    m.flush(false);
    *m.find<int>("kept").first = 43;  // after the watermark: lost
    ::kill(::getpid(), SIGKILL);
  });
  EXPECT_EQ(rc, 128 + SIGKILL);
  EXPECT_TRUE(metall::manager::consistent(path_));
  metall::manager m(metall::open_read_only, path_);
  ASSERT_TRUE(m.check_sanity());
  EXPECT_EQ(*m.find<int>("kept").first, 42);
}

TEST_F(MetallManager, SnapshotReplacesAnOlderSnapshotAndHasItsOwnUuid) {
  metall::manager m(metall::create_only, path_);
  int* v = m.construct<int>(metall::unique_instance)(1);
  const std::string snap = dir_ / "snap";
  ASSERT_TRUE(m.snapshot(snap, true, 2));
  *v = 2;
  ASSERT_TRUE(m.snapshot(snap));
  EXPECT_TRUE(metall::manager::consistent(snap));
  EXPECT_NE(metall::manager::get_uuid(snap), m.get_uuid());
  EXPECT_EQ(metall::manager(metall::open_read_only, snap).find<int>(metall::unique_instance).first[0], 2);
  const std::string copy = dir_ / "copy";
  EXPECT_TRUE(metall::manager::copy_async(snap, copy).get());
  EXPECT_EQ(metall::manager(metall::open_read_only, copy).find<int>(metall::unique_instance).first[0], 2);
  EXPECT_TRUE(metall::manager::copy(snap, copy));  // replaces the older copy
}

TEST_F(MetallManager, DescriptionsReportAbsenceWithFalse) {
  metall::manager m(metall::create_only, path_);
  std::string text = "untouched";
  EXPECT_FALSE(m.get_description(&text));
  EXPECT_EQ(text, "untouched");
  EXPECT_TRUE(m.set_description("described"));
  EXPECT_TRUE(m.get_description(&text));
  EXPECT_EQ(text, "described");
  int* p = m.construct<int>("p")(0);
  std::string object_text = "x";
  EXPECT_TRUE(m.get_instance_description(p, &object_text));  // Metall: true unless an error
  EXPECT_EQ(object_text, "");
}

TEST_F(MetallManager, IteratesEveryKindAndNamesObjectsWithStableCStrings) {
  metall::manager m(metall::create_only, path_);
  int* a = m.construct<int>("alpha")(1);
  m.construct<long>(metall::unique_instance)(2);
  int* anon = m.construct<int>(metall::anonymous_instance)[3](3);
  const char* name = m.get_instance_name(a);
  EXPECT_STREQ(name, "alpha");
  EXPECT_EQ(m.get_instance_name(anon), nullptr);
  EXPECT_STREQ(m.get_instance_name(m.find<long>(metall::unique_instance).first), "long int");
  m.construct<int>("beta")(4);
  EXPECT_STREQ(name, "alpha");  // still valid while alpha exists

  std::set<std::string> named;
  for (auto it = m.named_begin(); it != m.named_end(); ++it) named.insert(it->name());
  EXPECT_EQ(named, (std::set<std::string>{"alpha", "beta"}));
  auto u = m.unique_begin();
  ASSERT_NE(u, m.unique_end());
  EXPECT_TRUE(u->is_type<long>());
  auto an = m.anonymous_begin();
  ASSERT_NE(an, m.anonymous_end());
  EXPECT_EQ(an->length(), 3u);
  EXPECT_TRUE(an->is_type<int>());
  EXPECT_EQ(++an, m.anonymous_end());
  EXPECT_TRUE(m.destroy_ptr(anon));
  EXPECT_EQ(m.anonymous_begin(), m.anonymous_end());
}

TEST_F(MetallManager, MovedManagerKeepsTheHeapAndTheNames) {
  metall::manager a(metall::create_only, path_);
  int* p = a.construct<int>("p")(5);
  const char* name = a.get_instance_name(p);
  metall::manager b(std::move(a));
  EXPECT_FALSE(a.check_sanity());
  EXPECT_EQ(b.find<int>("p").first, p);
  EXPECT_STREQ(name, "p");
  EXPECT_STREQ(b.get_instance_name(p), "p");
}

TEST_F(MetallManager, FallbackAllocatorUsesTheHeapWhenGivenAManagersAllocatorAndMallocOtherwise) {
  using vec = metall::container::vector<int, metall::manager::fallback_allocator<int>>;
  metall::manager m(metall::create_only, path_);
  const auto* base = static_cast<const char*>(m.get_address());
  auto in_heap = [&](const void* p) {
    return static_cast<const char*>(p) >= base && static_cast<const char*>(p) < base + m.get_size();
  };
  vec* persistent = m.construct<vec>("v")(m.get_allocator());
  persistent->assign(100, 7);
  vec temporary(50, 8);
  EXPECT_TRUE(in_heap(persistent->data()));
  EXPECT_FALSE(in_heap(temporary.data()));
  EXPECT_TRUE(persistent->get_allocator().stateful_allocator_available());
  EXPECT_FALSE(temporary.get_allocator().stateful_allocator_available());
  EXPECT_NE(persistent->get_allocator(), temporary.get_allocator());
  EXPECT_EQ(vec().get_allocator(), temporary.get_allocator());
  temporary = *persistent;  // copies the elements, keeps its own allocator
  EXPECT_FALSE(in_heap(temporary.data()));
  EXPECT_EQ(temporary.at(99), 7);
}

TEST_F(MetallManager, ErrorsAreLoggedWithTheirCauseAtTheChosenLevel) {
  {
    captured_log log(metall::logger::level_filter::error);
    EXPECT_FALSE(metall::manager(metall::open_read_only, dir_ / "nowhere").check_sanity());
    EXPECT_NE(log.text().find("nowhere"), std::string::npos) << log.text();
    EXPECT_NE(log.text().find(" at line "), std::string::npos) << log.text();
  }
  {
    captured_log log(metall::logger::level_filter::critical);
    EXPECT_FALSE(metall::manager(metall::open_read_only, dir_ / "nowhere").check_sanity());
    EXPECT_TRUE(log.text().empty()) << log.text();
  }
  EXPECT_TRUE(metall::logger::abort_on_critical_error());
  EXPECT_TRUE(metall::logger::log_level().should_log(metall::logger::level::error));
  EXPECT_FALSE(metall::logger::log_level().should_log(metall::logger::level::warning));
}

}  // namespace
