// libFuzzer target: the map block parser and its check against a directory entry
// (decode_map_block, check_block; sparse_store/map_codec.hpp) — what a read trusts to say
// where a page's copy is and what its checksum must be.
//
// Input: an 8-byte parameter block, then the map block (padded with zeros / cut to 4096 bytes).
//   byte 0 bit 0: recompute the block's own CRC first (explore past the self-checksum)
//   byte 0 bit 1: make the directory entry name this block exactly (its CRC and epoch), so
//                 check_block's identity checks run on accepted blocks too
//   bytes 1-2: the block index the entry is for (little-endian)
//   bytes 3-4: the pages in that block (1 .. 944)
//   bytes 5-7: the directory entry's epoch
//
// Properties (abort = finding): no crash/UB; an accepted block has states 0..2 only, none
// beyond its page count, CRC 0 exactly for pages without data, and re-encodes to the same bytes
// (every byte of a valid block is a field or zero); check_block accepts a block only if its CRC
// is the entry's and its header names the datastore, the index, the entry's epoch and the page
// count, and otherwise says why.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "pheap/crc32c.hpp"
#include "sparse_store/layout.hpp"
#include "sparse_store/map_codec.hpp"
#include "fuzz_support.hpp"

using namespace pheap;
using pheap::fuzz::kFuzzId;
using pheap::fuzz::require;
using namespace pheap::store;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 8) return 0;
  std::vector<std::byte> block(map_block_size);
  std::memcpy(block.data(), data + 8, std::min(size - 8, map_block_size));
  if (data[0] & 1) put<std::uint32_t>(block.data(), 4092, crc32c(block.data(), 4092));
  const std::uint64_t index = get<std::uint16_t>(data, 1);
  const std::uint32_t pages = 1 + get<std::uint16_t>(data, 3) % pages_per_block;
  dir_entry e;
  e.flags = dir_entry::exists;
  e.epoch = static_cast<std::uint64_t>(data[5]) | (static_cast<std::uint64_t>(data[6]) << 8) |
            (static_cast<std::uint64_t>(data[7]) << 16);
  e.crc = crc32c(block.data(), map_block_size) ^ 1u;  // mismatching unless bit 1 below

  block_header h;
  block_version v;
  const std::string why = decode_map_block(block.data(), h, v);
  if (why.empty()) {
    require(h.pages >= 1 && h.pages <= pages_per_block);
    for (std::uint32_t i = 0; i < pages_per_block; ++i) {
      const auto s = static_cast<unsigned>(v.home(i));
      require(s <= 2);
      require(i < h.pages || s == 0);
      require((s == 0) == (v.crc[i] == 0));
    }
    std::vector<std::byte> again(map_block_size);
    encode_map_block(again.data(), h, v);
    require(std::memcmp(again.data(), block.data(), map_block_size) == 0);
    if (data[0] & 2) {
      e.crc = crc32c(block.data(), map_block_size);
      e.epoch = h.epoch;
    }
  }
  block_version checked;
  const std::string problem = check_block(block.data(), e, index, pages, kFuzzId, checked);
  if (problem.empty()) {
    require(why.empty() && e.crc == crc32c(block.data(), map_block_size));
    require(h.id == kFuzzId && h.index == index && h.epoch == e.epoch && h.pages == pages);
  }
  return 0;
}
