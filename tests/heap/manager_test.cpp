// pheap::manager: every API entry, its error cases and exception safety, over the real pager.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <numeric>
#include <stdexcept>
#include <set>
#include <vector>

#include "manager_fixture.hpp"
#include "pheap/env.hpp"

namespace {

using namespace pheap;
using pheap::test::code_of;
using pheap::test::mapping_length_at;
using pheap::test::small_options;
using vec_t = container::vector<std::uint64_t>;

struct point {
  double x, y;
};

// Throws from its constructor when the global countdown reaches zero; counts live instances.
struct fragile {
  static inline int countdown = -1;
  static inline int live = 0;
  explicit fragile(int v) : value(v) {
    if (countdown >= 0 && countdown-- == 0) throw std::runtime_error("fragile");
    ++live;
  }
  ~fragile() { --live; }
  int value;
};

class Manager : public pheap::test::manager_test {};

TEST_F(Manager, CreatedObjectsAreFoundAfterReopenReadWriteAndReadOnly) {
  {
    manager m(create_only, path_, small_options());
    EXPECT_FALSE(m.read_only());
    *m.construct<int>("answer")(41) += 1;
    m.construct<point>("p")(point{1.5, 2.5});
  }
  {
    manager m(open_only, path_);
    auto [a, n] = m.find<int>("answer");
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(*a, 42);
    EXPECT_EQ(n, 1u);
    *a = 43;
  }
  manager r(open_read_only, path_);
  EXPECT_TRUE(r.read_only());
  EXPECT_EQ(*r.find<int>("answer").first, 43);
  EXPECT_EQ(r.find<point>("p").first->y, 2.5);
  EXPECT_EQ(r.find<int>("absent").first, nullptr);
}

// A read-only open reserves the whole capacity where the address space allows it (a refresh
// may find the heap grown by a writer beside it; under an RLIMIT_AS below the capacity it maps
// the part in use only, pager_options::read_only_map_bytes: ManagerReaders tests that). The
// top chunk here was allocated and never written (no page of it is in the store): it reads as
// zeros.
TEST_F(Manager, AReadOnlyOpenReservesTheCapacityAndReadsEveryChunkEverUsed) {
  constexpr std::uint64_t kCapacity = 1ull << 30;
  constexpr std::size_t kUntouched = 8u << 20;
  std::ptrdiff_t untouched_off = 0;
  {
    manager m(create_only, path_, small_options(kCapacity));
    m.construct<int>("answer")(42);
    auto* p = static_cast<std::byte*>(m.allocate(kUntouched));
    ASSERT_NE(p, nullptr);
    untouched_off = p - static_cast<std::byte*>(m.get_address());
    m.construct<std::ptrdiff_t>("untouched")(untouched_off);
  }
  {
    manager r(open_read_only, path_);
    EXPECT_EQ(r.get_size(), kCapacity) << "the capacity is still the datastore's";
    EXPECT_EQ(mapping_length_at(r.get_address()), kCapacity);
    EXPECT_EQ(*r.find<int>("answer").first, 42);
    ASSERT_EQ(*r.find<std::ptrdiff_t>("untouched").first, untouched_off);
    const auto* z = static_cast<const volatile std::byte*>(r.get_address()) + untouched_off;
    std::size_t nonzero = 0;
    for (std::size_t i = 0; i < kUntouched; i += 512) nonzero += z[i] != std::byte{0};
    EXPECT_EQ(nonzero, 0u);
    EXPECT_TRUE(r.check().empty());
  }
  manager w(open_only, path_);
  EXPECT_EQ(mapping_length_at(w.get_address()), kCapacity) << "a read-write open maps it all";
}

TEST_F(Manager, ReadOnlyManagerRejectsEveryMutationWithReadOnlyError) {
  { manager m(create_only, path_, small_options()); m.construct<int>("x")(1); }
  manager r(open_read_only, path_);
  int* x = r.find<int>("x").first;
  EXPECT_EQ(code_of([&] { r.construct<int>("y")(2); }), errc::read_only);
  EXPECT_EQ(code_of([&] { r.find_or_construct<int>("x")(2); }), errc::read_only);
  EXPECT_EQ(code_of([&] { r.destroy<int>("x"); }), errc::read_only);
  EXPECT_EQ(code_of([&] { r.destroy_ptr(x); }), errc::read_only);
  EXPECT_EQ(code_of([&] { r.allocate(10); }), errc::read_only);
  EXPECT_EQ(code_of([&] { r.allocate_aligned(10, 64); }), errc::read_only);
  EXPECT_EQ(code_of([&] { r.flush(); }), errc::read_only);
  EXPECT_EQ(code_of([&] { r.set_description("d"); }), errc::read_only);
  EXPECT_EQ(code_of([&] { r.set_instance_description(x, "d"); }), errc::read_only);
  EXPECT_EQ(code_of([&] { vec_t v(r.get_allocator<>()); v.push_back(1); }), errc::read_only);
  EXPECT_EQ(*x, 1);
  EXPECT_TRUE(r.check().empty());
}

TEST_F(Manager, ConstructReturnsNullForTakenNamesAndFindOrConstructReturnsTheExisting) {
  manager m(create_only, path_, small_options());
  int* a = m.construct<int>("a")(1);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(m.construct<int>("a")(2), nullptr);
  EXPECT_EQ(*a, 1);
  EXPECT_EQ(m.find_or_construct<int>("a")(3), a);
  int* b = m.find_or_construct<int>("b")(4);
  EXPECT_EQ(*b, 4);
  EXPECT_EQ(m.get_num_named_objects(), 2u);
  EXPECT_EQ(code_of([&] { m.construct<int>("")(1); }), errc::invalid_argument);
}

TEST_F(Manager, UniqueInstancesAreKeyedByTypeAndAnonymousOnesAreNamelessAndUnfindable) {
  manager m(create_only, path_, small_options());
  point* u = m.construct<point>(unique_instance)(point{1, 2});
  ASSERT_NE(u, nullptr);
  EXPECT_EQ(m.construct<point>(unique_instance)(point{3, 4}), nullptr);
  EXPECT_EQ(m.find<point>(unique_instance).first, u);
  EXPECT_EQ(m.find_or_construct<point>(unique_instance)(point{5, 6}), u);
  EXPECT_EQ(m.get_instance_name(u), type_name<point>());
  EXPECT_EQ(m.get_instance_kind(u), instance_kind::unique_kind);
  int* anon1 = m.construct<int>(anonymous_instance)(7);
  int* anon2 = m.construct<int>(anonymous_instance)(8);
  EXPECT_NE(anon1, anon2);
  EXPECT_EQ(m.get_instance_kind(anon1), instance_kind::anonymous_kind);
  EXPECT_EQ(m.get_instance_name(anon1), "");
  EXPECT_EQ(m.get_num_unique_objects(), 1u);
  EXPECT_EQ(m.get_num_anonymous_objects(), 2u);
  EXPECT_TRUE(m.destroy_ptr(anon1));
  EXPECT_EQ(m.get_num_anonymous_objects(), 1u);
  EXPECT_TRUE(m.destroy<point>(unique_instance));
  EXPECT_EQ(m.find<point>(unique_instance).first, nullptr);
}

TEST_F(Manager, AnonymousObjectsAreListedByIterationAcrossReopenUntilDestroyed) {
  {
    manager m(create_only, path_, small_options());
    m.construct<point>("named")(point{0, 0});
    m.construct<int>(anonymous_instance)(1);
    m.construct<point>(anonymous_instance)[3](point{2, 3});
    double* d = m.construct<double>(anonymous_instance)(4.5);
    EXPECT_TRUE(m.destroy_ptr(d));
  }
  manager m(open_read_only, path_);
  std::vector<object_info> seen(m.anonymous_begin(), m.anonymous_end());
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(m.get_num_anonymous_objects(), 2u);
  std::sort(seen.begin(), seen.end(), [](const object_info& a, const object_info& b) { return a.length < b.length; });
  EXPECT_EQ(seen[0].kind, instance_kind::anonymous_kind);
  EXPECT_EQ(seen[0].type_name, type_name<int>());
  EXPECT_EQ(*static_cast<int*>(seen[0].value), 1);
  EXPECT_EQ(seen[1].type_name, type_name<point>());
  EXPECT_EQ(seen[1].length, 3u);
  EXPECT_EQ(static_cast<point*>(seen[1].value)[2].y, 3);
  EXPECT_TRUE(seen[0].name.empty());
  EXPECT_EQ(std::distance(m.named_begin(), m.named_end()), 1);  // the kinds do not mix
  EXPECT_TRUE(m.check().empty());
}

TEST_F(Manager, ArrayAndIteratorConstructionBuildEveryElement) {
  manager m(create_only, path_, small_options());
  point* ps = m.construct<point>("ps")[5](point{1, 2});
  ASSERT_NE(ps, nullptr);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(ps[i].x, 1);
  EXPECT_EQ(m.find<point>("ps").second, 5u);
  EXPECT_EQ(m.get_instance_length(ps), 5u);
  const std::vector<double> xs{1, 2, 3}, ys{4, 5, 6};
  point* it = m.construct_it<point>("it")[3](xs.begin(), ys.begin());
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(it[i].x, xs[i]);
    EXPECT_EQ(it[i].y, ys[i]);
  }
  EXPECT_EQ(m.find_or_construct_it<point>("it")[3](xs.begin(), ys.begin()), it);
  int* empty = m.construct<int>("empty")[0]();
  EXPECT_NE(empty, nullptr);
  EXPECT_EQ(m.find<int>("empty").second, 0u);
}

