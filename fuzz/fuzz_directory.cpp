// libFuzzer target: the page-map directory parser and its check against the superblock
// (decode_directory, check_directory; sparse_store/map_codec.hpp) — what open reads and
// trusts to find every map block (and to say a block without a copy has no data).
//
// Input: an 8-byte parameter block, then the directory bytes (any length).
//   byte 0 bit 0: make the superblock's expected CRC the input's (explore past the checksum)
//   bytes 1-2: block count the geometry implies (little-endian)
//   bytes 3-7: the superblock's epoch
//
// Properties (abort = finding): no crash/UB; an accepted directory has exactly as many entries
// as its length holds, every entry with known flags, at most pages_per_block pages with data,
// no copy fields without a copy, and re-encodes to the same bytes; check_directory accepts only
// the expected CRC, this datastore, the expected block count and an epoch not after the
// superblock's, and otherwise says why.
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
  const std::byte* in = reinterpret_cast<const std::byte*>(data + 8);
  const std::size_t len = size - 8;
  const std::uint64_t blocks = get<std::uint16_t>(data, 1);
  std::uint64_t epoch = 0;
  std::memcpy(&epoch, data + 3, 5);

  directory_header h;
  std::vector<dir_entry> entries;
  const std::string why = decode_directory(in, len, h, entries);
  if (why.empty()) {
    require(entries.size() == h.blocks);
    require(directory_header_size + directory_entry_size * h.blocks == len);
    for (const dir_entry& e : entries) {
      require((e.flags & ~(dir_entry::exists | dir_entry::in_second | dir_entry::has_second)) == 0);
      require(e.data_pages <= pages_per_block);
      require((e.flags & dir_entry::exists) || (e.flags == 0 && e.data_pages == 0 && e.crc == 0 && e.epoch == 0));
    }
    const std::vector<std::byte> again = encode_directory(h, entries);
    require(again.size() >= len && std::memcmp(again.data(), in, len) == 0);
  } else {
    require(!why.empty());
  }
  const std::uint32_t crc = (data[0] & 1) ? crc32c(in, len) : crc32c(in, len) ^ 1u;
  std::vector<dir_entry> checked;
  const std::string problem = check_directory(in, len, crc, epoch, blocks, kFuzzId, checked);
  if (problem.empty()) {
    require(why.empty() && (data[0] & 1) && h.id == kFuzzId && h.blocks == blocks && h.epoch <= epoch);
    require(checked == entries);
  }
  return 0;
}
