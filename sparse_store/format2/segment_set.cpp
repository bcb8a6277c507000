#include "segment_set.hpp"

#include <algorithm>
#include <cstdio>
#include <unordered_set>

#include "pheap/crc32c.hpp"
#include "../layout.hpp"
#include "../segment_files.hpp"
#include "../segment_header.hpp"

namespace pheap::store::format2 {

namespace {

constexpr std::size_t header_slots = 2;

std::uint64_t table_bytes(std::uint64_t pages) { return round_up(pages * 4, 4096); }

}  // namespace

segment_set::segment_set(io::engine& eng, std::string dir, const superblock& sb)
    : eng_(eng),
      dir_(std::move(dir)),
      id_(sb.id),
      page_size_(sb.page_size),
      segment_size_(sb.segment_size),
      pages_per_segment_(sb.segment_size / sb.page_size),
      files_(sb.segment_count()),
      tables_(sb.segment_count()) {}

void segment_set::open(const superblock& sb, const std::vector<std::string>& names) {
  std::unordered_set<std::uint64_t> listed;
  for (const auto& n : names) {
    if (auto i = parse_segment_name(n); i && *i < files_.size()) listed.insert(*i);
  }
  const std::uint64_t file_size =
      segment_size_ + header_slots * segment_header_size + table_bytes(pages_per_segment_);
  const auto S = static_cast<std::int64_t>(sb.epoch);
  std::vector<std::uint64_t> digest;
  for (std::uint64_t i = 0; i < files_.size(); ++i) {
    if (i >= sb.segments.size() || !sb.segments[i]) continue;
    const std::string path = join(dir_, segment_name(i));
    if (!listed.count(i)) {
      throw error(errc::corrupt, path, "open",
                  "missing segment file required by epoch " + std::to_string(sb.epoch));
    }
    auto f = eng_.open(path, io::open_mode::read_only);
    const std::uint64_t size = eng_.size(*f);
    if (size != file_size) {
      throw error(errc::corrupt, path, "open",
                  "segment file has " + std::to_string(size) + " bytes, expected " +
                      std::to_string(file_size) + " (truncated or foreign)");
    }
    std::vector<std::byte> buf(header_slots * segment_header_size);
    eng_.read_at(*f, segment_size_, buf.data(), buf.size());
    std::int64_t last = -1;
    std::string problem;
    bool foreign = false;
    for (std::size_t k = 0; k < header_slots && !foreign; ++k) {
      segment_header h;
      std::string why = decode_segment_header(buf.data() + k * segment_header_size, version, h);
      if (why.empty()) {
        why = segment_identity_problem(h, id_, i, page_size_, segment_size_);
        foreign = !why.empty();  // a valid header that is not ours: never trust the other slot
      }
      if (!why.empty()) {
        problem = foreign ? why : problem + (problem.empty() ? "" : "; ") + why;
        continue;
      }
      const auto e = static_cast<std::int64_t>(h.touch_epoch);
      if (e > S) {
        throw error(errc::corrupt, path, "open",
                    "segment was written by the checkpoint of epoch " + std::to_string(e) +
                        ", after the committed epoch " + std::to_string(sb.epoch) +
                        " (a copy from a newer state of the datastore)");
      }
      if (e < S || (e == S && sb.journal_length == 0)) last = std::max(last, e);
    }
    if (foreign) throw error(errc::corrupt, path, "open", problem);
    if (last < 0) {
      throw error(errc::corrupt, path, "open",
                  problem.empty() ? "segment header has no checkpoint before epoch " + std::to_string(sb.epoch)
                                  : "no valid segment header (" + problem + ")");
    }
    digest.push_back(i);
    digest.push_back(static_cast<std::uint64_t>(last));
    files_[i] = std::move(f);
  }
  const std::uint32_t d = digest.empty() ? 0 : crc32c(digest.data(), digest.size() * sizeof(std::uint64_t));
  if (d != sb.segment_digest) {
    throw error(errc::corrupt, dir_, "open",
                "the segments' checkpoint epochs do not match the commit record of epoch " +
                    std::to_string(sb.epoch) +
                    ": a segment file was replaced by an older or newer copy of itself");
  }
}

void segment_set::mark_data(page_bitmap& bits) const {
  for (std::uint64_t i = 0; i < files_.size(); ++i) {
    if (!files_[i]) continue;
    const std::uint64_t base = i * pages_per_segment_;
    for_each_data_extent(*files_[i], 0, segment_size_, "open",
                         [&](std::uint64_t a, std::uint64_t b) {
                           bits.set_range(base + a / page_size_,
                                          std::min(base + (b + page_size_ - 1) / page_size_, bits.size()));
                         });
  }
}

const std::vector<std::uint32_t>& segment_set::table(std::uint64_t index) {
  std::lock_guard lk(table_mu_);
  if (!tables_[index]) {
    auto t = std::make_unique<std::vector<std::uint32_t>>(table_bytes(pages_per_segment_) / 4);
    eng_.read_at(*files_[index], segment_size_ + header_slots * segment_header_size, t->data(),
                 t->size() * 4);
    tables_[index] = std::move(t);
  }
  return *tables_[index];
}

bool segment_set::verify(std::uint64_t page, const void* image) {
  const std::uint32_t want = table(page / pages_per_segment_)[page % pages_per_segment_];
  if (want == 0) return all_zero(image, page_size_);
  return crc32c(image, page_size_) == want;
}

error segment_set::verify_error(std::uint64_t page, const void* image, const char* op) {
  const std::uint64_t seg = page / pages_per_segment_;
  const std::uint32_t want = table(seg)[page % pages_per_segment_];
  char msg[200];
  std::snprintf(msg, sizeof msg, "page %llu (offset %llu) fails its checksum (stored %08x, computed %08x)",
                static_cast<unsigned long long>(page),
                static_cast<unsigned long long>((page % pages_per_segment_) * page_size_), want,
                crc32c(image, page_size_));
  return error(errc::corrupt, join(dir_, segment_name(seg)), op, msg);
}

}  // namespace pheap::store::format2
