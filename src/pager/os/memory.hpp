// src/pager/os/memory.hpp — the pager's OS layer, memory: private anonymous mappings owned by
// RAII (the staging ranges, bounce buffers, the zero page, the victim cache's mirror), the
// region's aligned reservation, and the advice the pager gives the kernel about its memory
// (drop, free lazily, page out, populate), one call at a time or a vector at once.
//
// The OS layer (src/pager/os/, in the manner of mimalloc's prim/) is the only place of the
// pager that makes system calls on memory and descriptors: memory.hpp (this file), uffd.hpp
// (userfaultfd and PAGEMAP_SCAN), threads.hpp (wake-ups, futexes, the fault workers' wait,
// signals to a thread, the signal-safe line), files.hpp (small /proc and cgroup files, the
// shared file of the limit pool). It knows nothing of pages, budgets or the store;
// scripts/check_layers.sh refuses those calls anywhere else in src/pager.
//
// Caveats:
//  * Mappings are MAP_NORESERVE and MADV_NOHUGEPAGE: the pager works in UPages of the store's
//    page size, never in transparent huge pages — except where huge pages were asked for
//    (pager_options::huge_pages): the region and its staging ranges are then MADV_HUGEPAGE
//    (reserve_aligned's `huge`), and the huge pool's blocks come from map_huge_block.
//  * The advice calls return errors rather than throw, and callers on fault and eviction
//    paths decide what a refusal means (a lazy free the kernel refuses is a drop, say).
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <string>

namespace pheap::paging {

struct anon_map {
  void* p = nullptr;
  std::size_t len = 0;
  anon_map() = default;
  // Maps `bytes` read/write; `dontfork`: MADV_DONTFORK (a child never sees it). Throws
  // errc::io naming the mmap failure.
  anon_map(std::size_t bytes, bool dontfork);
  ~anon_map();
  anon_map(anon_map&& o) noexcept : p(o.p), len(o.len) { o.p = nullptr; o.len = 0; }
  anon_map& operator=(anon_map&& o) noexcept;
  std::byte* data() const noexcept { return static_cast<std::byte*>(p); }
  // Gives the memory back to the kernel (MADV_DONTNEED); the mapping stays, reading zeros.
  void release_memory() const noexcept;
};

namespace os {

// Reserves `bytes` of address space aligned to `align` (a power of two), PROT_READ with
// `writable` also PROT_WRITE, private, anonymous, MAP_NORESERVE, MADV_DONTFORK and
// MADV_NOHUGEPAGE (with `huge`: MADV_HUGEPAGE instead, so that 2 MiB pages moved in stay
// mapped whole); nullptr with errno set when the kernel refuses (ENOMEM: see
// address_space_limit). The caller owns it as an anon_map of exactly `bytes`.
void* reserve_aligned(std::size_t bytes, std::size_t align, bool writable, bool huge = false) noexcept;

// Transparent huge pages: the PMD size (hpage_pmd_size, 2 MiB on x86-64) and whether THP
// may be used at all (enabled is not `never`; `madvise` suffices, the pager advises).
std::size_t pmd_size() noexcept;
bool thp_enabled() noexcept;
// MADV_POPULATE_WRITE: faults the range in writable now (in a MADV_HUGEPAGE range aligned to
// the PMD size: huge pages where the kernel has them); 0 or the errno.
int populate_write(void* p, std::size_t len) noexcept;
// munmap of a mapping made here (reserve_aligned).
void unmap(void* p, std::size_t len) noexcept;
// mprotect(PROT_READ): a write into the range from now on is the kernel's SIGSEGV
// (SEGV_ACCERR), as in a region mapped read-only; a 2 MiB mapping in it stays whole. 0 or the
// errno.
int protect_read_only(void* p, std::size_t len) noexcept;

// RLIMIT_AS of this process, or 0 when it is unlimited.
std::size_t address_space_limit() noexcept;

// MADV_DONTNEED: the range reads zeros (or faults, in a registered region) from now on.
void drop(void* p, std::size_t len) noexcept;

// MADV_FREE: the kernel may take the range back under pressure; 0 or the errno.
int free_lazily(void* p, std::size_t len) noexcept;

// MADV_PAGEOUT: asks the kernel to reclaim the range now (tests of the victim cache).
void page_out(void* p, std::size_t len) noexcept;

// Advice for a vector of ranges of this process with one system call (process_madvise on a
// pidfd of this process): one TLB flush for the vector where the kernel batches it (6.16+),
// where a madvise per range costs a shootdown each. open() probes what the kernel takes.
class vector_advice {
 public:
  enum advice { lazy_free, dontneed, populate_write };
  vector_advice() = default;
  ~vector_advice();
  vector_advice(const vector_advice&) = delete;
  vector_advice& operator=(const vector_advice&) = delete;
  // Probes with `probe`, one OS page of the caller's own (its content is dropped after):
  // process_madvise(MADV_FREE) must work for the vector calls to be used at all, and
  // MADV_POPULATE_WRITE is probed separately (takes(populate_write)).
  void open(void* probe) noexcept;
  bool takes(advice a) const noexcept { return a == populate_write ? populate_ : pidfd_ >= 0; }
  // The bytes advised, or -1 (refused, or not open): the caller falls back per range.
  long apply(const iovec* iov, std::size_t n, advice a) const noexcept;

 private:
  int pidfd_ = -1;
  bool populate_ = false;
};

}  // namespace os
}  // namespace pheap::paging
