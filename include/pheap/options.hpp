// pheap/options.hpp — how a datastore is created and opened.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "pheap/pager_options.hpp"

namespace pheap {

namespace io {
class engine;  // pheap/io.hpp: the I/O seam (include it to make an engine)
}

// Which mechanism maps the heap (chosen per open; the on-disk format is the same).
//
//   uffd  (default) our userfaultfd pager over the SparseStore: bounded buffer (pager options),
//         and every flush() is an atomic, crash-safe watermark — after a crash the datastore
//         opens at the last completed flush.
//   mmap  the segment files mapped MAP_SHARED by the kernel (Metall-like): no userfaultfd
//         needed (the fallback for containers that block it) and the baseline that isolates
//         the pager's effect in benchmarks. Memory is managed by the kernel page cache (the
//         pager options are ignored; confine it with a memory cgroup).
//         DURABLE ONLY AFTER A CLEAN CLOSE: flush() is msync (data reaches the files, the
//         epoch does not move); a read-write open marks the datastore "open by the mmap
//         backend" on disk before mapping it, and only the destructor's clean close removes
//         the mark. After a crash or kill -9 while open read-write, every later open (either
//         backend) refuses the datastore with errc::corrupt ("not closed cleanly") and
//         manager::consistent() returns false: restore it from a snapshot or copy. A
//         read-only mmap open needs the last commit to be in the segment files (any close
//         by the mmap backend); after a uffd close it throws errc::unavailable until the
//         datastore was opened read-write once. snapshot() assumes no thread writes to the
//         heap during the call. PHEAP_MMAP_ADVICE=random applies MADV_RANDOM to the mapping
//         (no fault read-around: better for random access larger than memory); default normal.
enum class backend_kind { uffd, mmap };
const char* to_string(backend_kind b) noexcept;
// PHEAP_BACKEND = uffd | mmap (unset: uffd); anything else throws error(invalid_argument).
backend_kind backend_from_env();
// PHEAP_READ_ONLY_CACHE = on | off (unset: on); anything else throws error(invalid_argument).
bool read_only_cache_from_env();
// PHEAP_PAGE_SIZE (e.g. "4K", "64K", "1M") if set, else 64 KiB; a malformed value or one that
// is not a power of two in [4 KiB, 64 MiB] throws error(invalid_argument) naming the variable.
std::uint32_t page_size_from_env();

struct options {
  // ---- creation (ignored by open: the datastore's recorded values win) ----
  // Bytes of heap address space (rounded up to page_size). The region is reserved, not
  // committed: untouched parts cost neither memory nor disk. Allocations beyond it fail
  // (std::bad_alloc / nullptr). Metadata takes ~1.6 % of it as (mostly untouched) address
  // space plus one chunk.
  std::uint64_t capacity = 64ull << 30;
  std::uint32_t page_size = page_size_from_env();  // pager/store page: power of two, 4 KiB .. 64 MiB
  std::uint64_t segment_size = 256ull << 20;   // bytes per segment file on disk
  std::uint64_t chunk_size = 2ull << 20;       // allocator chunk: power of two, 64 KiB .. 1 GiB
  std::string description;                     // initial datastore description (<= 1800 bytes)

  // ---- every open ----
  // Buffer size, dirty tracking, fault threads, read-ahead. Defaults honour PHEAP_* variables
  // (see pheap/pager_options.hpp); a malformed variable throws error(invalid_argument) here.
  pager_options pager = pager_options::from_env();
  std::shared_ptr<io::engine> engine;  // null -> io::default_engine() (io_uring, else posix)
  backend_kind backend = backend_from_env();  // see backend_kind; default honours PHEAP_BACKEND
  // Read-only opens (uffd backend) read segment data through the kernel's page cache instead
  // of O_DIRECT (store_options::page_cache_reads), so what one job read is still in DRAM for
  // the next: a second read-only open of the same datastore reads from memory. The cost: the
  // page cache holds those pages too (reclaimable file pages; a memory cgroup counts them,
  // and the automatic buffer treats them as reclaimable), beside the pager's buffer. false:
  // O_DIRECT, the buffer the only cache (what read-write opens always do: a writer's pages
  // live in its buffer). Default honours PHEAP_READ_ONLY_CACHE.
  bool read_only_cache = read_only_cache_from_env();
};

}  // namespace pheap