TEST_F(Manager, ThrowingConstructorLeavesNoObjectNoNameAndNoLeakedMemory) {
  manager m(create_only, path_, small_options());
  fragile::live = 0;
  fragile::countdown = 3;  // the fourth element throws
  EXPECT_THROW(m.construct<fragile>("f")[10](1), std::runtime_error);
  EXPECT_EQ(fragile::live, 0);  // three built elements were destroyed
  EXPECT_EQ(m.find<fragile>("f").first, nullptr);
  EXPECT_EQ(m.get_num_named_objects(), 0u);
  fragile::countdown = 0;
  EXPECT_THROW(m.construct<fragile>(anonymous_instance)(1), std::runtime_error);
  EXPECT_EQ(m.get_num_anonymous_objects(), 0u);
  fragile::countdown = 0;
  EXPECT_THROW(m.find_or_construct<fragile>(unique_instance)(1), std::runtime_error);
  EXPECT_TRUE(m.all_memory_deallocated());
  fragile::countdown = -1;
  fragile* ok = m.construct<fragile>("f")[2](9);  // the name is usable again
  ASSERT_NE(ok, nullptr);
  EXPECT_EQ(ok[1].value, 9);
  EXPECT_TRUE(m.destroy<fragile>("f"));
  EXPECT_EQ(fragile::live, 0);
  EXPECT_TRUE(m.all_memory_deallocated());
  EXPECT_TRUE(m.check().empty());
}

