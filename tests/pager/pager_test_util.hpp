// Helpers for the pager suites: backing-store factory (in-memory double, real sparse_store
// with the posix or io_uring engine), feature gating, residency measurement.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "common/test_util.hpp"
#include "mem_store.hpp"
#include "pager/os/uffd.hpp"
#include "pheap/error.hpp"
#include "pheap/io.hpp"
#include "pheap/pager.hpp"
#include "pheap/sparse_store.hpp"

namespace pheap::test {

// "mem", "posix" or "io_uring".
class backing {
 public:
  explicit backing(std::string kind) : kind_(std::move(kind)) {}
  const std::string& kind() const { return kind_; }

  // Throws error(unavailable) if io_uring is missing (callers gate with PHEAP_REQUIRE_FEATURE).
  std::unique_ptr<sparse_store> create(std::uint64_t capacity, std::uint32_t page_size) {
    if (kind_ == "mem") {
      auto s = mem_store::create(capacity, page_size);
      mem_ = s->state();
      return s;
    }
    store_options o;
    o.capacity = capacity;
    o.page_size = page_size;
    std::uint64_t seg = 1ull << 20;
    while (seg < 16ull * page_size) seg <<= 1;
    o.segment_size = seg;
    o.engine = engine();
    return sparse_store::create(dir_ / "ds", o);
  }
  std::unique_ptr<sparse_store> reopen(bool read_only = false) {
    if (kind_ == "mem") return mem_store::reopen(mem_, read_only);
    store_options o;
    o.read_only = read_only;
    o.engine = engine();
    return sparse_store::open(dir_ / "ds", o);
  }
  std::shared_ptr<mem_store::shared> mem() const { return mem_; }
  std::string path() const { return dir_ / "ds"; }

  std::shared_ptr<io::engine> engine() {
    if (!engine_) engine_ = kind_ == "io_uring" ? io::make_uring_engine() : io::make_posix_engine();
    return engine_;
  }

