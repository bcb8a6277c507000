// Regressions found by the parser fuzzers (fuzz/, scripts/fuzz.sh), each named after what it
// proves. The inputs are rebuilt here with the real encoders, byte for byte as the fuzzer
// reported them.
#include <array>
#include <cstring>
#include <filesystem>

#include <gtest/gtest.h>

#include "pheap/crc32c.hpp"
#include "common/test_util.hpp"
#include "pheap/error.hpp"
#include "pheap/sparse_store.hpp"
#include "sparse_store/layout.hpp"
#include "sparse_store/map_codec.hpp"
#include "sparse_store/superblock.hpp"

namespace pheap::store {
namespace {

// fuzz_superblock: capacity 2^64 - 4096 with 2^63-byte segments made ceil(capacity /
// segment_size) wrap around to 0; the slot (stored segment count 0, CRC right) was accepted as
// a datastore of 16 EiB with no segment bitmap, which recovery would then size in DRAM.
TEST(ParserRegression, SlotWhoseSegmentCountWrapsAroundIsRejectedAsImpossibleValues) {
  std::array<std::byte, slot_size> b{};
  std::memcpy(b.data(), super_magic, sizeof super_magic);
  put<std::uint32_t>(b.data(), 8, sparse_store::format_version);
  put<std::uint32_t>(b.data(), 12, 4096);
  put<std::uint64_t>(b.data(), 40, 1ull << 63);
  put<std::uint64_t>(b.data(), 48, ~0ull - 4095);  // 2^64 - 4096
  put<std::uint32_t>(b.data(), off_crc, crc32c(b.data(), off_crc));
  const auto d = decode_slot(b.data());
  EXPECT_EQ(d.status, slot_status::bad_values) << d.cause;
  EXPECT_NE(d.cause.find("overflows the segment count"), std::string::npos) << d.cause;

  // The largest capacity that does not wrap passes the geometry check; the capacity bound
  // (format 3 applies it while decoding) is what rejects such a slot then.
  EXPECT_EQ(geometry_problem(4096, 1ull << 63, 1ull << 63), "");
  superblock big;
  big.page_size = 4096;
  big.segment_size = 1ull << 63;
  big.capacity = (1ull << 63);
  const auto d2 = decode_slot(encode_slot(big).data());
  EXPECT_EQ(d2.status, slot_status::bad_values) << d2.cause;
  EXPECT_NE(d2.cause.find("impossible capacity"), std::string::npos) << d2.cause;
}

// fuzz_map_block: a block whose reserved bytes (after the page count, after the CRCs) were not
// zero was accepted, and re-encoding it gave other bytes: bytes nothing checks could carry
// anything. Reserved bytes must be zero.
TEST(ParserRegression, MapBlockWithNonZeroReservedBytesIsRejected) {
  block_version v;
  v.set(3, page_home::second, 0xdeadbeef);
  for (const std::size_t at : {44u, 47u, 4060u, 4091u}) {
    std::array<std::byte, map_block_size> b{};
    encode_map_block(b.data(), {7, 2, uuid{1}, pages_per_block}, v);
    b[at] = std::byte{1};
    put<std::uint32_t>(b.data(), 4092, crc32c(b.data(), 4092));
    block_header h;
    block_version got;
    EXPECT_EQ(decode_map_block(b.data(), h, got), "reserved bytes are not zero") << "byte " << at;
  }
}

// fuzz_directory: the same for the directory header's reserved bytes [44, 64).
TEST(ParserRegression, DirectoryWithNonZeroReservedHeaderBytesIsRejected) {
  const std::vector<dir_entry> entries(3);
  for (const std::size_t at : {44u, 63u}) {
    auto d = encode_directory({uuid{1}, 4, 3}, entries);
    d[at] = std::byte{1};
    directory_header h;
    std::vector<dir_entry> got;
    EXPECT_EQ(decode_directory(d.data(), directory_length(3 * pages_per_block), h, got),
              "reserved header bytes are not zero")
        << "byte " << at;
  }
}

TEST(ParserRegression, CreateWithACapacityThatWrapsTheSegmentCountIsInvalidArgument) {
  test::temp_dir d;
  store_options o;
  o.page_size = 4096;
  o.segment_size = 1ull << 63;
  o.capacity = ~0ull - 4095;
  try {
    sparse_store::create(d / "ds", o);
    ADD_FAILURE() << "create accepted a wrapping geometry";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::invalid_argument) << e.what();
    EXPECT_NE(std::string(e.what()).find(d / "ds"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(d / "ds"));
}

}  // namespace
}  // namespace pheap::store
