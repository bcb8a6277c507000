// sparse_store/segment_set.hpp — the segment files: the checkpointed image of the region.
//
// Segment i holds pages [i * P, (i+1) * P) (P = pages_per_segment) at offset
// (page % P) * page_size, followed by a trailer (format 2, FORMAT.md "Segments"):
//
//   [0, segment_size)                        page images (sparse: never-written pages are holes)
//   [segment_size, +2 * 4096)                two header slots: magic, version, datastore uuid,
//                                            segment index, geometry, touch epoch, CRC32C
//   [segment_size + 8192, +table_bytes)      CRC table: u32 per page, CRC32C of its image;
//                                            0 = "no data: the page must read as zeros"
//
// A segment file is created by the first checkpoint that writes into it: header written,
// then ftruncate'd to its full size, so it stays sparse and a truncated file is detectable.
//
// Touch epochs (against a segment replaced by an older or newer copy of itself): every
// checkpoint of journal E that writes into a segment records E in one header slot — the slot
// already holding E if any (a replay of the same journal), else the slot not holding the
// newest epoch — so the other slot keeps the previous touch and a torn header write loses
// nothing. The commit record of epoch S carries a digest of (index, last touch ≤ S-1) over all
// segments; open recomputes it from the headers (per segment: the newest valid slot epoch
// below S; an epoch equal to S is the cut-short checkpoint of S's own journal, which recovery
// replays; an epoch above S cannot exist) and a mismatch is errc::corrupt.
//
// Invariants:
//   * once the checkpoint of epoch E has returned, the page images hold exactly the region as
//     of epoch E (every page's newest committed version, discarded pages punched out) and each
//     page's table entry matches its image; data, tables and directory entries are durable;
//   * only checkpoint() writes page images and table entries, and only for pages of the
//     journal it applies (a torn checkpoint is repaired by replaying that journal, and table
//     blocks rewritten by it hold unchanged values for every other page);
//   * a checkpoint writes only the header slot described above, so one valid slot holding the
//     previous touch epoch survives any crash inside it; a snapshot's copy gets fresh slots
//     (new uuid) before it is renamed into place.
//
// Every page served from a segment is verified against its table entry (verify()); a
// mismatch is errc::corrupt naming the file and the page. The tables are loaded lazily, one
// segment at a time, on the first read or checkpoint of that segment, and kept in DRAM
// (4 bytes per page of every segment touched since open).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "pheap/error.hpp"
#include "pheap/io.hpp"
#include "pheap/sparse_store.hpp"
#include "page_bitmap.hpp"
#include "superblock.hpp"

namespace pheap::store {

inline constexpr std::size_t segment_header_size = 4096;  // one slot
inline constexpr std::size_t segment_header_slots = 2;
inline constexpr char segment_magic[8] = {'P', 'H', 'E', 'A', 'P', 'S', 'G', '\0'};

// Bytes of the CRC table of a segment with `pages` pages (whole 4 KiB blocks).
inline constexpr std::uint64_t segment_table_bytes(std::uint64_t pages) {
  return (pages * 4 + 4095) / 4096 * 4096;
}
// Size of a complete segment file.
inline constexpr std::uint64_t segment_file_size(std::uint64_t segment_size,
                                                 std::uint32_t page_size) {
  return segment_size + segment_header_slots * segment_header_size +
         segment_table_bytes(segment_size / page_size);
}

// The segment header (FORMAT.md "Segments"); encode/decode are exposed for tests and tools.
struct segment_header {
  std::uint32_t version = sparse_store::format_version;
  std::uint32_t page_size = 0;
  uuid id{};
  std::uint64_t index = 0;
  std::uint64_t segment_size = 0;
  std::uint64_t touch_epoch = 0;  // epoch of the checkpoint that wrote this slot
};
void encode_segment_header(std::byte* out /* segment_header_size bytes */,
                           const segment_header& h);
// "" if `in` is a valid header, else why not (bad magic, version, CRC).
std::string decode_segment_header(const std::byte* in, segment_header& h);

class segment_set {
 public:
  segment_set(io::engine& eng, std::string dir, const uuid& id, std::uint32_t page_size,
              std::uint64_t segment_size, std::uint64_t segment_count, bool read_only);

  // Recovery. Opens every segment the commit record `sb` declares: each must be listed in
  // `names` (the directory listing), be exactly segment_file_size() bytes and carry a valid
  // header of this datastore (uuid), index and geometry, else errc::corrupt naming the file
  // and the cause; the touch epochs must reproduce sb.segment_digest (else errc::corrupt
  // listing the segments' epochs: one was replaced by an older or newer copy).
  // A touch epoch equal to sb.epoch counts only when sb has no journal (a snapshot). A read-write open also adopts segment files that exist but are not
  // declared (a checkpoint of the committed epoch created them and was cut short before the
  // next commit could declare them): a header of another datastore is corrupt, a torn or
  // missing header is written anew; they are extended to full size and, with the directory,
  // synced. A read-only open ignores them: everything they may hold is also in the committed
  // journal, which the read-only store serves from memory.
  void open_existing(const superblock& sb, const std::vector<std::string>& names);

