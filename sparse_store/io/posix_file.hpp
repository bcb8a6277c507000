// sparse_store/io/posix_file.hpp — internals shared by the posix and io_uring engines: the file type
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
#include <string>

#include "pheap/io.hpp"

namespace pheap::io {

// An open descriptor plus its path. Owns the descriptor; closing errors are ignored (the data
// contract is carried by sync(), never by close()).
class posix_file final : public file {
 public:
  posix_file(std::string path, int fd) : file(std::move(path)), fd_(fd) {}
  ~posix_file() override;
  int fd() const noexcept override { return fd_; }

 private:
  int fd_;
};

// Opens `path` per `mode` with O_CLOEXEC; new files get mode 0644. Throws naming the path.
int open_fd(const std::string& path, open_mode mode);

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
