// sparse_store/layout.hpp — names of the files in a datastore directory and the little-endian
// field helpers every on-disk structure of the store uses. The byte layouts themselves are
// documented in sparse_store/FORMAT.md and defined next to their codecs (superblock.hpp,
// map_codec.hpp, segment_header.hpp; format2/ for the read-only format-2 structures).
//
// All multi-byte integers on disk are little-endian. The codecs copy fields with memcpy, which
// is the identity on the only byte order pheap supports (checked below at compile time).
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace pheap::store {

static_assert(std::endian::native == std::endian::little,
              "the on-disk format is little-endian; a big-endian port needs byte swaps here");

inline constexpr const char* super_name = "pheap.super";
inline constexpr const char* map_name = "pheap.map";
// Shared coordination state of readers and the writer (reader_table.hpp), never data: the
// reader table and the copies the writer preserves for readers (FORMAT.md "Readers beside a
// writer").
inline constexpr const char* readers_name = "pheap.readers";
inline constexpr const char* pinned_name = "pheap.pinned";
inline constexpr const char* segment_prefix = "segment-";  // + 6 decimal digits
// Suffix of a segment file while it is being created (renamed to its name once complete).
inline constexpr const char* creating_suffix = ".creating";
// Segment indexes fit the 6 digits of the name.
inline constexpr std::uint64_t max_segments = 1000000;

// "segment-000042"
std::string segment_name(std::uint64_t index);
// Inverse of segment_name; nullopt for any other name (unknown files are ignored).
std::optional<std::uint64_t> parse_segment_name(std::string_view name);
// Parses exactly `digits` characters of `s` after `prefix` in base 10 or 16 (file names).
std::optional<std::uint64_t> parse_suffix(std::string_view s, std::string_view prefix,
                                          std::size_t digits, int base);

inline std::string join(const std::string& dir, const std::string& name) {
  return dir + "/" + name;
}

template <class T>
inline void put(void* base, std::size_t off, T v) noexcept {
  std::memcpy(static_cast<unsigned char*>(base) + off, &v, sizeof v);
}
template <class T>
inline T get(const void* base, std::size_t off) noexcept {
  T v;
  std::memcpy(&v, static_cast<const unsigned char*>(base) + off, sizeof v);
  return v;
}

inline constexpr bool is_pow2(std::uint64_t v) noexcept { return v != 0 && (v & (v - 1)) == 0; }
inline constexpr std::uint64_t round_up(std::uint64_t v, std::uint64_t to) noexcept {
  return (v + to - 1) / to * to;
}

// True if the `n` bytes at `p` are all zero.
bool all_zero(const void* p, std::size_t n) noexcept;

}  // namespace pheap::store
