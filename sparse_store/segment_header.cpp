#include "segment_header.hpp"

#include <cstdio>
#include <cstring>

#include "pheap/crc32c.hpp"
#include "layout.hpp"

namespace pheap::store {

namespace {

constexpr char segment_magic[8] = {'P', 'H', 'E', 'A', 'P', 'S', 'G', '\0'};
constexpr std::size_t hdr_version = 8, hdr_page_size = 12, hdr_uuid = 16, hdr_index = 32,
                      hdr_segment_size = 40, hdr_touch_epoch = 48,
                      hdr_crc = segment_header_size - 4;

}  // namespace

void encode_segment_header(std::byte* out, const segment_header& h) {
  std::memset(out, 0, segment_header_size);
  std::memcpy(out, segment_magic, sizeof segment_magic);
  put<std::uint32_t>(out, hdr_version, h.version);
  put<std::uint32_t>(out, hdr_page_size, h.page_size);
  std::memcpy(out + hdr_uuid, h.id.data(), h.id.size());
  put<std::uint64_t>(out, hdr_index, h.index);
  put<std::uint64_t>(out, hdr_segment_size, h.segment_size);
  put<std::uint64_t>(out, hdr_touch_epoch, h.touch_epoch);
  put<std::uint32_t>(out, hdr_crc, crc32c(out, hdr_crc));
}

std::string decode_segment_header(const std::byte* in, std::uint32_t version, segment_header& h) {
  if (std::memcmp(in, segment_magic, sizeof segment_magic) != 0) {
    return all_zero(in, segment_header_size) ? "no segment header (all zeros)"
                                             : "bad segment header magic";
  }
  const auto stored = get<std::uint32_t>(in, hdr_crc);
  const auto actual = crc32c(in, hdr_crc);
  if (stored != actual) {
    char msg[80];
    std::snprintf(msg, sizeof msg, "segment header crc mismatch (stored %08x, computed %08x)",
                  stored, actual);
    return msg;
  }
  if (!all_zero(in + hdr_touch_epoch + 8, hdr_crc - hdr_touch_epoch - 8)) {
    return "segment header's reserved bytes are not zero";
  }
  h.version = get<std::uint32_t>(in, hdr_version);
  h.page_size = get<std::uint32_t>(in, hdr_page_size);
  std::memcpy(h.id.data(), in + hdr_uuid, h.id.size());
  h.index = get<std::uint64_t>(in, hdr_index);
  h.segment_size = get<std::uint64_t>(in, hdr_segment_size);
  h.touch_epoch = get<std::uint64_t>(in, hdr_touch_epoch);
  if (h.version != version) return "segment header of format version " + std::to_string(h.version);
  return {};
}

std::string segment_identity_problem(const segment_header& h, const uuid& id, std::uint64_t index,
                                     std::uint32_t page_size, std::uint64_t segment_size) {
  if (h.id != id) {
    return "segment belongs to datastore " + to_string(h.id) + ", not " + to_string(id) +
           " (swapped in from another datastore)";
  }
  if (h.index != index) {
    return "segment header names segment " + std::to_string(h.index) +
           " (a segment file renamed or copied over another)";
  }
  if (h.page_size != page_size || h.segment_size != segment_size) {
    return "segment header geometry (page_size " + std::to_string(h.page_size) +
           ", segment_size " + std::to_string(h.segment_size) + ") differs from the superblock's";
  }
  return {};
}

}  // namespace pheap::store
