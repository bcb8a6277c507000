#include "pheap/crc32c.hpp"

#include <isa-l/crc.h>

#include <climits>

namespace pheap {

std::uint32_t crc32c(const void* data, std::size_t len, std::uint32_t crc) noexcept {
  // ISA-L's crc32_iscsi takes and returns the raw register; the standard CRC32C pre- and
  // post-inverts it, so invert around each call to make calls chainable.
  auto* p = static_cast<unsigned char*>(const_cast<void*>(data));
  std::uint32_t reg = ~crc;
  while (len > 0) {
    const std::size_t n = len > static_cast<std::size_t>(INT_MAX) ? (1u << 30) : len;
    reg = crc32_iscsi(p, static_cast<int>(n), reg);
    p += n;
    len -= n;
  }
  return ~reg;
}

}  // namespace pheap
