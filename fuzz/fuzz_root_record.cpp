// libFuzzer target: the heap's root record parser (root_record::decode, src/heap/root_record.hpp)
// — the blob every commit stores in the superblock and the first thing a heap open trusts.
//
// Input: byte 0 = flags, the rest = the blob. Flag bit 0 set: the record's CRC is recomputed
// (over the fixed fields and the description the length field claims, when it fits) so the
// fuzzer explores the checks behind the CRC gate.
//
// Properties (abort = finding): no crash/UB; every failure is a pheap::error with code
// not_a_datastore, newer_format or corrupt naming the path; an accepted record re-encodes to
// bytes that decode to the same record.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "pheap/crc32c.hpp"
#include "heap/root_record.hpp"
#include "pheap/error.hpp"
#include "sparse_store/layout.hpp"
#include "fuzz_support.hpp"

using namespace pheap;
using pheap::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  std::vector<std::byte> blob(size - 1);
  if (!blob.empty()) std::memcpy(blob.data(), data + 1, blob.size());
  if ((data[0] & 1) && blob.size() >= heap::root_record::fixed_bytes) {
    // description_len at 40, crc at 44 (root_record.hpp layout)
    const auto len = store::get<std::uint32_t>(blob.data(), 40);
    if (len <= blob.size() - heap::root_record::fixed_bytes) {
      std::uint32_t crc = crc32c(blob.data(), 44);  // chained as root_record::encode
      crc = crc32c(blob.data() + heap::root_record::fixed_bytes, len, crc);
      store::put<std::uint32_t>(blob.data(), 44, crc);
    }
  }
  const std::string path = "/fuzz/heap";
  try {
    const heap::root_record r = heap::root_record::decode(blob, path);
    const auto again = heap::root_record::decode(r.encode(), path);
    require(again.heap_format == r.heap_format && again.capacity == r.capacity &&
            again.chunk_size == r.chunk_size && again.created_ns == r.created_ns &&
            again.description == r.description && again.mmap_open == r.mmap_open &&
            again.writer_version == r.writer_version);
  } catch (const error& e) {
    require(e.code() == errc::not_a_datastore || e.code() == errc::newer_format ||
            e.code() == errc::corrupt);
    require(std::strstr(e.what(), path.c_str()) != nullptr);
  }
  return 0;
}
