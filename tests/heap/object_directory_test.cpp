// White-box tests of the object directory over anonymous memory (no pager): anonymous objects
// are listed (heap format 2), and a format-1 heap, whose anonymous objects are not in the
// table, opens read-only as it is and is upgraded by a read-write open.
#include "heap/object_directory.hpp"

#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "heap/root_record.hpp"
#include "heap/segment_allocator.hpp"
#include "heap_test_util.hpp"
#include "pheap/error.hpp"

namespace {

using pheap::instance_kind;
using pheap::type_identity;
using pheap::heap::heap_header;
using pheap::heap::object_directory;
using pheap::heap::object_header;
using pheap::heap::segment_allocator;
using pheap::test::anon_region;

constexpr std::uint64_t MiB = 1ull << 20;

struct directory_fixture {
  directory_fixture() : region(256 * MiB) {
    segment_allocator::format(region.base(), region.size(), 2 * MiB);
    attach(false);
  }
  void attach(bool read_only) {
    dir.reset();
    alloc = std::make_unique<segment_allocator>(region.base(), region.size(), read_only, "mem");
    dir = std::make_unique<object_directory>(*alloc, "mem");
  }
  heap_header& header() const { return *reinterpret_cast<heap_header*>(region.base()); }
  int* make(instance_kind kind, std::string_view name, int value) {
    auto init = [](void* ctx, void* storage, std::size_t) { ::new (storage) int(*static_cast<int*>(ctx)); };
    return static_cast<int*>(dir->construct(kind, name, type_identity::of<int>(), 1, false, init, &value).ptr);
  }
  void destroy(const int* p) {
    dir->destroy_ptr(p, type_identity::of<int>(), [](void*, std::size_t) {});
  }
  std::set<int> listed_anonymous() const {
    std::set<int> values;
    for (auto i = dir->next_entry(instance_kind::anonymous_kind, 0); i < dir->table_capacity();
         i = dir->next_entry(instance_kind::anonymous_kind, i + 1)) {
      values.insert(*static_cast<const int*>(dir->entry_info(i).value));
    }
    return values;
  }
  std::vector<std::string> problems() const {
    std::vector<std::string> p;
    pheap::heap::world_lock::exclusive w(alloc->world());
    alloc->check(p);
    dir->check(p);
    return p;
  }
  // Turns the heap into what pheap 0.1.0 (heap format 1) wrote: anonymous objects counted in
  // the header but absent from the table.
  void make_format_one() {
    heap_header& h = header();
    struct slot {
      std::uint64_t hash, obj;
    };
    auto* t = reinterpret_cast<slot*>(region.base() + h.table_off);
    for (std::uint64_t i = 0; i < h.table_cap; ++i) {
      if (t[i].hash < 2) continue;
      const auto* hdr = reinterpret_cast<const object_header*>(region.base() + t[i].obj - sizeof(object_header));
      if (hdr->kind != static_cast<std::uint8_t>(instance_kind::anonymous_kind)) continue;
      t[i] = {1, 0};  // tombstone
      --h.table_live;
      ++h.table_tomb;
    }
    h.format_version = 1;
    h.num_anonymous_unlisted = 0;
  }