TEST_F(Manager, FindWithAnotherTypeThrowsTypeMismatchNamingBothTypes) {
  manager m(create_only, path_, small_options());
  m.construct<int>("n")(1);
  try {
    m.find<double>("n");
    FAIL() << "no type_mismatch";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::type_mismatch);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("int"), std::string::npos) << msg;
    EXPECT_NE(msg.find("double"), std::string::npos) << msg;
  }
  EXPECT_EQ(code_of([&] { m.find<unsigned>("n"); }), errc::type_mismatch);  // same size, other name
  EXPECT_EQ(code_of([&] { m.destroy<long>("n"); }), errc::type_mismatch);
  EXPECT_EQ(code_of([&] { m.find_or_construct<float>("n")(1.0f); }), errc::type_mismatch);
  EXPECT_TRUE(m.is_instance_type<int>(m.find<int>("n").first));
  EXPECT_FALSE(m.is_instance_type<float>(m.find<int>("n").first));
  EXPECT_EQ(*m.find<int>("n").first, 1);  // still there
}

TEST_F(Manager, DestroyRunsDestructorsAndFreesForEveryKind) {
  manager m(create_only, path_, small_options());
  fragile::live = 0;
  fragile::countdown = -1;
  m.construct<fragile>("a")[3](1);
  fragile* u = m.construct<fragile>(unique_instance)(2);
  fragile* an = m.construct<fragile>(anonymous_instance)(3);
  EXPECT_EQ(fragile::live, 5);
  EXPECT_TRUE(m.destroy<fragile>("a"));
  EXPECT_FALSE(m.destroy<fragile>("a"));
  EXPECT_TRUE(m.destroy_ptr(u));
  EXPECT_TRUE(m.destroy_ptr(an));
  EXPECT_EQ(fragile::live, 0);
  EXPECT_TRUE(m.all_memory_deallocated());
  int local = 0;
  EXPECT_EQ(code_of([&] { m.destroy_ptr(&local); }), errc::invalid_argument);
  void* raw = m.allocate(64);
  EXPECT_EQ(code_of([&] { m.destroy_ptr(static_cast<int*>(raw)); }), errc::invalid_argument);
}

