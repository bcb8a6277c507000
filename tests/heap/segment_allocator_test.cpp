// White-box tests of the segment allocator and the object directory over anonymous memory
// (no pager): size classes, placement, alignment, chunk release, exhaustion, the invariant
// checker, re-attachment at another address, and concurrent use.
#include "heap/segment_allocator.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "heap/object_directory.hpp"
#include "heap/size_class.hpp"
#include "heap_test_util.hpp"
#include "pheap/error.hpp"

namespace {

using pheap::heap::segment_allocator;
using pheap::heap::size_classes;
using pheap::test::anon_region;
using pheap::test::tag_of;

constexpr std::uint64_t MiB = 1ull << 20;

struct heap_fixture {
  explicit heap_fixture(std::uint64_t capacity = 256 * MiB, std::uint64_t chunk = 2 * MiB)
      : region(capacity) {
    segment_allocator::format(region.base(), capacity, chunk);
    alloc = std::make_unique<segment_allocator>(region.base(), capacity, false, "mem");
  }
  std::vector<std::string> problems() {
    std::vector<std::string> p;
    pheap::heap::world_lock::exclusive w(alloc->world());
    alloc->check(p);
    return p;
  }
  anon_region region;
  std::unique_ptr<segment_allocator> alloc;
};

TEST(SizeClasses, EveryRequestMapsToTheSmallestClassThatFitsIt) {
  for (std::uint64_t chunk : {std::uint64_t{64 * 1024}, 2 * MiB, std::uint64_t{1} << 30}) {
    size_classes sc(chunk);
    ASSERT_LE(sc.count(), pheap::heap::max_bins);
    EXPECT_EQ(sc.max_small(), chunk / 2);
    for (std::uint64_t bytes = 1; bytes <= std::min<std::uint64_t>(sc.max_small(), 1 << 20); ++bytes) {
      const auto b = size_classes::bin_of(bytes);
      ASSERT_LT(b, sc.count()) << bytes;
      ASSERT_GE(sc.size(b), bytes) << bytes;
      if (b > 0) {
        ASSERT_LT(sc.size(b - 1), bytes) << bytes;
      }
    }
    for (std::uint32_t b = 1; b < sc.count(); ++b) EXPECT_EQ(sc.size(b) % 16, 0u) << b;
  }
}

TEST(SegmentAllocator, MixedSmallAllocationsDoNotOverlapAndAreSixteenByteAligned) {
  heap_fixture f;
  std::mt19937_64 rng(1);
  std::map<std::uint64_t, std::uint64_t> live;  // off -> size
  for (int i = 0; i < 20000; ++i) {
    const std::uint64_t size = 1 + rng() % 600;
    const std::uint64_t off = f.alloc->allocate(size);
    ASSERT_NE(off, 0u);
    if (size >= 16) {
      ASSERT_EQ(off % 16, 0u);
    }
    ASSERT_GE(f.alloc->usable_size(off), size);
    auto next = live.lower_bound(off);
    if (next != live.end()) {
      ASSERT_LE(off + size, next->first);
    }
    if (next != live.begin()) {
      auto prev = std::prev(next);
      ASSERT_LE(prev->first + prev->second, off);
    }
    live[off] = size;
    std::memset(f.region.base() + off, static_cast<int>(off & 0xFF), size);
  }
  for (auto [off, size] : live) {
    const auto* p = reinterpret_cast<const unsigned char*>(f.region.base() + off);
    for (std::uint64_t i = 0; i < size; ++i) ASSERT_EQ(p[i], off & 0xFF);
  }
  EXPECT_TRUE(f.problems().empty());
}

TEST(SegmentAllocator, AllocateAlignedHonoursPowersOfTwoUpTo4096AndRefusesMore) {
  heap_fixture f;
  for (std::uint64_t align = 1; align <= 4096; align *= 2) {
    for (std::uint64_t size : {std::uint64_t{1}, std::uint64_t{7}, std::uint64_t{100}, std::uint64_t{5000}, 3 * MiB}) {
      const std::uint64_t off = f.alloc->allocate_aligned(size, align);
      ASSERT_NE(off, 0u);
      EXPECT_EQ(off % align, 0u) << "size " << size << " align " << align;
      EXPECT_GE(f.alloc->usable_size(off), size);
    }
  }
  EXPECT_EQ(f.alloc->allocate_aligned(64, 8192), 0u);
  EXPECT_EQ(f.alloc->allocate_aligned(64, 48), 0u);  // not a power of two
  EXPECT_TRUE(f.problems().empty());
}

TEST(SegmentAllocator, FreeingEverythingReleasesEveryChunkAndReportsTheRanges) {
  heap_fixture f;
  std::uint64_t released = 0;
  f.alloc->set_release_hook([&](std::uint64_t off, std::uint64_t len) {
    EXPECT_EQ(off % (2 * MiB), f.alloc->header().data_off % (2 * MiB));
    released += len;
  });
  std::vector<std::uint64_t> offs;
  std::mt19937_64 rng(2);
  for (int i = 0; i < 5000; ++i) offs.push_back(f.alloc->allocate(1 + rng() % 40000));
  offs.push_back(f.alloc->allocate(5 * MiB));
  const std::uint64_t chunks = f.alloc->header().chunks_in_use;
  EXPECT_GT(chunks, 3u);
  std::shuffle(offs.begin(), offs.end(), rng);
  for (auto off : offs) f.alloc->deallocate(off);
  EXPECT_TRUE(f.alloc->all_memory_deallocated());
  EXPECT_EQ(f.alloc->header().chunks_in_use, 0u);
  EXPECT_EQ(released, chunks * 2 * MiB);
  EXPECT_TRUE(f.problems().empty());
}

TEST(SegmentAllocator, LargeRunsAreReusedAfterFree) {
  heap_fixture f(64 * MiB);
  const std::uint64_t a = f.alloc->allocate(10 * MiB);
  ASSERT_NE(a, 0u);
  f.alloc->deallocate(a);
  const std::uint64_t b = f.alloc->allocate(9 * MiB);
  EXPECT_EQ(a, b);
}

TEST(SegmentAllocator, ExhaustingCapacityReturnsZeroAndRecoversAfterFrees) {
  heap_fixture f(16 * MiB);
  std::vector<std::uint64_t> offs;
  for (;;) {
    const std::uint64_t off = f.alloc->allocate(3000);
    if (off == 0) break;
    offs.push_back(off);
    ASSERT_LT(offs.size(), 100000u);
  }
  EXPECT_GT(offs.size(), 1000u);
  EXPECT_EQ(f.alloc->allocate(20 * MiB), 0u);
  EXPECT_EQ(f.alloc->allocate(3 * MiB), 0u);
  for (auto off : offs) f.alloc->deallocate(off);
  EXPECT_NE(f.alloc->allocate(3 * MiB), 0u);
  EXPECT_TRUE(f.problems().empty());
}

TEST(SegmentAllocator, BadFreesThrowInvalidArgument) {
  heap_fixture f;
  const std::uint64_t big = f.alloc->allocate(20000);  // uncached class: slow path checks the bit
  f.alloc->deallocate(big);
  try {
    f.alloc->deallocate(big);
    FAIL() << "double free not detected";
  } catch (const pheap::error& e) {
    EXPECT_EQ(e.code(), pheap::errc::invalid_argument);
  }
  const std::uint64_t small = f.alloc->allocate(64);
  EXPECT_THROW(f.alloc->deallocate(small + 8), pheap::error);   // not a slot start
  EXPECT_THROW(f.alloc->deallocate(16), pheap::error);          // header, not data
  const std::uint64_t large = f.alloc->allocate(4 * MiB);
  EXPECT_THROW(f.alloc->deallocate(large + 2 * MiB), pheap::error);  // inside a large run
}

TEST(SegmentAllocator, CheckerReportsCorruptedBitsetsCountsAndLists) {
  heap_fixture f;
  const std::uint64_t off = f.alloc->allocate(64);
  ASSERT_TRUE(f.problems().empty());
  auto& h = f.alloc->header();
  const std::uint64_t chunk = (off - h.data_off) / h.chunk_size;
  auto* entries = reinterpret_cast<pheap::heap::chunk_entry*>(f.region.base() + h.dir_off);
  entries[chunk].used += 1;  // count disagrees with the bitset
  EXPECT_FALSE(f.problems().empty());
  entries[chunk].used -= 1;
  ASSERT_TRUE(f.problems().empty());
  h.chunks_in_use += 1;
  EXPECT_FALSE(f.problems().empty());
  h.chunks_in_use -= 1;
  const std::uint32_t bin = entries[chunk].bin;
  h.bin_head[bin] = 0;  // non-full chunk dropped from its list
  EXPECT_FALSE(f.problems().empty());
}

TEST(SegmentAllocator, ReattachesAtAnotherAddressAfterCopyWithAllState) {
  constexpr std::uint64_t cap = 128 * MiB;
  heap_fixture f(cap);
  std::vector<std::uint64_t> offs;
  for (int i = 0; i < 3000; ++i) {
    const std::uint64_t off = f.alloc->allocate(8 + (i % 300));
    *reinterpret_cast<std::uint64_t*>(f.region.base() + off) = tag_of(off);
    offs.push_back(off);
  }
  {
    pheap::heap::world_lock::exclusive w(f.alloc->world());
    f.alloc->drain_caches();
  }
  anon_region copy(cap);
  ASSERT_NE(copy.base(), f.region.base());
  std::memcpy(copy.base(), f.region.base(), f.alloc->header().data_off + f.alloc->header().chunk_high * 2 * MiB);
  segment_allocator again(copy.base(), cap, false, "copy");
  std::vector<std::string> problems;
  again.check(problems);
  EXPECT_TRUE(problems.empty()) << problems.front();
  for (auto off : offs) ASSERT_EQ(*reinterpret_cast<std::uint64_t*>(copy.base() + off), tag_of(off));
  // The copy continues where the original was: new allocations never hit live ones.
  std::set<std::uint64_t> live(offs.begin(), offs.end());
  for (int i = 0; i < 3000; ++i) ASSERT_FALSE(live.count(again.allocate(8 + (i % 300))));
}

TEST(SegmentAllocator, AttachRejectsForeignAndMismatchedHeaders) {
  anon_region r(64 * MiB);
  try {
    segment_allocator a(r.base(), r.size(), false, "zeros");
    FAIL();
  } catch (const pheap::error& e) {
    EXPECT_EQ(e.code(), pheap::errc::not_a_datastore);
  }
  segment_allocator::format(r.base(), r.size(), 2 * MiB);
  try {
    segment_allocator a(r.base(), r.size() / 2, false, "smaller");
    FAIL();
  } catch (const pheap::error& e) {
    EXPECT_EQ(e.code(), pheap::errc::corrupt);
  }
  reinterpret_cast<pheap::heap::heap_header*>(r.base())->format_version = 99;
  try {
    segment_allocator a(r.base(), r.size(), false, "newer");
    FAIL();
  } catch (const pheap::error& e) {
    EXPECT_EQ(e.code(), pheap::errc::newer_format);
  }
}

TEST(SegmentAllocator, ReadOnlyHeapRejectsAllocationAndFree) {
  heap_fixture f;
  const std::uint64_t off = f.alloc->allocate(100);
  segment_allocator ro(f.region.base(), f.region.size(), true, "ro");
  try {
    ro.allocate(10);
    FAIL();
  } catch (const pheap::error& e) {
    EXPECT_EQ(e.code(), pheap::errc::read_only);
  }
  EXPECT_THROW(ro.deallocate(off), pheap::error);
}

TEST(SegmentAllocator, ConcurrentAllocFreeWithCrossThreadHandoffKeepsInvariants) {
  heap_fixture f(512 * MiB);
  constexpr int threads = 4, rounds = 40000;
  std::vector<std::vector<std::uint64_t>> outbox(threads);
  std::vector<std::mutex> locks(threads);
  std::atomic<bool> failed{false};
  auto worker = [&](int t) {
    std::mt19937_64 rng(t);
    std::vector<std::uint64_t> mine;
    for (int i = 0; i < rounds; ++i) {
      const int op = static_cast<int>(rng() % 10);
      if (op < 6) {
        const std::uint64_t size = (rng() % 50 == 0) ? 3 * MiB : 8 + rng() % 2000;
        const std::uint64_t off = f.alloc->allocate(size);
        if (off == 0) continue;
        *reinterpret_cast<std::uint64_t*>(f.region.base() + off) = tag_of(off);
        if (rng() % 2) {
          std::lock_guard g(locks[(t + 1) % threads]);
          outbox[(t + 1) % threads].push_back(off);
        } else {
          mine.push_back(off);
        }
      } else {
        std::vector<std::uint64_t> got;
        {
          std::lock_guard g(locks[t]);
          got.swap(outbox[t]);
        }
        mine.insert(mine.end(), got.begin(), got.end());
        if (mine.empty()) continue;
        const std::size_t k = rng() % mine.size();
        const std::uint64_t off = mine[k];
        if (*reinterpret_cast<std::uint64_t*>(f.region.base() + off) != tag_of(off)) failed = true;
        f.alloc->deallocate(off);
        mine[k] = mine.back();
        mine.pop_back();
      }
    }
    for (auto off : mine) f.alloc->deallocate(off);
  };
  std::thread flusher([&] {  // stands in for manager::flush: stop the world, drain, check
    for (int i = 0; i < 20; ++i) {
      pheap::heap::world_lock::exclusive w(f.alloc->world());
      f.alloc->drain_caches();
      std::vector<std::string> p;
      f.alloc->check(p);
      if (!p.empty()) failed = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) ts.emplace_back(worker, t);
  for (auto& t : ts) t.join();
  flusher.join();
  for (auto& box : outbox) {
    for (auto off : box) f.alloc->deallocate(off);
  }
  EXPECT_FALSE(failed.load());
  EXPECT_TRUE(f.alloc->all_memory_deallocated());
  EXPECT_TRUE(f.problems().empty());
}

}  // namespace
