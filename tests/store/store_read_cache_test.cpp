// store_options::page_cache_reads: a read-only store that reads through the kernel's page
// cache leaves what it read there, so the next process finds it in DRAM; one that reads
// O_DIRECT (the default, and every read-write store) leaves nothing there. Residency is asked
// of the kernel with mincore(2) over a mapping of the segment file.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "store_test_util.hpp"

namespace pheap::test {
namespace {

constexpr std::uint32_t kPage = 4096;
constexpr std::uint64_t kSegment = 1 << 20;  // 256 pages per segment
constexpr std::uint64_t kPages = 128;

// Pages of [0, len) of `path` that are in the page cache now.
std::size_t cached_pages(const std::string& path, std::size_t len) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ~std::size_t(0);
  void* m = ::mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (m == MAP_FAILED) return ~std::size_t(0);
  std::vector<unsigned char> v(len / 4096);
  std::size_t n = ~std::size_t(0);
  if (::mincore(m, len, v.data()) == 0) {
    n = 0;
    for (unsigned char c : v) n += c & 1;
  }
  ::munmap(m, len);
  return n;
}

// Drops the file's cached pages (its data is on disk: the store synced it at the commit).
void evict_from_cache(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0) << path;
  ASSERT_EQ(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
  ::close(fd);
}

class StoreReadCache : public store_test {
 protected:
  std::string ds() const { return dir_ / "ds"; }
  std::string segment() const { return ds() + "/segment-000000"; }
  void make() {
    auto s = sparse_store::create(ds(), opts(4 * kSegment, kPage, kSegment));
    for (std::uint64_t p = 0; p < kPages; ++p) write_one(*s, p, 9, 1);
    s->commit(bytes_of("e1"));
  }
  // Reads every page of a read-only open with `cached`, checking each against its pattern.
  void read_all(bool cached) {
    store_options o = open_opts(true);
    o.page_cache_reads = cached;
    auto s = sparse_store::open(ds(), o);
    std::vector<std::uint8_t> buf(kPages * kPage);
    std::vector<page_read> batch;
    for (std::uint64_t p = 0; p < kPages; ++p) batch.push_back({p, buf.data() + p * kPage});
    s->read_pages(batch);
    for (std::uint64_t p = 0; p < kPages; ++p) {
      const auto want = pattern(kPage, 9, p, 1);
      ASSERT_EQ(0, std::memcmp(buf.data() + p * kPage, want.data(), kPage)) << "page " << p;
    }
  }
  temp_dir dir_;
};
PHEAP_STORE_SUITE(StoreReadCache);

TEST_P(StoreReadCache, AReadOnlyStoreReadingThroughThePageCacheLeavesWhatItReadThere) {
  make();
  evict_from_cache(segment());
  ASSERT_EQ(cached_pages(segment(), kPages * kPage), 0u);
  read_all(true);
  // The next process finds the pages in DRAM (a few may have been reclaimed meanwhile on a
  // machine short of memory; most must be there).
  EXPECT_GE(cached_pages(segment(), kPages * kPage), kPages * 3 / 4);
}

TEST_P(StoreReadCache, DirectReadsLeaveNothingInThePageCache) {
  make();
  evict_from_cache(segment());
  read_all(false);
  EXPECT_EQ(cached_pages(segment(), kPages * kPage), 0u)
      << "O_DIRECT reads went through the page cache (a file system without O_DIRECT?)";
}

}  // namespace
}  // namespace pheap::test