 private:
  std::string kind_;
  temp_dir dir_;
  std::shared_ptr<mem_store::shared> mem_;
  std::shared_ptr<io::engine> engine_;
};

// Empty string if userfaultfd (and what `mode` needs) is usable here, else why not.
inline std::string uffd_missing(dirty_tracking mode = dirty_tracking::automatic) {
  try {
    const auto& f = paging::probe_features("test");
    if (mode == dirty_tracking::wp_async && !(f.wp_async && f.pagemap_scan && f.move)) {
      return "WP_ASYNC/PAGEMAP_SCAN/MOVE";
    }
    if (mode == dirty_tracking::wp_sync && !(f.wp && f.move)) return "uffd-wp/MOVE";
    if (mode == dirty_tracking::all_resident && !f.move) return "UFFDIO_MOVE";
    return {};
  } catch (const std::exception& e) {
    return e.what();
  }
}

#define PHEAP_REQUIRE_UFFD(mode)                                         \
  do {                                                                   \
    const std::string why_ = ::pheap::test::uffd_missing(mode);          \
    if (!why_.empty()) PHEAP_REQUIRE_FEATURE("userfaultfd: " + why_);    \
  } while (0)

// Bytes of [addr, addr+len) mapped in this process, from one PAGEMAP_SCAN ioctl (fast, so
// the sample is close to a snapshot) — independent of the pager's own bookkeeping. Falls back
// to reading /proc/self/pagemap entries (bit 63 = present) where PAGEMAP_SCAN is missing.
inline std::size_t mapped_bytes(const void* addr, std::size_t len) {
  {
    const int pm = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    std::vector<paging::page_region> regs(4096);
    std::uint64_t we = 0;
    char* a = static_cast<char*>(const_cast<void*>(addr));
    const long r = pm < 0 ? -1
                          : paging::pagemap_scan(pm, a, a + len, 0, paging::page_is_present,
                                                       0, regs.data(), regs.size(), &we);
    if (pm >= 0) ::close(pm);
    if (r >= 0) {
      std::size_t b = 0;
      for (long k = 0; k < r; ++k) b += regs[k].end - regs[k].start;
      return b;
    }
  }
  const int fd = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ~std::size_t(0);
  const std::size_t os = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t first = reinterpret_cast<std::uintptr_t>(addr) / os;
  const std::size_t n = len / os;
  std::vector<std::uint64_t> e(4096);
  std::size_t present = 0;
  for (std::size_t i = 0; i < n; i += e.size()) {
    const std::size_t k = std::min(e.size(), n - i);
    const ssize_t r = ::pread(fd, e.data(), k * 8, static_cast<off_t>((first + i) * 8));
    if (r < 0) break;
    for (std::size_t j = 0; j < static_cast<std::size_t>(r) / 8; ++j) present += (e[j] >> 63) & 1;
  }
  ::close(fd);
  return present * os;
}

// Bytes of [addr, addr+len) mapped by transparent huge pages (PMD entries): the AnonHugePages
// of the /proc/self/smaps mappings inside it (the region is its own mappings; a mapping that
// only overlaps it is counted whole, so pass a whole region).
inline std::size_t anon_huge_bytes(const void* addr, std::size_t len) {
  std::FILE* f = std::fopen("/proc/self/smaps", "r");
  if (!f) return ~std::size_t(0);
  const auto lo = reinterpret_cast<std::uintptr_t>(addr), hi = lo + len;
  bool in = false;
  std::size_t total = 0;
  char line[512];
  while (std::fgets(line, sizeof line, f)) {
    unsigned long long a = 0, b = 0;
    if (std::sscanf(line, "%llx-%llx ", &a, &b) == 2 && std::strchr(line, '-') < std::strchr(line, ' ')) {
      in = a < hi && b > lo;
      continue;
    }
    unsigned long long kb = 0;
    if (in && std::sscanf(line, "AnonHugePages: %llu kB", &kb) == 1) total += kb << 10;
  }
  std::fclose(f);
  return total;
}

// Whether transparent huge pages may be used by this process (not `never`).
inline bool thp_available() {
  std::FILE* f = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (!f) return false;
  char buf[128] = {};
  const bool ok = std::fgets(buf, sizeof buf, f) && !std::strstr(buf, "[never]");
  std::fclose(f);
  return ok;
}

// ---- huge pages (huge_pages_test.cpp, huge_promote_test.cpp) --------------------------------
inline constexpr std::size_t kHuge = std::size_t{2} << 20;

#define PHEAP_REQUIRE_HUGE()                                                                \
  do {                                                                                      \
    PHEAP_REQUIRE_UFFD(dirty_tracking::wp_async);                                           \
    if (!::pheap::test::thp_available()) {                                                  \
      PHEAP_REQUIRE_FEATURE("transparent huge pages (never here)");                         \
    }                                                                                       \
  } while (0)

// Whether the 2 MiB page at p holds pattern(seed, page, k).
inline bool page_is(const std::byte* p, std::uint64_t seed, std::size_t page, std::uint64_t k) {
  const auto want = pattern(kHuge, seed, page, k);
  return std::memcmp(p, want.data(), kHuge) == 0;
}

// Bytes of [addr, addr+len) mapped and writable: present without userfaultfd's write-protect
// bit (PAGEMAP_SCAN's "written"), read from the page tables, not from the pager.
inline std::size_t writable_bytes(const std::byte* addr, std::size_t len) {
  const int pm = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (pm < 0) return ~std::size_t(0);
  auto* a = const_cast<std::byte*>(addr);
  const long long b = paging::pagemap_bytes(pm, a, a + len, paging::page_is_present | paging::page_is_written);
  ::close(pm);
  return b < 0 ? ~std::size_t(0) : static_cast<std::size_t>(b);
}

inline std::string tracking_name(dirty_tracking t) { return to_string(t); }

// Aborts the process (with a message) unless disarmed within `seconds`: a spin or a hang
// fails the test instead of stalling the suite.
class watchdog {
 public:
  explicit watchdog(int seconds)
      : th_([this, seconds] {
          for (int i = 0; i < seconds * 10 && !done_.load(); ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
          }
          if (!done_.load()) {
            std::fprintf(stderr, "watchdog: the workload did not finish in %d s\n", seconds);
            std::abort();
          }
        }) {}
  ~watchdog() {
    done_ = true;
    th_.join();
  }

 private:
  std::atomic<bool> done_{false};
  std::thread th_;
};

}  // namespace pheap::test
