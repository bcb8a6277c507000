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
//         heap during the call. options::mmap_advice (PHEAP_MMAP_ADVICE) picks the madvise of
//         the mapping.
enum class backend_kind { uffd, mmap };
const char* to_string(backend_kind b) noexcept;

// The mmap backend's advice for its mapping (options::mmap_advice). normal: the kernel's
// default policy (fault read-around); random: MADV_RANDOM (no read-around: better for random
// access to a heap larger than memory). Ignored by the uffd backend.
enum class mmap_advice_kind { normal, random };
const char* to_string(mmap_advice_kind a) noexcept;

// Configuration is read once, explicitly: a default-constructed options{} is the library's
// defaults and reads no environment variable; options::from_env() is the one place that
// applies the PHEAP_* variables (README "Tuning"), and the tools' command lines win over it.
// The constructors that take no options (manager(create_only, path), ...) use
// options::from_env(), so a program that passes none is tuned by the environment; one that
// passes its own gets exactly what it passed (start from options::from_env() to keep the
// environment's say).
struct options {
  // ---- creation (ignored by open: the datastore's recorded values win) ----
  // Bytes of heap address space (rounded up to page_size). The region is reserved, not
  // committed: untouched parts cost neither memory nor disk. Allocations beyond it fail
  // (std::bad_alloc / nullptr). Metadata takes ~1.6 % of it as (mostly untouched) address
  // space plus one chunk.
  std::uint64_t capacity = 64ull << 30;
  std::uint32_t page_size = 64 * 1024;  // pager/store page: power of two, 4 KiB .. 64 MiB (PHEAP_PAGE_SIZE)
  std::uint64_t segment_size = 256ull << 20;   // bytes per segment file on disk
  std::uint64_t chunk_size = 2ull << 20;       // allocator chunk: power of two, 64 KiB .. 1 GiB
  std::string description;                     // initial datastore description (<= 1800 bytes)

  // ---- every open ----
  // Buffer size, dirty tracking, fault threads, read-ahead (pheap/pager_options.hpp).
  pager_options pager;
  // null -> io::default_engine(): io_uring, else posix, or what PHEAP_IO_ENGINE says (the io
  // layer reads that variable itself, once per process, for every store without an engine).
  std::shared_ptr<io::engine> engine;
  backend_kind backend = backend_kind::uffd;  // see backend_kind (PHEAP_BACKEND)
  mmap_advice_kind mmap_advice = mmap_advice_kind::normal;  // PHEAP_MMAP_ADVICE
  // Read-only opens (uffd backend) read segment data through the kernel's page cache instead
  // of O_DIRECT (store_options::page_cache_reads), so what one job read is still in DRAM for
  // the next: a second read-only open of the same datastore reads from memory. The cost: the
  // page cache holds those pages too (reclaimable file pages; a memory cgroup counts them,
  // and the automatic buffer treats them as reclaimable), beside the pager's buffer. false:
  // O_DIRECT, the buffer the only cache (what read-write opens always do: a writer's pages
  // live in its buffer). PHEAP_READ_ONLY_CACHE.
  bool read_only_cache = true;
  // Readers beside a writer (store_options::pin_limit; sparse_store/FORMAT.md "Readers beside a
  // writer"): the most bytes of copies the writer keeps for readers of older watermarks before
  // it expires the oldest; set by the first process that attaches to the datastore's reader
  // table. PHEAP_PIN_LIMIT.
  std::uint64_t pin_limit = 4ull << 30;

  // `base` with the fields of every PHEAP_* variable that is set overridden (page_size,
  // backend, mmap_advice, read_only_cache, pin_limit, and the pager's through
  // pager_options::from_env).
  // A malformed or out-of-range value throws error(invalid_argument) naming the variable and
  // the value.
  static options from_env(options base);
  static options from_env();  // == from_env(options{})
};

}  // namespace pheap
