// pheap_fuzz_seeds OUTDIR — writes the seed corpora of the parser fuzzers, built from valid
// structures with the real encoders:
//   OUTDIR/superblock/*      flags byte + pheap.super files (fresh, two committed slots, torn)
//   OUTDIR/map_block/*       parameter block + map blocks (empty, mixed homes, partial block)
//   OUTDIR/directory/*       parameter block + directories (fresh, with copies, large)
//   OUTDIR/segment_header/*  flags byte + identity headers
//   OUTDIR/root_record/*     flags byte + heap root records
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "pheap/crc32c.hpp"
#include "heap/heap_header.hpp"
#include "heap/root_record.hpp"
#include "sparse_store/layout.hpp"
#include "sparse_store/map_codec.hpp"
#include "sparse_store/segment_header.hpp"
#include "sparse_store/superblock.hpp"
#include "fuzz_support.hpp"

using namespace pheap;
using pheap::fuzz::kFuzzId;
using namespace pheap::store;
namespace fs = std::filesystem;

namespace {

void write_file(const fs::path& p, const std::vector<std::uint8_t>& bytes) {
  std::ofstream o(p, std::ios::binary);
  o.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

std::vector<std::uint8_t> super_file(const superblock* s0, const superblock* s1) {
  std::vector<std::uint8_t> f(super_file_size, 0);
  if (s0) { auto b = encode_slot(*s0); std::memcpy(f.data(), b.data(), slot_size); }
  if (s1) { auto b = encode_slot(*s1); std::memcpy(f.data() + slot_size, b.data(), slot_size); }
  return f;
}


// A map block version: page i has data in home `(i % 3)` (none, 0, 1) for the first `pages`.
block_version version_of(std::uint32_t pages, unsigned stride) {
  block_version v;
  for (std::uint32_t i = 0; i < pages; ++i) {
    const auto h = static_cast<page_home>((i / stride) % 3);
    v.set(i, h, h == page_home::none ? 0 : 0x9e3779b9u * (i + 1));
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
    return 2;
  }
  const fs::path out = argv[1];
  fs::create_directories(out / "superblock");
  fs::create_directories(out / "map_block");
  fs::create_directories(out / "directory");
  fs::create_directories(out / "segment_header");
  fs::create_directories(out / "root_record");

  auto geometry = [](superblock sb, std::uint32_t ps, std::uint64_t seg, std::uint64_t cap) {
    sb.page_size = ps;
    sb.segment_size = seg;
    sb.capacity = cap;
    sb.directory_length = directory_length(sb.page_count());
    return sb;
  };
  superblock a;
  a.id = {1, 2, 3, 4, 5, 6, 0x47, 8, 0x89, 10, 11, 12, 13, 14, 15, 16};
  a = geometry(a, 4096, 64 << 10, 1 << 20);
  superblock b = a;
  b.epoch = 1;
  b.directory_home = 1;
  b.directory_crc = 0x12345678;
  b.root = {std::byte{'r'}, std::byte{'o'}, std::byte{'o'}, std::byte{'t'}};
  superblock c = b;
  c.epoch = 2;
  c.base_epoch = 1;
  c.directory_home = 0;
  c.prepared = true;
  c.root.assign(2048, std::byte{0x5a});
  superblock big = geometry(a, 1 << 16, 1 << 20, 1ull << 36);
  // The largest geometry that does not wrap the segment count (the fuzz_superblock finding
  // was one step past it: capacity 2^64 - 4096 with 2^63-byte segments) — rejected since by the
  // capacity bound.
  superblock edge = geometry(a, 4096, 1ull << 63, 1ull << 63);

  int n = 0;
  auto seed_super = [&](const std::vector<std::uint8_t>& file) {
    for (std::uint8_t flags : {0, 1}) {
      std::vector<std::uint8_t> s{flags};
      s.insert(s.end(), file.begin(), file.end());
      write_file(out / "superblock" / ("seed-" + std::to_string(n++)), s);
    }
  };
  seed_super(super_file(&a, nullptr));
  seed_super(super_file(&c, &b));
  seed_super(super_file(&big, nullptr));
  seed_super(super_file(&edge, nullptr));
  auto torn = super_file(&a, &b);
  torn.resize(slot_size + 100);
  seed_super(torn);

  // Map blocks: parameter block (flags, index, pages, epoch) + the block.
  auto seed_block = [&](std::uint16_t index, std::uint32_t pages, std::uint64_t epoch,
                        const block_version& v) {
    std::vector<std::uint8_t> blk(map_block_size);
    encode_map_block(reinterpret_cast<std::byte*>(blk.data()), {index, epoch, kFuzzId, pages}, v);
    for (std::uint8_t flags : {0, 1, 2, 3}) {
      std::vector<std::uint8_t> s(8, 0);
      s[0] = flags;
      put<std::uint16_t>(s.data(), 1, index);
      put<std::uint16_t>(s.data(), 3, static_cast<std::uint16_t>(pages - 1));
      std::memcpy(s.data() + 5, &epoch, 3);
      s.insert(s.end(), blk.begin(), blk.end());
      write_file(out / "map_block" / ("seed-" + std::to_string(n++)), s);
    }
  };
  seed_block(0, pages_per_block, 1, block_version{});
  seed_block(3, pages_per_block, 7, version_of(pages_per_block, 1));
  seed_block(1, 256, 2, version_of(256, 5));
  seed_block(9, 17, 1 << 20, version_of(17, 2));
  // Directories: parameter block (flags, blocks, epoch) + the directory.
  auto seed_directory = [&](std::uint64_t epoch, const std::vector<dir_entry>& entries) {
    const auto dir = encode_directory({kFuzzId, epoch, entries.size()}, entries);
    const std::size_t len = directory_header_size + directory_entry_size * entries.size();
    for (std::uint8_t flags : {0, 1}) {
      std::vector<std::uint8_t> s(8, 0);
      s[0] = flags;
      put<std::uint16_t>(s.data(), 1, static_cast<std::uint16_t>(entries.size()));
      const std::uint64_t sb_epoch = epoch + 1;
      std::memcpy(s.data() + 3, &sb_epoch, 5);
      const auto* p = reinterpret_cast<const std::uint8_t*>(dir.data());
      s.insert(s.end(), p, p + len);
      write_file(out / "directory" / ("seed-" + std::to_string(n++)), s);
    }
  };
  seed_directory(0, std::vector<dir_entry>(2));
  seed_directory(5, {{5, 0xabcdef01u, 944, dir_entry::exists},
                     {3, 0x01020304u, 17, dir_entry::exists | dir_entry::in_second | dir_entry::has_second},
                     {}});
  seed_directory(9, std::vector<dir_entry>(300, dir_entry{9, 7, 1, dir_entry::exists}));
  for (std::uint64_t epoch : {0ull, 7ull, 1ull << 40}) {
    segment_header h;
    h.page_size = 4096;
    h.id = a.id;
    h.index = epoch % 5;
    h.segment_size = 64 << 10;
    h.touch_epoch = 0;
    std::vector<std::uint8_t> s(1 + segment_header_size, 0);
    encode_segment_header(reinterpret_cast<std::byte*>(s.data() + 1), h);
    for (std::uint8_t flags : {0, 1}) {
      s[0] = flags;
      write_file(out / "segment_header" / ("seed-" + std::to_string(n++)), s);
    }
  }
  for (const char* desc : {"", "graph of 2^20 vertices", "x"}) {
    heap::root_record r;
    r.heap_format = heap::heap_format_version;
    r.writer_version = 1;
    r.capacity = 1ull << 30;
    r.chunk_size = 2u << 20;
    r.created_ns = 1234567;
    r.description = desc;
    r.mmap_open = desc[0] == 'x';
    const auto blob = r.encode();
    for (std::uint8_t flags : {0, 1}) {
      std::vector<std::uint8_t> s{flags};
      for (std::byte b : blob) s.push_back(std::to_integer<std::uint8_t>(b));
      write_file(out / "root_record" / ("seed-" + std::to_string(n++)), s);
    }
  }
  std::printf("%d seeds in %s\n", n, out.c_str());
  return 0;
}
