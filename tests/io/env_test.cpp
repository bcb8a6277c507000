// The table of PHEAP_* variables (pheap/env.hpp): the size syntax, the typed accessors'
// rules (unset/empty, ranges, words, aliases), and README.md's table kept equal to it.
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "pheap/env.hpp"
#include "pheap/error.hpp"
#include "common/test_util.hpp"

namespace pheap {
namespace {

using env::var;

// Sets a variable for one scope and removes it afterwards.
class scoped_env {
 public:
  scoped_env(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~scoped_env() { ::unsetenv(name_); }
  scoped_env(const scoped_env&) = delete;
  scoped_env& operator=(const scoped_env&) = delete;

 private:
  const char* name_;
};

// The message of the invalid_argument error `fn` throws ("" and a test failure otherwise).
template <class Fn>
std::string rejection(Fn fn) {
  try {
    fn();
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::invalid_argument) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "accepted";
  return "";
}

const char* name_of(var v) { return env::describe(v).name; }

TEST(EnvSize, ParsesBytesWithBinarySuffixesInEverySpelling) {
  EXPECT_EQ(env::parse_size("--buffer-size", "65536"), 65536u);
  for (const char* s : {"64K", "64k", "64KiB", "64KB", "64kb"}) {
    EXPECT_EQ(env::parse_size("--buffer-size", s), 64u << 10) << s;
  }
  EXPECT_EQ(env::parse_size("--buffer-size", "64M"), 64ull << 20);
  EXPECT_EQ(env::parse_size("--buffer-size", "64MiB"), 64ull << 20);
  EXPECT_EQ(env::parse_size("--buffer-size", "1G"), 1ull << 30);
  EXPECT_EQ(env::parse_size("--buffer-size", "2T"), 2ull << 40);
  EXPECT_EQ(env::parse_size("--buffer-size", "0"), 0u);
}

TEST(EnvSize, MalformedSizeNamesTheOptionTheValueAndTheCause) {
  const std::map<std::string, std::string> bad = {
      {"", "empty"},
      {"-1", "expected a number of bytes"},
      {"abc", "expected a number of bytes"},
      {"12Q", "unknown suffix"},
      {"1KiBB", "unknown suffix"},
      {"1Ki", "unknown suffix"},
      {"16777216T", "too large"},
  };
  for (const auto& [value, cause] : bad) {
    const std::string m = rejection([&] { (void)env::parse_size("--buffer-size", value); });
    EXPECT_NE(m.find("--buffer-size"), std::string::npos) << m;
    EXPECT_NE(m.find("'" + value + "'"), std::string::npos) << m;
    EXPECT_NE(m.find(cause), std::string::npos) << m;
  }
}

TEST(EnvAccessors, UnsetOrEmptyVariableLeavesTheCallersDefault) {
  for (const env::variable& d : env::table()) {
    ::unsetenv(d.name);
    scoped_env empty(d.name, "");
    switch (d.type) {
      case env::kind::size: EXPECT_FALSE(env::size(d.id)) << d.name; break;
      case env::kind::fraction: EXPECT_FALSE(env::fraction(d.id)) << d.name; break;
      case env::kind::count: EXPECT_FALSE(env::count(d.id)) << d.name; break;
      case env::kind::word: EXPECT_FALSE(env::word(d.id)) << d.name; break;
    }
  }
}

TEST(EnvAccessors, SizesAreCheckedAgainstTheTablesRange) {
  {
    scoped_env e(name_of(var::page_size), "2MiB");
    EXPECT_EQ(env::size(var::page_size), 2u << 20);
  }
  for (const char* v : {"5K", "2K", "128M"}) {
    scoped_env e(name_of(var::page_size), v);
    const std::string m = rejection([] { (void)env::size(var::page_size); });
    EXPECT_NE(m.find("PHEAP_PAGE_SIZE"), std::string::npos) << m;
    EXPECT_NE(m.find(std::string("'") + v + "'"), std::string::npos) << m;
    EXPECT_NE(m.find("must be a power of two from 4K to 64M"), std::string::npos) << m;
  }
  scoped_env e(name_of(var::buffer_size), "3G");
  EXPECT_EQ(env::size(var::buffer_size), 3ull << 30);
}

TEST(EnvAccessors, FractionsHonourOpenAndClosedEnds) {
  {
    scoped_env e(name_of(var::high_watermark), "1");
    EXPECT_EQ(env::fraction(var::high_watermark), 1.0);
  }
  {
    scoped_env e(name_of(var::low_watermark), "0");
    EXPECT_EQ(env::fraction(var::low_watermark), 0.0);
  }
  const std::pair<var, const char*> bad[] = {
      {var::high_watermark, "0"},   {var::high_watermark, "1.01"}, {var::low_watermark, "1"},
      {var::low_watermark, "-0.1"}, {var::low_watermark, "0.5x"},  {var::high_watermark, "nan"},
  };
  for (const auto& [v, value] : bad) {
    scoped_env e(name_of(v), value);
    const std::string m = rejection([v = v] { (void)env::fraction(v); });
    EXPECT_NE(m.find(name_of(v)), std::string::npos) << m;
    EXPECT_NE(m.find(std::string("'") + value + "'"), std::string::npos) << m;
  }
  scoped_env e(name_of(var::high_watermark), "0");
  EXPECT_NE(rejection([] { (void)env::fraction(var::high_watermark); }).find("(0, 1]"),
            std::string::npos);
}

TEST(EnvAccessors, CountsAreIntegersInTheTablesRange) {
  {
    scoped_env e(name_of(var::fault_threads), "64");
    EXPECT_EQ(env::count(var::fault_threads), 64u);
  }
  for (const char* value : {"0", "65", "-1", "2.5", "two", "99999999999999999999999"}) {
    scoped_env e(name_of(var::fault_threads), value);
    const std::string m = rejection([] { (void)env::count(var::fault_threads); });
    EXPECT_NE(m.find("PHEAP_FAULT_THREADS"), std::string::npos) << m;
    EXPECT_NE(m.find(std::string("'") + value + "'"), std::string::npos) << m;
  }
}

TEST(EnvAccessors, WordsResolveAliasesAndRejectOthersListingTheChoices) {
  const std::tuple<var, const char*, const char*> good[] = {
      {var::dirty_tracking, "auto", "automatic"}, {var::dirty_tracking, "wp_sync", "wp_sync"},
      {var::io_engine, "io_uring", "uring"},      {var::io_engine, "posix", "posix"},
      {var::backend, "mmap", "mmap"},             {var::mmap_advice, "random", "random"},
  };
  for (const auto& [v, value, want] : good) {
    scoped_env e(name_of(v), value);
    EXPECT_EQ(env::word(v), std::string_view(want)) << value;
  }
  const std::tuple<var, const char*, const char*> bad[] = {
      {var::dirty_tracking, "sometimes", "expected automatic, wp_async, wp_sync or all_resident"},
      {var::io_engine, "bogus", "expected uring or posix"},
      {var::backend, "kernel", "expected uffd or mmap"},
      {var::mmap_advice, "sideways", "expected normal or random"},
      {var::mmap_advice, "Random", "expected normal or random"},
  };
  for (const auto& [v, value, why] : bad) {
    scoped_env e(name_of(v), value);
    const std::string m = rejection([v = v] { (void)env::word(v); });
    EXPECT_NE(m.find(name_of(v)), std::string::npos) << m;
    EXPECT_NE(m.find(std::string("'") + value + "'"), std::string::npos) << m;
    EXPECT_NE(m.find(why), std::string::npos) << m;
  }
}

// README.md's "Tuning" table: variable -> default, as written there.
std::map<std::string, std::string> readme_variables() {
  std::ifstream in(PHEAP_SOURCE_DIR "/README.md");
  EXPECT_TRUE(in) << "cannot read " PHEAP_SOURCE_DIR "/README.md";
  std::map<std::string, std::string> vars;
  const std::regex row(R"(^\|\s*`(PHEAP_[A-Z0-9_]+)`\s*\|\s*([^|]*?)\s*\|)");
  bool in_tuning = false;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) in_tuning = line.find("Tuning") != std::string::npos;
    std::smatch m;
    if (in_tuning && std::regex_search(line, m, row)) vars[m[1]] = m[2];
  }
  return vars;
}

TEST(EnvTable, ReadmeListsExactlyTheTablesVariablesWithTheirDefaults) {
  const auto readme = readme_variables();
  for (const env::variable& d : env::table()) {
    const auto it = readme.find(d.name);
    if (it == readme.end()) {
      ADD_FAILURE() << d.name << " is in the table (base/env.cpp) but not in README.md";
    } else {
      EXPECT_EQ(it->second, d.default_value) << d.name << ": README's default differs from the table's";
    }
  }
  for (const auto& [name, def] : readme) {
    bool known = false;
    for (const env::variable& d : env::table()) known = known || name == d.name;
    EXPECT_TRUE(known) << name << " is in README.md but not in the table (base/env.cpp)";
  }
}

TEST(EnvTable, EveryRowIsAPheapVariableWithADefaultAMeaningAndWordsIffItIsAWord) {
  for (const env::variable& d : env::table()) {
    EXPECT_EQ(std::string(d.name).rfind("PHEAP_", 0), 0u) << d.name;
    EXPECT_NE(std::string(d.meaning), "") << d.name;
    EXPECT_NE(std::string(d.default_value), "") << d.name;
    EXPECT_EQ(&env::describe(d.id), &d) << d.name;
    EXPECT_EQ(d.type == env::kind::word, !d.words.empty()) << d.name;
  }
}

}  // namespace
}  // namespace pheap
