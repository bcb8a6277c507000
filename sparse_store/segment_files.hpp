// sparse_store/segment_files.hpp — the segment files, where the copies of pages live.
//
// Segment i holds pages [i·P, (i+1)·P) (P = segment_size / page_size = S / page_size), each
// with two homes (FORMAT.md "Segments"):
//
//   [0, S)          home 0: page p at (p mod P) · page_size
//   [S, 2S)         home 1: page p at S + (p mod P) · page_size
//   [2S, 2S+4096)   identity header (segment_header.hpp, format 3): datastore, index, geometry
//
// Which home holds a page's current copy, and its checksum, is the page map's business
// (page_map.hpp); this class only knows where the bytes are.
//
// Creation: a segment file appears under its final name only complete. It is built as
// "segment-NNNNNN.creating" (header written, extended to full size, fdatasync'ed) and renamed;
// the directory entry becomes durable with the next commit's directory fsync, which comes
// before any map naming a page in it. So a file under a segment name always has its header and
// its size, and a missing, short or foreign one is damage: errc::corrupt naming the file. A
// leftover ".creating" file (crash) is replaced by the next creation of that segment.
//
// Files are opened lazily, on the first read or write of one of their pages, with
// open_mode::direct (page data bypasses the page cache; buffered instead for a read-only
// store that reads through the page cache), and checked once then: size, header.
// Open files are kept, up to a budget derived from RLIMIT_NOFILE (a quarter of what is left
// after 64 descriptors for everything else, at least 2; a direct-mode file takes two); beyond
// it, and whenever an open fails for want of descriptors (EMFILE/ENFILE), kept files no call
// is using are closed (retrying for up to a second while every one is in use) — and from then
// on no file is kept: each closes when its last user is done. So a datastore of more segments
// than descriptors still works; reopening a segment costs a header check.
// Thread-safe; opening and creation are serialised by one mutex.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "pheap/error.hpp"
#include "pheap/io.hpp"
#include "pheap/sparse_store.hpp"
#include "map_codec.hpp"

namespace pheap::store {

class segment_files {
 public:
  segment_files(io::engine& eng, std::string dir, const uuid& id, std::uint32_t page_size,
                std::uint64_t segment_size, std::uint64_t segment_count, bool read_only);
  // Read-only, before the first segment is opened: segments are opened buffered (their
  // data read through the page cache, store_options::page_cache_reads), not direct.
  void read_through_page_cache() noexcept { cached_reads_ = read_only_; }

  std::uint64_t pages_per_segment() const { return pages_per_segment_; }
  std::uint64_t segment_count() const { return files_.size(); }
  std::uint64_t file_size() const { return 2 * segment_size_ + 4096; }
  std::uint64_t segment_of(std::uint64_t page) const { return page / pages_per_segment_; }
  // Byte offset of `page`'s home `h` in its segment file.
  std::uint64_t offset_of(std::uint64_t page, page_home h) const {
    return home_index(h) * segment_size_ + (page % pages_per_segment_) * page_size_;
  }
  std::string path_of(std::uint64_t seg) const;

  // The segment holding a copy of `page` that the map of `epoch` names, for reading. Throws
  // errc::corrupt naming the file and the page when it is missing, truncated or not this
  // datastore's segment.
  // `patient` = false (the caller holds other segment files): fail fast when the descriptors
  // are exhausted instead of waiting up to a second for other threads (see gather_files).
  std::shared_ptr<io::file> for_read(std::uint64_t seg, std::uint64_t page, std::uint64_t epoch,
                                     bool patient = true);
  // The segment for writing a page copy; created if missing (`created` is then set: its name
  // needs the next commit's directory fsync). Read-write stores only.
  std::shared_ptr<io::file> for_write(std::uint64_t seg, bool& created, bool patient = true);
  // The segment if its file exists (checked like for_read), else null.
  std::shared_ptr<io::file> if_exists(std::uint64_t seg);