TEST_F(Manager, InstanceDescriptionsAndIterationCoverNamedAndUniqueObjects) {
  manager m(create_only, path_, small_options());
  for (int i = 0; i < 100; ++i) m.construct<int>("obj" + std::to_string(i))(i);
  m.construct<point>(unique_instance)(point{0, 0});
  m.construct<double>(unique_instance)(1.0);
  int* o7 = m.find<int>("obj7").first;
  std::string d;
  EXPECT_FALSE(m.get_instance_description(o7, &d));
  m.set_instance_description(o7, "seven");
  EXPECT_TRUE(m.get_instance_description(o7, &d));
  EXPECT_EQ(d, "seven");
  m.set_instance_description(o7, "lucky seven");
  EXPECT_TRUE(m.get_instance_description(o7, &d));
  EXPECT_EQ(d, "lucky seven");

  std::vector<std::string> names;
  for (auto it = m.named_begin(); it != m.named_end(); ++it) {
    const object_info i = *it;
    EXPECT_EQ(i.kind, instance_kind::named_kind);
    EXPECT_EQ(i.type_name, "int");
    EXPECT_EQ(*static_cast<int*>(i.value), std::stoi(std::string(i.name.substr(3))));
    names.emplace_back(i.name);
  }
  EXPECT_EQ(names.size(), 100u);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(std::unique(names.begin(), names.end()), names.end());
  int uniques = 0;
  for (auto it = m.unique_begin(); it != m.unique_end(); ++it) {
    ++uniques;
    EXPECT_EQ((*it).kind, instance_kind::unique_kind);
  }
  EXPECT_EQ(uniques, 2);
}

TEST_F(Manager, RawAllocationIsAlignedReusableAndAccounted) {
  manager m(create_only, path_, small_options());
  EXPECT_TRUE(m.all_memory_deallocated());
  std::vector<void*> ps;
  for (std::size_t align = 1; align <= 4096; align *= 2) {
    void* p = m.allocate_aligned(100, align);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % align, 0u);
    ps.push_back(p);
  }
  EXPECT_EQ(m.allocate_aligned(100, 8192), nullptr);
  void* big = m.allocate(20 << 20);
  ASSERT_NE(big, nullptr);
  std::memset(big, 0xAB, 20 << 20);
  ps.push_back(big);
  EXPECT_FALSE(m.all_memory_deallocated());
  for (void* p : ps) m.deallocate(p);
  m.deallocate(nullptr);
  EXPECT_TRUE(m.all_memory_deallocated());
  int local;
  EXPECT_EQ(code_of([&] { m.deallocate(&local); }), errc::invalid_argument);
}

// A freed large object's chunks leave the pager's buffer unwritten (pager::discard, as the
// kernel backend's MADV_REMOVE drops them): the flush after the free writes none of their
// pages, though they were dirty.
TEST_F(Manager, AFreedLargeObjectIsNotWrittenByTheNextFlush) {
  manager m(create_only, path_, small_options());
  const std::uint64_t page = m.stats().page_size;
  const std::size_t bytes = 8 * small_options().chunk_size;
  auto* big = static_cast<std::byte*>(m.allocate(bytes));
  ASSERT_NE(big, nullptr);
  std::memset(big, 1, bytes);
  m.flush();
  std::memset(big, 2, bytes);  // dirty again
  const pager_stats s0 = m.stats().pager;
  m.deallocate(big);
  m.flush();
  const pager_stats s1 = m.stats().pager;
  EXPECT_GE((s1.released_pages_dropped - s0.released_pages_dropped) * page, bytes - 2 * small_options().chunk_size)
      << s1;
  EXPECT_LT((s1.dirty_pages_written - s0.dirty_pages_written) * page, small_options().chunk_size)
      << "the flush wrote the freed object: " << s1;
}

TEST_F(Manager, CapacityExhaustionGivesBadAllocOrNullptrAndTheHeapStaysUsable) {
  manager m(create_only, path_, small_options(32ull << 20));
  EXPECT_EQ(m.allocate(64ull << 20), nullptr);
  auto* v = m.construct<vec_t>("v")(m.get_allocator<>());
  EXPECT_THROW(
      {
        for (;;) v->push_back(1);
      },
      std::bad_alloc);
  EXPECT_THROW(m.construct<char>("huge")[64ull << 20](0), std::bad_alloc);
  EXPECT_EQ(m.find<char>("huge").first, nullptr);
  const std::size_t n = v->size();
  v->clear();
  v->shrink_to_fit();
  const auto st = m.stats();
  EXPECT_NO_THROW(v->resize(n / 2)) << "n " << n << " chunks in use " << st.chunks_in_use << " of " << st.num_chunks;
  EXPECT_TRUE(m.check().empty());
}

TEST_F(Manager, FlushAdvancesTheWatermarkAndUnflushedWorkIsLostOnlyOnCrash) {
  manager m(create_only, path_, small_options());
  const std::uint64_t e1 = m.flush();
  m.construct<int>("x")(1);
  const std::uint64_t e2 = m.flush();
  EXPECT_GT(e2, e1);
  EXPECT_EQ(m.epoch(), e2);
  EXPECT_EQ(m.stats().epoch, e2);
}

TEST_F(Manager, FlushFromInsideAConstructorIsRefused) {
  manager m(create_only, path_, small_options());
  struct flusher {
    explicit flusher(manager* mm) { mm->flush(); }
  };
  EXPECT_EQ(code_of([&] { m.construct<flusher>("f")(&m); }), errc::invalid_argument);
  EXPECT_EQ(m.find<flusher>("f").first, nullptr);
}