  // The open file of segment `index`, or null if it does not exist (the pages are zeros).
  std::shared_ptr<io::file> get(std::uint64_t index) const;
  // One entry per segment: does the file exist (durably, between checkpoints).
  std::vector<bool> present() const;
  std::vector<std::shared_ptr<io::file>> files() const;

  // Sets the bit of every page that overlaps a data extent of some segment's page area
  // (SEEK_DATA / SEEK_HOLE: cheap, proportional to the number of extents).
  void mark_data(page_bitmap& bits) const;

  // True if `image` (page_size bytes, just read from the segment of `page`) matches the
  // page's table entry. Loads the segment's table on first use (I/O errors throw).
  bool verify(std::uint64_t page, const void* image);
  // The table entry of `page` (0: a hole or an all-zero page) if its segment's table is
  // loaded, else nullopt (loading it would take a read).
  std::optional<std::uint32_t> loaded_crc(std::uint64_t page) const;
  // The errc::corrupt error for a page that failed verify().
  error verify_error(std::uint64_t page, const void* image, const char* op);

  // Applies one journal to the segments. `entries` are (page, entry) pairs of a journal_index
  // sorted by page: data entries are copied from `journal` into the segments (several MiB per
  // engine call) and their CRCs entered in the tables, zero entries become punched holes
  // (consecutive pages → one hole) with table entry 0. Creates missing segments (header, full
  // size), writes the changed table blocks, then fdatasyncs every touched segment and, if any
  // file was created, the directory. Idempotent. `epoch` is recorded in new headers. Returns
  // the number of pages applied. Throws on any I/O failure; the caller must then treat the
  // segments as unknown (poison the store).
  std::uint64_t checkpoint(io::file& journal,
                           const std::vector<std::pair<std::uint64_t, std::uint64_t>>& entries,
                           std::uint64_t epoch);

  // For segment files written directly, not through checkpoint() (the kernel-mmap backend
  // maps them MAP_SHARED): recomputes every existing segment's CRC table from its current
  // contents (pages in data extents; holes and all-zero pages get 0), writes and fdatasyncs it.
  // Reads every data page once. The caller guarantees no concurrent checkpoint or writer.
  void rebuild_tables();

  // Snapshot: after `path` (a copy of segment `index`) was cloned, gives it the header of
  // datastore `id` (the snapshot's new uuid) with the segment's current touch epoch (the
  // other slot zeroed) and syncs it.
  void rewrite_identity(const std::string& path, std::uint64_t index, const uuid& id);

  // The digest the next commit record stores: CRC32C over (u64 index, u64 touch epoch) of
  // every existing segment in index order (0 when there is none). Only meaningful between
  // checkpoints (the caller holds the commit lock).
  std::uint32_t digest() const;

  std::uint64_t pages_per_segment() const { return pages_per_segment_; }
  std::string path_of(std::uint64_t index) const;

 private:
  using crc_table = std::vector<std::atomic<std::uint32_t>>;

  std::shared_ptr<io::file> create_segment(std::uint64_t index, std::uint64_t epoch);
  segment_header header_for(std::uint64_t index, std::uint64_t epoch) const;
  struct header_state {
    std::string problem;   // "" if at least one slot is a valid header of this segment
    bool foreign = false;  // a valid slot belongs to another datastore / segment / geometry
    std::int64_t epoch[segment_header_slots] = {-1, -1};  // touch epoch per valid slot
  };
  header_state read_headers(io::file& f, std::uint64_t index);
  // Writes the header slot for a checkpoint of `epoch` (see the file comment).
  void write_touch(io::file& f, std::uint64_t index, std::uint64_t epoch);
  crc_table& table(std::uint64_t index);  // loads it on first use

  io::engine& eng_;
  std::string dir_;
  uuid id_;
  std::uint32_t page_size_;
  std::uint64_t segment_size_;
  std::uint64_t pages_per_segment_;
  std::uint64_t file_size_;
  bool read_only_;
  mutable std::shared_mutex mu_;  // guards files_ (the pointers, not the contents)
  std::vector<std::shared_ptr<io::file>> files_;
  // CRC tables, loaded once per segment: owned by tables_ (written under load_mu_), read
  // lock-free through table_ptrs_ (published with release after the table is filled).
  std::vector<std::unique_ptr<crc_table>> tables_;
  std::unique_ptr<std::atomic<crc_table*>[]> table_ptrs_;
  // Per segment: touch epoch of each header slot as on disk (-1: invalid / never written),
  // and the last touch (the digest's value). Written by open and checkpoint, which never run
  // concurrently with each other or with digest()/rewrite_identity() (commit lock).
  std::vector<std::array<std::int64_t, segment_header_slots>> slot_epochs_;
  std::vector<std::uint64_t> touch_;
  std::mutex load_mu_;  // serialises table loads (one reader of the disk table per segment)
};

}  // namespace pheap::store