  // Gathers the open files of `n` items — get(i, patient) returns item i's file (for_read or
  // for_write) — and hands them to use(first, end, files) in as few chunks as the descriptors
  // allow: when an open fails for want of descriptors while files are held, the items gathered
  // so far are used and released, then the open is retried patiently. Once descriptors ran
  // short, gathers run one at a time (no file is kept then, so each gather's files are all
  // there are): two threads holding files while waiting for a descriptor the other holds, or
  // re-opening faster than a waiter, would otherwise starve.
  template <class Get, class Use>
  void gather(std::size_t n, Get&& get, Use&& use);

  // Indexes of the segment files in the directory (by listing it; unknown names ignored).
  std::vector<std::uint64_t> listed() const;

  // Writes the identity header of segment `seg` for datastore `id` into `f` (a snapshot's
  // copy) and syncs it.
  void write_identity(io::file& f, std::uint64_t seg, const uuid& id);

  // Calls fn(first, end) — pages of segment `seg`, relative to the segment — for every run of
  // pages whose home `h` overlaps a data extent of `f` (SEEK_DATA / SEEK_HOLE: proportional to
  // the number of extents, not to the size).
  template <class Fn>
  void for_each_data_run(const io::file& f, page_home h, Fn&& fn) const;

 private:
  std::shared_ptr<io::file> open_checked(std::uint64_t seg, const std::string& why_needed,
                                         bool patient);
  std::unique_ptr<io::file> open_file(const std::string& path, io::open_mode mode, bool patient);
  std::size_t release_idle(std::size_t keep);
  void keep(std::uint64_t seg, std::shared_ptr<io::file> f);
  std::shared_ptr<io::file> create(std::uint64_t seg, bool patient);
  std::shared_ptr<io::file> cached(std::uint64_t seg) const;

  io::engine& eng_;
  std::string dir_;
  uuid id_;
  std::uint32_t page_size_;
  std::uint64_t segment_size_;
  std::uint64_t pages_per_segment_;
  bool read_only_;
  bool cached_reads_ = false;
  mutable std::shared_mutex mu_;  // files_ (the pointers)
  std::vector<std::shared_ptr<io::file>> files_;
  std::size_t kept_ = 0;    // non-null entries of files_
  std::size_t budget_;      // most files kept open
  std::atomic<bool> scarce_{false};  // an open failed for want of descriptors: keep none
  std::mutex scarce_mu_;              // serialises gathers once scarce_
  std::mutex open_mu_;  // serialises opening and creating
};

// True if `e` says the process ran out of file descriptors (EMFILE, ENFILE).
bool out_of_descriptors(const error& e) noexcept;

// Data runs of [begin, end) bytes of `f`: fn(first_byte, end_byte) per data extent clipped to
// the range. Throws naming the file and `op`.
void for_each_data_extent(const io::file& f, std::uint64_t begin, std::uint64_t end,
                          const char* op,
                          const std::function<void(std::uint64_t, std::uint64_t)>& fn);

template <class Get, class Use>
void segment_files::gather(std::size_t n, Get&& get, Use&& use) {
  std::unique_lock<std::mutex> serial;
  if (scarce_.load(std::memory_order_relaxed)) serial = std::unique_lock<std::mutex>(scarce_mu_);
  std::vector<std::shared_ptr<io::file>> files(n);
  std::size_t first = 0;
  for (std::size_t i = 0; i < n; ++i) {
    for (;;) {
      try {
        // Patient only when alone and holding nothing: then waiting can only help.
        files[i] = get(i, serial.owns_lock() && i == first);
        break;
      } catch (const error& e) {
        if (!out_of_descriptors(e) || (serial.owns_lock() && i == first)) throw;
      }
      if (i > first) use(first, i, files);
      for (std::size_t k = first; k < i; ++k) files[k].reset();
      first = i;
      if (!serial.owns_lock()) serial = std::unique_lock<std::mutex>(scarce_mu_);
    }
  }
  if (first < n) use(first, n, files);
}

template <class Fn>
void segment_files::for_each_data_run(const io::file& f, page_home h, Fn&& fn) const {
  const std::uint64_t base = home_index(h) * segment_size_;
  for_each_data_extent(f, base, base + segment_size_, "find data",
                       [&](std::uint64_t a, std::uint64_t b) {
                         fn((a - base) / page_size_, (b - base + page_size_ - 1) / page_size_);
                       });
}

}  // namespace pheap::store
