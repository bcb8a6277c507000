// src/heap/region.hpp — the memory the heap lives in: the seam between the manager and its
// backend (internal).
//
// The manager needs exactly this from a backend: a contiguous writable (or read-only) range
// [base, base+size), a way to make it durable together with the root record, a way to hand
// freed chunk ranges back to the storage, and the sparse_store that names the datastore
// (uuid, epoch, snapshot, statistics, flock).
//
//   pager_region  the userfaultfd pager over a SparseStore (backend_kind::uffd): every
//                 flush() is an atomic, crash-safe watermark.
//   mmap_region   the segment files of the same datastore mapped MAP_SHARED by the kernel
//                 (backend_kind::mmap, Metall-like): durable only after a clean close().
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>

#include "pheap/options.hpp"
#include "pheap/pager.hpp"
#include "pheap/sparse_store.hpp"

namespace pheap::heap {

class region {
 public:
  virtual ~region() = default;
  virtual std::byte* base() const noexcept = 0;
  virtual std::size_t size() const noexcept = 0;
  virtual std::size_t page_size() const noexcept = 0;
  virtual bool read_only() const noexcept = 0;
  virtual backend_kind backend() const noexcept = 0;

  // Makes the heap durable as far as the backend can and returns the last committed epoch.
  // uffd: a new atomic watermark holding `root`. mmap: msync only (the epoch does not move;
  // the datastore becomes openable again only at close()).
  virtual std::uint64_t flush(std::span<const std::byte> root) = 0;
  // Final flush of a read-write close. uffd: flush(root), but nothing is committed when
  // nothing is dirty and root is unchanged. mmap: msync, then commit `root` marked clean.
  virtual std::uint64_t close(std::span<const std::byte> root) = 0;
  // Two-phase commit (pheap/two_phase.hpp): flush() ending in a prepared epoch, and its
  // confirmation. uffd only: the base versions throw errc::unavailable (the mmap backend has
  // no watermark before its clean close).
  virtual std::uint64_t prepare(std::span<const std::byte> root);
  virtual std::uint64_t confirm();
  // [offset, offset+len) of the heap is free: its storage may be released (page-aligned
  // inner part only). Errors are reported by exceptions; the caller decides.
  virtual void discard(std::uint64_t offset, std::uint64_t len) = 0;
  // Writes an independent datastore at dst holding `root` and the heap as of now/last flush.
  virtual void snapshot(const std::string& dst, std::span<const std::byte> root) = 0;

  // Brings the pages covering each (offset, len) in ahead of use, without waiting (manager.hpp
  // manager::prefetch: its caveats). uffd: pager::prefetch; mmap: MADV_WILLNEED.
  virtual void prefetch(std::span<const std::pair<std::size_t, std::size_t>> ranges) = 0;
  // A scan's prefetch (manager::prefetch_all): uffd: pager::prefetch_stored (pages with data,
  // as far as the buffer has room); mmap: MADV_WILLNEED, as prefetch.
  virtual void prefetch_stored(std::span<const std::pair<std::size_t, std::size_t>> ranges) {
    prefetch(ranges);
  }
  // A read-only region moves to the datastore's newest watermark (manager::refresh): the
  // store moved and every page whose copy changed dropped, so that the next access reads the
  // new watermark. uffd: pager::refresh. The base version throws errc::unavailable (the mmap
  // backend holds its datastore's shared flock: no writer beside it).
  virtual refresh_result refresh();
  virtual refresh_result refresh_to(std::uint64_t max_epoch);  // pager::refresh_to; the base as refresh()
  virtual sparse_store& store() noexcept = 0;
  virtual dirty_tracking tracking() const noexcept = 0;
  virtual pager_stats stats() const = 0;
};

// The uffd backend. Takes ownership of an opened store.
std::unique_ptr<region> make_pager_region(std::unique_ptr<sparse_store> store, const pager_options& opt);

// The mmap backend. `store` is open (read-write or read-only) and its root record has been
// validated; for a read-write store the caller passes the root blob to commit marked "open
// by the mmap backend" before anything is mapped writable (see mmap_region.hpp). `advice`:
// options::mmap_advice, applied to the whole mapping.
std::unique_ptr<region> make_mmap_region(std::unique_ptr<sparse_store> store, const std::string& path,
                                         const store_options& so, std::span<const std::byte> open_root,
                                         mmap_advice_kind advice);

}  // namespace pheap::heap
