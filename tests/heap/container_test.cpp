// pheap::container: the aliases nest by default (scoped allocator where the elements take an
// allocator), so inner containers live in the outer container's heap and survive a reopen;
// flat containers keep the plain allocator and the type names of pheap 0.1.0.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "manager_fixture.hpp"
#include "pheap/pheap.hpp"

namespace pheap::test {
namespace {

namespace pc = pheap::container;
using u64 = std::uint64_t;

class Containers : public manager_test {
 protected:
  // True iff [p, p + n) lies inside m's heap region.
  static bool in_heap(const manager& m, const void* p, std::size_t n = 1) {
    const auto* base = static_cast<const char*>(m.get_address());
    const auto* q = static_cast<const char*>(p);
    return q >= base && q + n <= base + m.get_size();
  }
};

TEST_F(Containers, NestedContainersBuildInnerElementsInTheSameHeapAndSurviveReopen) {
  using adj = pc::unordered_map<u64, pc::vector<u64>>;
  using rows = pc::vector<pc::vector<pc::string>>;
  using index = pc::map<pc::string, pc::list<u64>>;
  using queue = pc::deque<pc::set<int>>;
  const std::string long_text(100, 'x');  // past the small-string buffer: heap storage
  {
    manager m(create_only, path_, small_options());
    auto* g = m.construct<adj>("adj")(m.get_allocator<>());
    for (u64 v = 0; v < 100; ++v) (*g)[v % 7].push_back(v);
    auto* r = m.construct<rows>("rows")(m.get_allocator<>());
    r->resize(3);
    (*r)[2].emplace_back(long_text.c_str());
    auto* ix = m.construct<index>("index")(m.get_allocator<>());
    (*ix)[pc::string(long_text.c_str(), m.get_allocator<>())].push_back(42);
    auto* q = m.construct<queue>("queue")(m.get_allocator<>());
    q->resize(2);
    q->back().insert(9);

    EXPECT_TRUE(in_heap(m, g->at(3).data(), g->at(3).size() * sizeof(u64)));
    EXPECT_TRUE(in_heap(m, (*r)[2][0].c_str(), long_text.size()));
    EXPECT_TRUE(in_heap(m, ix->begin()->first.c_str(), long_text.size()));
    EXPECT_TRUE(in_heap(m, &ix->begin()->second.front()));
    EXPECT_TRUE(in_heap(m, &*q->back().begin()));
  }
  manager m(open_read_only, path_);
  const adj& g = *m.find<adj>("adj").first;
  ASSERT_EQ(g.size(), 7u);
  for (u64 k = 0; k < 7; ++k) {
    const auto& row = g.at(k);
    for (std::size_t i = 0; i < row.size(); ++i) EXPECT_EQ(row[i], k + 7 * i);
  }
  EXPECT_EQ(std::string(m.find<rows>("rows").first->at(2).at(0).c_str()), long_text);
  const index& ix = *m.find<index>("index").first;
  EXPECT_EQ(std::string(ix.begin()->first.c_str()), long_text);
  EXPECT_EQ(ix.begin()->second.front(), 42u);
  EXPECT_EQ(m.find<queue>("queue").first->back().count(9), 1u);
  EXPECT_TRUE(m.check().empty());
}

TEST_F(Containers, EveryGetAllocatorSpellingConstructsANestingContainer) {
  using adj = pc::unordered_map<u64, pc::vector<u64>>;
  manager m(create_only, path_, small_options());
  adj* a = m.construct<adj>("by-byte")(m.get_allocator<>());
  adj* b = m.construct<adj>("by-value-type")(m.get_allocator<adj::value_type>());
  adj* c = m.construct<adj>("by-other-type")(m.get_allocator<int>());
  for (adj* x : {a, b, c}) {
    (*x)[1].push_back(2);
    EXPECT_TRUE(in_heap(m, x->at(1).data()));
    EXPECT_EQ(x->get_allocator(), m.get_allocator<>());
  }
}

// The default allocator is scoped exactly where elements take an allocator; flat containers
// keep the plain allocator, so their stored type names are those of pheap 0.1.0.
TEST(ContainerDefaults, ScopedOnlyWhereElementsTakeAnAllocator) {
  EXPECT_TRUE((std::is_same_v<pc::vector<u64>::allocator_type, pheap::allocator<u64>>));
  EXPECT_TRUE((std::is_same_v<pc::string::allocator_type, pheap::allocator<char>>));
  EXPECT_TRUE((std::is_same_v<pc::unordered_map<u64, u64>::allocator_type,
                              pheap::allocator<std::pair<const u64, u64>>>));
  EXPECT_TRUE((std::is_same_v<pc::vector<pc::string>::allocator_type, pc::scoped_allocator<pc::string>>));
  using inner = pc::vector<u64>;
  EXPECT_TRUE((std::is_same_v<pc::unordered_map<u64, inner>::allocator_type,
                              pc::scoped_allocator<std::pair<const u64, inner>>>));
  EXPECT_TRUE((std::is_same_v<pc::map<pc::string, u64>::allocator_type,
                              pc::scoped_allocator<std::pair<const pc::string, u64>>>));
  using spelled_out = boost::container::vector<u64, pheap::allocator<u64>>;
  EXPECT_EQ(pheap::type_name<pc::vector<u64>>(), pheap::type_name<spelled_out>());
  EXPECT_EQ(sizeof(pc::scoped_allocator<u64>), sizeof(pheap::allocator<u64>));
}

// A flat container written by pheap 0.1.0 (same spelling, same stored type name) is found with
// today's alias.
TEST_F(Containers, FlatContainersOfOlderDatastoresAreFoundWithTheAlias) {
  using spelled_out = boost::container::vector<u64, pheap::allocator<u64>>;
  {
    manager m(create_only, path_, small_options());
    m.construct<spelled_out>("v")(m.get_allocator<u64>())->push_back(5);
  }
  manager m(open_only, path_);
  auto* v = m.find<pc::vector<u64>>("v").first;
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->at(0), 5u);
}

}  // namespace
}  // namespace pheap::test
