#include "superblock.hpp"

#include <sys/random.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "pheap/crc32c.hpp"
#include "pheap/error.hpp"
#include "layout.hpp"
#include "map_codec.hpp"

namespace pheap {

std::string to_string(const uuid& id) {
  char out[37];
  char* p = out;
  for (std::size_t i = 0; i < id.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) *p++ = '-';
    std::snprintf(p, 3, "%02x", id[i]);
    p += 2;
  }
  *p = '\0';
  return out;
}

namespace store {

namespace {

constexpr std::uint32_t min_page_size = 4096;
constexpr std::uint32_t max_page_size = 64u << 20;
constexpr std::uint32_t flag_directory_home = 1, flag_prepared = 2;

}  // namespace

std::string geometry_problem(std::uint32_t page_size, std::uint64_t segment_size,
                             std::uint64_t capacity) {
  if (!is_pow2(page_size) || page_size < min_page_size || page_size > max_page_size) {
    return "page_size " + std::to_string(page_size) +
           " is not a power of two between 4 KiB and 64 MiB";
  }
  if (!is_pow2(segment_size) || segment_size < page_size) {
    return "segment_size " + std::to_string(segment_size) +
           " is not a power of two ≥ page_size";
  }
  if (capacity == 0 || capacity % page_size != 0) {
    return "capacity " + std::to_string(capacity) + " is not a positive multiple of page_size";
  }
  // ceil(capacity / segment_size) below must not wrap around (found by fuzz_superblock: a
  // slot with capacity 2^64 - 4096 and segment_size 2^63 claimed 0 segments and was accepted).
  if (capacity > UINT64_MAX - (segment_size - 1)) {
    return "capacity " + std::to_string(capacity) + " with segment_size " +
           std::to_string(segment_size) + " overflows the segment count";
  }
  const std::uint64_t segments = (capacity + segment_size - 1) / segment_size;
  if (segments > max_segments) {
    return "capacity / segment_size = " + std::to_string(segments) +
           " segments exceeds the limit of " + std::to_string(max_segments) +
           " segment files; use larger segments";
  }
  return {};
}

// Open allocates DRAM per map block and reads a directory proportional to the page count: a
// superblock with a valid CRC but an absurd capacity must not make it try.
std::string capacity_problem(std::uint32_t page_size, std::uint64_t capacity) {
  if (capacity > max_capacity) {
    return "impossible capacity " + std::to_string(capacity) + " (more than 2^50 bytes)";
  }
  if (page_size != 0 && capacity / page_size > max_pages) {
    return "impossible capacity " + std::to_string(capacity) + ": " +
           std::to_string(capacity / page_size) + " pages of " + std::to_string(page_size) +
           " bytes exceed the limit of 2^32 pages (use larger pages)";
  }
  return {};
}

std::string decode_slot_identity(const std::byte* b, slot_identity& out) {
  const auto stored = get<std::uint32_t>(b, off_crc);
  const auto actual = crc32c(b, off_crc);
  if (stored != actual) {
    char msg[80];
    std::snprintf(msg, sizeof msg, "crc mismatch (stored %08x, computed %08x)", stored, actual);
    return msg;
  }
  out.page_size = get<std::uint32_t>(b, 12);
  std::memcpy(out.id.data(), b + 16, out.id.size());
  out.epoch = get<std::uint64_t>(b, 32);
  out.segment_size = get<std::uint64_t>(b, 40);
  out.capacity = get<std::uint64_t>(b, 48);
  return {};
}

std::array<std::byte, slot_size> encode_slot(const superblock& sb) {
  std::array<std::byte, slot_size> s{};
  std::byte* b = s.data();
  std::memcpy(b, super_magic, sizeof super_magic);
  put<std::uint32_t>(b, off_version, sb.version);
  put<std::uint32_t>(b, 12, sb.page_size);
  std::memcpy(b + 16, sb.id.data(), sb.id.size());
  put<std::uint64_t>(b, 32, sb.epoch);
  put<std::uint64_t>(b, 40, sb.segment_size);
  put<std::uint64_t>(b, 48, sb.capacity);
  put<std::uint64_t>(b, 56, sb.directory_length);
  put<std::uint32_t>(b, 64, static_cast<std::uint32_t>(sb.root.size()));
  put<std::uint32_t>(b, 68, sb.directory_crc);
  put<std::uint32_t>(b, 72, (sb.directory_home != 0 ? flag_directory_home : 0u) |
                                (sb.prepared ? flag_prepared : 0u));
  put<std::uint32_t>(b, 76, pages_per_block);
  put<std::uint64_t>(b, 80, sb.base_epoch);
  if (!sb.root.empty()) std::memcpy(b + off_root, sb.root.data(), sb.root.size());
  put<std::uint32_t>(b, off_crc, crc32c(b, off_crc));
  return s;
}

decoded_slot decode_slot(const std::byte* b) {
  decoded_slot d;
  if (std::memcmp(b, super_magic, sizeof super_magic) != 0) {
    d.status = slot_status::bad_magic;
    d.cause = all_zero(b, slot_size) ? "empty (all zeros)" : "bad magic";
    return d;
  }
  d.version = get<std::uint32_t>(b, off_version);
  if (d.version > sparse_store::format_version) {
    d.status = slot_status::newer_version;
    d.cause = "format version " + std::to_string(d.version) + " (this build reads " +
              std::to_string(sparse_store::format_version) + ")";
    return d;
  }
  if (d.version < sparse_store::format3_version) {  // format 3: the same bytes (FORMAT.md)
    d.status = slot_status::older_version;
    d.cause = "format version " + std::to_string(d.version);
    return d;
  }
  slot_identity ident;
  d.cause = decode_slot_identity(b, ident);
  if (!d.cause.empty()) {
    d.status = slot_status::bad_crc;
    return d;
  }
  superblock& sb = d.sb;
  sb.version = d.version;
  sb.page_size = ident.page_size;
  sb.id = ident.id;
  sb.epoch = ident.epoch;
  sb.segment_size = ident.segment_size;
  sb.capacity = ident.capacity;
  sb.directory_length = get<std::uint64_t>(b, 56);
  const auto root_len = get<std::uint32_t>(b, 64);
  sb.directory_crc = get<std::uint32_t>(b, 68);
  const auto flags = get<std::uint32_t>(b, 72);
  sb.directory_home = (flags & flag_directory_home) ? 1 : 0;
  sb.prepared = (flags & flag_prepared) != 0;
  const auto ppb = get<std::uint32_t>(b, 76);
  sb.base_epoch = get<std::uint64_t>(b, 80);
  std::string problem = geometry_problem(sb.page_size, sb.segment_size, sb.capacity);
  if (problem.empty()) problem = capacity_problem(sb.page_size, sb.capacity);
  if (problem.empty() && root_len > sparse_store::max_root_size) {
    problem = "root length " + std::to_string(root_len) + " > 2048";
  }
  if (problem.empty() && ppb != pages_per_block) {
    problem = "pages per map block " + std::to_string(ppb) + " (expected " +
              std::to_string(pages_per_block) + ")";
  }
  if (problem.empty() && sb.directory_length != directory_length(sb.page_count())) {
    problem = "directory length " + std::to_string(sb.directory_length) +
              " does not match the geometry";
  }
  if (problem.empty() && (flags & ~(flag_directory_home | flag_prepared)) != 0) {
    problem = "unknown flags " + std::to_string(flags);
  }
  if (problem.empty() && (sb.epoch == 0 ? sb.base_epoch != 0 : sb.base_epoch >= sb.epoch)) {
    problem = "base epoch " + std::to_string(sb.base_epoch) + " of epoch " + std::to_string(sb.epoch);
  }
  if (problem.empty() &&
      (!all_zero(b + 88, off_root - 88) ||
       !all_zero(b + off_root + root_len, off_crc - off_root - root_len))) {
    problem = "reserved bytes are not zero";
  }
  if (!problem.empty()) {
    d.status = slot_status::bad_values;
    d.cause = "impossible values: " + problem;
    return d;
  }
  sb.root.assign(b + off_root, b + off_root + root_len);
  d.status = slot_status::ok;
  return d;
}

void validate_geometry(const std::string& dir, std::uint32_t page_size,
                       std::uint64_t segment_size, std::uint64_t capacity) {
  std::string problem = geometry_problem(page_size, segment_size, capacity);
  if (problem.empty()) problem = capacity_problem(page_size, capacity);
  if (!problem.empty()) throw error(errc::invalid_argument, dir, "create", problem);
}

chosen_slot read_superblock(io::engine& eng, io::file& f, const std::string& super_path,
                            std::uint64_t max_epoch) {
  const std::uint64_t file_size = eng.size(f);
  std::vector<std::byte> buf(super_file_size);
  // Reads past end of file yield zeros (engine contract), so a truncated file shows up as an
  // "empty" slot rather than stale bytes.
  eng.read_at(f, 0, buf.data(), buf.size());
  const decoded_slot slots[slot_count] = {decode_slot(buf.data()),
                                          decode_slot(buf.data() + slot_size)};
  for (const auto& s : slots) {
    if (s.status == slot_status::newer_version) {
      throw error(errc::newer_format, super_path, "open", "written by a newer pheap: " + s.cause);
    }
  }
  const decoded_slot* best = nullptr;
  unsigned best_slot = 0;
  bool above_max = false;
  for (unsigned k = 0; k < slot_count; ++k) {
    const auto& s = slots[k];
    if (s.status != slot_status::ok) continue;
    if (s.sb.epoch > max_epoch) {
      above_max = true;
      continue;
    }
    // Of two copies of one epoch: the confirmed one, then the newer format (an in-place
    // upgrade cut short between its two slot writes).
    if (best == nullptr || s.sb.epoch > best->sb.epoch ||
        (s.sb.epoch == best->sb.epoch && best->sb.prepared && !s.sb.prepared) ||
        (s.sb.epoch == best->sb.epoch && best->sb.prepared == s.sb.prepared && s.sb.version > best->sb.version)) {
      best = &s;
      best_slot = k;
    }
  }
  if (best != nullptr) return {best->sb, best_slot};

  // A sound slot has no cause: say what it holds (above max_epoch, or it would have won).
  const auto what = [](const decoded_slot& s) {
    if (s.status != slot_status::ok) return s.cause;
    return "holds epoch " + std::to_string(s.sb.epoch) + (s.sb.prepared ? " (prepared)" : "");
  };
  std::string why = "superblock slot 0 " + what(slots[0]) + ", slot 1 " + what(slots[1]);
  if (above_max) {
    throw error(errc::corrupt, super_path, "open",
                "no committed epoch at or below " + std::to_string(max_epoch) +
                    " (the caller's highest accepted epoch): " + why);
  }
  for (const auto& s : slots) {
    if (s.status != slot_status::older_version) continue;
    if (s.version == format2_version) {
      throw error(errc::older_format, super_path, "open",
                  "written by store format 2; convert it with `pheap upgrade SRC DST` "
                  "(a format-" + std::to_string(sparse_store::format_version) +
                      " copy), then open the copy");
    }
    throw error(errc::older_format, super_path, "open",
                "written by an older pheap: " + s.cause +
                    "; open it with the pheap release that wrote it and copy the data out");
  }
  if (file_size < super_file_size) {
    why += " (file truncated to " + std::to_string(file_size) + " of " +
           std::to_string(super_file_size) + " bytes)";
    throw error(errc::corrupt, super_path, "open", why);
  }
  if (slots[0].status == slot_status::bad_magic && slots[1].status == slot_status::bad_magic) {
    throw error(errc::not_a_datastore, super_path, "open", "not a pheap superblock (" + why + ")");
  }
  throw error(errc::corrupt, super_path, "open", "both superblock slots invalid: " + why);
}

void write_slot(io::engine& eng, io::file& f, unsigned slot, const superblock& sb) {
  const auto s = encode_slot(sb);
  eng.write_at(f, slot * slot_size, s.data(), s.size());
}

uuid new_uuid() {
  uuid id{};
  std::size_t got = 0;
  while (got < id.size()) {
    const ssize_t n = ::getrandom(id.data() + got, id.size() - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno(errno, "", "getrandom");
    }
    got += static_cast<std::size_t>(n);
  }
  id[6] = static_cast<std::uint8_t>((id[6] & 0x0f) | 0x40);  // version 4
  id[8] = static_cast<std::uint8_t>((id[8] & 0x3f) | 0x80);  // RFC 4122 variant
  return id;
}

}  // namespace store
}  // namespace pheap
