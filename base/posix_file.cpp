// Shared syscall layer of the posix and io_uring engines (see posix_file.hpp).
#include "posix_file.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "pheap/error.hpp"

namespace pheap::io {

namespace {

// Closes a descriptor on scope exit (used for short-lived descriptors of directory syncs and
// clone sources).
struct fd_guard {
  int fd;
  explicit fd_guard(int f) : fd(f) {}
  ~fd_guard() {
    if (fd >= 0) ::close(fd);
  }
  fd_guard(const fd_guard&) = delete;
  fd_guard& operator=(const fd_guard&) = delete;
};

struct stat fstat_or_throw(int fd, const std::string& path, const char* op) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw_errno(errno, path, op);
  return st;
}

// Copies the data extents of `in` to `out` (already sized to `size`), skipping holes. Falls
// back to copying everything when the file system does not implement SEEK_DATA.
void sparse_copy(int in, int out, std::uint64_t size, const std::string& src,
                 const std::string& dst) {
  std::vector<char> buf(1u << 20);
  auto copy_range = [&](std::uint64_t from, std::uint64_t to) {
    while (from < to) {
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), to - from));
      pread_full(in, src, from, buf.data(), n);
      pwrite_full(out, dst, from, buf.data(), n);
      from += n;
    }
  };
  std::uint64_t pos = 0;
  while (pos < size) {
    const off_t data = ::lseek(in, static_cast<off_t>(pos), SEEK_DATA);
    if (data < 0) {
      if (errno == ENXIO) return;  // only a hole remains
      if (errno == EINVAL || errno == EOPNOTSUPP) {
        copy_range(pos, size);  // no hole information: dense copy of the rest
        return;
      }
      throw_errno(errno, src, "clone_file: lseek(SEEK_DATA)");
    }
    off_t hole = ::lseek(in, data, SEEK_HOLE);
    if (hole < 0) throw_errno(errno, src, "clone_file: lseek(SEEK_HOLE)");
    const std::uint64_t end = std::min<std::uint64_t>(static_cast<std::uint64_t>(hole), size);
    copy_range(static_cast<std::uint64_t>(data), end);
    pos = end;
  }
}

}  // namespace

posix_file::~posix_file() {
  if (fd_ >= 0) ::close(fd_);
  if (dfd_ >= 0) ::close(dfd_);
}

void posix_file::set_direct(int dfd, std::size_t mem_align, std::size_t off_align) noexcept {
  dfd_ = dfd;
  mem_align_ = mem_align;
  off_align_ = off_align;
  drop_cache_ = true;
}

posix_file::route posix_file::route_for(std::uint64_t offset, const void* buf,
                                        std::size_t len) const noexcept {
  if (dfd_ < 0 || offset % off_align_ != 0 || len % off_align_ != 0 || len == 0) {
    return {fd_, false};
  }
  return {dfd_, reinterpret_cast<std::uintptr_t>(buf) % mem_align_ != 0};
}

void aligned_buffer::free_deleter::operator()(std::byte* p) const noexcept { std::free(p); }

aligned_buffer::aligned_buffer(std::size_t align, std::size_t len) {
  void* p = nullptr;
  const int rc = ::posix_memalign(&p, std::max<std::size_t>(align, sizeof(void*)), std::max<std::size_t>(len, 1));
  if (rc != 0) throw error(errc::io, "", "allocate an aligned bounce buffer", std::strerror(rc), rc);
  p_.reset(static_cast<std::byte*>(p));
}

