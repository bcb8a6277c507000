// src/pager/os/uffd.hpp — the pager's OS layer, userfaultfd: acquisition, feature detection,
// reading its events, the resolution ioctls and PAGEMAP_SCAN on /proc/self/pagemap (see
// memory.hpp for what the OS layer is).
//
// The build host's <linux/userfaultfd.h> is 6.1; everything newer (MOVE, POISON, WP_ASYNC,
// WP_UNPOPULATED, PAGEMAP_SCAN) is defined here under pheap-local names and detected at run
// time with UFFDIO_API, so one binary runs on any kernel ≥ 5.7 (and degrades to MISSING-only
// tracking on older ones).
//
// Contract of every wrapper below: it never touches region *contents* from kernel mode on
// behalf of the caller (only page-table operations and copies out of/into our own bounce
// buffers), so a descriptor opened with UFFD_USER_MODE_ONLY is sufficient.
#pragma once

#include <linux/userfaultfd.h>
#include <sys/ioctl.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace pheap::paging {

// ---- definitions missing from 6.1 headers ------------------------------------------------
inline constexpr std::uint64_t feat_wp_unpopulated = 1ull << 13;  // UFFD_FEATURE_WP_UNPOPULATED
inline constexpr std::uint64_t feat_poison = 1ull << 14;          // UFFD_FEATURE_POISON
inline constexpr std::uint64_t feat_wp_async = 1ull << 15;        // UFFD_FEATURE_WP_ASYNC
inline constexpr std::uint64_t feat_move = 1ull << 16;            // UFFD_FEATURE_MOVE
inline constexpr int user_mode_only = 1;                          // UFFD_USER_MODE_ONLY

struct uffdio_move_arg {  // struct uffdio_move (6.8)
  std::uint64_t dst;
  std::uint64_t src;
  std::uint64_t len;
  std::uint64_t mode;
  std::int64_t move;
};
inline constexpr std::uint64_t move_mode_dontwake = 1ull << 0;
inline constexpr std::uint64_t move_mode_allow_src_holes = 1ull << 1;
inline constexpr unsigned long ioctl_move = _IOWR(UFFDIO, 0x05, uffdio_move_arg);

struct uffdio_poison_arg {  // struct uffdio_poison (6.6)
  uffdio_range range;
  std::uint64_t mode;
  std::int64_t updated;
};
inline constexpr unsigned long ioctl_poison = _IOWR(UFFDIO, 0x08, uffdio_poison_arg);

inline constexpr unsigned long ioctl_uffd_new = _IO(0xAA, 0x00);  // USERFAULTFD_IOC_NEW

// PAGEMAP_SCAN (6.7), ioctl on /proc/self/pagemap.
struct page_region {
  std::uint64_t start;
  std::uint64_t end;
  std::uint64_t categories;
};
struct pm_scan_arg {
  std::uint64_t size;
  std::uint64_t flags;
  std::uint64_t start;
  std::uint64_t end;
  std::uint64_t walk_end;
  std::uint64_t vec;
  std::uint64_t vec_len;
  std::uint64_t max_pages;
  std::uint64_t category_inverted;
  std::uint64_t category_mask;
  std::uint64_t category_anyof_mask;
  std::uint64_t return_mask;
};
inline constexpr unsigned long ioctl_pagemap_scan = _IOWR('f', 16, pm_scan_arg);
inline constexpr std::uint64_t pm_scan_wp_matching = 1ull << 0;
inline constexpr std::uint64_t pm_scan_check_wpasync = 1ull << 1;
inline constexpr std::uint64_t page_is_wpallowed = 1ull << 0;
inline constexpr std::uint64_t page_is_written = 1ull << 1;
inline constexpr std::uint64_t page_is_present = 1ull << 3;
inline constexpr std::uint64_t page_is_pfnzero = 1ull << 5;  // mapped to the shared zero page
inline constexpr std::uint64_t page_is_huge = 1ull << 6;     // mapped by a PMD (or hugetlb) entry

// ---- acquisition ---------------------------------------------------------------------------
// How the descriptor was obtained (for diagnostics and tests).
enum class uffd_source { syscall, syscall_user_mode_only, dev_userfaultfd };
const char* to_string(uffd_source s) noexcept;

struct uffd_open_result {
  int fd = -1;
  uffd_source source = uffd_source::syscall;
};

// Opens a userfaultfd with O_CLOEXEC|O_NONBLOCK: syscall; on EPERM the syscall again with
// UFFD_USER_MODE_ONLY; then /dev/userfaultfd + USERFAULTFD_IOC_NEW. Throws
// errc::unavailable with a message explaining every attempt and what to change
// (vm.unprivileged_userfaultfd, /dev/userfaultfd permissions, seccomp) when all fail.
// `what` names the region for the message.
uffd_open_result open_userfaultfd(const std::string& what);

// Builds the errc::unavailable message from the three errnos (exposed for tests).
std::string explain_uffd_failure(int syscall_errno, int user_mode_errno, int dev_errno);

// ---- features ------------------------------------------------------------------------------
struct uffd_features {
  std::uint64_t kernel = 0;  // every feature bit the kernel advertises (probe)
  bool wp = false;           // UFFD_FEATURE_PAGEFAULT_FLAG_WP
  bool wp_async = false;     // WP_ASYNC
  bool pagemap_scan = false; // PAGEMAP_SCAN ioctl works on /proc/self/pagemap
  bool move = false;
  bool poison = false;
  bool wp_unpopulated = false;
};