  anon_region region;
  std::unique_ptr<segment_allocator> alloc;
  std::unique_ptr<object_directory> dir;
};

TEST(ObjectDirectory, AnonymousObjectsAreListedUntilDestroyedAndNeverFoundByName) {
  directory_fixture f;
  int* a = f.make(instance_kind::anonymous_kind, {}, 1);
  int* b = f.make(instance_kind::anonymous_kind, {}, 2);
  f.make(instance_kind::named_kind, "named", 3);
  EXPECT_EQ(f.listed_anonymous(), (std::set<int>{1, 2}));
  EXPECT_EQ(f.dir->count(instance_kind::anonymous_kind), 2u);
  EXPECT_EQ(f.dir->find(instance_kind::anonymous_kind, "", type_identity::of<int>()).first, nullptr);
  EXPECT_TRUE(f.problems().empty());
  f.destroy(a);
  EXPECT_EQ(f.listed_anonymous(), (std::set<int>{2}));
  EXPECT_TRUE(f.problems().empty());
  f.attach(true);  // what a reopen sees
  EXPECT_EQ(f.listed_anonymous(), (std::set<int>{2}));
  f.attach(false);
  f.destroy(b);
  EXPECT_TRUE(f.listed_anonymous().empty());
  EXPECT_EQ(f.dir->count(instance_kind::anonymous_kind), 0u);
  EXPECT_TRUE(f.problems().empty());
}

TEST(ObjectDirectory, ManyAnonymousObjectsGrowTheTableAndStayListed) {
  directory_fixture f;
  std::vector<int*> ps;
  for (int i = 0; i < 1000; ++i) ps.push_back(f.make(instance_kind::anonymous_kind, {}, i));
  EXPECT_EQ(f.listed_anonymous().size(), 1000u);
  for (int i = 0; i < 1000; i += 2) f.destroy(ps[i]);
  const std::set<int> left = f.listed_anonymous();
  ASSERT_EQ(left.size(), 500u);
  for (int v : left) EXPECT_EQ(v % 2, 1);
  EXPECT_TRUE(f.problems().empty());
}

TEST(ObjectDirectory, FormatOneHeapOpensReadOnlyAsItIsAndIsUpgradedByAReadWriteOpen) {
  directory_fixture f;
  int* old_a = f.make(instance_kind::anonymous_kind, {}, 10);
  int* old_b = f.make(instance_kind::anonymous_kind, {}, 11);
  f.make(instance_kind::named_kind, "named", 12);
  f.make_format_one();

  f.attach(true);
  EXPECT_EQ(f.header().format_version, 1u);  // read-only: untouched
  EXPECT_TRUE(f.listed_anonymous().empty());
  EXPECT_EQ(f.dir->count(instance_kind::anonymous_kind), 2u);
  EXPECT_TRUE(f.problems().empty()) << f.problems().front();

  f.attach(false);
  EXPECT_EQ(f.header().format_version, pheap::heap::heap_format_version);
  EXPECT_EQ(f.header().num_anonymous_unlisted, 2u);
  EXPECT_TRUE(f.problems().empty()) << f.problems().front();
  int* fresh = f.make(instance_kind::anonymous_kind, {}, 13);
  EXPECT_EQ(f.listed_anonymous(), (std::set<int>{13}));
  EXPECT_EQ(f.dir->count(instance_kind::anonymous_kind), 3u);
  f.destroy(old_a);  // an unlisted one
  EXPECT_EQ(f.header().num_anonymous_unlisted, 1u);
  f.destroy(fresh);
  f.destroy(old_b);
  EXPECT_EQ(f.header().num_anonymous_unlisted, 0u);
  EXPECT_EQ(f.dir->count(instance_kind::anonymous_kind), 0u);
  EXPECT_TRUE(f.problems().empty());
}

TEST(ObjectDirectory, CheckerReportsAnAnonymousObjectMissingFromTheTable) {
  directory_fixture f;
  f.make(instance_kind::anonymous_kind, {}, 1);
  f.make_format_one();
  f.header().format_version = pheap::heap::heap_format_version;  // format 2 claims all are listed
  const auto p = f.problems();
  ASSERT_FALSE(p.empty());
  EXPECT_NE(p.front().find("anonymous"), std::string::npos) << p.front();
}

TEST(RootRecord, FormatOneIsAcceptedAndNewerFormatsAreRefused) {
  pheap::heap::root_record r;
  r.capacity = 256 * MiB;
  r.chunk_size = 2 * MiB;
  r.heap_format = 1;
  EXPECT_EQ(pheap::heap::root_record::decode(r.encode(), "mem").heap_format, 1u);
  r.heap_format = pheap::heap::heap_format_version + 1;
  try {
    pheap::heap::root_record::decode(r.encode(), "mem");
    ADD_FAILURE() << "a newer heap format must be refused";
  } catch (const pheap::error& e) {
    EXPECT_EQ(e.code(), pheap::errc::newer_format);
  }
}

}  // namespace
