#include "layout.hpp"

#include <cstdio>

namespace pheap::store {

std::optional<std::uint64_t> parse_suffix(std::string_view s, std::string_view prefix,
                                          std::size_t digits, int base) {
  if (s.size() != prefix.size() + digits || s.substr(0, prefix.size()) != prefix) {
    return std::nullopt;
  }
  std::uint64_t v = 0;
  for (char c : s.substr(prefix.size())) {
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (base == 16 && c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else {
      return std::nullopt;
    }
    if (d >= base) return std::nullopt;
    v = v * static_cast<std::uint64_t>(base) + static_cast<std::uint64_t>(d);
  }
  return v;
}

std::string segment_name(std::uint64_t index) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%s%06llu", segment_prefix,
                static_cast<unsigned long long>(index));
  return buf;
}

std::optional<std::uint64_t> parse_segment_name(std::string_view name) {
  return parse_suffix(name, segment_prefix, 6, 10);
}

bool all_zero(const void* p, std::size_t n) noexcept {
  const auto* b = static_cast<const unsigned char*>(p);
  return n == 0 || (b[0] == 0 && std::memcmp(b, b + 1, n - 1) == 0);
}

}  // namespace pheap::store
