// sparse_store/format2/superblock.hpp — the format-2 commit record, read only (the converter
// reads format-2 datastores; nothing writes them any more). Layout (8192-byte slots at 0 and
// 8192, little-endian):
//
//   off   size  field
//     0      8  magic "PHEAPSB\0"
//     8      4  format version (2)
//    12      4  page_size
//    16     16  uuid
//    32      8  epoch
//    40      8  segment_size
//    48      8  capacity
//    56      8  journal_length   bytes of journal-<epoch> this commit covers (0: none)
//    64      4  root_length      ≤ 2048
//    68      4  segment_count    ceil(capacity / segment_size) = bits in the bitmap
//    72     16  journal_uuid     the uuid every record of journal-<epoch> carries
//    88      4  segment_digest   CRC32C over (u64 index, u64 touch epoch) of every segment
//    92      4  zero
//    96   2048  root blob
//  2144    ...  segment bitmap, bit i = byte i/8, bit i%8: segment i exists
//  8188      4  crc32c of bytes [0, 8188)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pheap/io.hpp"
#include "pheap/sparse_store.hpp"

namespace pheap::store::format2 {

inline constexpr std::uint32_t version = 2;

struct superblock {
  std::uint32_t page_size = 0;
  uuid id{};
  std::uint64_t epoch = 0;
  std::uint64_t segment_size = 0;
  std::uint64_t capacity = 0;
  std::uint64_t journal_length = 0;
  uuid journal_id{};
  std::uint32_t segment_digest = 0;
  std::vector<std::byte> root;
  std::vector<bool> segments;

  std::uint64_t segment_count() const { return (capacity + segment_size - 1) / segment_size; }
};

// Reads both slots of `f` and returns the valid format-2 record with the higher epoch. Throws
// (naming `super_path`) invalid_argument if the datastore is not format 2 (a slot of another
// version), corrupt if no slot is valid.
superblock read_superblock(io::engine& eng, io::file& f, const std::string& super_path);

}  // namespace pheap::store::format2