namespace {

int open_flags(open_mode mode) {
  int flags = O_CLOEXEC;
  switch (access_of(mode)) {
    case open_mode::create: flags |= O_RDWR | O_CREAT; break;
    case open_mode::create_new: flags |= O_RDWR | O_CREAT | O_EXCL; break;
    case open_mode::read_only: flags |= O_RDONLY; break;
    default: flags |= O_RDWR; break;
  }
  return flags;
}

// O_NONBLOCK: a FIFO where a datastore file belongs opens at once instead of waiting for a
// writer (it is refused below); it is cleared again before the descriptor is used.
int open_retrying(const std::string& path, int flags) {
  for (;;) {
    const int fd = ::open(path.c_str(), flags | O_NONBLOCK, 0644);
    if (fd >= 0) {
      (void)::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
      return fd;
    }
    if (errno != EINTR) return fd;
  }
}

const char* kind_of(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO (named pipe)";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

// Every file of a datastore is a regular file; anything else there is damage, said at once.
[[noreturn]] void refuse_non_regular(const std::string& path, mode_t m) {
  throw error(errc::corrupt, path, "open",
              std::string("is ") + kind_of(m) + ", not the regular file a datastore keeps here");
}

// Where O_DIRECT is refused, say so once per process.
void report_refused_direct(const std::string& path, const std::string& why) {
  static std::once_flag once;
  std::call_once(once, [&] {
    std::fprintf(stderr,
                 "pheap: O_DIRECT refused for %s (%s): using buffered I/O with "
                 "posix_fadvise(DONTNEED) after each sync\n",
                 path.c_str(), why.c_str());
  });
}

// The O_DIRECT alignment of `dfd`: {memory, offset}; {0, 0} if the file system reports that it
// does no direct I/O. Kernels or file systems that do not report it get 4096 for both (the
// largest logical block size in use).
std::pair<std::size_t, std::size_t> direct_alignment(int dfd) {
  struct statx stx {};
  if (::statx(dfd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) == 0 &&
      (stx.stx_mask & STATX_DIOALIGN) != 0) {
    return {stx.stx_dio_mem_align, stx.stx_dio_offset_align};
  }
  return {4096, 4096};
}

}  // namespace

int open_fd(const std::string& path, open_mode mode) {
  const int fd = open_retrying(path, open_flags(mode));
  if (fd < 0) {
    const int err = errno;
    struct stat st {};
    if (err == EISDIR && ::stat(path.c_str(), &st) == 0) refuse_non_regular(path, st.st_mode);
    throw_errno(err, path, "open");
  }
  struct stat st {};
  if (::fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) {
    ::close(fd);
    refuse_non_regular(path, st.st_mode);
  }
  return fd;
}

std::unique_ptr<posix_file> open_file(const std::string& path, open_mode mode) {
  auto f = std::make_unique<posix_file>(path, open_fd(path, mode));
  if (!is_direct(mode)) return f;
  // A second descriptor of the same inode with O_DIRECT (never O_CREAT: the first open made it).
  const int access = access_of(mode) == open_mode::read_only ? O_RDONLY : O_RDWR;
  const int dfd = open_retrying(path, access | O_CLOEXEC | O_DIRECT);
  if (dfd < 0) {
    // Out of descriptors for the second one: the file works buffered (as where O_DIRECT is
    // refused) rather than not at all.
    if (errno == EMFILE || errno == ENFILE) {
      f->set_direct(-1, 0, 0);
      return f;
    }
    if (errno != EINVAL) throw_errno(errno, path, "open (O_DIRECT)");
    report_refused_direct(path, "EINVAL at open");
    f->set_direct(-1, 0, 0);
    return f;
  }
  const auto a = fstat_or_throw(f->fd(), path, "open (fstat)");
  const auto b = fstat_or_throw(dfd, path, "open (fstat O_DIRECT)");
  if (a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
    ::close(dfd);
    throw error(errc::io, path, "open (O_DIRECT)", "the file was replaced while it was opened");
  }
  const auto [mem, off] = direct_alignment(dfd);
  if (off == 0) {
    ::close(dfd);
    report_refused_direct(path, "the file system reports no direct I/O");
    f->set_direct(-1, 0, 0);
    return f;
  }
  f->set_direct(dfd, mem, off);
  return f;
}

void throw_transfer_error(int err, const std::string& path, const char* op,
                          std::uint64_t offset, std::size_t len) {
  const errc code = (err == ENOSPC || err == EDQUOT) ? errc::no_space
                    : err == ENOENT                  ? errc::not_found
                                                     : errc::io;
  throw error(code, path, op,
              std::string(std::strerror(err)) + " (offset " + std::to_string(offset) + ", " +
                  std::to_string(len) + " bytes)",
              err);
}

void pread_full(int fd, const std::string& path, std::uint64_t offset, void* buf,
                std::size_t len, pread_fn fn) {
  if (fn == nullptr) fn = &::pread;
  auto* p = static_cast<char*>(buf);
  std::size_t done = 0;
  while (done < len) {
    const ssize_t n = fn(fd, p + done, len - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      throw_transfer_error(errno, path, "read", offset, len);
    }
    if (n == 0) {  // end of file: the caller must never see stale buffer bytes
      std::memset(p + done, 0, len - done);
      return;
    }
    done += static_cast<std::size_t>(n);
  }
}

void pwrite_full(int fd, const std::string& path, std::uint64_t offset, const void* buf,
                 std::size_t len, pwrite_fn fn) {
  if (fn == nullptr) fn = &::pwrite;
  const auto* p = static_cast<const char*>(buf);
  std::size_t done = 0;
  while (done < len) {
    const ssize_t n = fn(fd, p + done, len - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      throw_transfer_error(errno, path, "write", offset, len);
    }
    if (n == 0) throw_transfer_error(EIO, path, "write (no progress)", offset + done, len - done);
    done += static_cast<std::size_t>(n);
  }
}

namespace {

// One direct transfer of the route's descriptor; a short one (end of file, or a file system
// that split it) is finished on the buffered descriptor, whose offsets need no alignment. A
// transfer the kernel refuses with EINVAL (a limit such as RLIMIT_FSIZE cut it to an
// unaligned length) is done buffered instead, which gives the real outcome.
template <class Io, class Full>
void direct_transfer(int dfd, int fd, const std::string& path, const char* op,
                     std::uint64_t offset, char* p, std::size_t len, Io io, Full full) {
  ssize_t n;
  do {
    n = io(dfd, p, len, static_cast<off_t>(offset));
  } while (n < 0 && (errno == EINTR || errno == EAGAIN));
  if (n < 0 && errno == EINVAL) n = 0;
  if (n < 0) throw_transfer_error(errno, path, op, offset, len);
  const auto done = static_cast<std::size_t>(n);
  if (done < len) full(fd, path, offset + done, p + done, len - done);
}

}  // namespace

void file_pread(posix_file& f, std::uint64_t offset, void* buf, std::size_t len) {
  const auto r = f.route_for(offset, buf, len);
  if (r.fd == f.fd()) return pread_full(f.fd(), f.path(), offset, buf, len);
  auto full = [](int fd, const std::string& path, std::uint64_t off, char* p, std::size_t n) {
    pread_full(fd, path, off, p, n);
  };
  if (!r.bounce) {
    return direct_transfer(r.fd, f.fd(), f.path(), "read", offset, static_cast<char*>(buf), len,
                           &::pread, full);
  }
  aligned_buffer bounce(f.mem_align(), len);
  direct_transfer(r.fd, f.fd(), f.path(), "read", offset, reinterpret_cast<char*>(bounce.data()),
                  len, &::pread, full);
  std::memcpy(buf, bounce.data(), len);
}

void file_pwrite(posix_file& f, std::uint64_t offset, const void* buf, std::size_t len) {
  const auto r = f.route_for(offset, buf, len);
  if (r.fd == f.fd()) return pwrite_full(f.fd(), f.path(), offset, buf, len);
  auto full = [](int fd, const std::string& path, std::uint64_t off, char* p, std::size_t n) {
    pwrite_full(fd, path, off, p, n);
  };
  auto io = [](int fd, char* p, std::size_t n, off_t off) { return ::pwrite(fd, p, n, off); };
  if (!r.bounce) {
    return direct_transfer(r.fd, f.fd(), f.path(), "write", offset,
                           const_cast<char*>(static_cast<const char*>(buf)), len, io, full);
  }
  aligned_buffer bounce(f.mem_align(), len);
  std::memcpy(bounce.data(), buf, len);
  direct_transfer(r.fd, f.fd(), f.path(), "write", offset, reinterpret_cast<char*>(bounce.data()),
                  len, io, full);
}

void drop_cached_pages(const posix_file& f) noexcept {
  if (f.drop_cache()) (void)::posix_fadvise(f.fd(), 0, 0, POSIX_FADV_DONTNEED);
}

posix_file& as_posix(file& f, const char* op) {
  auto* p = dynamic_cast<posix_file*>(&f);
  if (p == nullptr) {
    throw error(errc::invalid_argument, f.path(), op, "file was opened by a different engine");
  }
  return *p;
}

std::unique_ptr<file> fs_engine::open(const std::string& path, open_mode mode) {
  return open_file(path, mode);
}

bool fs_engine::exists(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) return true;
  if (errno == ENOENT || errno == ENOTDIR) return false;
  throw_errno(errno, path, "exists (stat)");
}

