#include "map_codec.hpp"

#include <bit>
#include <cstdio>
#include <cstring>

#include "pheap/crc32c.hpp"
#include "layout.hpp"

namespace pheap::store {

namespace {

constexpr char block_magic[8] = {'P', 'H', 'E', 'A', 'P', 'M', 'B', '\0'};
constexpr char directory_magic[8] = {'P', 'H', 'E', 'A', 'P', 'M', 'D', '\0'};
constexpr std::size_t off_states = 48;
constexpr std::size_t off_crcs = off_states + pages_per_block / 4;  // 284
constexpr std::size_t off_pad = off_crcs + 4 * pages_per_block;     // 4060: zeros
constexpr std::size_t off_block_crc = map_block_size - 4;           // 4092
static_assert(off_crcs + 4 * pages_per_block <= off_block_crc, "a map block overflows 4 KiB");
static_assert(pages_per_block % 16 == 0, "states must end on a 4-byte boundary");

std::string hex32(std::uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "%08x", v);
  return b;
}

uuid uuid_at(const std::byte* p) {
  uuid id;
  std::memcpy(id.data(), p, id.size());
  return id;
}

}  // namespace

bool block_version::any_touched() const {
  for (auto w : touched) {
    if (w != 0) return true;
  }
  return false;
}

std::uint32_t block_version::data_pages() const {
  std::uint32_t n = 0;
  for (std::uint8_t b : state) {
    // A page has data when either bit of its 2-bit state is set.
    const unsigned any = (b | (b >> 1)) & 0x55u;
    n += static_cast<std::uint32_t>(std::popcount(any));
  }
  return n;
}

bool block_version::any_second() const {
  for (std::uint8_t b : state) {
    if (b & 0xAAu) return true;
  }
  return false;
}

void encode_map_block(std::byte* out, const block_header& h, const block_version& v) {
  std::memset(out, 0, map_block_size);
  std::memcpy(out, block_magic, sizeof block_magic);
  put<std::uint64_t>(out, 8, h.index);
  put<std::uint64_t>(out, 16, h.epoch);
  std::memcpy(out + 24, h.id.data(), h.id.size());
  put<std::uint32_t>(out, 40, h.pages);
  std::memcpy(out + off_states, v.state.data(), v.state.size());
  std::memcpy(out + off_crcs, v.crc.data(), 4 * pages_per_block);
  put<std::uint32_t>(out, off_block_crc, crc32c(out, off_block_crc));
}

std::string decode_map_block(const std::byte* in, block_header& h, block_version& v) {
  if (std::memcmp(in, block_magic, sizeof block_magic) != 0) {
    return all_zero(in, map_block_size) ? "all zeros" : "bad magic";
  }
  const auto stored = get<std::uint32_t>(in, off_block_crc);
  const auto actual = crc32c(in, off_block_crc);
  if (stored != actual) {
    return "torn or damaged (its own checksum: stored " + hex32(stored) + ", computed " +
           hex32(actual) + ")";
  }
  if (!all_zero(in + 44, 4) || !all_zero(in + off_pad, off_block_crc - off_pad)) {
    return "reserved bytes are not zero";
  }
  h.index = get<std::uint64_t>(in, 8);
  h.epoch = get<std::uint64_t>(in, 16);
  h.id = uuid_at(in + 24);
  h.pages = get<std::uint32_t>(in, 40);
  if (h.pages == 0 || h.pages > pages_per_block) {
    return "impossible page count " + std::to_string(h.pages);
  }
  std::memcpy(v.state.data(), in + off_states, v.state.size());
  std::memcpy(v.crc.data(), in + off_crcs, 4 * pages_per_block);
  v.touched = {};
  for (std::uint32_t i = 0; i < pages_per_block; ++i) {
    const auto s = static_cast<unsigned>(v.home(i));
    if (s == 3) return "page " + std::to_string(i) + " of the block has the invalid state 3";
    if (i >= h.pages && s != 0) {
      return "page " + std::to_string(i) + " lies beyond the block's " + std::to_string(h.pages) +
             " pages but has data";
    }
    if ((s == 0) != (v.crc[i] == 0)) {
      return "page " + std::to_string(i) + " of the block has state " + std::to_string(s) +
             " with checksum " + hex32(v.crc[i]);
    }
  }
  return {};
}

std::vector<std::byte> encode_directory(const directory_header& h,
                                        std::span<const dir_entry> entries) {
  const std::size_t len = directory_header_size + directory_entry_size * entries.size();
  std::vector<std::byte> out(round_up(len, map_block_size));
  std::byte* b = out.data();
  std::memcpy(b, directory_magic, sizeof directory_magic);
  std::memcpy(b + 8, h.id.data(), h.id.size());
  put<std::uint64_t>(b, 24, h.epoch);
  put<std::uint64_t>(b, 32, entries.size());
  put<std::uint32_t>(b, 40, pages_per_block);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    std::byte* e = b + directory_header_size + i * directory_entry_size;
    put<std::uint64_t>(e, 0, entries[i].epoch);
    put<std::uint32_t>(e, 8, entries[i].crc);
    put<std::uint16_t>(e, 12, entries[i].data_pages);
    put<std::uint8_t>(e, 14, entries[i].flags);
  }
  return out;
}

