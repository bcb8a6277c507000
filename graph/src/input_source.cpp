#include "input_source.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace pheap::graph::detail {

namespace {

[[noreturn]] void fail(const std::string& why) { throw std::runtime_error(why); }
[[noreturn]] void corrupt(const std::string& why) { throw corrupt_input(why); }

// A file descriptor read in order; the bytes read ahead for detection come first.
class raw_reader {
 public:
  raw_reader(int fd, bool owned, std::string ahead, bool stream)
      : fd_(fd), owned_(owned), stream_(stream), ahead_(std::move(ahead)) {}
  ~raw_reader() {
    if (owned_) ::close(fd_);
  }
  raw_reader(const raw_reader&) = delete;
  raw_reader& operator=(const raw_reader&) = delete;

  std::size_t read(char* dst, std::size_t n) {
    if (pos_ < ahead_.size()) {
      const std::size_t k = std::min(n, ahead_.size() - pos_);
      std::memcpy(dst, ahead_.data() + pos_, k);
      pos_ += k;
      consumed_ += k;
      return k;
    }
    for (;;) {
      const ssize_t r = ::read(fd_, dst, n);
      if (r >= 0) {
        consumed_ += static_cast<std::uint64_t>(r);
        return static_cast<std::size_t>(r);
      }
      if (errno != EINTR) fail(std::string("read failed: ") + std::strerror(errno));
    }
  }
  std::uint64_t consumed() const noexcept { return consumed_; }  // compressed bytes, for messages
  bool stream() const noexcept { return stream_; }

 private:
  int fd_;
  bool owned_;
  bool stream_;
  std::string ahead_;
  std::size_t pos_ = 0;
  std::uint64_t consumed_ = 0;
};

class plain_source final : public input_source {
 public:
  explicit plain_source(std::unique_ptr<raw_reader> r) : r_(std::move(r)) {}
  std::size_t read(char* dst, std::size_t n) override { return r_->read(dst, n); }
  compression kind() const noexcept override { return compression::none; }
  bool stream() const noexcept override { return r_->stream(); }

 private:
  std::unique_ptr<raw_reader> r_;
};

constexpr std::size_t kInBuf = std::size_t{1} << 17;

class gzip_source final : public input_source {
 public:
  explicit gzip_source(std::unique_ptr<raw_reader> r) : r_(std::move(r)), in_(kInBuf) {
    if (inflateInit2(&z_, 15 + 32) != Z_OK) fail("zlib: inflateInit2 failed");
  }
  ~gzip_source() override { inflateEnd(&z_); }

  // The bytes decoded before damage are returned first; the damage is reported by the next
  // call, so the reader sees every complete line before it.
  std::size_t read(char* dst, std::size_t n) override {
    if (!pending_.empty()) corrupt(pending_);
    const auto want = static_cast<uInt>(std::min<std::size_t>(n, 1u << 30));
    z_.next_out = reinterpret_cast<Bytef*>(dst);
    z_.avail_out = want;
    while (z_.avail_out == want && pending_.empty()) {
      if (z_.avail_in == 0 && !refill()) {
        if (in_member_) {
          pending_ = "truncated gzip input: it ends inside a member, after compressed byte " +
                     std::to_string(r_->consumed());
        }
        break;
      }
      if (!in_member_) {  // the next member of a concatenation
        inflateReset(&z_);
        in_member_ = true;
      }
      const int rc = inflate(&z_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        in_member_ = false;
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        pending_ = std::string("corrupt gzip data near compressed byte ") +
                   std::to_string(r_->consumed() - z_.avail_in) + ": " + (z_.msg ? z_.msg : "inflate failed");
      }
    }
    const auto got = static_cast<std::size_t>(reinterpret_cast<char*>(z_.next_out) - dst);
    if (got == 0 && !pending_.empty()) corrupt(pending_);
    return got;
  }
  compression kind() const noexcept override { return compression::gzip; }
  bool stream() const noexcept override { return r_->stream(); }

 private:
  bool refill() {
    const std::size_t k = r_->read(reinterpret_cast<char*>(in_.data()), in_.size());
    z_.next_in = in_.data();
    z_.avail_in = static_cast<uInt>(k);
    return k > 0;
  }
  std::unique_ptr<raw_reader> r_;
  std::vector<Bytef> in_;
  z_stream z_{};
  bool in_member_ = true;
  std::string pending_;  // damage met after the bytes last returned
};

class zstd_source final : public input_source {
 public:
  explicit zstd_source(std::unique_ptr<raw_reader> r) : r_(std::move(r)), in_(ZSTD_DStreamInSize()) {
    ds_ = ZSTD_createDStream();
    if (ds_ == nullptr) fail("zstd: cannot create a decoder");
  }
  ~zstd_source() override { ZSTD_freeDStream(ds_); }

  std::size_t read(char* dst, std::size_t n) override {
    ZSTD_outBuffer out{dst, n, 0};
    while (out.pos == 0) {
      if (ib_.pos == ib_.size) {
        const std::size_t k = r_->read(in_.data(), in_.size());
        if (k == 0) {
          if (frame_open_) {
            corrupt("truncated zstd input: it ends inside a frame, after compressed byte " +
                    std::to_string(r_->consumed()));
          }
          break;
        }
        ib_ = {in_.data(), k, 0};
      }
      const std::size_t rc = ZSTD_decompressStream(ds_, &out, &ib_);
      if (ZSTD_isError(rc)) {
        corrupt(std::string("corrupt zstd data near compressed byte ") +
             std::to_string(r_->consumed() - (ib_.size - ib_.pos)) + ": " + ZSTD_getErrorName(rc));
      }
      frame_open_ = rc != 0;  // 0: a frame ended and everything it holds was returned
    }
    return out.pos;
  }
  compression kind() const noexcept override { return compression::zstd; }
  bool stream() const noexcept override { return r_->stream(); }

