#include "heap/root_record.hpp"

#include <cstring>

#include "pheap/crc32c.hpp"
#include "heap/heap_header.hpp"
#include "pheap/error.hpp"

namespace pheap::heap {

namespace {
constexpr char root_magic[8] = {'P', 'H', 'E', 'A', 'P', 'R', 'T', '1'};
constexpr char root_magic_mmap_open[8] = {'P', 'H', 'E', 'A', 'P', 'R', 'T', 'M'};

template <class T>
void put(std::vector<std::byte>& out, std::size_t at, T v) {
  for (std::size_t i = 0; i < sizeof(T); ++i) out[at + i] = static_cast<std::byte>((v >> (8 * i)) & 0xFF);
}
template <class T>
T get(std::span<const std::byte> in, std::size_t at) {
  T v = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) v |= static_cast<T>(std::to_integer<std::uint8_t>(in[at + i])) << (8 * i);
  return v;
}
}  // namespace

std::vector<std::byte> root_record::encode() const {
  std::vector<std::byte> out(fixed_bytes + description.size());
  std::memcpy(out.data(), mmap_open ? root_magic_mmap_open : root_magic, 8);
  put<std::uint32_t>(out, 8, heap_format);
  put<std::uint32_t>(out, 12, writer_version);
  put<std::uint64_t>(out, 16, capacity);
  put<std::uint64_t>(out, 24, chunk_size);
  put<std::uint64_t>(out, 32, created_ns);
  put<std::uint32_t>(out, 40, static_cast<std::uint32_t>(description.size()));
  std::memcpy(out.data() + fixed_bytes, description.data(), description.size());
  std::uint32_t crc = crc32c(out.data(), 44);
  crc = crc32c(out.data() + fixed_bytes, description.size(), crc);
  put<std::uint32_t>(out, 44, crc);
  return out;
}

root_record root_record::decode(std::span<const std::byte> blob, const std::string& path) {
  if (blob.empty()) {
    throw error(errc::not_a_datastore, path, "open heap",
                "heap never initialised (creation did not complete before its first commit)");
  }
  const bool open_mark = blob.size() >= fixed_bytes && std::memcmp(blob.data(), root_magic_mmap_open, 8) == 0;
  if (blob.size() < fixed_bytes || (!open_mark && std::memcmp(blob.data(), root_magic, 8) != 0)) {
    throw error(errc::not_a_datastore, path, "open heap", "root record is not a pheap heap record");
  }
  root_record r;
  r.heap_format = get<std::uint32_t>(blob, 8);
  if (r.heap_format > heap_format_version) {
    throw error(errc::newer_format, path, "open heap",
                "heap format " + std::to_string(r.heap_format) + " is newer than supported (" +
                    std::to_string(heap_format_version) + ")");
  }
  const std::uint32_t len = get<std::uint32_t>(blob, 40);
  if (len > max_description || blob.size() != fixed_bytes + len) {
    throw error(errc::corrupt, path, "open heap", "root record length mismatch");
  }
  std::uint32_t crc = crc32c(blob.data(), 44);
  crc = crc32c(blob.data() + fixed_bytes, len, crc);
  if (crc != get<std::uint32_t>(blob, 44)) {
    throw error(errc::corrupt, path, "open heap", "root record checksum mismatch");
  }
  if (r.heap_format < oldest_heap_format) {
    throw error(errc::corrupt, path, "open heap", "unknown heap format " + std::to_string(r.heap_format));
  }
  r.writer_version = get<std::uint32_t>(blob, 12);
  r.capacity = get<std::uint64_t>(blob, 16);
  r.chunk_size = get<std::uint64_t>(blob, 24);
  r.created_ns = get<std::uint64_t>(blob, 32);
  r.mmap_open = open_mark;
  r.description.assign(reinterpret_cast<const char*>(blob.data()) + fixed_bytes, len);
  return r;
}

}  // namespace pheap::heap