TEST_F(Manager, SnapshotIsAnIndependentDatastoreWithANewUuid) {
  const std::string snap = dir_ / "snap";
  std::string uuid;
  {
    manager m(create_only, path_, small_options());
    m.construct<int>("x")(1);
    m.snapshot(snap);
    *m.find<int>("x").first = 2;
    uuid = m.get_uuid();
  }
  manager s(open_read_only, snap);
  EXPECT_EQ(*s.find<int>("x").first, 1);
  EXPECT_NE(s.get_uuid(), uuid);
  manager o(open_read_only, path_);
  EXPECT_EQ(*o.find<int>("x").first, 2);
  EXPECT_EQ(o.get_uuid(), uuid);
}

TEST_F(Manager, StaticHelpersConsistentCopyRemoveUuidVersionDescription) {
  {
    options o = small_options();
    o.description = "graph g1";
    manager m(create_only, path_, o);
    m.construct<int>("x")(5);
    EXPECT_EQ(m.get_description(), "graph g1");
    EXPECT_EQ(m.get_version(), library_version);
  }
  EXPECT_TRUE(manager::consistent(path_));
  EXPECT_FALSE(manager::consistent(dir_ / "nothing"));
  std::filesystem::create_directories(dir_ / "plain");
  EXPECT_FALSE(manager::consistent(dir_ / "plain"));
  EXPECT_EQ(manager::get_description(path_), "graph g1");
  manager::set_description(path_, "graph g1, v2");
  EXPECT_EQ(manager::get_description(path_), "graph g1, v2");
  EXPECT_EQ(manager::get_version(path_), library_version);
  EXPECT_EQ(manager::get_uuid(path_).size(), 36u);

  manager::copy(path_, dir_ / "copy");
  {
    manager c(open_read_only, dir_ / "copy");
    EXPECT_EQ(*c.find<int>("x").first, 5);
    EXPECT_EQ(c.get_description(), "graph g1, v2");
  }
  EXPECT_EQ(code_of([&] { manager::remove(dir_ / "plain"); }), errc::not_a_datastore);
  EXPECT_TRUE(std::filesystem::exists(dir_ / "plain"));
  manager::remove(dir_ / "copy");
  EXPECT_FALSE(std::filesystem::exists(dir_ / "copy"));
  EXPECT_EQ(code_of([&] { manager::remove(dir_ / "copy"); }), errc::not_found);
  EXPECT_EQ(code_of([&] { manager m(open_only, path_); m.set_description(std::string(5000, 'x')); }),
            errc::invalid_argument);
}

TEST_F(Manager, BadOpensAndCreatesFailWithSpecificErrors) {
  EXPECT_EQ(code_of([&] { manager m(open_only, dir_ / "missing"); }), errc::not_found);
  { manager m(create_only, path_, small_options()); }
  EXPECT_EQ(code_of([&] { manager m(create_only, path_, small_options()); }), errc::already_exists);
  options zero = small_options();
  zero.capacity = 0;
  EXPECT_EQ(code_of([&] { manager m(create_only, dir_ / "z", zero); }), errc::invalid_argument);
  options badchunk = small_options();
  badchunk.chunk_size = 3 << 20;
  EXPECT_EQ(code_of([&] { manager m(create_only, dir_ / "c", badchunk); }), errc::invalid_argument);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "c"));
  options tiny = small_options();
  tiny.capacity = 1 << 20;
  EXPECT_EQ(code_of([&] { manager m(create_only, dir_ / "t", tiny); }), errc::invalid_argument);
}

TEST_F(Manager, MovedManagerKeepsWorkingAndAllocatorsFollowTheHeap) {
  manager a(create_only, path_, small_options());
  auto* v = a.construct<vec_t>("v")(a.get_allocator<>());
  manager b(std::move(a));
  v->push_back(7);
  manager c(create_only, dir_ / "other", small_options());
  c = std::move(b);
  v->push_back(8);
  EXPECT_EQ(c.find<vec_t>("v").first->size(), 2u);
  EXPECT_EQ(c.get_allocator<int>(), c.get_allocator<long>());
}