 private:
  std::unique_ptr<raw_reader> r_;
  std::vector<char> in_;
  ZSTD_inBuffer ib_{nullptr, 0, 0};
  ZSTD_DStream* ds_ = nullptr;
  bool frame_open_ = false;
};

compression detect(const unsigned char* b, std::size_t n) {
  if (n >= 2 && b[0] == 0x1f && b[1] == 0x8b) return compression::gzip;
  if (n >= 4 && b[0] == 0x28 && b[1] == 0xb5 && b[2] == 0x2f && b[3] == 0xfd) return compression::zstd;
  return compression::none;
}

// The first up-to-4 bytes of fd: read from a stream (the bytes are then kept ahead of the
// rest), pread from a regular file (leaving its position at 0).
std::string first_bytes(int fd, bool stream) {
  char b[4];
  std::size_t got = 0;
  while (got < sizeof b) {
    const ssize_t r = stream ? ::read(fd, b + got, sizeof b - got)
                             : ::pread(fd, b + got, sizeof b - got, static_cast<off_t>(got));
    if (r == 0) break;
    if (r < 0) {
      if (errno == EINTR) continue;
      fail(std::string("read failed: ") + std::strerror(errno));
    }
    got += static_cast<std::size_t>(r);
  }
  return std::string(b, got);
}

void skip(input_source& s, std::uint64_t n) {
  std::vector<char> sink(std::size_t{1} << 16);
  while (n > 0) {
    const std::size_t k = s.read(sink.data(), static_cast<std::size_t>(std::min<std::uint64_t>(n, sink.size())));
    if (k == 0) fail("the input ends before the resume offset (" + std::to_string(n) + " bytes short)");
    n -= k;
  }
}

// The sum of the content sizes the frames of [p, p+n) declare (frame headers only: each frame
// is skipped by its compressed size); nullopt when one does not declare it.
std::optional<std::uint64_t> zstd_content_size(const char* p, std::size_t n) {
  std::uint64_t total = 0;
  for (std::size_t off = 0; off < n;) {
    const unsigned long long c = ZSTD_getFrameContentSize(p + off, n - off);
    const std::size_t f = ZSTD_findFrameCompressedSize(p + off, n - off);
    if (c == ZSTD_CONTENTSIZE_UNKNOWN || c == ZSTD_CONTENTSIZE_ERROR || ZSTD_isError(f) || f == 0) {
      return std::nullopt;
    }
    total += c;
    off += f;
  }
  return total;
}

}  // namespace

std::unique_ptr<input_source> open_input(const std::string& path, std::uint64_t offset) {
  const bool is_stdin = path == "-";
  int fd = STDIN_FILENO;
  if (!is_stdin) {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);  // once: a FIFO opened twice loses data
    if (fd < 0) fail(std::string("cannot open: ") + std::strerror(errno));
  }
  struct stat st {};
  const bool stream = is_stdin || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode);
  if (!stream) ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  std::string ahead;
  try {
    ahead = first_bytes(fd, stream);
  } catch (...) {
    if (!is_stdin) ::close(fd);
    throw;
  }
  const compression c =
      detect(reinterpret_cast<const unsigned char*>(ahead.data()), ahead.size());
  if (!stream) ahead.clear();  // pread left the file at its start
  if (c == compression::none && offset != 0 && !stream) {
    if (::lseek(fd, static_cast<off_t>(offset), SEEK_SET) < 0) {
      const int err = errno;
      ::close(fd);
      fail(std::string("cannot seek: ") + std::strerror(err));
    }
    return std::make_unique<plain_source>(std::make_unique<raw_reader>(fd, true, "", false));
  }
  auto raw = std::make_unique<raw_reader>(fd, !is_stdin, std::move(ahead), stream);
  std::unique_ptr<input_source> s;
  switch (c) {
    case compression::none: s = std::make_unique<plain_source>(std::move(raw)); break;
    case compression::gzip: s = std::make_unique<gzip_source>(std::move(raw)); break;
    case compression::zstd: s = std::make_unique<zstd_source>(std::move(raw)); break;
  }
  skip(*s, offset);
  return s;
}

bool is_stream(const std::string& path) {
  if (path == "-") return true;
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode);
}

std::optional<std::uint64_t> decoded_size(const std::string& path) {
  if (is_stream(path)) return std::nullopt;  // never opened here: a FIFO is read once
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  std::optional<std::uint64_t> size;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    const std::string head = first_bytes(fd, false);
    const compression c = detect(reinterpret_cast<const unsigned char*>(head.data()), head.size());
    if (c == compression::none) {
      size = static_cast<std::uint64_t>(st.st_size);
    } else if (c == compression::zstd && st.st_size > 0) {
      void* p = ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
      if (p != MAP_FAILED) {
        size = zstd_content_size(static_cast<const char*>(p), static_cast<std::size_t>(st.st_size));
        ::munmap(p, static_cast<std::size_t>(st.st_size));
      }
    }
  }
  ::close(fd);
  return size;
}

}  // namespace pheap::graph::detail
