// sparse_store/format2/journal.hpp — format-2 journal records and the DRAM index over the
// committed journal, read only (the converter reads format-2 datastores).
//
// Every write_pages() batch of epoch E was one record appended to journal-E (in-place rewrites
// of the current journal overwrote image slots and their CRCs); every discard() one discard
// record. The commit record (superblock) of epoch E names the journal length L it covers; every
// record in [0, L) must be intact, bytes past L are never looked at.
//
// Record layout (little-endian):
//
//   off   size  field
//     0      4  magic "PJRN"
//     4      4  type: 1 = pages, 2 = discard
//     8      8  epoch (must equal the journal's epoch)
//    16      8  count: page images that follow (pages) / pages discarded (discard)
//    24      8  first page (discard) / 0 (pages)
//    32     16  uuid of the datastore that wrote the record (superblock journal_uuid)
//    48  16*n   pages only, n = count entries: u64 page, u32 crc32c(image), u32 zero
//     …      4  crc32c of all header bytes before it
//     …      4  zero (keeps the header a multiple of 8 bytes)
//     …  n*ps   pages only: the page images, in entry order
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "pheap/io.hpp"
#include "pheap/sparse_store.hpp"

namespace pheap::store::format2 {

inline constexpr std::uint32_t record_magic = 0x4E524A50;  // bytes "PJRN"
enum class record_type : std::uint32_t { pages = 1, discard = 2 };

inline constexpr std::size_t record_fixed_size = 48;
inline constexpr std::size_t record_uuid_offset = 32;
inline constexpr std::size_t record_entry_size = 16;
inline constexpr std::size_t record_trailer_size = 8;

inline constexpr std::size_t pages_header_size(std::size_t count) {
  return record_fixed_size + record_entry_size * count + record_trailer_size;
}
inline constexpr std::size_t discard_header_size = record_fixed_size + record_trailer_size;

// "journal-00000000002a": the journal of epoch 0x2a.
std::string journal_name(std::uint64_t epoch);

// page → newest location of that page within ONE journal. An entry is either the byte offset
// of the page image in the journal, or a "zero" marker (the page was discarded) carrying the
// offset of the discard record. Offsets grow with the order in which records were reserved,
// so "newest" = larger offset; put() keeps the newest even when concurrent writers publish out
// of order.
class journal_index {
 public:
  static constexpr std::uint64_t zero_bit = 1ull << 63;

  static bool is_zero(std::uint64_t entry) { return (entry & zero_bit) != 0; }
  static std::uint64_t offset(std::uint64_t entry) { return entry & ~zero_bit; }

  // Stores `entry` for `page` unless the index already holds a newer one.
  void put(std::uint64_t page, std::uint64_t entry) {
    auto [it, inserted] = map_.try_emplace(page, entry);
    if (!inserted && offset(it->second) < offset(entry)) it->second = entry;
  }
  const std::uint64_t* find(std::uint64_t page) const {
    auto it = map_.find(page);
    return it == map_.end() ? nullptr : &it->second;
  }

 private:
  std::unordered_map<std::uint64_t, std::uint64_t> map_;
};

// What recovery learns from each record, in journal order.
struct journal_visitor {
  // A pages record: page `pages[i]`'s image is at `image_offset + i * page_size`.
  std::function<void(const std::vector<std::uint64_t>& pages, std::uint64_t image_offset)>
      on_pages;
  // A discard record at `record_offset` zeroing [first, first + count).
  std::function<void(std::uint64_t record_offset, std::uint64_t first, std::uint64_t count)>
      on_discard;
};

// Reads and verifies every record of `f` (journal of `epoch`, at `path`) in [0, length):
// magic, type, epoch, header CRC, the writer's uuid (must be `id`), page numbers < `page_count`, every image's CRC, and that the
// last record ends exactly at `length`. Calls `visit` for each record in order. Throws
// errc::corrupt naming the journal, the offset and the problem; the file size is checked
// first ("truncated: N bytes, epoch E needs L").
void scan_journal(io::engine& eng, io::file& f, const std::string& path, const uuid& id,
                  std::uint64_t epoch, std::uint64_t length, std::uint32_t page_size, std::uint64_t page_count,
                  const journal_visitor& visit);

}  // namespace pheap::store::format2
