// The input split and the partition record check of pheap/graph/mpi/partition.hpp.
#include <pheap/graph/mpi/partition.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

namespace pheap::graph::mpi {

namespace {

// An open input file, closed on scope exit.
class input_file {
 public:
  explicit input_file(const std::string& path) : path_(path), fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    struct stat st {};
    if (fd_ < 0 || ::fstat(fd_, &st) != 0) fail(0, "cannot open");
    if (!S_ISREG(st.st_mode)) {
      throw ingest_usage_error("input " + path + " is not a regular file: with several ranks every input "
                               "is split into byte ranges, so it must be a plain file");
    }
    size_ = static_cast<std::uint64_t>(st.st_size);
  }
  ~input_file() { ::close(fd_); }
  input_file(const input_file&) = delete;
  input_file& operator=(const input_file&) = delete;

  std::uint64_t size() const noexcept { return size_; }
  // Up to n bytes at `off`; fewer only at the end of the file.
  std::size_t read_at(char* dst, std::size_t n, std::uint64_t off) const {
    std::size_t got = 0;
    while (got < n) {
      const ssize_t r = ::pread(fd_, dst + got, n - got, static_cast<off_t>(off + got));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) fail(off + got, "cannot read");
      if (r == 0) break;
      got += static_cast<std::size_t>(r);
    }
    return got;
  }
  // gzip (1f 8b) or zstd (28 b5 2f fd): the magic bytes the readers decompress.
  bool compressed() const {
    std::array<unsigned char, 4> m{};
    const std::size_t n = read_at(reinterpret_cast<char*>(m.data()), m.size(), 0);
    return (n >= 2 && m[0] == 0x1f && m[1] == 0x8b) ||
           (n >= 4 && m[0] == 0x28 && m[1] == 0xb5 && m[2] == 0x2f && m[3] == 0xfd);
  }

 private:
  [[noreturn]] void fail(std::uint64_t off, const char* what) const {
    throw input_error(path_, 0, off, "", std::string(what) + ": " + std::strerror(errno));
  }
  std::string path_;
  int fd_;
  std::uint64_t size_ = 0;
};

// The first line start at or after `cut`: 0, or just past the first '\n' at or after cut - 1,
// or the end of the file.
std::uint64_t text_boundary(const input_file& f, std::uint64_t cut) {
  if (cut == 0 || cut >= f.size()) return std::min(cut, f.size());
  std::array<char, 65536> buf{};
  for (std::uint64_t off = cut - 1; off < f.size();) {
    const std::size_t n = f.read_at(buf.data(), buf.size(), off);
    if (n == 0) break;
    if (const void* nl = std::memchr(buf.data(), '\n', n)) {
      return off + static_cast<std::uint64_t>(static_cast<const char*>(nl) - buf.data()) + 1;
    }
    off += n;
  }
  return f.size();
}

std::uint64_t boundary(const input_file& f, std::uint64_t cut, input_format format, weight_kind weights) {
  if (format == input_format::text) return text_boundary(f, cut);
  const std::uint64_t rec = weights == weight_kind::none ? 16 : 24;
  return std::min(f.size(), (cut + rec - 1) / rec * rec);
}

std::uint64_t nominal_cut(std::uint64_t size, int rank, int ranks) {
  const auto r = static_cast<std::uint64_t>(rank), n = static_cast<std::uint64_t>(ranks);
  return size / n * r + size % n * r / n;  // floor(size * r / n) without overflow
}

}  // namespace

std::vector<byte_range> split_inputs(const std::vector<std::string>& inputs, input_format format,
                                     weight_kind weights, int ranks, int rank) {
  std::vector<byte_range> out;
  for (const auto& in : inputs) {
    if (ranks == 1) {
      out.push_back({0, UINT64_MAX});
      continue;
    }
    if (in == "-") {
      throw ingest_usage_error("stdin ('-') cannot be split among " + std::to_string(ranks) +
                               " ranks: give the edge lists as files");
    }
    const input_file f(in);
    if (f.compressed()) {
      throw ingest_usage_error("input " + in + " is compressed: with several ranks every input is split "
                               "into byte ranges, which a gzip or zstd stream does not allow; decompress it "
                               "first (or ingest it with one rank)");
    }
    out.push_back({boundary(f, nominal_cut(f.size(), rank, ranks), format, weights),
                   boundary(f, nominal_cut(f.size(), rank + 1, ranks), format, weights)});
  }
  return out;
}

const persistent_partition& check_partition(const pheap::manager& m, const std::string& name, int ranks,
                                            int rank) {
  const persistent_partition* p = m.find<persistent_partition>(partition_name(name)).first;
  if (find_graph_info(m, name) == nullptr || p == nullptr) {
    throw pheap::error(pheap::errc::not_found, m.path(), "find graph '" + name + "'",
                       "no distributed graph named '" + name + "' in rank " + std::to_string(rank) +
                           "'s datastore");
  }
  std::string problem;
  if (p->magic != persistent_partition::kMagic || p->version != persistent_partition::kVersion) {
    problem = "its partition record has an unknown magic or version";
  } else if (p->owner_hash != kOwnerHash) {
    problem = "its vertices were placed by owner function " + std::to_string(p->owner_hash) +
              ", this build knows " + std::to_string(kOwnerHash);
  } else if (p->ranks != static_cast<std::uint64_t>(ranks) || p->rank != static_cast<std::uint64_t>(rank)) {
    problem = "its partition record says rank " + std::to_string(p->rank) + " of " + std::to_string(p->ranks) +
              ", but it is rank " + std::to_string(rank) + " of " + std::to_string(ranks);
  }
  if (!problem.empty()) throw pheap::error(pheap::errc::corrupt, m.path(), "find graph '" + name + "'", problem);
  return *p;
}

}  // namespace pheap::graph::mpi
