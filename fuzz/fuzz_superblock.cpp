// libFuzzer target: the superblock slot parser (decode_slot) and slot selection
// (read_superblock) of sparse_store/superblock.hpp.
//
// Input: byte 0 = flags, the rest = the pheap.super file (any length). Flag bit 0 set: the
// CRC of every complete slot is recomputed before parsing, so the fuzzer explores the field
// checks behind the CRC gate instead of dying on it.
//
// Properties checked (abort = finding): no crash/UB (ASan+UBSan); every failure is a
// pheap::error of a specific code naming the file; an accepted slot has a sane geometry within
// the bounds (segment count not wrapped, capacity and pages bounded, the directory length the
// geometry implies), re-encodes to the same bytes, and survives encode → decode unchanged.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "pheap/crc32c.hpp"
#include "fuzz/mem_engine.hpp"
#include "sparse_store/layout.hpp"
#include "sparse_store/map_codec.hpp"
#include "sparse_store/superblock.hpp"
#include "fuzz_support.hpp"

using namespace pheap;
using pheap::fuzz::require;
using namespace pheap::store;

namespace {


void check_accepted(const superblock& sb) {
  require(is_pow2(sb.page_size) && sb.page_size >= 4096);
  require(is_pow2(sb.segment_size) && sb.segment_size >= sb.page_size);
  require(sb.capacity > 0 && sb.capacity % sb.page_size == 0);
  require(sb.capacity <= max_capacity && sb.page_count() <= max_pages);
  require(sb.root.size() <= sparse_store::max_root_size);
  require(sb.segment_count() <= max_segments);
  // The segments must cover the whole capacity (no wrap-around in the segment count).
  require(static_cast<unsigned __int128>(sb.segment_count()) * sb.segment_size >= sb.capacity);
  require(sb.directory_length == directory_length(sb.page_count()));
  require(sb.directory_home <= 1);
  require(sb.epoch == 0 ? sb.base_epoch == 0 : sb.base_epoch < sb.epoch);
  const auto again = decode_slot(encode_slot(sb).data());
  require(again.status == slot_status::ok);
  require(again.sb.page_size == sb.page_size && again.sb.id == sb.id &&
          again.sb.epoch == sb.epoch && again.sb.segment_size == sb.segment_size &&
          again.sb.capacity == sb.capacity && again.sb.directory_length == sb.directory_length &&
          again.sb.root == sb.root && again.sb.directory_crc == sb.directory_crc &&
          again.sb.directory_home == sb.directory_home && again.sb.prepared == sb.prepared &&
          again.sb.base_epoch == sb.base_epoch);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  std::vector<std::uint8_t> file(data + 1, data + size);
  if (data[0] & 1) {
    for (std::size_t s = 0; s < slot_count; ++s) {
      if (file.size() < (s + 1) * slot_size) break;
      std::uint8_t* slot = file.data() + s * slot_size;
      put<std::uint32_t>(slot, off_crc, crc32c(slot, off_crc));
    }
  }
  for (std::size_t s = 0; s < slot_count; ++s) {
    if (file.size() < (s + 1) * slot_size) break;
    const auto* slot = reinterpret_cast<const std::byte*>(file.data() + s * slot_size);
    const auto d = decode_slot(slot);
    if (d.status == slot_status::ok) {
      check_accepted(d.sb);
      // Every byte of a valid slot is a field or zero: nothing unchecked rides along.
      require(std::memcmp(encode_slot(d.sb).data(), slot, slot_size) == 0);
    } else {
      require(!d.cause.empty());
    }
  }
  fuzz::mem_engine eng;
  const std::string path = "/fuzz/ds/pheap.super";
  fuzz::mem_file f(path, file.data(), file.size());
  try {
    check_accepted(read_superblock(eng, f, path).sb);
  } catch (const error& e) {
    require(e.code() == errc::corrupt || e.code() == errc::not_a_datastore ||
            e.code() == errc::newer_format || e.code() == errc::older_format);
    require(std::strstr(e.what(), path.c_str()) != nullptr);
  }
  return 0;
}
