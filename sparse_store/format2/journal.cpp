#include "journal.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "pheap/crc32c.hpp"
#include "pheap/error.hpp"
#include "../layout.hpp"

namespace pheap::store::format2 {

namespace {

// Largest number of image bytes scan_journal reads at once.
constexpr std::size_t scan_chunk = 8u << 20;

}  // namespace

std::string journal_name(std::uint64_t epoch) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "journal-%012llx", static_cast<unsigned long long>(epoch));
  return buf;
}

void scan_journal(io::engine& eng, io::file& f, const std::string& path, const uuid& id,
                  std::uint64_t epoch, std::uint64_t length, std::uint32_t page_size, std::uint64_t page_count,
                  const journal_visitor& visit) {
  const std::string op = "recover";
  const std::uint64_t file_size = eng.size(f);
  if (file_size < length) {
    throw error(errc::corrupt, path, op,
                "journal truncated: " + std::to_string(file_size) + " bytes, epoch " +
                    std::to_string(epoch) + " needs " + std::to_string(length));
  }
  auto bad = [&](std::uint64_t at, const std::string& what) {
    return error(errc::corrupt, path, op,
                 "journal record at offset " + std::to_string(at) + ": " + what +
                     " (epoch " + std::to_string(epoch) + " covers " + std::to_string(length) +
                     " bytes)");
  };

  std::vector<std::byte> header;
  std::vector<std::byte> images;
  std::vector<std::uint64_t> pages;
  std::uint64_t off = 0;
  while (off < length) {
    if (length - off < record_fixed_size + record_trailer_size) {
      throw bad(off, "record header crosses the committed length");
    }
    std::byte fixed[record_fixed_size];
    eng.read_at(f, off, fixed, sizeof fixed);
    if (get<std::uint32_t>(fixed, 0) != record_magic) throw bad(off, "bad magic");
    const auto type = get<std::uint32_t>(fixed, 4);
    const auto rec_epoch = get<std::uint64_t>(fixed, 8);
    const auto count = get<std::uint64_t>(fixed, 16);
    const auto first = get<std::uint64_t>(fixed, 24);
    if (type != static_cast<std::uint32_t>(record_type::pages) &&
        type != static_cast<std::uint32_t>(record_type::discard)) {
      throw bad(off, "unknown record type " + std::to_string(type));
    }
    const bool is_pages = type == static_cast<std::uint32_t>(record_type::pages);
    // Bound count before computing sizes from it, so a corrupt count cannot overflow.
    if (is_pages && count > (length - off) / (record_entry_size + page_size)) {
      throw bad(off, "page count " + std::to_string(count) + " crosses the committed length");
    }
    const std::size_t hsize = is_pages ? pages_header_size(count) : discard_header_size;
    const std::uint64_t rec_size = hsize + (is_pages ? count * page_size : 0);
    if (rec_size > length - off) throw bad(off, "record crosses the committed length");

    header.resize(hsize);
    std::memcpy(header.data(), fixed, sizeof fixed);
    eng.read_at(f, off + sizeof fixed, header.data() + sizeof fixed, hsize - sizeof fixed);
    const std::size_t crc_off = hsize - record_trailer_size;
    if (get<std::uint32_t>(header.data(), crc_off) != crc32c(header.data(), crc_off)) {
      throw bad(off, "header crc mismatch");
    }
    if (rec_epoch != epoch) {
      throw bad(off, "record belongs to epoch " + std::to_string(rec_epoch));
    }
    if (std::memcmp(header.data() + record_uuid_offset, id.data(), id.size()) != 0) {
      uuid other;
      std::memcpy(other.data(), header.data() + record_uuid_offset, other.size());
      throw bad(off, "record written by datastore " + to_string(other) + ", not " +
                         to_string(id) + " (a journal from another datastore)");
    }

    if (!is_pages) {
      if (first >= page_count || count > page_count - first) {
        throw bad(off, "discard range beyond capacity");
      }
      if (visit.on_discard) visit.on_discard(off, first, count);
      off += rec_size;
      continue;
    }

    pages.resize(count);
    for (std::uint64_t i = 0; i < count; ++i) {
      pages[i] = get<std::uint64_t>(header.data(), record_fixed_size + i * record_entry_size);
      if (pages[i] >= page_count) {
        throw bad(off, "page " + std::to_string(pages[i]) + " beyond capacity");
      }
    }
    // Verify every image against its CRC, reading several pages per engine call.
    const std::uint64_t image_off = off + hsize;
    const std::uint64_t per_chunk = std::max<std::uint64_t>(1, scan_chunk / page_size);
    for (std::uint64_t i = 0; i < count; i += per_chunk) {
      const std::uint64_t n = std::min<std::uint64_t>(per_chunk, count - i);
      images.resize(n * page_size);
      eng.read_at(f, image_off + i * page_size, images.data(), images.size());
      for (std::uint64_t k = 0; k < n; ++k) {
        const auto want = get<std::uint32_t>(
            header.data(), record_fixed_size + (i + k) * record_entry_size + 8);
        if (crc32c(images.data() + k * page_size, page_size) != want) {
          throw bad(off, "crc mismatch in the image of page " + std::to_string(pages[i + k]) +
                             " at offset " + std::to_string(image_off + (i + k) * page_size));
        }
      }
    }
    if (visit.on_pages) visit.on_pages(pages, image_off);
    off += rec_size;
  }
}

}  // namespace pheap::store::format2
