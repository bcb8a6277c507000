// base/posix_file.hpp — internals shared by the posix and io_uring engines: the file type
// both hand out, the syscall helpers with their error conventions, and `fs_engine`, the base
// class that implements every file/directory operation of pheap::io::engine with plain
// syscalls. Engines derive from it and supply read()/write() (and may override sync()).
//
// Error convention (all helpers): a failing syscall throws pheap::error whose message names
// the operation and the path and carries errno (see pheap::throw_errno for the errc mapping).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "pheap/io.hpp"

namespace pheap::io {

// An open descriptor plus its path. Owns the descriptor; closing errors are ignored (the data
// contract is carried by sync(), never by close()).
//
// A file opened with open_mode::direct holds a second descriptor of the same inode opened
// with O_DIRECT, and the alignment the file system asks of it (statx STATX_DIOALIGN; 4096
// when not reported). route() sends each transfer to one of the two (io.hpp: aligned offset
// and length → O_DIRECT, the rest buffered). Where O_DIRECT was refused there is no second
// descriptor and every transfer is buffered; sync() drops the cached pages of either kind.
class posix_file final : public file {
 public:
  posix_file(std::string path, int fd) : file(std::move(path)), fd_(fd) {}
  ~posix_file() override;
  int fd() const noexcept override { return fd_; }
  bool direct() const noexcept override { return dfd_ >= 0; }

  // Opened with open_mode::direct (O_DIRECT accepted or not): sync() drops cached pages.
  bool drop_cache() const noexcept { return drop_cache_; }

  // How one transfer runs: the descriptor, and whether the caller's buffer must be copied
  // through an aligned bounce buffer first (O_DIRECT with an unaligned buffer).
  struct route {
    int fd;
    bool bounce;
  };
  route route_for(std::uint64_t offset, const void* buf, std::size_t len) const noexcept;
  std::size_t mem_align() const noexcept { return mem_align_; }

  // Turns this into a direct-mode file: `dfd` (O_DIRECT, or -1 if refused) and alignments.
  void set_direct(int dfd, std::size_t mem_align, std::size_t off_align) noexcept;

 private:
  int fd_;
  int dfd_ = -1;
  std::size_t mem_align_ = 0;
  std::size_t off_align_ = 0;
  bool drop_cache_ = false;
};

// Opens `path` per `mode` (its access part) with O_CLOEXEC; new files get mode 0644. Throws
// naming the path; errc::corrupt, at once, when it is not a regular file (a FIFO, a directory,
// a device: opened with O_NONBLOCK, so a FIFO never blocks the open).
int open_fd(const std::string& path, open_mode mode);
// Opens `path` per `mode`, including the direct flag (see posix_file).
std::unique_ptr<posix_file> open_file(const std::string& path, open_mode mode);

// Memory aligned for O_DIRECT transfers, freed by the destructor.
class aligned_buffer {
 public:
  aligned_buffer() = default;
  aligned_buffer(std::size_t align, std::size_t len);
  std::byte* data() const noexcept { return p_.get(); }

 private:
  struct free_deleter {
    void operator()(std::byte* p) const noexcept;
  };
  std::unique_ptr<std::byte, free_deleter> p_;
};

// Throws pheap::error for `err` with the offset/length of a transfer in the cause, so a failed
// read or write says where it failed ("pheap: write /d/seg-0: No space left (offset 4096, 512
// bytes)").
[[noreturn]] void throw_transfer_error(int err, const std::string& path, const char* op,
                                       std::uint64_t offset, std::size_t len);

// Syscall shapes for the transfer loops below; injectable so tests can feed short counts and
// EINTR without a misbehaving file system.
using pread_fn = ssize_t (*)(int, void*, size_t, off_t);
using pwrite_fn = ssize_t (*)(int, const void*, size_t, off_t);

// Reads exactly `len` bytes at `offset`: retries EINTR/EAGAIN and short reads; when end of file
// is reached first, the rest of `buf` is zero-filled. Throws on any other error.
void pread_full(int fd, const std::string& path, std::uint64_t offset, void* buf,
                std::size_t len, pread_fn fn = nullptr);
// Writes exactly `len` bytes at `offset`: retries EINTR/EAGAIN and short writes. A write that
// makes no progress (returns 0) is reported as EIO rather than retried forever.
void pwrite_full(int fd, const std::string& path, std::uint64_t offset, const void* buf,
                 std::size_t len, pwrite_fn fn = nullptr);

// Reads / writes exactly `len` bytes of `f` at `offset` along its route: the direct descriptor
// (through a bounce buffer if `buf` is unaligned; a short direct transfer is finished on the
// buffered descriptor) or the buffered one. Same contract as pread_full / pwrite_full.
void file_pread(posix_file& f, std::uint64_t offset, void* buf, std::size_t len);
void file_pwrite(posix_file& f, std::uint64_t offset, const void* buf, std::size_t len);

// After a successful fdatasync of `f`: drops its cached pages if it is a direct-mode file.
void drop_cached_pages(const posix_file& f) noexcept;

// Downcast used by engines: every file an fs_engine hands out is a posix_file. Throws
// errc::invalid_argument if a file from another engine is passed in.
posix_file& as_posix(file& f, const char* op);

// Implements the non-transfer half of the engine interface with plain syscalls.
class fs_engine : public engine {
 public:
  std::unique_ptr<file> open(const std::string& path, open_mode mode) override;
  bool exists(const std::string& path) override;
  void create_dir(const std::string& path) override;
  void remove_file(const std::string& path) override;
  void remove_dir(const std::string& path) override;
  void rename(const std::string& from, const std::string& to) override;
  std::vector<std::string> list_dir(const std::string& path) override;
  void sync_dir(const std::string& path) override;

  // fdatasync(2) as a plain syscall. Not retried on any error (see engine::sync).
  void sync(file& f) override;
  std::uint64_t size(file& f) override;
  void truncate(file& f, std::uint64_t size) override;
  void punch_hole(file& f, std::uint64_t offset, std::uint64_t len) override;
  std::uint64_t allocated_bytes(file& f) override;
  bool clone_file(const std::string& src, const std::string& dst) override;
};

}  // namespace pheap::io
