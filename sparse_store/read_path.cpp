// sparse_store/read_path.cpp — read_pages(), may_have_data(), page_crc() and check_files()
// (FORMAT.md "Read path").
//
// A page's newest version (working, sealed or committed: page_map.hpp) says where its copy is.
// A page without data is zeros, with no I/O. Every other page is read from its home and
// verified against the map's CRC32C: a mismatch is errc::corrupt naming the segment file, the
// page, the home and its offset — a damaged copy or one rewritten behind the map's back is
// never served. A page whose in-place rewrite failed (poisoned store) may hold either version:
// it is verified against both CRCs, anything else is errc::io. (A read racing a rewrite of the
// same page, which the pager never issues, is looked up and read once more before a mismatch
// is reported.)
//
// Runs. Pages of a batch that are consecutive in one home of one segment and consecutive in
// the caller's memory are read with one request (add_coalesced), at most kMaxReadRequest
// bytes: a pager's read-ahead or prefetch batch of 512 consecutive 4 KiB pages is a few large
// requests in flight at once, not 512 small ones. Each page is still verified on its own.
//
// Reads work on a poisoned store: a failed write published nothing (write_path.cpp), so every
// version the map holds was fully written.
#include <cstring>
#include <optional>
#include <vector>

#include "pheap/crc32c.hpp"
#include "pheap/error.hpp"
#include "store_impl.hpp"

namespace pheap::store {

void store_impl::read_pages(std::span<const page_read> batch) {
  const auto lk = reading();
  read_impl(batch, true);
}

// One request for a run: `r` continues the last request when it reads the next bytes of the
// same file into the next bytes of memory (consecutive pages in one home, into consecutive
// buffer slots: the pager's batches are both), up to kMaxReadRequest bytes.
void store_impl::add_coalesced(std::vector<io::read_request>& reqs, const io::read_request& r) {
  if (!reqs.empty()) {
    io::read_request& last = reqs.back();
    if (last.f == r.f && last.offset + last.len == r.offset &&
        static_cast<std::byte*>(last.buf) + last.len == static_cast<std::byte*>(r.buf) &&
        last.len + r.len <= kMaxReadRequest) {
      last.len += r.len;
      return;
    }
  }
  reqs.push_back(r);
}

void store_impl::read_impl(std::span<const page_read> batch, bool retry) {
  for (const auto& r : batch) check_page(r.page, r.buf, "read_pages");
  std::vector<std::uint64_t> pages(batch.size());
  for (std::size_t k = 0; k < batch.size(); ++k) pages[k] = batch[k].page;
  map_->load_pages(pages);
  std::vector<page_map::copy> copies(batch.size());
  map_->newest(pages, copies);

  const std::uint64_t e = epoch();
  std::vector<std::size_t> which;  // batch indexes of the pages with data
  std::uint64_t zeros = 0;
  for (std::size_t k = 0; k < batch.size(); ++k) {
    if (copies[k].home != page_home::none) {
      which.push_back(k);
      continue;
    }
    std::memset(batch[k].buf, 0, page_size_);
    ++zeros;
  }
  stat_zero_pages_ += zeros;
  segs_.gather(
      which.size(),
      [&](std::size_t i, bool patient) {
        return segs_.for_read(segs_.segment_of(pages[which[i]]), pages[which[i]], e, patient);
      },
      [&](std::size_t first, std::size_t end, const std::vector<std::shared_ptr<io::file>>& files) {
        std::vector<io::read_request> reqs;
        for (std::size_t i = first; i < end; ++i) {
          const std::size_t k = which[i];
          add_coalesced(reqs, {files[i].get(), segs_.offset_of(pages[k], copies[k].home),
                               batch[k].buf, page_size_});
        }
        eng_->read(reqs);
        if (slot_ >= 0) {  // a reader: copies the writer moved to pheap.pinned (pins.cpp)
          std::vector<std::uint64_t> ids;
          std::vector<void*> bufs;
          for (std::size_t i = first; i < end; ++i) {
            ids.push_back(pages[which[i]]);
            bufs.push_back(batch[which[i]].buf);
          }
          repair(pin_kind::page, e, ids, bufs, page_size_, slot_);
        }
        stat_pages_read_ += end - first;
        stat_read_requests_ += reqs.size();
        for (std::size_t i = first; i < end; ++i) verify(batch[which[i]], copies[which[i]], *files[i], retry);
      });
}

// A copy just read into r.buf must match the map: see the file comment.
void store_impl::verify(const page_read& r, const page_map::copy& c, const io::file& f, bool retry) {
  const std::uint32_t got = crc32c(r.buf, page_size_);
  if (got == c.crc || (c.damaged && got == c.alt_crc)) return;
  if (c.damaged) {
    throw error(errc::io, f.path(), "read_pages",
                "page " + std::to_string(r.page) + " was lost by a failed in-place rewrite (" +
                    poison_cause() + ")");
  }
  if (retry) return read_impl(std::span<const page_read>(&r, 1), false);
  char crcs[64];
  std::snprintf(crcs, sizeof crcs, "the map says %08x, the copy has %08x", c.crc, got);
  throw error(errc::corrupt, f.path(), "read_pages",
              "page " + std::to_string(r.page) + " (home " + std::to_string(home_index(c.home)) +
                  ", offset " + std::to_string(segs_.offset_of(r.page, c.home)) +
                  ") fails its checksum (" + crcs +
                  "): the copy was damaged or rewritten behind the map's back");
}

bool store_impl::may_have_data(std::uint64_t page) const {
  const auto lk = reading();
  return page < page_count_ && map_->may_have_data(page);
}

// The CRC read_pages() verifies the page against: the page map's CRC of its newest copy, or
// the CRC of a zero page for a page without data. Like may_have_data(), it loads the page's
// map block if that is not loaded yet (one read per block, once: loaded blocks stay loaded);
// the page itself is never read. A damaged page (a failed in-place rewrite: either of two
// CRCs) is nullopt: only a read can tell which copy it holds.
std::optional<std::uint32_t> store_impl::page_crc(std::uint64_t page) const {
  if (page >= page_count_) return std::nullopt;
  const auto lk = reading();
  page_map::copy c;
  if (map_->may_have_data(page)) map_->newest(std::span<const std::uint64_t>(&page, 1), std::span<page_map::copy>(&c, 1));
  if (c.damaged) return std::nullopt;
  if (c.home == page_home::none) {
    const std::vector<std::byte> zeros(page_size_);
    return crc32c(zeros.data(), zeros.size());
  }
  return c.crc;
}

// Per segment file: its first page with data (page_map::first_with_data skips the blocks the
// directory says hold none without reading them); if there is one, the file is opened and
// checked as a read of that page would (segment_files::for_read), and kept open.
void store_impl::check_files() {
  const auto lk = reading();
  const std::uint64_t per = segs_.pages_per_segment(), at = epoch();
  for (std::uint64_t seg = 0; seg < segs_.segment_count(); ++seg) {
    const std::uint64_t first = seg * per;
    if (const auto page = map_->first_with_data(first, std::min(page_count_, first + per))) {
      (void)segs_.for_read(seg, *page, at);
    }
  }
}

}  // namespace pheap::store
