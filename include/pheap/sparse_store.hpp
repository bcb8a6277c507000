// pheap/sparse_store.hpp — the page store under the pager.
//
// A SparseStore holds one region of `capacity` bytes, addressed in pages of `page_size`
// bytes, in a datastore directory:
//
//   DIR/pheap.super          two superblock slots (LMDB-style), the commit record
//   DIR/segment-NNNNNN       data, `segment_size` bytes of pages each plus a trailer (two
//                            header slots naming the datastore, a CRC32C per page); created
//                            on first checkpoint only, kept sparse (unwritten pages are holes)
//   DIR/journal-EEEEEEEEEEEE pages written during epoch E, appended with checksums
//
// Durability model (details and byte layout: sparse_store/FORMAT.md):
//   * commit(root) is the only unit of durability. It makes every write_pages()/discard()
//     since the previous commit durable atomically, stores `root` (a small blob: the heap's
//     root record) with it and returns the new epoch number.
//   * After a crash at any point, open() yields exactly the state of the last completed
//     commit: never a mix of two epochs.
//   * Between commits, write_pages() may be called any number of times, rewriting the same
//     page repeatedly; read_pages() always returns the newest content.
//   * A failed write or sync during write_pages()/discard()/commit() ends that epoch: the call
//     throws, the store becomes poisoned (later write_pages, discard, commit and snapshot
//     throw errc::poisoned naming the original cause) and the previous epoch stays the durable
//     state on disk. Reads keep working and return the newest successfully written content,
//     so a pager can keep serving faults after a full disk. Reopen to continue writing.
//   * Within an uncommitted epoch a page written again reuses its journal slot (the journal
//     stays bounded by the distinct pages written). A read racing a rewrite of the SAME page
//     may see either version (the pager never issues both at once).
//
// Concurrency: all member functions are thread-safe. write_pages() may run concurrently with
// commit(); such a write lands in the committed epoch or the next, never torn within a page.
//
// Locking: flock on DIR/pheap.super — one read-write opener or any number of read-only
// openers per datastore, across processes. A conflicting open throws errc::locked.
//
// Failure modes (all throw pheap::error naming the path and the cause):
//   missing directory → not_found; directory without pheap.super → not_a_datastore;
//   newer format version → newer_format; format 1 (before segment checksums) → older_format;
//   both superblock slots invalid → corrupt (one invalid slot falls back to the other);
//   journal shorter than the commit record says, a bad journal record checksum or a record
//   written by another datastore → corrupt; segment file required by the commit missing,
//   truncated, of another datastore or index, or an older/newer copy of itself (touch epochs)
//   → corrupt; ENOSPC → no_space; any other OS failure → io.
//   read_pages() verifies every page it serves from a segment against the segment's CRC
//   table: a damaged page is errc::corrupt naming the segment file and the page, never data.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "pheap/io.hpp"

namespace pheap {

using uuid = std::array<std::uint8_t, 16>;
std::string to_string(const uuid& id);

struct store_options {
  // Creation parameters (ignored on open: the superblock's values win).
  std::uint64_t capacity = 0;               // bytes; multiple of page_size; > 0
  std::uint32_t page_size = 64 * 1024;      // power of two, 4 KiB .. 64 MiB
  std::uint64_t segment_size = 256ull << 20;  // power of two, multiple of page_size

  // Open parameters.
  bool read_only = false;  // never writes; recovery happens in memory
  std::shared_ptr<io::engine> engine;  // null → io::default_engine()
};

struct page_read {
  std::uint64_t page;  // page number < capacity / page_size
  void* buf;           // page_size bytes
};

struct page_write {
  std::uint64_t page;
  const void* buf;  // page_size bytes
};

struct store_stats {
  std::uint64_t pages_read = 0;        // pages served from journal or segments
  std::uint64_t zero_pages_read = 0;   // never-written pages served as zeros without I/O
  std::uint64_t pages_written = 0;     // pages appended to the journal
  std::uint64_t commits = 0;
  std::uint64_t journal_bytes = 0;     // bytes appended to journals since open
  std::uint64_t checkpointed_pages = 0;
  std::uint64_t commit_ns = 0;         // total time inside commit()
};

class sparse_store {
 public:
  // Creates DIR (must not exist, or be an empty directory) with an epoch-0 commit holding an
  // empty root. Throws already_exists / invalid_argument / io.
  static std::unique_ptr<sparse_store> create(const std::string& dir, const store_options& opt);
  // Opens and recovers DIR. Read-only opens recover in memory and never write.
  static std::unique_ptr<sparse_store> open(const std::string& dir, const store_options& opt);

  // Closing does not commit: writes after the last commit are discarded (as after a crash).
  virtual ~sparse_store() = default;

  virtual void read_pages(std::span<const page_read> batch) = 0;
  virtual void write_pages(std::span<const page_write> batch) = 0;  // errc::read_only if RO
  // Zeroes [first_page, first_page + count) as of the next commit; disk space is released
  // (hole punched) once that commit is checkpointed.
  virtual void discard(std::uint64_t first_page, std::uint64_t count) = 0;
  // True if the page may hold non-zero data (written in some committed or current epoch).
  // False means read_pages() would return zeros: the pager zero-fills without I/O.
  virtual bool may_have_data(std::uint64_t page) const = 0;
  // The CRC32C (pheap/crc32c.hpp) of what read_pages() would return for `page` now, when the
  // store can tell without I/O (from the checksums it keeps in DRAM to verify what it
  // serves); std::nullopt when only a read could tell. A page without data: the CRC of
  // page_size() zero bytes. The pager compares it with an eviction victim's bytes to judge
  // the victim clean without reading it back. Not meaningful for a page whose write_pages()
  // is in flight. Default: std::nullopt.
  virtual std::optional<std::uint32_t> page_crc(std::uint64_t page) const {
    (void)page;
    return std::nullopt;
  }

  // Makes everything written so far durable atomically with `root` (≤ max_root_size bytes).
  virtual std::uint64_t commit(std::span<const std::byte> root) = 0;

  // Writes an independent datastore at `dst` (must not exist) holding exactly the state of
  // the last commit (reflink where supported, sparse copy otherwise). Writers may continue.
  virtual void snapshot(const std::string& dst) = 0;

  // For writers that change segment files directly instead of through write_pages() (the
  // kernel-mmap heap backend maps them MAP_SHARED): recomputes every segment's page checksums
  // from the files' current contents and syncs them, so that later reads verify. Reads every
  // data page once. Call with no such writer active, before the commit that publishes the
  // files' contents. errc::read_only on a read-only store; a failure poisons.
  virtual void rebuild_checksums() = 0;

  virtual std::uint64_t epoch() const = 0;  // last committed epoch
  virtual std::vector<std::byte> root() const = 0;  // root blob of the last commit
  virtual const std::string& path() const = 0;
  virtual const uuid& id() const = 0;
  virtual std::uint32_t page_size() const = 0;
  virtual std::uint64_t capacity() const = 0;
  virtual std::uint64_t segment_size() const = 0;
  virtual bool read_only() const = 0;
  virtual io::engine& engine() const = 0;
  virtual store_stats stats() const = 0;
  // Bytes allocated on disk by all files of the datastore.
  virtual std::uint64_t disk_bytes() const = 0;

  static constexpr std::size_t max_root_size = 2048;
  static constexpr std::uint32_t format_version = 2;
};

}  // namespace pheap
