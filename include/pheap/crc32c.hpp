// pheap/crc32c.hpp — CRC32C (Castagnoli), the checksum of every on-disk pheap structure.
// Backed by Intel ISA-L's hardware-accelerated crc32_iscsi (Debian: libisal-dev).
// crc32c("123456789") == 0xE3069283 (checked in tests/io/crc32c_test.cpp). Public: usable for
// checksums of application data too.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pheap {

// Extends `crc` (the value returned for the preceding bytes; 0 to start) with `len` bytes.
std::uint32_t crc32c(const void* data, std::size_t len, std::uint32_t crc = 0) noexcept;

}  // namespace pheap