void fs_engine::create_dir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) != 0) throw_errno(errno, path, "create_dir");
}

void fs_engine::remove_file(const std::string& path) {
  if (::unlink(path.c_str()) != 0) throw_errno(errno, path, "remove_file");
}

void fs_engine::remove_dir(const std::string& path) {
  if (::rmdir(path.c_str()) != 0) throw_errno(errno, path, "remove_dir");
}

void fs_engine::rename(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) throw_errno(errno, from, "rename to " + to);
}

std::vector<std::string> fs_engine::list_dir(const std::string& path) {
  std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(path.c_str()), &::closedir);
  if (!dir) throw_errno(errno, path, "list_dir");
  std::vector<std::string> names;
  for (;;) {
    errno = 0;
    const dirent* e = ::readdir(dir.get());
    if (e == nullptr) {
      if (errno != 0) throw_errno(errno, path, "list_dir (readdir)");
      break;
    }
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    names.emplace_back(e->d_name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

void fs_engine::sync_dir(const std::string& path) {
  fd_guard d(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (d.fd < 0) throw_errno(errno, path, "sync_dir (open)");
  if (::fsync(d.fd) != 0) throw_errno(errno, path, "sync_dir (fsync)");
}

void fs_engine::sync(file& f) {
  posix_file& pf = as_posix(f, "sync");
  if (::fdatasync(pf.fd()) != 0) throw_errno(errno, f.path(), "sync (fdatasync)");
  drop_cached_pages(pf);
}

std::uint64_t fs_engine::size(file& f) {
  return static_cast<std::uint64_t>(fstat_or_throw(as_posix(f, "size").fd(), f.path(), "size").st_size);
}

void fs_engine::truncate(file& f, std::uint64_t new_size) {
  const int fd = as_posix(f, "truncate").fd();
  for (;;) {
    if (::ftruncate(fd, static_cast<off_t>(new_size)) == 0) return;
    if (errno != EINTR) throw_errno(errno, f.path(), "truncate to " + std::to_string(new_size));
  }
}

// Where the file system cannot punch holes (EOPNOTSUPP), the range inside the file is
// overwritten with zeros instead: reads still return zeros, only the space is not given back.
void fs_engine::punch_hole(file& f, std::uint64_t offset, std::uint64_t len) {
  if (len == 0) return;
  const int fd = as_posix(f, "punch_hole").fd();
  if (::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
                  static_cast<off_t>(len)) == 0) {
    return;
  }
  const int err = errno;
  const std::string op =
      "punch_hole [" + std::to_string(offset) + ", +" + std::to_string(len) + ")";
  if (err != EOPNOTSUPP) throw_errno(err, f.path(), op);
  const std::uint64_t end = std::min<std::uint64_t>(offset + len, size(f));
  std::vector<char> zeros(1u << 20, 0);
  for (std::uint64_t pos = offset; pos < end;) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(zeros.size(), end - pos));
    pwrite_full(fd, f.path(), pos, zeros.data(), n);
    pos += n;
  }
}

