// pheap_fuzz_seeds OUTDIR — writes the seed corpora of the parser fuzzers, built from valid
// structures with the real encoders:
//   OUTDIR/superblock/*  flags byte + pheap.super files (fresh, two committed slots, torn)
//   OUTDIR/journal/*     parameter block + journals (pages records, discard, several sizes)
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
#include "sparse_store/journal.hpp"
#include "sparse_store/segment_set.hpp"
#include "sparse_store/layout.hpp"
#include "sparse_store/superblock.hpp"

using namespace pheap;
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

// Must match kFuzzId in fuzz/fuzz_journal.cpp.
const uuid kFuzzId = {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x41, 0x11,
                      0x91, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11};

void append_pages(std::vector<std::uint8_t>& j, std::uint64_t epoch, std::uint32_t ps,
                  const std::vector<std::uint64_t>& pages) {
  std::vector<std::uint8_t> images(pages.size() * ps);
  std::vector<std::uint32_t> crcs;
  for (std::size_t i = 0; i < pages.size(); ++i) {
    for (std::uint32_t k = 0; k < ps; ++k) images[i * ps + k] = static_cast<std::uint8_t>(pages[i] * 31 + k);
    crcs.push_back(crc32c(images.data() + i * ps, ps));
  }
  std::vector<std::uint8_t> h(pages_header_size(pages.size()));
  encode_pages_header(reinterpret_cast<std::byte*>(h.data()), kFuzzId, epoch, pages.size(), pages.data(), crcs.data());
  j.insert(j.end(), h.begin(), h.end());
  j.insert(j.end(), images.begin(), images.end());
}

void append_discard(std::vector<std::uint8_t>& j, std::uint64_t epoch, std::uint64_t first, std::uint64_t count) {
  std::vector<std::uint8_t> h(discard_header_size);
  encode_discard_header(reinterpret_cast<std::byte*>(h.data()), kFuzzId, epoch, first, count);
  j.insert(j.end(), h.begin(), h.end());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
    return 2;
  }
  const fs::path out = argv[1];
  fs::create_directories(out / "superblock");
  fs::create_directories(out / "journal");
  fs::create_directories(out / "segment_header");
  fs::create_directories(out / "root_record");

  superblock a;
  a.page_size = 4096;
  a.id = {1, 2, 3, 4, 5, 6, 0x47, 8, 0x89, 10, 11, 12, 13, 14, 15, 16};
  a.segment_size = 64 << 10;
  a.capacity = 1 << 20;
  a.segments.assign(a.segment_count(), false);
  superblock b = a;
  b.epoch = 1;
  b.journal_length = 4096 + 72;  // one pages record of one page
  b.root = {std::byte{'r'}, std::byte{'o'}, std::byte{'o'}, std::byte{'t'}};
  b.segments[0] = b.segments[3] = true;
  superblock c = b;
  c.epoch = 2;
  c.root.assign(2048, std::byte{0x5a});
  c.segments.assign(c.segment_count(), true);
  superblock big = a;
  big.page_size = 1 << 16;
  big.segment_size = 1 << 20;
  big.capacity = 1ull << 32;
  big.segments.assign(big.segment_count(), false);

  // The largest geometry that does not wrap the segment count (the fuzz_superblock finding
  // was one step past it: capacity 2^64 - 4096 with 2^63-byte segments).
  superblock edge = a;
  edge.segment_size = 1ull << 63;
  edge.capacity = 1ull << 63;
  edge.segments.assign(edge.segment_count(), true);

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

  auto seed_journal = [&](std::uint8_t ps_sel, std::uint8_t epoch, const std::vector<std::uint8_t>& j) {
    for (std::uint8_t flags : {0, 1}) {
      std::vector<std::uint8_t> s{ps_sel, epoch, 63, 0, 0, flags, 0, 0};
      s.insert(s.end(), j.begin(), j.end());
      write_file(out / "journal" / ("seed-" + std::to_string(n++)), s);
    }
  };
  std::vector<std::uint8_t> j1;
  append_pages(j1, 1, 4096, {3});
  seed_journal(0, 1, j1);
  std::vector<std::uint8_t> j2;
  append_pages(j2, 1, 4096, {0, 1, 2});
  append_discard(j2, 1, 1, 10);
  append_pages(j2, 1, 4096, {1});
  seed_journal(0, 1, j2);
  std::vector<std::uint8_t> j3;
  append_discard(j3, 7, 0, 64);
  seed_journal(0, 7, j3);
  std::vector<std::uint8_t> j4;
  append_pages(j4, 2, 8192, {5, 6});
  seed_journal(1, 2, j4);
  for (std::uint64_t epoch : {0ull, 7ull, 1ull << 40}) {
    segment_header h;
    h.page_size = 4096;
    h.id = a.id;
    h.index = epoch % 5;
    h.segment_size = 64 << 10;
    h.touch_epoch = epoch;
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
