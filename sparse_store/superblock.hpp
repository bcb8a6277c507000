// sparse_store/superblock.hpp — the commit record: two checksummed slots in DIR/pheap.super.
//
// A commit of epoch E is durable exactly when slot E % 2 holds a valid record for E and has
// been fdatasync'ed. The other slot keeps epoch E-1 intact, so a torn write of the new slot
// (power cut in the middle of the commit) leaves the previous commit readable: open picks the
// valid slot with the higher epoch (LMDB's two meta pages).
//
// Slot layout (slot_size bytes, little-endian; see FORMAT.md):
//
//   off   size  field
//     0      8  magic "PHEAPSB\0"
//     8      4  format_version
//    12      4  page_size
//    16     16  uuid
//    32      8  epoch
//    40      8  segment_size
//    48      8  capacity
//    56      8  journal_length   bytes of journal-<epoch> this commit covers (0: none)
//    64      4  root_length      ≤ 2048
//    68      4  segment_count    ceil(capacity / segment_size) = bits in the bitmap
//    72     16  journal_uuid     the uuid every record of journal-<epoch> carries (= uuid,
//                                except in a snapshot of a read-only store: the source's)
//    88      4  segment_digest   CRC32C over (u64 index, u64 touch epoch) of every segment
//                                (segment_set.hpp "Touch epochs"); 0 without segments
//    92      4  zero
//    96   2048  root blob (bytes past root_length are zero)
//  2144    ...  segment bitmap, ceil(segment_count / 8) bytes, bit i = byte i/8, bit i%8
//  8188      4  crc32c of bytes [0, 8188)
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "pheap/io.hpp"
#include "pheap/sparse_store.hpp"

namespace pheap::store {

inline constexpr std::size_t slot_size = 8192;
inline constexpr std::size_t slot_count = 2;
inline constexpr std::size_t super_file_size = slot_size * slot_count;
inline constexpr char super_magic[8] = {'P', 'H', 'E', 'A', 'P', 'S', 'B', '\0'};

inline constexpr std::size_t off_journal_uuid = 72;
inline constexpr std::size_t off_segment_digest = 88;
inline constexpr std::size_t off_root = 96;
inline constexpr std::size_t off_bitmap = off_root + sparse_store::max_root_size;  // 2144
inline constexpr std::size_t off_crc = slot_size - 4;                               // 8188
// The largest segment count whose bitmap fits in a slot.
inline constexpr std::uint64_t max_segments = (off_crc - off_bitmap) * 8;           // 48352
// Format versions before this one are refused with errc::older_format (format 1 had no
// segment checksums and no identity in segments and journal records).
inline constexpr std::uint32_t oldest_readable_version = 2;

// Bounds on the region, checked at create (invalid_argument) and open (corrupt, "impossible
// capacity"): open allocates one bit of DRAM per page (max_pages → 512 MiB of bitmap).
inline constexpr std::uint64_t max_capacity = 1ull << 50;
inline constexpr std::uint64_t max_pages = 1ull << 32;

struct superblock {
  std::uint32_t version = sparse_store::format_version;
  std::uint32_t page_size = 0;
  uuid id{};
  std::uint64_t epoch = 0;
  std::uint64_t segment_size = 0;
  std::uint64_t capacity = 0;
  std::uint64_t journal_length = 0;
  uuid journal_id{};                 // records of journal-<epoch> must carry this uuid
  std::uint32_t segment_digest = 0;  // touch epochs of the segments (segment_set::digest)
  std::vector<std::byte> root;       // ≤ max_root_size
  std::vector<bool> segments;        // one entry per segment: file exists as of this commit

  std::uint64_t segment_count() const { return (capacity + segment_size - 1) / segment_size; }
};

// Why a slot was rejected (or `ok`).
enum class slot_status { ok, bad_magic, newer_version, older_version, bad_crc, bad_values };

struct decoded_slot {
  slot_status status = slot_status::bad_magic;
  std::string cause;  // human-readable reason when status != ok
  superblock sb;
};

// Serialises `sb` into exactly slot_size bytes (CRC included).
std::array<std::byte, slot_size> encode_slot(const superblock& sb);
// Parses and validates one slot: magic, version, CRC, geometry (page size a power of two
// ≥ 4 KiB, segment size a power-of-two multiple of it, capacity a positive multiple of the
// page size, segment count fitting the bitmap, root length ≤ 2048).
decoded_slot decode_slot(const std::byte* slot);

// "" if `capacity` is within max_capacity / max_pages, else the reason ("impossible
// capacity ..."). Not part of decode_slot; create and read_superblock apply it.
std::string capacity_problem(std::uint32_t page_size, std::uint64_t capacity);

// Checks creation parameters with the rules decode_slot applies plus capacity_problem; throws
// errc::invalid_argument naming `dir` and the offending option.
void validate_geometry(const std::string& dir, std::uint32_t page_size,
                       std::uint64_t segment_size, std::uint64_t capacity);

// Reads both slots of the open superblock file and returns the newest valid one (a slot
// that decodes but fails capacity_problem is invalid).
// Throws (naming `super_path`): newer_format if a slot was written by a newer format;
// older_format if no slot is valid and one was written by a format this build no longer reads;
// not_a_datastore if neither slot carries the magic and the file is not short;
// corrupt if no slot is valid otherwise, naming the cause for each slot.
superblock read_superblock(io::engine& eng, io::file& f, const std::string& super_path);

// Writes `sb` into slot sb.epoch % 2 (one write; the caller syncs).
void write_slot(io::engine& eng, io::file& f, const superblock& sb);

// 16 random bytes from getrandom(2), formatted as an RFC 4122 version-4 UUID.
uuid new_uuid();

}  // namespace pheap::store
