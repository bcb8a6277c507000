// pheap::persistable: the verdicts construct<T> enforces (the refusals themselves are
// compile-fail tests, PersistableCompile.*), and the accepted kinds really survive a reopen.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <memory_resource>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <boost/container/vector.hpp>

#include "manager_fixture.hpp"
#include "pheap/pheap.hpp"

namespace pheap::test {
namespace {

namespace pc = pheap::container;

struct plain {
  int a;
  double b;
};
// A user's allocator-aware type: judged by its allocator_type.
template <class Alloc>
struct labelled {
  using allocator_type = Alloc;
  using string_type = boost::container::basic_string<
      char, std::char_traits<char>, typename std::allocator_traits<Alloc>::template rebind_alloc<char>>;
  explicit labelled(const Alloc& a) : label(a) {}
  string_type label;
  std::uint64_t value = 0;
};
struct hidden_vector {  // the trait cannot see members: accepted unless the user says otherwise
  std::vector<int> v;
};
struct declared_dram {
  std::vector<int> v;
};

}  // namespace
}  // namespace pheap::test

template <>
struct pheap::persistable<pheap::test::declared_dram> : std::false_type {};

namespace pheap::test {
namespace {

TEST(Persistable, RefusesAddressesStdAllocatorMemoryAndOwners) {
  EXPECT_FALSE(persistable_v<int*>);
  EXPECT_FALSE(persistable_v<const char*>);
  EXPECT_FALSE(persistable_v<int* const>);
  EXPECT_FALSE(persistable_v<int&>);
  EXPECT_FALSE(persistable_v<int&&>);
  EXPECT_FALSE(persistable_v<int* [4]>);
  EXPECT_FALSE(persistable_v<void (*)()>);
  EXPECT_FALSE(persistable_v<std::string_view>);
  EXPECT_FALSE((persistable_v<std::span<int>>));
  EXPECT_FALSE(persistable_v<std::vector<int>>);
  EXPECT_FALSE(persistable_v<std::string>);
  EXPECT_FALSE((persistable_v<std::map<int, int>>));
  EXPECT_FALSE((persistable_v<std::unordered_map<int, int>>));
  EXPECT_FALSE(persistable_v<std::pmr::vector<int>>);
  EXPECT_FALSE(persistable_v<boost::container::vector<int>>);
  EXPECT_FALSE(persistable_v<std::unique_ptr<int>>);
  EXPECT_FALSE(persistable_v<std::shared_ptr<int>>);
  EXPECT_FALSE(persistable_v<std::function<void()>>);
}

TEST(Persistable, LooksThroughTemplateArgumentsArraysAndAllocatorTypes) {
  EXPECT_FALSE(persistable_v<pc::vector<std::string>>);
  EXPECT_FALSE(persistable_v<pc::vector<int*>>);
  EXPECT_FALSE((persistable_v<std::pair<int, std::string>>));
  EXPECT_FALSE(persistable_v<std::optional<std::vector<int>>>);
  EXPECT_FALSE((persistable_v<std::array<std::string, 2>>));
  EXPECT_FALSE(persistable_v<std::string[3]>);
  EXPECT_FALSE(persistable_v<const std::vector<int>>);
  EXPECT_FALSE(persistable_v<labelled<std::allocator<char>>>);
}

TEST(Persistable, AcceptsHeapContainersOffsetPtrAndTriviallyCopyableTypes) {
  EXPECT_TRUE(persistable_v<int>);
  EXPECT_TRUE(persistable_v<plain>);
  EXPECT_TRUE(persistable_v<plain[8]>);
  EXPECT_TRUE((persistable_v<std::array<plain, 3>>));
  EXPECT_TRUE((persistable_v<std::pair<int, double>>));
  EXPECT_TRUE(persistable_v<boost::interprocess::offset_ptr<int>>);
  EXPECT_TRUE(persistable_v<pc::vector<int>>);
  EXPECT_TRUE(persistable_v<pc::string>);
  EXPECT_TRUE((persistable_v<pc::unordered_map<std::uint64_t, pc::vector<std::uint64_t>>>));
  EXPECT_TRUE((persistable_v<pc::map<pc::string, pc::vector<int>>>));
  EXPECT_TRUE((persistable_v<boost::container::vector<int, pheap::allocator<int>>>));
  EXPECT_TRUE((persistable_v<boost::container::vector<int, pc::scoped_allocator<int>>>));
  EXPECT_TRUE(persistable_v<labelled<pheap::allocator<char>>>);
}

TEST(Persistable, SeesNoMembersUnlessTheUserSpecialisesTheTrait) {
  EXPECT_TRUE(persistable_v<hidden_vector>);  // documented blind spot
  EXPECT_FALSE(persistable_v<declared_dram>);
  EXPECT_FALSE(persistable_v<pc::vector<declared_dram>>);
  EXPECT_FALSE((persistable_v<pc::unordered_map<int, declared_dram>>));
}

class PersistableHeap : public manager_test {};

TEST_F(PersistableHeap, AcceptedKindsSurviveAReopen) {
  using user_t = labelled<pheap::allocator<char>>;
  using map_t = pc::unordered_map<std::uint64_t, std::uint64_t>;
  {
    manager m(create_only, path_, small_options());
    auto* u = m.construct<user_t>("user")(m.get_allocator<char>());
    u->label = "allocator-aware";
    u->value = 7;
    auto* arr = m.construct<plain>("plain")[3](plain{1, 2.5});
    auto* p = m.construct<boost::interprocess::offset_ptr<plain>>("ptr")(arr + 2);
    ASSERT_NE(p, nullptr);
    auto* g = m.construct<map_t>("map")(m.get_allocator<>());
    (*g)[1] = 2;
  }
  manager m(open_read_only, path_);
  auto* u = m.find<user_t>("user").first;
  ASSERT_NE(u, nullptr);
  EXPECT_EQ(std::string(u->label.c_str()), "allocator-aware");
  EXPECT_EQ(u->value, 7u);
  auto [arr, n] = m.find<plain>("plain");
  ASSERT_EQ(n, 3u);
  auto* p = m.find<boost::interprocess::offset_ptr<plain>>("ptr").first;
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->get(), arr + 2);
  EXPECT_EQ((*p)->b, 2.5);
  EXPECT_EQ(m.find<map_t>("map").first->at(1), 2u);
}

}  // namespace
}  // namespace pheap::test
