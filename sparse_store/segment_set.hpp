// sparse_store/segment_set.hpp — the segment files: the checkpointed image of the region.
//
// Segment i holds pages [i * pages_per_segment, (i+1) * pages_per_segment) at offset
// (page % pages_per_segment) * page_size. A segment file is created by the first checkpoint
// that writes into it and is immediately ftruncate'd to segment_size, so it stays sparse
// (never-written pages are holes) and a truncated file is detectable at open.
//
// Invariant: once the checkpoint of epoch E has returned, the segment files hold exactly the
// region as of epoch E (every page's newest committed version, discarded pages punched out),
// their data and their directory entries are durable. Only checkpoint() writes segments, and
// the store runs at most one checkpoint at a time, never while a snapshot clones the files.
#pragma once

#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "pheap/io.hpp"
#include "sparse_store/page_bitmap.hpp"
#include "sparse_store/superblock.hpp"

namespace pheap::store {

class segment_set {
 public:
  segment_set(io::engine& eng, std::string dir, std::uint32_t page_size,
              std::uint64_t segment_size, std::uint64_t segment_count, bool read_only);

  // Recovery. Opens every segment the commit record `sb` declares: each must be listed in
  // `names` (the directory listing) and be exactly segment_size bytes, else errc::corrupt
  // naming the file. A read-write open also adopts segment files that exist but are not
  // declared (a checkpoint of the committed epoch created them and was cut short before the
  // next commit could declare them): they are extended to segment_size and, with the
  // directory, synced. A read-only open ignores them: everything they may hold is also in the
  // committed journal, which the read-only store serves from memory.
  void open_existing(const superblock& sb, const std::vector<std::string>& names);

  // The open file of segment `index`, or null if it does not exist (the pages are zeros).
  std::shared_ptr<io::file> get(std::uint64_t index) const;
  // One entry per segment: does the file exist (durably, between checkpoints).
  std::vector<bool> present() const;
  std::vector<std::shared_ptr<io::file>> files() const;

  // Sets the bit of every page that overlaps a data extent of some segment (SEEK_DATA /
  // SEEK_HOLE: cheap, proportional to the number of extents).
  void mark_data(page_bitmap& bits) const;

  // Applies one journal to the segments. `entries` are (page, entry) pairs of a journal_index
  // sorted by page: data entries are copied from `journal` into the segments (several MiB per
  // engine call), zero entries become punched holes (consecutive pages → one hole). Creates
  // and sizes missing segments, then fdatasyncs every touched segment and, if any file was
  // created, the directory. Idempotent. Returns the number of pages applied. Throws on any
  // I/O failure; the caller must then treat the segments as unknown (poison the store).
  std::uint64_t checkpoint(io::file& journal,
                           const std::vector<std::pair<std::uint64_t, std::uint64_t>>& entries);

  std::uint64_t pages_per_segment() const { return pages_per_segment_; }
  std::string path_of(std::uint64_t index) const;

 private:
  std::shared_ptr<io::file> create_segment(std::uint64_t index);

  io::engine& eng_;
  std::string dir_;
  std::uint32_t page_size_;
  std::uint64_t segment_size_;
  std::uint64_t pages_per_segment_;
  bool read_only_;
  mutable std::shared_mutex mu_;  // guards files_ (the pointers, not the file contents)
  std::vector<std::shared_ptr<io::file>> files_;
};

}  // namespace pheap::store
