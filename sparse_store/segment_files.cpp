#include "segment_files.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <thread>

#include "pheap/error.hpp"
#include "layout.hpp"
#include "segment_header.hpp"

namespace pheap::store {

void for_each_data_extent(const io::file& f, std::uint64_t begin, std::uint64_t end,
                          const char* op,
                          const std::function<void(std::uint64_t, std::uint64_t)>& fn) {
  const int fd = f.fd();
  auto pos = static_cast<off_t>(begin);
  while (static_cast<std::uint64_t>(pos) < end) {
    const off_t data = ::lseek(fd, pos, SEEK_DATA);
    if (data < 0) {
      if (errno == ENXIO) break;  // no data past pos
      throw_errno(errno, f.path(), std::string(op) + " (SEEK_DATA)");
    }
    if (static_cast<std::uint64_t>(data) >= end) break;
    off_t hole = ::lseek(fd, data, SEEK_HOLE);
    if (hole < 0) throw_errno(errno, f.path(), std::string(op) + " (SEEK_HOLE)");
    hole = std::min<off_t>(hole, static_cast<off_t>(end));
    fn(static_cast<std::uint64_t>(data), static_cast<std::uint64_t>(hole));
    pos = hole;
  }
}

segment_files::segment_files(io::engine& eng, std::string dir, const uuid& id,
                             std::uint32_t page_size, std::uint64_t segment_size,
                             std::uint64_t segment_count, bool read_only)
    : eng_(eng),
      dir_(std::move(dir)),
      id_(id),
      page_size_(page_size),
      segment_size_(segment_size),
      pages_per_segment_(segment_size / page_size),
      read_only_(read_only),
      files_(segment_count),
      budget_(2) {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0) {
    if (lim.rlim_cur == RLIM_INFINITY) {
      budget_ = files_.size();
    } else if (lim.rlim_cur > 64) {
      budget_ = std::max<std::size_t>(2, static_cast<std::size_t>(lim.rlim_cur - 64) / 4);
    }
  }
}

std::string segment_files::path_of(std::uint64_t seg) const {
  return join(dir_, segment_name(seg));
}

std::shared_ptr<io::file> segment_files::cached(std::uint64_t seg) const {
  std::shared_lock lk(mu_);
  return files_[seg];
}

std::shared_ptr<io::file> segment_files::for_read(std::uint64_t seg, std::uint64_t page,
                                                  std::uint64_t epoch, bool patient) {
  if (auto f = cached(seg)) return f;
  return open_checked(seg,
                      "required by page " + std::to_string(page) + " of epoch " + std::to_string(epoch),
                      patient);
}

std::shared_ptr<io::file> segment_files::if_exists(std::uint64_t seg) {
  if (auto f = cached(seg)) return f;
  if (!eng_.exists(path_of(seg))) return nullptr;
  return open_checked(seg, "", true);
}

// Opens segment `seg` (which must exist: else corrupt "missing …, <why_needed>") and checks its
// size and identity header once; the open file is kept.
std::shared_ptr<io::file> segment_files::open_checked(std::uint64_t seg,
                                                      const std::string& why_needed, bool patient) {
  std::lock_guard lk(open_mu_);
  if (auto f = cached(seg)) return f;
  const std::string path = path_of(seg);
  if (!eng_.exists(path)) {
    throw error(errc::corrupt, path, "open segment", "missing segment file, " + why_needed);
  }
  const auto mode = read_only_ ? (cached_reads_ ? io::open_mode::read_only
                                               : io::open_mode::read_only | io::open_mode::direct)
                              : io::open_mode::read_write | io::open_mode::direct;
  std::shared_ptr<io::file> f = open_file(path, mode, patient);
  const std::uint64_t size = eng_.size(*f);
  if (size != file_size()) {
    throw error(errc::corrupt, path, "open segment",
                "segment file has " + std::to_string(size) + " bytes, expected " +
                    std::to_string(file_size()) + " (truncated or extended)");
  }
  std::vector<std::byte> hdr(segment_header_size);  // (the engine bounces it for O_DIRECT)
  eng_.read_at(*f, 2 * segment_size_, hdr.data(), segment_header_size);
  segment_header h;
  std::string problem = decode_segment_header(hdr.data(), segment_layout_version, h);
  if (problem.empty()) problem = segment_identity_problem(h, id_, seg, page_size_, segment_size_);
  if (!problem.empty()) throw error(errc::corrupt, path, "open segment", problem);
  keep(seg, f);
  return f;
}

