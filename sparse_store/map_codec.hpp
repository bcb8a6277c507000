// sparse_store/map_codec.hpp — the page map on disk: map blocks and the directory of map
// blocks, their byte layouts and codecs (FORMAT.md "The page map"). Pure functions over
// buffers: page_map.hpp does the I/O and keeps the map in DRAM; fuzz/ feeds these decoders.
//
// For every page the map says where its current copy is — nowhere (no data: it reads as
// zeros), home 0 or home 1 of its segment (segment_files.hpp) — and the CRC32C of that copy.
// Pages are grouped in map blocks of pages_per_block pages, 4096 bytes each:
//
//   off   size  field
//     0      8  magic "PHEAPMB\0"
//     8      8  block index
//    16      8  epoch of the commit that wrote this copy
//    24     16  datastore uuid
//    40      4  pages in this block (pages_per_block; fewer in the last block)
//    44      4  zero
//    48    236  states, 2 bits per page (page i: byte i/4, bits 2·(i%4)): 0 none, 1 home 0,
//               2 home 1, 3 invalid
//   284   3776  CRC32C per page (0 for a page without data)
//  4060     32  zero
//  4092      4  crc32c of bytes [0, 4092)
//
// The directory has one 16-byte entry per map block after a 64-byte header:
//
//   header: 0 magic "PHEAPMD\0" (8) | 8 uuid (16) | 24 epoch of the commit that wrote it (8) |
//           32 block count (8) | 40 pages_per_block (4) | 44 zero (20)
//   entry:  0 epoch of the block's current copy (8) | 8 crc32c of that copy (4) |
//           12 pages with data (2) | 14 flags (1): bit 0 a copy exists, bit 1 it is in home 1,
//           bit 2 some page's current copy is in home 1 | 15 zero (1)
//
// A block copy is valid only if its CRC32C equals its directory entry's (the parent holds the
// child's checksum, so a lost, misdirected, stale or foreign block is caught) and its header
// names this datastore, this block index and the entry's epoch. The directory is checked the
// same way against the superblock (superblock.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "pheap/sparse_store.hpp"

namespace pheap::store {

inline constexpr std::size_t map_block_size = 4096;
inline constexpr std::uint32_t pages_per_block = 944;
inline constexpr std::size_t directory_header_size = 64;
inline constexpr std::size_t directory_entry_size = 16;
inline constexpr std::size_t touched_words = (pages_per_block + 63) / 64;

inline constexpr std::uint64_t block_count(std::uint64_t pages) {
  return (pages + pages_per_block - 1) / pages_per_block;
}
inline constexpr std::uint64_t directory_length(std::uint64_t pages) {
  return directory_header_size + directory_entry_size * block_count(pages);
}

// Where a page's current copy is. The values are the on-disk 2-bit states.
enum class page_home : std::uint8_t { none = 0, first = 1, second = 2 };

// The home a new copy of a page goes to when its current copy is in `h`: the other one
// (home 0 for a page without data).
inline constexpr page_home other_home(page_home h) {
  return h == page_home::first ? page_home::second : page_home::first;
}
inline constexpr unsigned home_index(page_home h) { return h == page_home::second ? 1u : 0u; }

// One block's states and CRCs (DRAM form of a map block), plus which pages the epoch that
// produced this version changed (`touched`: written or discarded; never on disk).
struct block_version {
  std::array<std::uint32_t, pages_per_block> crc{};
  std::array<std::uint8_t, pages_per_block / 4> state{};
  std::array<std::uint64_t, touched_words> touched{};

  page_home home(std::uint32_t i) const {
    return static_cast<page_home>((state[i / 4] >> (2 * (i % 4))) & 3u);
  }
  void set(std::uint32_t i, page_home h, std::uint32_t c) {
    state[i / 4] = static_cast<std::uint8_t>((state[i / 4] & ~(3u << (2 * (i % 4)))) |
                                             (static_cast<unsigned>(h) << (2 * (i % 4))));
    crc[i] = c;
  }
  bool is_touched(std::uint32_t i) const { return (touched[i / 64] >> (i % 64)) & 1u; }
  void touch(std::uint32_t i) { touched[i / 64] |= 1ull << (i % 64); }
  bool any_touched() const;
  std::uint32_t data_pages() const;  // pages whose state is not none
  bool any_second() const;           // some page's copy is in home 1
};

struct block_header {
  std::uint64_t index = 0;
  std::uint64_t epoch = 0;
  uuid id{};
  std::uint32_t pages = 0;
};

// Serialises a block copy (map_block_size bytes at `out`, self CRC included).
void encode_map_block(std::byte* out, const block_header& h, const block_version& v);
// Parses one block copy: "" and `h`/`v` filled if its magic, self CRC, page count (≤
// pages_per_block), states (no 3; none beyond the page count) and CRCs (0 exactly for pages
// without data) are right, else the reason. Does not check identity: see check_block.
std::string decode_map_block(const std::byte* in, block_header& h, block_version& v);

struct dir_entry {
  static constexpr std::uint8_t exists = 1, in_second = 2, has_second = 4;
  std::uint64_t epoch = 0;
  std::uint32_t crc = 0;
  std::uint16_t data_pages = 0;
  std::uint8_t flags = 0;

  unsigned home() const { return (flags & in_second) ? 1u : 0u; }
  bool operator==(const dir_entry&) const = default;
};

struct directory_header {
  uuid id{};
  std::uint64_t epoch = 0;
  std::uint64_t blocks = 0;
};

// Serialises the directory: directory_length(pages) bytes, padded with zeros to a multiple of
// 4096 (the checksum covers the unpadded length).
std::vector<std::byte> encode_directory(const directory_header& h,
                                        std::span<const dir_entry> entries);
// Parses a directory of `len` bytes: "" if its magic, block count (= entries that fit `len`),
// pages per block and every entry (flags, pages with data) are right, else the reason. Does not
// check identity or epoch: see check_directory.
std::string decode_directory(const std::byte* in, std::size_t len, directory_header& h,
                             std::vector<dir_entry>& entries);

// Why a block copy read for directory entry `e` of block `index` is not the one the entry
// names ("" if it is): checksum, then (to explain a mismatch) what the copy is instead — all
// zeros (a lost write or a truncated file), torn, another datastore's, another block's, a
// stale or newer copy. `id` is this datastore's uuid. Fills `v` when "".
std::string check_block(const std::byte* in, const dir_entry& e, std::uint64_t index,
                        std::uint32_t pages, const uuid& id, block_version& v);
// The same for the directory copy a superblock of epoch `epoch` names (length, crc).
std::string check_directory(const std::byte* in, std::size_t len, std::uint32_t crc,
                            std::uint64_t epoch, std::uint64_t blocks, const uuid& id,
                            std::vector<dir_entry>& entries);

}  // namespace pheap::store
