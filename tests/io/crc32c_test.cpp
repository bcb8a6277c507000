// pheap::crc32c, the public CRC32C (Castagnoli) of include/pheap/crc32c.hpp, implemented in
// base/crc32c.cpp over ISA-L: the standard check value, the empty input, chaining
// over pieces (the public contract: callers may checksum data in parts), and a flipped bit.
#include <cstring>
#include <string>
#include <vector>

#include "pheap/crc32c.hpp"
#include "common/test_util.hpp"

namespace pheap {
namespace {

TEST(Crc32c, KnownVectorOf123456789) {
  const char* s = "123456789";
  EXPECT_EQ(crc32c(s, std::strlen(s)), 0xE3069283u);
}

TEST(Crc32c, EmptyInputKeepsTheSeed) {
  EXPECT_EQ(crc32c("", 0), 0u);
  EXPECT_EQ(crc32c("", 0, 0x12345678u), 0x12345678u);
}

TEST(Crc32c, ChainingOverPiecesEqualsOneShot) {
  const auto data = test::pattern(100000, 1, 0, 0);
  const std::uint32_t whole = crc32c(data.data(), data.size());
  for (std::size_t cut : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{4096},
                          std::size_t{99999}, data.size()}) {
    std::uint32_t c = crc32c(data.data(), cut);
    c = crc32c(data.data() + cut, data.size() - cut, c);
    EXPECT_EQ(c, whole) << "cut at " << cut;
  }
}

TEST(Crc32c, SingleBitFlipChangesTheChecksum) {
  auto data = test::pattern(4096, 2, 0, 0);
  const std::uint32_t before = crc32c(data.data(), data.size());
  data[1234] ^= 0x10;
  EXPECT_NE(crc32c(data.data(), data.size()), before);
}

}  // namespace
}  // namespace pheap
