// sparse_store/layout.hpp — names of the files in a datastore directory and the little-endian
// field helpers every on-disk structure of the store uses. The byte layouts themselves are
// documented in sparse_store/FORMAT.md and defined next to their codecs (superblock.hpp,
// journal.hpp).
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
inline constexpr const char* segment_prefix = "segment-";  // + 6 decimal digits
inline constexpr const char* journal_prefix = "journal-";  // + 12 lowercase hex digits

// "segment-000042"
std::string segment_name(std::uint64_t index);
// "journal-00000000002a"
std::string journal_name(std::uint64_t epoch);
// Inverse of the two above; nullopt for any other name (unknown files are ignored).
std::optional<std::uint64_t> parse_segment_name(std::string_view name);
std::optional<std::uint64_t> parse_journal_name(std::string_view name);

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

}  // namespace pheap::store