// Probes the kernel's features with a throw-away descriptor (UFFDIO_API with features 0 returns
// the full set) and PAGEMAP_SCAN with a zero-length scan. Cached after the first call.
const uffd_features& probe_features(const std::string& what);

// UFFDIO_API on `fd` requesting exactly `features`. Throws errc::unavailable on refusal.
void uffd_api(int fd, std::uint64_t features, const std::string& what);

// Reads up to `cap` queued events from the (non-blocking) descriptor: their number, 0 when
// none is queued (-EAGAIN), or -errno.
long uffd_read_events(int fd, uffd_msg* out, std::size_t cap) noexcept;

// /proc/self/pagemap opened read-only (close-on-exec), for pagemap_scan; -1 with errno set.
int open_pagemap() noexcept;

// UFFDIO_REGISTER; returns the ioctls bitmask. Throws errc::unavailable/io.
std::uint64_t uffd_register(int fd, void* addr, std::size_t len, std::uint64_t mode,
                            const std::string& what);
void uffd_unregister(int fd, void* addr, std::size_t len) noexcept;

// The resolution ioctls return 0 on success or the errno (EEXIST, ENOENT, EAGAIN, ...), never
// throw: callers on fault paths decide. They retry EAGAIN-with-progress internally only where
// noted.
int uffd_copy(int fd, void* dst, const void* src, std::size_t len, std::uint64_t mode) noexcept;
int uffd_zeropage(int fd, void* dst, std::size_t len) noexcept;
int uffd_wake(int fd, void* addr, std::size_t len) noexcept;
int uffd_writeprotect(int fd, void* addr, std::size_t len, bool protect) noexcept;
int uffd_poison(int fd, void* addr, std::size_t len) noexcept;
// Moves [src, src+len) to [dst, dst+len). `moved` gets the bytes moved (may be partial).
// Holes in src are allowed (the destination stays a hole). Retries EAGAIN.
int uffd_move(int fd, void* dst, const void* src, std::size_t len, std::size_t* moved) noexcept;

// Moves [src, src+len) to [dst, dst+len) whole (no holes allowed), the way a 2 MiB page
// keeps its PMD entry: both ends aligned to the PMD size, nothing mapped at dst. EAGAIN and
// EBUSY (the source's folio locked, pinned or migrating for a moment) are retried, at most 24
// times without progress (the last 16 after 100 µs each), so a persistent refusal returns in
// under 2 ms instead of spinning; EEXIST (a 4 KiB page present at the destination) at once.
// `moved` gets the bytes moved (from the start; may be partial on an error). `wake` false:
// UFFDIO_MOVE_MODE_DONTWAKE, the faults waiting on the destination sleep on until the caller
// wakes them (uffd_wake).
int uffd_move_whole(int fd, void* dst, const void* src, std::size_t len, std::size_t* moved,
                    bool wake = true) noexcept;

// PAGEMAP_SCAN on [start, end): fills `out` with up to `cap` regions whose categories match
// (`required` all set, `anyof` at least one set when non-zero), returning their number or
// -errno. `flags` may add pm_scan_wp_matching|pm_scan_check_wpasync (collect and re-protect).
// *walk_end receives where the walk stopped (the scan may stop early when `out` fills).
// `returned` (0: required|anyof) are the categories each region reports in `categories`: the
// regions are split where those differ.
long pagemap_scan(int pagemap_fd, void* start, void* end, std::uint64_t flags,
                  std::uint64_t required, std::uint64_t anyof, page_region* out, std::size_t cap,
                  std::uint64_t* walk_end, std::uint64_t returned = 0) noexcept;

// PAGEMAP_SCAN over all of [start, end): one pagemap_scan call per `Cap` regions, each going
// on where the previous walk stopped, and fn(region) for every region found. Returns 0, or the
// -errno of the call that failed (the regions of earlier calls were delivered and, with
// pm_scan_wp_matching, re-protected).
// `returned` as pagemap_scan's: one walk can tell each region's categories apart.
template <std::size_t Cap, class Fn>
long pagemap_walk(int pagemap_fd, void* start, void* end, std::uint64_t flags,
                  std::uint64_t required, std::uint64_t anyof, Fn&& fn, std::uint64_t returned = 0) {
  page_region regs[Cap];
  auto* a = static_cast<std::byte*>(start);
  auto* const e = static_cast<std::byte*>(end);
  while (a < e) {
    std::uint64_t walk_end = 0;
    const long r = pagemap_scan(pagemap_fd, a, e, flags, required, anyof, regs, Cap, &walk_end, returned);
    if (r < 0) return r;
    for (long k = 0; k < r; ++k) fn(regs[k]);
    if (walk_end <= reinterpret_cast<std::uint64_t>(a)) break;
    a = reinterpret_cast<std::byte*>(walk_end);
  }
  return 0;
}

// Bytes of [start, end) whose pages have every category of `required` (page_is_present,
// page_is_huge, ...): what a huge page's checks ask (is it one PMD mapping, is anything of it
// present). -errno when PAGEMAP_SCAN fails.
inline long long pagemap_bytes(int pagemap_fd, void* start, void* end, std::uint64_t required) {
  long long bytes = 0;
  const long r = pagemap_walk<8>(pagemap_fd, start, end, 0, required, 0,
                                 [&](const page_region& reg) { bytes += static_cast<long long>(reg.end - reg.start); });
  return r < 0 ? r : bytes;
}

// System page size (4 KiB here); the UPage is a multiple of it.
std::size_t os_page_size() noexcept;

}  // namespace pheap::paging
