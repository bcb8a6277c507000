// sparse_store/superblock.hpp — the commit record: two checksummed slots in DIR/pheap.super
// (format 3; the format-2 record is in format2/superblock.hpp).
//
// A commit of epoch E is durable exactly when a slot holds a valid record for E and has been
// fdatasync'ed. A commit writes the slot NOT holding the current watermark, so a torn write of
// the new slot (power cut in the middle of the commit) leaves the previous commit readable:
// open picks the valid slot with the higher epoch (LMDB's two meta pages). For ordinary
// commits that is slot E % 2.
//
// The record names the copy of the page-map directory the epoch uses (home, length, CRC32C:
// the parent holds the child's checksum) and carries the root blob. Two-phase commit (see
// FORMAT.md): a `prepared` record is durable but not yet the watermark; `base_epoch` is the
// watermark it was prepared on.
//
// Slot layout (slot_size bytes, little-endian; see FORMAT.md):
//
//   off   size  field
//     0      8  magic "PHEAPSB\0"
//     8      4  format_version (3)
//    12      4  page_size
//    16     16  uuid
//    32      8  epoch
//    40      8  segment_size
//    48      8  capacity
//    56      8  directory_length  bytes of the directory (map_codec.hpp)
//    64      4  root_length       ≤ 2048
//    68      4  directory_crc     CRC32C of the directory copy this epoch uses
//    72      4  flags             bit 0: directory home (0/1), bit 1: prepared; others 0
//    76      4  pages_per_block   944 (map_codec.hpp)
//    80      8  base_epoch        the watermark this epoch was committed on (epoch - 1; 0 at 0)
//    88      8  zero
//    96   2048  root blob (bytes past root_length are zero)
//  2144    ...  zero
//  8188      4  crc32c of bytes [0, 8188)
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "pheap/io.hpp"
#include "pheap/sparse_store.hpp"

namespace pheap::store {

inline constexpr std::size_t slot_size = 8192;
inline constexpr std::size_t slot_count = 2;
inline constexpr std::size_t super_file_size = slot_size * slot_count;
inline constexpr char super_magic[8] = {'P', 'H', 'E', 'A', 'P', 'S', 'B', '\0'};
inline constexpr std::size_t off_version = 8;
inline constexpr std::size_t off_root = 96;
inline constexpr std::size_t off_crc = slot_size - 4;  // 8188, in every format

// The format-2 datastores this build converts (pheap upgrade) but no longer opens.
inline constexpr std::uint32_t format2_version = 2;

// Bounds on the region, checked at create (invalid_argument) and open (corrupt, "impossible
// capacity"): open allocates DRAM per page map block, and the directory grows with the page
// count (max_pages → 72 MiB of directory, FORMAT.md "Limits").
inline constexpr std::uint64_t max_capacity = 1ull << 50;
inline constexpr std::uint64_t max_pages = 1ull << 32;

struct superblock {
  std::uint32_t version = sparse_store::format_version;
  std::uint32_t page_size = 0;
  uuid id{};
  std::uint64_t epoch = 0;
  std::uint64_t segment_size = 0;
  std::uint64_t capacity = 0;
  std::uint64_t directory_length = 0;
  std::uint32_t directory_crc = 0;
  unsigned directory_home = 0;
  bool prepared = false;
  std::uint64_t base_epoch = 0;
  std::vector<std::byte> root;  // ≤ max_root_size

  std::uint64_t page_count() const { return capacity / page_size; }
  std::uint64_t segment_count() const { return (capacity + segment_size - 1) / segment_size; }
};

// Why a slot was rejected (or `ok`).
enum class slot_status { ok, bad_magic, newer_version, older_version, bad_crc, bad_values };

struct decoded_slot {
  slot_status status = slot_status::bad_magic;
  std::string cause;             // human-readable reason when status != ok
  std::uint32_t version = 0;     // for newer/older_version
  superblock sb;
};

// The fields a slot of every format (2 and 3) has at the same offsets.
struct slot_identity {
  std::uint32_t page_size = 0;
  uuid id{};
  std::uint64_t epoch = 0;
  std::uint64_t segment_size = 0;
  std::uint64_t capacity = 0;
};
// "" and `out` filled if the slot's CRC (of bytes [0, 8188), stored at 8188) checks out, else
// the cause ("crc mismatch (stored …, computed …)"). Magic and version are the caller's.
std::string decode_slot_identity(const std::byte* slot, slot_identity& out);

// Serialises `sb` into exactly slot_size bytes (CRC included).
std::array<std::byte, slot_size> encode_slot(const superblock& sb);
// Parses and validates one slot: magic, version, CRC, geometry (geometry_problem), root
// length, pages per block, directory length, flags, base epoch. A slot that decodes but fails
// capacity_problem is bad_values too ("impossible capacity").
decoded_slot decode_slot(const std::byte* slot);

// "" if the geometry is acceptable (page size a power of two 4 KiB … 64 MiB, segment size a
// power-of-two multiple of it, capacity a positive multiple of the page size whose segment
// count fits the file names), else the reason.
std::string geometry_problem(std::uint32_t page_size, std::uint64_t segment_size,
                             std::uint64_t capacity);
// "" if `capacity` is within max_capacity / max_pages, else the reason ("impossible
// capacity ...").
std::string capacity_problem(std::uint32_t page_size, std::uint64_t capacity);

// Checks creation parameters (both of the above); throws errc::invalid_argument naming `dir`
// and the offending option.
void validate_geometry(const std::string& dir, std::uint32_t page_size,
                       std::uint64_t segment_size, std::uint64_t capacity);

// The record open chooses and the slot it is in.
struct chosen_slot {
  superblock sb;
  unsigned slot = 0;
};

// Reads both slots of the open superblock file and returns the valid one with the highest
// epoch ≤ `max_epoch` (of two valid copies of one epoch, the one not `prepared`).
// Throws (naming `super_path`): newer_format if a slot was written by a newer format;
// older_format if no slot is valid and one was written by an older format, saying what to do
// (format 2: "convert it with `pheap upgrade SRC DST`"); not_a_datastore if neither slot
// carries the magic and the file is not short; corrupt otherwise, naming each slot's cause
// (and, if valid slots exist above `max_epoch` only, saying so).
chosen_slot read_superblock(io::engine& eng, io::file& f, const std::string& super_path,
                            std::uint64_t max_epoch = std::numeric_limits<std::uint64_t>::max());

// Writes `sb` into slot `slot` (one write; the caller syncs).
void write_slot(io::engine& eng, io::file& f, unsigned slot, const superblock& sb);

// 16 random bytes from getrandom(2), formatted as an RFC 4122 version-4 UUID.
uuid new_uuid();

}  // namespace pheap::store
