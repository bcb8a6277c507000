// sparse_store/segment_header.hpp — the identity header of a segment file (4096 bytes): which
// datastore, which segment, which geometry. Format 3 writes one, after the two homes, when the
// segment is created (and a snapshot rewrites it for its copy); format 2 kept two per segment
// with a touch epoch (format2/segment_set.hpp). Same layout in both:
//
//   off   size  field
//     0      8  magic "PHEAPSG\0"
//     8      4  format version (3 in formats 3 and 4: format 4 changed no segment byte)
//    12      4  page_size
//    16     16  datastore uuid
//    32      8  segment index
//    40      8  segment_size
//    48      8  touch epoch (format 2; 0 in format 3)
//    56  ...    zero
//  4092      4  crc32c of bytes [0, 4092)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "pheap/sparse_store.hpp"

namespace pheap::store {

inline constexpr std::size_t segment_header_size = 4096;
// The version a segment's identity header carries: the segment layout's, the same in store
// formats 3 and 4 (so an in-place upgrade to format 4 rewrites no segment).
inline constexpr std::uint32_t segment_layout_version = sparse_store::format3_version;

struct segment_header {
  std::uint32_t version = segment_layout_version;
  std::uint32_t page_size = 0;
  uuid id{};
  std::uint64_t index = 0;
  std::uint64_t segment_size = 0;
  std::uint64_t touch_epoch = 0;
};

void encode_segment_header(std::byte* out /* segment_header_size bytes */,
                           const segment_header& h);
// "" if `in` is a header of format `version` (magic, CRC, version), else why not.
std::string decode_segment_header(const std::byte* in, std::uint32_t version, segment_header& h);
// Why a valid header `h` is not the one of segment `index` of datastore `id` with this
// geometry ("" if it is).
std::string segment_identity_problem(const segment_header& h, const uuid& id, std::uint64_t index,
                                     std::uint32_t page_size, std::uint64_t segment_size);

}  // namespace pheap::store