std::shared_ptr<io::file> segment_files::for_write(std::uint64_t seg, bool& created,
                                                   bool patient) {
  if (auto f = cached(seg)) return f;
  {
    std::lock_guard lk(open_mu_);
    if (!cached(seg) && !eng_.exists(path_of(seg))) {
      created = true;
      return create(seg, patient);
    }
  }
  return open_checked(seg, "", patient);
}

// Under open_mu_. See the file comment: complete under a temporary name, then renamed.
std::shared_ptr<io::file> segment_files::create(std::uint64_t seg, bool patient) {
  const std::string path = path_of(seg);
  const std::string tmp = path + creating_suffix;
  if (eng_.exists(tmp)) eng_.remove_file(tmp);  // a crashed creation's leftover
  {
    auto f = open_file(tmp, io::open_mode::create | io::open_mode::direct, patient);
    write_identity(*f, seg, id_);  // header, then the full size, synced
  }
  eng_.rename(tmp, path);
  std::shared_ptr<io::file> f =
      open_file(path, io::open_mode::read_write | io::open_mode::direct, patient);
  keep(seg, f);
  return f;
}

bool out_of_descriptors(const error& e) noexcept {
  return e.sys_errno() == EMFILE || e.sys_errno() == ENFILE;
}

// Under open_mu_. Retries an open that failed for want of descriptors after closing kept files
// nobody uses; while all are in use (other threads mid-transfer), for up to a second when
// `patient`, else once.
std::unique_ptr<io::file> segment_files::open_file(const std::string& path, io::open_mode mode,
                                                   bool patient) {
  for (int attempt = 0;; ++attempt) {
    try {
      return eng_.open(path, mode);
    } catch (const error& e) {
      if (!out_of_descriptors(e) || attempt == (patient ? 1000 : 1)) throw;
    }
    scarce_.store(true, std::memory_order_relaxed);
    if (release_idle(0) == 0 && patient) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// Under open_mu_: keeps `f` as segment `seg`'s file, closing idle ones beyond the budget.
void segment_files::keep(std::uint64_t seg, std::shared_ptr<io::file> f) {
  // Once descriptors ran short, nothing is kept: every file closes when its last user is done,
  // so threads waiting for a descriptor are not starved by others re-using kept files.
  if (scarce_.load(std::memory_order_relaxed)) return;
  if (kept_ >= budget_) release_idle(budget_ / 2);
  std::unique_lock w(mu_);
  if (!files_[seg]) ++kept_;
  files_[seg] = std::move(f);
}

// Closes kept files no call holds (the cache's reference is the only one) until at most
// `keep` remain; returns how many it closed.
std::size_t segment_files::release_idle(std::size_t keep) {
  std::unique_lock w(mu_);
  std::size_t n = 0;
  for (auto& f : files_) {
    if (kept_ <= keep) break;
    if (f && f.use_count() == 1) {
      f.reset();
      --kept_;
      ++n;
    }
  }
  return n;
}

void segment_files::write_identity(io::file& f, std::uint64_t seg, const uuid& id) {
  segment_header h;
  h.page_size = page_size_;
  h.id = id;
  h.index = seg;
  h.segment_size = segment_size_;
  std::vector<std::byte> hdr(segment_header_size);  // (the engine bounces it for O_DIRECT)
  encode_segment_header(hdr.data(), h);
  eng_.write_at(f, 2 * segment_size_, hdr.data(), segment_header_size);
  if (eng_.size(f) != file_size()) eng_.truncate(f, file_size());
  eng_.sync(f);
}

std::vector<std::uint64_t> segment_files::listed() const {
  std::vector<std::uint64_t> out;
  for (const auto& n : eng_.list_dir(dir_)) {
    if (auto i = parse_segment_name(n); i && *i < files_.size()) out.push_back(*i);
  }
  return out;
}

}  // namespace pheap::store