std::string decode_directory(const std::byte* in, std::size_t len, directory_header& h,
                             std::vector<dir_entry>& entries) {
  if (len < directory_header_size) return "shorter than its header";
  if (std::memcmp(in, directory_magic, sizeof directory_magic) != 0) {
    return all_zero(in, len) ? "all zeros" : "bad magic";
  }
  h.id = uuid_at(in + 8);
  h.epoch = get<std::uint64_t>(in, 24);
  h.blocks = get<std::uint64_t>(in, 32);
  if (h.blocks != (len - directory_header_size) / directory_entry_size ||
      (len - directory_header_size) % directory_entry_size != 0) {
    return "block count " + std::to_string(h.blocks) + " does not match its length " +
           std::to_string(len);
  }
  if (!all_zero(in + 44, directory_header_size - 44)) return "reserved header bytes are not zero";
  if (get<std::uint32_t>(in, 40) != pages_per_block) {
    return "pages per block " + std::to_string(get<std::uint32_t>(in, 40)) + " (expected " +
           std::to_string(pages_per_block) + ")";
  }
  entries.assign(h.blocks, dir_entry{});
  for (std::size_t i = 0; i < h.blocks; ++i) {
    const std::byte* e = in + directory_header_size + i * directory_entry_size;
    dir_entry& d = entries[i];
    d.epoch = get<std::uint64_t>(e, 0);
    d.crc = get<std::uint32_t>(e, 8);
    d.data_pages = get<std::uint16_t>(e, 12);
    d.flags = get<std::uint8_t>(e, 14);
    const bool exists = (d.flags & dir_entry::exists) != 0;
    std::string bad;
    if ((d.flags & ~(dir_entry::exists | dir_entry::in_second | dir_entry::has_second)) != 0 ||
        get<std::uint8_t>(e, 15) != 0) {
      bad = "unknown flags";
    } else if (d.data_pages > pages_per_block) {
      bad = std::to_string(d.data_pages) + " pages with data";
    } else if (!exists && (d.flags != 0 || d.data_pages != 0 || d.crc != 0 || d.epoch != 0)) {
      bad = "no copy, yet a copy's fields are set";
    } else if ((d.flags & dir_entry::has_second) && d.data_pages == 0) {
      bad = "a page in home 1 but no page with data";
    }
    if (!bad.empty()) return "entry of map block " + std::to_string(i) + ": " + bad;
  }
  return {};
}

std::string check_block(const std::byte* in, const dir_entry& e, std::uint64_t index,
                        std::uint32_t pages, const uuid& id, block_version& v) {
  const std::uint32_t actual = crc32c(in, map_block_size);
  block_header h;
  const std::string why = decode_map_block(in, h, v);
  if (actual == e.crc && why.empty() && h.id == id && h.index == index && h.epoch == e.epoch &&
      h.pages == pages) {
    return {};
  }
  std::string what;
  if (!why.empty()) {
    what = why;
  } else if (h.id != id) {
    what = "a map block of datastore " + to_string(h.id) + ", not " + to_string(id) +
           " (swapped in from another datastore)";
  } else if (h.index != index) {
    what = "the copy names map block " + std::to_string(h.index) + " (misdirected)";
  } else if (h.epoch != e.epoch) {
    what = "written by epoch " + std::to_string(h.epoch) + ", the directory names epoch " +
           std::to_string(e.epoch) + (h.epoch < e.epoch ? " (a stale copy)" : " (a newer copy)");
  } else if (h.pages != pages) {
    what = "holds " + std::to_string(h.pages) + " pages, expected " + std::to_string(pages);
  } else {
    what = "its content differs from the one committed";
  }
  return what + " (checksum " + hex32(actual) + ", the directory expects " + hex32(e.crc) + ")";
}

std::string check_directory(const std::byte* in, std::size_t len, std::uint32_t crc,
                            std::uint64_t epoch, std::uint64_t blocks, const uuid& id,
                            std::vector<dir_entry>& entries) {
  const std::uint32_t actual = crc32c(in, len);
  directory_header h;
  const std::string why = decode_directory(in, len, h, entries);
  if (actual == crc && why.empty() && h.id == id && h.epoch <= epoch && h.blocks == blocks) {
    return {};
  }
  std::string what;
  if (!why.empty()) {
    what = why;
  } else if (h.id != id) {
    what = "the directory of datastore " + to_string(h.id) + ", not " + to_string(id) +
           " (swapped in from another datastore)";
  } else if (h.epoch > epoch) {
    what = "written by epoch " + std::to_string(h.epoch) + ", after the committed epoch " +
           std::to_string(epoch) + " (a newer copy)";
  } else if (h.blocks != blocks) {
    what = "lists " + std::to_string(h.blocks) + " map blocks, expected " + std::to_string(blocks);
  } else {
    what = "written by epoch " + std::to_string(h.epoch) + " but not the copy epoch " +
           std::to_string(epoch) + " committed (a stale or damaged copy)";
  }
  return what + " (checksum " + hex32(actual) + ", the superblock expects " + hex32(crc) + ")";
}

}  // namespace pheap::store