TEST_F(Manager, AllBoostContainersWorkAndSurviveReopen) {
  using namespace pheap::container;
  using str = container::string;
  using str_map = map<str, str, std::less<str>, scoped_allocator<std::pair<const str, str>>>;
  {
    manager m(create_only, path_, small_options());
    auto al = m.get_allocator<>();
    auto* v = m.construct<vector<int>>("vector")(al);
    auto* d = m.construct<deque<int>>("deque")(al);
    auto* l = m.construct<list<int>>("list")(al);
    auto* s = m.construct<set<int>>("set")(al);
    auto* fm = m.construct<flat_map<int, int>>("flat_map")(al);
    auto* um = m.construct<unordered_map<int, int>>("unordered_map")(al);
    auto* sm = m.construct<str_map>("str_map")(al);
    for (int i = 0; i < 1000; ++i) {
      v->push_back(i);
      d->push_front(i);
      l->push_back(i);
      s->insert(i);
      fm->emplace(i, -i);
      um->emplace(i, 2 * i);
    }
    for (int i = 0; i < 100; ++i) {
      sm->emplace(str("key number " + std::to_string(i), al), str(std::string(i, 'v'), al));
    }
  }
  manager m(open_read_only, path_);
  EXPECT_EQ(m.find<vector<int>>("vector").first->at(999), 999);
  EXPECT_EQ(m.find<deque<int>>("deque").first->front(), 999);
  EXPECT_EQ(m.find<list<int>>("list").first->back(), 999);
  EXPECT_EQ(m.find<set<int>>("set").first->size(), 1000u);
  EXPECT_EQ((m.find<flat_map<int, int>>("flat_map").first->at(500)), -500);
  EXPECT_EQ((m.find<unordered_map<int, int>>("unordered_map").first->at(321)), 642);
  auto* sm = m.find<str_map>("str_map").first;
  ASSERT_EQ(sm->size(), 100u);
  for (int i = 0; i < 100; ++i) {
    auto it = sm->find(str("key number " + std::to_string(i), m.get_allocator<>()));
    ASSERT_NE(it, sm->end());
    EXPECT_EQ(std::string(it->second.c_str()), std::string(i, 'v'));
  }
  EXPECT_TRUE(m.check().empty());
}

}  // namespace

// find_info: the directory entry of a named object whatever its type (what the C API and the
// Python package use to find objects a C++ program made); nothing for absent or unique names.
TEST_F(Manager, FindInfoGivesTheEntryOfANamedObjectOfAnyType) {
  manager m(create_only, path_, small_options());
  auto* v = m.construct<vec_t>("v")(m.get_allocator<>());
  double* d = m.construct<double>("d")[5](1.5);
  m.construct<int>(unique_instance)(3);
  const auto iv = m.find_info("v");
  ASSERT_TRUE(iv.has_value());
  EXPECT_EQ(iv->value, v);
  EXPECT_EQ(iv->type_name, type_name<vec_t>());
  EXPECT_EQ(iv->length, 1u);
  const auto id = m.find_info("d");
  ASSERT_TRUE(id.has_value());
  EXPECT_EQ(id->value, d);
  EXPECT_EQ(id->type_name, "double");
  EXPECT_EQ(id->length, 5u);
  EXPECT_EQ(id->type_size, sizeof(double));
  EXPECT_FALSE(m.find_info("absent").has_value());
  EXPECT_FALSE(m.find_info(type_name<int>()).has_value());  // unique objects are not named
}

// watermark(): peek's fields from an open manager, equal to peek's once it is closed.
TEST_F(Manager, WatermarkOfAnOpenManagerEqualsPeekOfItsDatastore) {
  pheap::watermark_info w;
  {
    options o = small_options();
    o.description = "described";
    manager m(create_only, path_, o);
    m.construct<int>("x")(1);
    m.flush();
    w = m.watermark();
    EXPECT_EQ(w.description, "described");
    EXPECT_EQ(w.epoch, m.epoch());
  }
  const manager r(open_read_only, path_, small_options());
  const pheap::watermark_info a = r.watermark(), b = manager::peek(path_);
  EXPECT_EQ(a.uuid, w.uuid);
  EXPECT_EQ(a.epoch, b.epoch);
  EXPECT_EQ(a.uuid, b.uuid);
  EXPECT_EQ(a.store_format, b.store_format);
  EXPECT_EQ(a.writer_version, b.writer_version);
  EXPECT_EQ(a.capacity, b.capacity);
  EXPECT_EQ(a.page_size, b.page_size);
  EXPECT_EQ(a.chunk_size, b.chunk_size);
  EXPECT_EQ(a.created_ns, b.created_ns);
  EXPECT_EQ(a.description, b.description);
  EXPECT_GT(a.created_ns, 0u);
}

// The spellings pheap info (and the Python package's info()) print versions and times in.
TEST(ManagerText, VersionAndCreationTimeAreSpelledAsPheapInfoPrintsThem) {
  EXPECT_EQ(pheap::version_string(pheap::library_version), "0.1.0");
  EXPECT_EQ(pheap::version_string(10203), "1.2.3");
  EXPECT_EQ(pheap::utc_time_string(0), "1970-01-01 00:00:00 UTC");
  EXPECT_EQ(pheap::utc_time_string(1700000000ull * 1000000000ull + 999), "2023-11-14 22:13:20 UTC");
}

