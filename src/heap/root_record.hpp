// src/heap/root_record.hpp — the heap's root record: the blob committed with every watermark
// (sparse_store::commit root, <= 2048 bytes).
//
// Layout (little-endian): magic "PHEAPRT1" (8), heap_format u32, writer_version u32,
// capacity u64, chunk_size u64, created_ns u64, description_len u32, crc32c u32 of all
// preceding bytes plus the description, description bytes. It is validated BEFORE the region
// is mapped: empty -> not_a_datastore ("heap never initialised: creation did not complete");
// wrong magic -> not_a_datastore; heap_format newer than ours -> newer_format; bad length,
// checksum or geometry -> corrupt. The in-region heap header repeats the geometry and is
// cross-checked at attach.
//
// mmap_open: the datastore is open read-write by the mmap backend (or such an open ended
// without a clean close). Encoded as the magic "PHEAPRTM" instead of "PHEAPRT1" (same layout),
// so the flag is part of the checksummed record. decode() returns it; the manager refuses to
// open such a datastore (its segment files may hold a torn mix of states).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace pheap::heap {

struct root_record {
  static constexpr std::size_t max_description = 1800;
  static constexpr std::size_t fixed_bytes = 48;

  std::uint32_t heap_format = 0;
  std::uint32_t writer_version = 0;
  std::uint64_t capacity = 0;
  std::uint64_t chunk_size = 0;
  std::uint64_t created_ns = 0;
  std::string description;
  bool mmap_open = false;

  std::vector<std::byte> encode() const;
  static root_record decode(std::span<const std::byte> blob, const std::string& path);
};

}  // namespace pheap::heap
