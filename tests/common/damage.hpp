// Damaging a datastore on purpose: find a 4 KiB block of a known byte in its segment files and
// flip one bit in it, so that the page holding it fails its checksum. Tests write a recognisable
// pattern (a blob of one byte value, a name of one letter, neighbour ids made of one byte),
// close the datastore so the pages reach the segments, then damage the page of that pattern.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "pheap/pheap.hpp"

namespace pheap::test {

// Creates a heap at `path` holding one named array `name` of `bytes` chars of `fill`, and
// closes it with the data in the segment files (a second flush waits for the checkpoint of
// the first). Returns the array's offset in the heap.
inline std::uint64_t make_blob_heap(const std::string& path, const std::string& name, char fill,
                                    std::size_t bytes) {
  options o;
  o.pager.buffer_size = 8u << 20;
  manager m(create_only, path, o);
  char* blob = m.construct<char>(name)[bytes](fill);
  if (blob == nullptr) throw std::runtime_error("make_blob_heap: construct failed");
  m.flush();
  m.flush();
  return static_cast<std::uint64_t>(blob - static_cast<char*>(m.get_address()));
}

enum class which_block { first, last };

// The segment file of datastore `path` holding the first (or last) 4 KiB-aligned block made only
// of `fill`, and the block's offset; {"", npos} when there is none.
inline std::pair<std::string, std::uint64_t> find_block_of(const std::string& path, char fill,
                                                           which_block which = which_block::first) {
  namespace fs = std::filesystem;
  std::vector<fs::path> segs;
  for (const auto& e : fs::directory_iterator(path)) {
    if (e.path().filename().string().rfind("segment-", 0) == 0) segs.push_back(e.path());
  }
  std::sort(segs.begin(), segs.end());
  std::pair<std::string, std::uint64_t> found{"", std::string::npos};
  for (const auto& seg : segs) {
    std::ifstream f(seg, std::ios::binary);
    std::vector<char> block(4096);
    for (std::uint64_t off = 0; f.read(block.data(), 4096); off += 4096) {
      if (std::all_of(block.begin(), block.end(), [fill](char c) { return c == fill; })) {
        found = {seg.string(), off};
        if (which == which_block::first) return found;
      }
    }
  }
  return found;
}

// Flips the lowest bit of the byte at `offset` of `file`.
inline void flip_bit(const std::string& file, std::uint64_t offset) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset));
  const char c = static_cast<char>(f.get());
  f.seekp(static_cast<std::streamoff>(offset));
  f.put(static_cast<char>(c ^ 0x01));
}

// Damages the block find_block_of finds (at its byte 1000); returns the segment file, or ""
// when no such block exists.
inline std::string damage_block_of(const std::string& path, char fill,
                                   which_block which = which_block::first) {
  const auto [seg, off] = find_block_of(path, fill, which);
  if (!seg.empty()) flip_bit(seg, off + 1000);
  return seg;
}

}  // namespace pheap::test