// PHEAP_PAGE_SIZE picks the page size of new datastores, like the other PHEAP_* variables:
// through options::from_env(), which the constructors without options use.
TEST(ManagerOptions, PheapPageSizeEnvironmentSetsTheDefaultPageSizeAndRejectsBadValues) {
  ::unsetenv("PHEAP_PAGE_SIZE");
  EXPECT_EQ(pheap::options::from_env().page_size, 64u * 1024);
  ::setenv("PHEAP_PAGE_SIZE", "4K", 1);
  EXPECT_EQ(pheap::options::from_env().page_size, 4096u);
  ::setenv("PHEAP_PAGE_SIZE", "2MiB", 1);
  EXPECT_EQ(pheap::options::from_env().page_size, 2u << 20);
  for (const char* bad : {"5K", "1K", "abc", "128M"}) {
    ::setenv("PHEAP_PAGE_SIZE", bad, 1);
    try {
      (void)pheap::options::from_env();
      ADD_FAILURE() << "PHEAP_PAGE_SIZE=" << bad << " accepted";
    } catch (const pheap::error& e) {
      EXPECT_EQ(e.code(), pheap::errc::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("PHEAP_PAGE_SIZE"), std::string::npos) << e.what();
    }
  }
  ::unsetenv("PHEAP_PAGE_SIZE");
}

// Every PHEAP_* variable of the table is also a field: options::from_env() moves exactly that
// field away from its default (PHEAP_IO_ENGINE, the io layer's, picks io::default_engine(),
// whose field is options::engine). A variable added to the table fails here until it has one.
TEST(ManagerOptions, EveryVariableOfTheTableSetsItsFieldThroughFromEnv) {
  using env::var;
  struct row {
    var v;
    const char* value;
    bool (*moved)(const options&);
  };
  const row rows[] = {
      {var::page_size, "16K", [](const options& o) { return o.page_size == 16u << 10; }},
      {var::buffer_size, "5M", [](const options& o) { return o.pager.buffer_size == 5u << 20; }},
      {var::memory_headroom, "48M", [](const options& o) { return o.pager.memory_headroom == 48u << 20; }},
      {var::high_watermark, "0.995", [](const options& o) { return o.pager.high_watermark == 0.995; }},
      {var::low_watermark, "0.5", [](const options& o) { return o.pager.low_watermark == 0.5; }},
      {var::dirty_tracking, "wp_sync", [](const options& o) { return o.pager.tracking == dirty_tracking::wp_sync; }},
      {var::fault_threads, "7", [](const options& o) { return o.pager.fault_threads == 7; }},
      {var::read_ahead, "0", [](const options& o) { return o.pager.read_ahead == 0; }},
      {var::write_behind, "250", [](const options& o) { return o.pager.write_behind_ms == 250; }},
      {var::backend, "mmap", [](const options& o) { return o.backend == backend_kind::mmap; }},
      {var::mmap_advice, "random", [](const options& o) { return o.mmap_advice == mmap_advice_kind::random; }},
      {var::victim_cache, "off", [](const options& o) { return o.pager.victim_cache == victim_caching::off; }},
      {var::fault_fill, "faulting_thread", [](const options& o) { return o.pager.fault_fill == fault_filling::faulting_thread; }},
      {var::read_only_cache, "off", [](const options& o) { return !o.read_only_cache; }},
      {var::huge_pages, "always", [](const options& o) { return o.pager.huge_pages == huge_pages_mode::always; }},
      {var::pin_limit, "1G", [](const options& o) { return o.pin_limit == 1ull << 30; }},
      {var::debug, "1", [](const options& o) { return o.pager.debug; }},
  };
  EXPECT_EQ(std::size(rows) + 1, env::table().size()) << "a variable without a row here (io_engine is the +1)";
  for (const row& r : rows) {
    const char* name = env::describe(r.v).name;
    EXPECT_FALSE(r.moved(options{})) << name << ": the test's value is the default";
    ::setenv(name, r.value, 1);
    EXPECT_TRUE(r.moved(options::from_env())) << name << "=" << r.value << " did not reach its field";
    EXPECT_FALSE(r.moved(options{})) << name << " was read by options{}";
    ::unsetenv(name);
  }
  // The enum spellings are the table's: to_string of each value is a word the table accepts
  // for that value.
  for (dirty_tracking t : {dirty_tracking::automatic, dirty_tracking::wp_async, dirty_tracking::wp_sync,
                           dirty_tracking::all_resident}) {
    ::setenv("PHEAP_DIRTY_TRACKING", to_string(t), 1);
    EXPECT_EQ(options::from_env().pager.tracking, t) << to_string(t);
  }
  for (fault_filling f : {fault_filling::workers, fault_filling::faulting_thread, fault_filling::automatic}) {
    ::setenv("PHEAP_FAULT_FILL", to_string(f), 1);
    EXPECT_EQ(options::from_env().pager.fault_fill, f) << to_string(f);
  }
  for (huge_pages_mode h : {huge_pages_mode::off, huge_pages_mode::always, huge_pages_mode::automatic}) {
    ::setenv("PHEAP_HUGE_PAGES", to_string(h), 1);
    EXPECT_EQ(options::from_env().pager.huge_pages, h) << to_string(h);
  }
  ::unsetenv("PHEAP_HUGE_PAGES");
  for (victim_caching c : {victim_caching::automatic, victim_caching::on, victim_caching::off}) {
    ::setenv("PHEAP_VICTIM_CACHE", to_string(c), 1);
    EXPECT_EQ(options::from_env().pager.victim_cache, c) << to_string(c);
  }
  for (backend_kind b : {backend_kind::uffd, backend_kind::mmap}) {
    ::setenv("PHEAP_BACKEND", to_string(b), 1);
    EXPECT_EQ(options::from_env().backend, b) << to_string(b);
  }
  for (mmap_advice_kind a : {mmap_advice_kind::normal, mmap_advice_kind::random}) {
    ::setenv("PHEAP_MMAP_ADVICE", to_string(a), 1);
    EXPECT_EQ(options::from_env().mmap_advice, a) << to_string(a);
  }
  for (const char* name : {"PHEAP_DIRTY_TRACKING", "PHEAP_FAULT_FILL", "PHEAP_VICTIM_CACHE", "PHEAP_BACKEND",
                           "PHEAP_MMAP_ADVICE"}) {
    ::unsetenv(name);
  }
}

