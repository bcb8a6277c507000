// sparse_store/format2/segment_set.hpp — the format-2 segment files, read only: the
// checkpointed image of the region plus, per segment, two header slots (segment_header.hpp,
// version 2, with a touch epoch) and a CRC table.
//
//   [0, segment_size)                     page p at (p mod P) · page_size (holes: no data)
//   [segment_size, +2 · 4096)             two header slots
//   [segment_size + 8192, +table_bytes)   CRC table: u32 per page (0: must read as zeros)
//
// open() checks every segment the commit record declares: present, full size, a valid header
// of this datastore, index and geometry, and the touch epochs reproducing the record's segment
// digest (a segment replaced by an older or newer copy of itself is caught). Every page read
// from a segment is verified against its table entry (tables loaded lazily, 4 bytes per page).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "pheap/error.hpp"
#include "pheap/io.hpp"
#include "page_bitmap.hpp"
#include "superblock.hpp"

namespace pheap::store::format2 {

class segment_set {
 public:
  segment_set(io::engine& eng, std::string dir, const superblock& sb);

  // Opens and checks every declared segment (see the file comment); errc::corrupt naming the
  // file and the cause.
  void open(const superblock& sb, const std::vector<std::string>& names);

  // The open file of segment `index`, or null if it does not exist (the pages are zeros).
  const std::shared_ptr<io::file>& get(std::uint64_t index) const { return files_[index]; }
  // Sets the bit of every page that overlaps a data extent of some segment.
  void mark_data(page_bitmap& bits) const;
  // True if `image` (just read from the segment of `page`) matches the page's table entry.
  bool verify(std::uint64_t page, const void* image);
  // The errc::corrupt error for a page that failed verify().
  error verify_error(std::uint64_t page, const void* image, const char* op);
  std::uint64_t pages_per_segment() const { return pages_per_segment_; }

 private:
  const std::vector<std::uint32_t>& table(std::uint64_t index);  // loads it on first use

  io::engine& eng_;
  std::string dir_;
  uuid id_;
  std::uint32_t page_size_;
  std::uint64_t segment_size_;
  std::uint64_t pages_per_segment_;
  std::vector<std::shared_ptr<io::file>> files_;  // written by open() only
  std::mutex table_mu_;
  std::vector<std::unique_ptr<std::vector<std::uint32_t>>> tables_;
};

}  // namespace pheap::store::format2