std::uint64_t fs_engine::allocated_bytes(file& f) {
  const auto st = fstat_or_throw(as_posix(f, "allocated_bytes").fd(), f.path(), "allocated_bytes");
  return static_cast<std::uint64_t>(st.st_blocks) * 512u;
}

// On any failure after `dst` was created, `dst` is removed again so a retry can succeed.
bool fs_engine::clone_file(const std::string& src, const std::string& dst) {
  fd_guard in(::open(src.c_str(), O_RDONLY | O_CLOEXEC));
  if (in.fd < 0) throw_errno(errno, src, "clone_file (open source)");
  const auto st = fstat_or_throw(in.fd, src, "clone_file (stat source)");
  fd_guard out(::open(dst.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (out.fd < 0) throw_errno(errno, dst, "clone_file (create destination)");
  try {
    bool reflinked = false;
    if (::ioctl(out.fd, FICLONE, in.fd) == 0) {
      reflinked = true;
    } else {
      const int err = errno;
      // Anything but "reflink not possible here" is a real error.
      if (err != EOPNOTSUPP && err != ENOTTY && err != EXDEV && err != EINVAL &&
          err != ENOSYS) {
        throw_errno(err, dst, "clone_file (FICLONE from " + src + ")");
      }
      if (::ftruncate(out.fd, st.st_size) != 0) throw_errno(errno, dst, "clone_file (truncate)");
      sparse_copy(in.fd, out.fd, static_cast<std::uint64_t>(st.st_size), src, dst);
    }
    if (::fdatasync(out.fd) != 0) throw_errno(errno, dst, "clone_file (fdatasync)");
    return reflinked;
  } catch (...) {
    ::unlink(dst.c_str());
    throw;
  }
}

}  // namespace pheap::io
