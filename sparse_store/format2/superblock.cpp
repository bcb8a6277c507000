#include "superblock.hpp"

#include <cstring>

#include "pheap/error.hpp"
#include "../layout.hpp"
#include "../superblock.hpp"

namespace pheap::store::format2 {

namespace {

constexpr std::size_t off_journal_uuid = 72, off_segment_digest = 88, off_bitmap = 2144;
constexpr std::uint64_t max_bitmap_segments = (off_crc - off_bitmap) * 8;  // 48352

// "" and `sb` filled if the slot at `b` is a valid format-2 record, else the reason;
// `other_version` is set when the slot is valid in shape but of another format version.
std::string decode(const std::byte* b, superblock& sb, bool& other_version) {
  other_version = false;
  if (std::memcmp(b, super_magic, sizeof super_magic) != 0) {
    return all_zero(b, slot_size) ? "empty (all zeros)" : "bad magic";
  }
  const auto v = get<std::uint32_t>(b, off_version);
  if (v != version) {
    other_version = true;
    return "format version " + std::to_string(v);
  }
  slot_identity ident;
  if (std::string why = decode_slot_identity(b, ident); !why.empty()) return why;
  sb.page_size = ident.page_size;
  sb.id = ident.id;
  sb.epoch = ident.epoch;
  sb.segment_size = ident.segment_size;
  sb.capacity = ident.capacity;
  sb.journal_length = get<std::uint64_t>(b, 56);
  const auto root_len = get<std::uint32_t>(b, 64);
  const auto seg_count = get<std::uint32_t>(b, 68);
  std::memcpy(sb.journal_id.data(), b + off_journal_uuid, sb.journal_id.size());
  sb.segment_digest = get<std::uint32_t>(b, off_segment_digest);
  std::string problem = geometry_problem(sb.page_size, sb.segment_size, sb.capacity);
  if (problem.empty()) problem = capacity_problem(sb.page_size, sb.capacity);
  if (problem.empty() && sb.segment_count() > max_bitmap_segments) {
    problem = std::to_string(sb.segment_count()) + " segments exceed the bitmap";
  }
  if (problem.empty() && root_len > sparse_store::max_root_size) {
    problem = "root length " + std::to_string(root_len) + " > 2048";
  }
  if (problem.empty() && seg_count != sb.segment_count()) {
    problem = "segment count " + std::to_string(seg_count) + " does not match the geometry";
  }
  if (!problem.empty()) return "impossible values: " + problem;
  sb.root.assign(b + off_root, b + off_root + root_len);
  sb.segments.assign(seg_count, false);
  for (std::size_t i = 0; i < seg_count; ++i) {
    sb.segments[i] = (std::to_integer<unsigned>(b[off_bitmap + i / 8]) >> (i % 8)) & 1u;
  }
  return {};
}

}  // namespace

superblock read_superblock(io::engine& eng, io::file& f, const std::string& super_path) {
  std::vector<std::byte> buf(super_file_size);
  eng.read_at(f, 0, buf.data(), buf.size());
  superblock slots[slot_count];
  std::string why[slot_count];
  bool other[slot_count];
  const superblock* best = nullptr;
  for (std::size_t k = 0; k < slot_count; ++k) {
    why[k] = decode(buf.data() + k * slot_size, slots[k], other[k]);
    if (why[k].empty() && (best == nullptr || slots[k].epoch > best->epoch)) best = &slots[k];
  }
  if (best != nullptr) return *best;
  if (other[0] || other[1]) {
    throw error(errc::invalid_argument, super_path, "open format 2",
                "not a format-2 datastore (superblock slot 0 " + why[0] + ", slot 1 " + why[1] + ")");
  }
  throw error(errc::corrupt, super_path, "open format 2",
              "both superblock slots invalid: slot 0 " + why[0] + ", slot 1 " + why[1]);
}

}  // namespace pheap::store::format2
