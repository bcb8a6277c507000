// sparse_store/journal.hpp — journal records and the DRAM index over one journal file.
//
// Every write_pages() batch of epoch E becomes ONE record appended to journal-E (pages that
// already have a slot in journal-E are rewritten in place instead, see below); every
// discard() becomes one discard record. The

// commit record (superblock) of epoch E names the journal length L it covers; on recovery
// every record in [0, L) must be intact, and bytes past L (writes after the seal that belong
// to epoch E+1, or a torn tail) are never looked at.
//
// In-place rewrites: while journal E is still the CURRENT journal (not sealed by a commit), a
// page written again whose newest entry is an image slot of journal E gets its image
// overwritten in that slot, and the slot's entry CRC and the record's header CRC are
// rewritten with it (the store keeps every record header of the current journal in DRAM and
// serialises rewrites of one record). This bounds journal E by the distinct pages written in
// epoch E. It is safe because an uncommitted journal is discarded wholesale by recovery, and
// commit seals the journal (no rewrite can start afterwards) and waits for rewrites already
// started before it fdatasyncs the journal: the committed bytes are the final ones. A sealed
// journal is never modified, so a checkpoint or a read of it never races a write.
//
// Record layout (little-endian; see FORMAT.md):
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

namespace pheap::store {

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

// Fills the header of a pages record into `out` (pages_header_size(count) bytes). `pages[i]`
// and `crcs[i]` describe the i-th image.
void encode_pages_header(std::byte* out, const uuid& id, std::uint64_t epoch,
                         std::size_t count, const std::uint64_t* pages,
                         const std::uint32_t* crcs);
void encode_discard_header(std::byte* out, const uuid& id, std::uint64_t epoch,
                           std::uint64_t first, std::uint64_t count);

// In-place rewrites of a pages record (FORMAT.md "In-place rewrites"): byte ranges within a
// record, relative to the record's start.
struct record_range {
  std::size_t offset;
  std::size_t length;
};
// Stores `crc` as the image CRC of entry `idx` of the pages header `header` (as encoded by
// encode_pages_header) and returns the CRC it replaces. The header CRC is stale until
// reseal_pages_header().
std::uint32_t set_entry_crc(std::byte* header, std::uint32_t idx, std::uint32_t crc);
// Where entry `idx` of a pages header lies: the bytes to rewrite after set_entry_crc().
inline constexpr record_range entry_range(std::uint32_t idx) {
  return {record_fixed_size + idx * record_entry_size, record_entry_size};
}
// Where image `idx` of a pages record whose header is `header_size` bytes lies.
inline constexpr std::uint64_t image_offset(std::size_t header_size, std::uint32_t idx,
                                            std::uint32_t page_size) {
  return header_size + static_cast<std::uint64_t>(idx) * page_size;
}
// Recomputes the header CRC of the `header_size`-byte pages header after its entries changed;
// returns the trailer's range (the bytes to rewrite).
record_range reseal_pages_header(std::byte* header, std::size_t header_size);

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
  // Unconditional store / removal: only for undoing a record that was never written.
  void set(std::uint64_t page, std::uint64_t entry) { map_[page] = entry; }
  void erase(std::uint64_t page) { map_.erase(page); }
  const std::uint64_t* find(std::uint64_t page) const {
    auto it = map_.find(page);
    return it == map_.end() ? nullptr : &it->second;
  }
  std::size_t size() const { return map_.size(); }
  bool empty() const { return map_.empty(); }
  // (page, entry) pairs sorted by page: the order a checkpoint applies them in.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> sorted() const;

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

}  // namespace pheap::store
