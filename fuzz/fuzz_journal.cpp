// libFuzzer target: the journal record parser (scan_journal, sparse_store/journal.hpp).
//
// Input: an 8-byte parameter block, then the journal file.
//   byte 0: page size 4096 << (b % 3)          byte 1: epoch of the journal
//   bytes 2-3: page_count - 1 (little-endian)  byte 4: committed length L relative to the
//   file: b < 128 → size - min(b, size); else size + (b - 128) (a commit longer than the file)
//   byte 5 bit 0: recompute every header and image CRC first (explore past the CRC gate)
//   bytes 6-7: unused
//
// Properties checked (abort = finding): no crash/UB (ASan+UBSan); every failure is
// errc::corrupt naming the journal; every record reported lies inside [0, L), in order, with
// page numbers < page_count and discard ranges inside the capacity.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "pheap/crc32c.hpp"
#include "fuzz/mem_engine.hpp"
#include "sparse_store/journal.hpp"
#include "sparse_store/layout.hpp"

using namespace pheap;
using namespace pheap::store;

namespace {

void require(bool ok) {
  if (!ok) std::abort();
}

// The datastore uuid the seeds' records carry (fuzz/make_seeds.cpp uses the same).
const uuid kFuzzId = {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x41, 0x11,
                      0x91, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11};

// Walks records as the writer lays them out and rewrites their uuid and CRCs (a fuzzing aid
// only, so mutations get past those checks).
void fix_crcs(std::vector<std::uint8_t>& j, std::uint32_t ps) {
  std::uint64_t off = 0;
  while (j.size() - off >= record_fixed_size + record_trailer_size) {
    std::uint8_t* r = j.data() + off;
    const auto type = get<std::uint32_t>(r, 4);
    const auto count = get<std::uint64_t>(r, 16);
    std::memcpy(r + record_uuid_offset, kFuzzId.data(), kFuzzId.size());
    if (type == static_cast<std::uint32_t>(record_type::discard)) {
      put<std::uint32_t>(r, record_fixed_size, crc32c(r, record_fixed_size));
      off += discard_header_size;
      continue;
    }
    if (type != static_cast<std::uint32_t>(record_type::pages)) return;
    const std::uint64_t room = j.size() - off;
    if (count > room / (record_entry_size + ps)) return;
    const std::size_t hsize = pages_header_size(count);
    if (hsize + count * ps > room) return;
    for (std::uint64_t i = 0; i < count; ++i) {
      put<std::uint32_t>(r, record_fixed_size + i * record_entry_size + 8,
                         crc32c(r + hsize + i * ps, ps));
    }
    put<std::uint32_t>(r, hsize - record_trailer_size, crc32c(r, hsize - record_trailer_size));
    off += hsize + count * ps;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 8) return 0;
  const std::uint32_t ps = 4096u << (data[0] % 3);
  const std::uint64_t epoch = data[1];
  const std::uint64_t page_count = 1 + static_cast<std::uint64_t>(data[2] | (data[3] << 8));
  std::vector<std::uint8_t> j(data + 8, data + size);
  const std::uint64_t length =
      data[4] < 128 ? j.size() - std::min<std::uint64_t>(data[4], j.size()) : j.size() + (data[4] - 128);
  if (data[5] & 1) fix_crcs(j, ps);

  fuzz::mem_engine eng;
  const std::string path = "/fuzz/ds/journal-000000000001";
  fuzz::mem_file f(path, j.data(), j.size());
  std::uint64_t last_end = 0;
  journal_visitor v;
  v.on_pages = [&](const std::vector<std::uint64_t>& pages, std::uint64_t image_off) {
    for (auto p : pages) require(p < page_count);
    require(image_off >= last_end);
    require(image_off + pages.size() * ps <= length);
    last_end = image_off + pages.size() * ps;
  };
  v.on_discard = [&](std::uint64_t rec_off, std::uint64_t first, std::uint64_t count) {
    require(rec_off >= last_end && rec_off + discard_header_size <= length);
    require(first < page_count && count <= page_count - first);
    last_end = rec_off + discard_header_size;
  };
  try {
    scan_journal(eng, f, path, kFuzzId, epoch, length, ps, page_count, v);
    require(last_end == length);  // accepted: the records tile [0, L) exactly
  } catch (const error& e) {
    require(e.code() == errc::corrupt);
    require(std::strstr(e.what(), path.c_str()) != nullptr);
  }
  return 0;
}
