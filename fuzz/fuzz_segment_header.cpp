// libFuzzer target: the segment identity header parser (decode_segment_header,
// sparse_store/segment_header.hpp) — what the store trusts to tell a segment of this datastore
// and index from a foreign or misplaced one (format 3; format 2's header slots share it).
//
// Input: byte 0 = flags, the rest = one header slot (padded with zeros / cut to 4096 bytes).
// Flag bit 0 set: the slot's CRC is recomputed so the fuzzer gets past the CRC gate.
//
// Properties (abort = finding): no crash/UB; an accepted slot re-encodes to the same bytes
// (every byte of a valid slot is a field or zero: the decoder rejects non-zero padding).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "pheap/crc32c.hpp"
#include "sparse_store/layout.hpp"
#include "sparse_store/segment_header.hpp"
#include "fuzz_support.hpp"

using namespace pheap;
using pheap::fuzz::require;
using namespace pheap::store;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  std::vector<std::byte> slot(segment_header_size);
  std::memcpy(slot.data(), data + 1, std::min(size - 1, segment_header_size));
  if (data[0] & 1) {
    put<std::uint32_t>(slot.data(), segment_header_size - 4,
                       crc32c(slot.data(), segment_header_size - 4));
  }
  segment_header h;
  const std::string why = decode_segment_header(slot.data(), segment_layout_version, h);
  if (!why.empty()) return 0;
  require(h.version == segment_layout_version);
  std::vector<std::byte> again(segment_header_size);
  encode_segment_header(again.data(), h);
  require(std::memcmp(again.data(), slot.data(), segment_header_size) == 0);
  segment_header h2;
  require(decode_segment_header(again.data(), segment_layout_version, h2).empty());
  require(h2.id == h.id && h2.index == h.index && h2.page_size == h.page_size &&
          h2.segment_size == h.segment_size && h2.touch_epoch == h.touch_epoch);
  return 0;
}