// Configuration is read once, explicitly: options{} is the library's defaults whatever the
// environment says (it used to read PHEAP_* in its member initialisers, and threw on a bad
// one); a manager made without options applies the variables, one made with options gets
// exactly those.
TEST(ManagerOptions, DefaultOptionsReadNoVariableAndOnlyAManagerWithoutOptionsAppliesThem) {
  test::temp_dir tmp;
  ::setenv("PHEAP_PAGE_SIZE", "16K", 1);
  ::setenv("PHEAP_BACKEND", "mmap", 1);
  ::setenv("PHEAP_BUFFER_SIZE", "3M", 1);
  ::setenv("PHEAP_MMAP_ADVICE", "random", 1);
  ::setenv("PHEAP_READ_ONLY_CACHE", "off", 1);
  ::setenv("PHEAP_PIN_LIMIT", "16M", 1);
  const options pure;
  EXPECT_EQ(pure.page_size, 64u * 1024);
  EXPECT_EQ(pure.backend, backend_kind::uffd);
  EXPECT_EQ(pure.pager.buffer_size, 0u);
  EXPECT_EQ(pure.mmap_advice, mmap_advice_kind::normal);
  EXPECT_TRUE(pure.read_only_cache);
  EXPECT_EQ(pure.pin_limit, 4ull << 30);
  const options env = options::from_env();
  EXPECT_EQ(env.page_size, 16u * 1024);
  EXPECT_EQ(env.backend, backend_kind::mmap);
  EXPECT_EQ(env.pager.buffer_size, 3u << 20);
  EXPECT_EQ(env.mmap_advice, mmap_advice_kind::random);
  EXPECT_FALSE(env.read_only_cache);
  EXPECT_EQ(env.pin_limit, 16ull << 20);
  ::unsetenv("PHEAP_PIN_LIMIT");
  ::unsetenv("PHEAP_BACKEND");
  ::unsetenv("PHEAP_BUFFER_SIZE");
  ::unsetenv("PHEAP_MMAP_ADVICE");
  ::unsetenv("PHEAP_READ_ONLY_CACHE");
  options small = small_options();
  small.capacity = 64ull << 20;
  { manager m(create_only, tmp / "given", small); }
  { manager m(create_only, tmp / "environment"); }
  ::setenv("PHEAP_PAGE_SIZE", "5K", 1);  // malformed: options{} still constructs, from_env throws
  EXPECT_NO_THROW((void)options{});
  EXPECT_EQ(code_of([] { (void)options::from_env(); }), errc::invalid_argument);
  ::unsetenv("PHEAP_PAGE_SIZE");
  EXPECT_EQ(manager(open_read_only, tmp / "given").stats().page_size, small.page_size);
  EXPECT_EQ(manager(open_read_only, tmp / "environment").stats().page_size, 16u * 1024);
}
