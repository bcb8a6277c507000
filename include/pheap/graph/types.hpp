// pheap/graph/types.hpp — vocabulary shared by the graph library, its readers and its tools.
#pragma once

#include <bit>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace pheap::graph {

// What an edge carries besides its endpoints. Fixed at graph creation, recorded in the graph.
enum class weight_kind : std::uint32_t {
  none = 0,  // unweighted: an adjacency list entry is just the neighbour id
  u64 = 1,   // unsigned 64-bit weight
  f32 = 2,   // IEEE-754 binary32 weight
};

// "none", "u64", "f32".
const char* to_string(weight_kind k) noexcept;
// Parses "none" | "u64" | "f32"; throws pheap::error(invalid_argument) otherwise.
weight_kind parse_weight_kind(std::string_view s);

// One input edge as produced by readers and generators. `weight` holds the raw weight bits:
// the value itself for u64, std::bit_cast<uint32_t>(float) in the low 32 bits for f32, and 0
// when unweighted.
struct edge {
  std::uint64_t src = 0;
  std::uint64_t dst = 0;
  std::uint64_t weight = 0;
  friend bool operator==(const edge&, const edge&) = default;
};

inline std::uint64_t f32_bits(float w) noexcept { return std::bit_cast<std::uint32_t>(w); }
inline float f32_from_bits(std::uint64_t bits) noexcept {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits));
}

// Input formats understood by the readers (see edge_reader.hpp for the exact grammar).
enum class input_format : std::uint32_t { text = 0, binary = 1 };
const char* to_string(input_format f) noexcept;
input_format parse_input_format(std::string_view s);  // "text" | "binary", as above

// Bad input: names the file, the 1-based line number (0 for binary input), the byte offset of
// the offending line or record (of the end of the data for damaged compressed input), and (for
// text) the offending line, truncated to 200 bytes, its unprintable bytes shown as \xNN.
// skippable(): whether skipping bad lines (reader_options::skip_bad_lines) gets past it — false
// for damaged or truncated compressed data, a truncated binary record and an over-long line.
class input_error : public std::runtime_error {
 public:
  input_error(std::string file, std::uint64_t line, std::uint64_t offset, std::string text,
              const std::string& reason, bool skippable = true);
  const std::string& file() const noexcept { return file_; }
  std::uint64_t line() const noexcept { return line_; }
  std::uint64_t offset() const noexcept { return offset_; }
  const std::string& text() const noexcept { return text_; }
  bool skippable() const noexcept { return skippable_; }

 private:
  std::string file_;
  std::uint64_t line_;
  std::uint64_t offset_;
  std::string text_;
  bool skippable_;
};

// 64-bit finaliser (MurmurHash3 fmix64): a bijection on uint64 with good avalanche. Used for
// bank selection so that consecutive ids spread over banks; stable across builds by contract
// (changing it changes which bank a persisted vertex lives in).
constexpr std::uint64_t mix64(std::uint64_t x) noexcept {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

}  // namespace pheap::graph
