#include "sparse_store/segment_set.hpp"

#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <cerrno>
#include <set>
#include <unordered_set>

#include "pheap/error.hpp"
#include "sparse_store/journal.hpp"
#include "sparse_store/layout.hpp"

namespace pheap::store {

namespace {

// Bytes of page images a checkpoint moves per engine call (one read batch, one write batch).
constexpr std::size_t checkpoint_chunk = 16u << 20;

}  // namespace

segment_set::segment_set(io::engine& eng, std::string dir, std::uint32_t page_size,
                         std::uint64_t segment_size, std::uint64_t segment_count,
                         bool read_only)
    : eng_(eng),
      dir_(std::move(dir)),
      page_size_(page_size),
      segment_size_(segment_size),
      pages_per_segment_(segment_size / page_size),
      read_only_(read_only),
      files_(segment_count) {}

std::string segment_set::path_of(std::uint64_t index) const {
  return join(dir_, segment_name(index));
}

void segment_set::open_existing(const superblock& sb, const std::vector<std::string>& names) {
  std::unordered_set<std::uint64_t> listed;
  for (const auto& n : names) {
    if (auto i = parse_segment_name(n); i && *i < files_.size()) listed.insert(*i);
  }
  const auto mode = read_only_ ? io::open_mode::read_only : io::open_mode::read_write;
  bool adopted = false;
  std::unique_lock lk(mu_);
  for (std::uint64_t i = 0; i < files_.size(); ++i) {
    const bool declared = i < sb.segments.size() && sb.segments[i];
    const std::string path = path_of(i);
    if (declared) {
      if (!listed.count(i)) {
        throw error(errc::corrupt, path, "open",
                    "missing segment file required by epoch " + std::to_string(sb.epoch));
      }
      std::shared_ptr<io::file> f = eng_.open(path, mode);
      const std::uint64_t size = eng_.size(*f);
      if (size != segment_size_) {
        throw error(errc::corrupt, path, "open",
                    "segment file has " + std::to_string(size) + " bytes, expected " +
                        std::to_string(segment_size_) + " (truncated or foreign)");
      }
      files_[i] = std::move(f);
    } else if (listed.count(i) && !read_only_) {
      std::shared_ptr<io::file> f = eng_.open(path, mode);
      if (eng_.size(*f) != segment_size_) eng_.truncate(*f, segment_size_);
      eng_.sync(*f);
      files_[i] = std::move(f);
      adopted = true;
    }
  }
  if (adopted) eng_.sync_dir(dir_);
}

std::shared_ptr<io::file> segment_set::get(std::uint64_t index) const {
  std::shared_lock lk(mu_);
  return files_[index];
}

std::vector<bool> segment_set::present() const {
  std::shared_lock lk(mu_);
  std::vector<bool> v(files_.size());
  for (std::size_t i = 0; i < files_.size(); ++i) v[i] = files_[i] != nullptr;
  return v;
}

std::vector<std::shared_ptr<io::file>> segment_set::files() const {
  std::shared_lock lk(mu_);
  return files_;
}

void segment_set::mark_data(page_bitmap& bits) const {
  const auto all = files();
  for (std::uint64_t i = 0; i < all.size(); ++i) {
    if (!all[i]) continue;
    const int fd = all[i]->fd();
    const std::uint64_t base = i * pages_per_segment_;
    off_t pos = 0;
    while (static_cast<std::uint64_t>(pos) < segment_size_) {
      const off_t data = ::lseek(fd, pos, SEEK_DATA);
      if (data < 0) {
        if (errno == ENXIO) break;  // no data past pos
        throw_errno(errno, all[i]->path(), "open (SEEK_DATA)");
      }
      off_t hole = ::lseek(fd, data, SEEK_HOLE);
      if (hole < 0) throw_errno(errno, all[i]->path(), "open (SEEK_HOLE)");
      hole = std::min<off_t>(hole, static_cast<off_t>(segment_size_));
      const std::uint64_t first = static_cast<std::uint64_t>(data) / page_size_;
      const std::uint64_t end = (static_cast<std::uint64_t>(hole) + page_size_ - 1) / page_size_;
      bits.set_range(base + first, std::min(base + end, bits.size()));
      pos = hole;
    }
  }
}

std::shared_ptr<io::file> segment_set::create_segment(std::uint64_t index) {
  std::shared_ptr<io::file> f = eng_.open(path_of(index), io::open_mode::create);
  if (eng_.size(*f) != segment_size_) eng_.truncate(*f, segment_size_);
  std::unique_lock lk(mu_);
  files_[index] = f;
  return f;
}

std::uint64_t segment_set::checkpoint(
    io::file& journal, const std::vector<std::pair<std::uint64_t, std::uint64_t>>& entries) {
  std::set<std::uint64_t> touched;  // ordered: syncs happen in a reproducible order
  bool created = false;
  auto segment_for_write = [&](std::uint64_t seg) -> io::file* {
    std::shared_ptr<io::file> f = get(seg);
    if (!f) {
      f = create_segment(seg);
      created = true;
    }
    touched.insert(seg);
    return f.get();
  };

  const std::size_t per_chunk = std::max<std::size_t>(1, checkpoint_chunk / page_size_);
  std::vector<std::byte> buf;
  std::vector<io::read_request> reads;
  std::vector<io::write_request> writes;
  auto flush_data = [&] {
    if (reads.empty()) return;
    eng_.read(reads);
    eng_.write(writes);
    reads.clear();
    writes.clear();
  };

  std::uint64_t applied = 0;
  std::size_t i = 0;
  while (i < entries.size()) {
    const auto [page, entry] = entries[i];
    const std::uint64_t seg = page / pages_per_segment_;
    if (!journal_index::is_zero(entry)) {
      if (reads.empty()) buf.resize(per_chunk * page_size_);
      std::byte* slot = buf.data() + reads.size() * page_size_;
      io::file* f = segment_for_write(seg);
      reads.push_back({&journal, journal_index::offset(entry), slot, page_size_});
      writes.push_back({f, (page % pages_per_segment_) * page_size_, slot, page_size_});
      if (reads.size() == per_chunk) flush_data();
      ++applied;
      ++i;
      continue;
    }
    // A run of consecutive discarded pages within one segment → one punched hole.
    std::size_t j = i + 1;
    while (j < entries.size() && journal_index::is_zero(entries[j].second) &&
           entries[j].first == entries[j - 1].first + 1 &&
           entries[j].first / pages_per_segment_ == seg) {
      ++j;
    }
    if (std::shared_ptr<io::file> f = get(seg)) {  // a missing segment is all holes already
      touched.insert(seg);
      eng_.punch_hole(*f, (page % pages_per_segment_) * page_size_, (j - i) * page_size_);
    }
    applied += j - i;
    i = j;
  }
  flush_data();

  for (std::uint64_t seg : touched) eng_.sync(*get(seg));
  if (created) eng_.sync_dir(dir_);
  return applied;
}

}  // namespace pheap::store
