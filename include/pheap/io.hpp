// pheap/io.hpp — the I/O seam. Every byte pheap reads or writes on disk goes through an
// `io::engine` (LevelDB's Env is the model), so tests can swap in a fault-injecting engine (tests/support/fault_engine.hpp, not part
// of the library) and
// the library can fall back from io_uring to pread/pwrite at run time.
//
// Engines shipped:
//   make_uring_engine()   liburing, batched submission; the default.
//   make_posix_engine()   pread/pwrite loop; used when io_uring setup fails (EPERM, ENOSYS,
//                         kernel.io_uring_disabled) or when asked for (PHEAP_IO_ENGINE=posix).
//   default_engine()      io_uring if it works here, else posix; the fallback is logged once
//                         to stderr ("pheap: io_uring unavailable (...): using pread/pwrite").
//
// Contracts every engine keeps:
//   * read()/write() transfer every byte or throw: short transfers and EINTR are retried
//     internally. A read beyond end of file yields zeros for the missing part, never stale
//     buffer bytes.
//   * Failures throw pheap::error naming the file path, the operation and errno
//     (errc::no_space for ENOSPC/EDQUOT, errc::not_found for ENOENT, errc::io otherwise).
//   * A batch is not atomic: after a throw, any subset of the batch may have reached the file.
//   * Nothing is durable until sync() (file data) / sync_dir() (names in a directory).
//   * Thread safety: an engine and its files may be used from many threads at once.
//     Buffers must not be inside a userfaultfd-registered region (the pager bounces).
//   * Files opened with open_mode::direct keep every contract above. Transfers whose offset
//     and length are multiples of the file's direct-I/O alignment bypass the page cache
//     (O_DIRECT); a buffer that is not aligned in memory is copied through an aligned bounce
//     buffer. Other transfers use a buffered descriptor of the same file (coherent: the kernel
//     writes back and drops cached pages around direct I/O). Where the file system refuses
//     O_DIRECT (ramfs, some FUSE; EINVAL at open), the file is buffered and sync() drops its
//     cached pages after the fdatasync (posix_fadvise DONTNEED); the first such file of the
//     process is reported on stderr ("pheap: O_DIRECT refused ..."). The same fallback, silent,
//     applies when the process has no descriptor to spare for the O_DIRECT one (EMFILE).
//     file::direct() says which applies.
#pragma once

#include "pheap/error.hpp"  // first: the C++20 check

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace pheap::io {

enum class open_mode : unsigned {
  read_only,      // O_RDONLY; the file must exist
  read_write,     // O_RDWR; the file must exist
  create,         // O_RDWR|O_CREAT; created if missing (caller fsyncs the directory)
  create_new,     // O_RDWR|O_CREAT|O_EXCL; errc::already_exists if present
  // A flag OR-ed into one of the above: the file's data bypasses the page cache where the
  // file system allows (see "Files opened with open_mode::direct" above).
  direct = 0x100,
};
constexpr open_mode operator|(open_mode a, open_mode b) {
  return static_cast<open_mode>(static_cast<unsigned>(a) | static_cast<unsigned>(b));
}
// The access mode without flags / whether the direct flag is set.
constexpr open_mode access_of(open_mode m) {
  return static_cast<open_mode>(static_cast<unsigned>(m) & 0xffu);
}
constexpr bool is_direct(open_mode m) {
  return (static_cast<unsigned>(m) & static_cast<unsigned>(open_mode::direct)) != 0;
}

class engine;

// An open file. Created by engine::open, closed by its destructor. Thread-safe.
class file {
 public:
  virtual ~file() = default;
  file(const file&) = delete;
  file& operator=(const file&) = delete;

  const std::string& path() const noexcept { return path_; }
  // The underlying descriptor (for flock, fstat and mmap); never -1 for an open file. For a
  // file opened with open_mode::direct it is the buffered descriptor.
  virtual int fd() const noexcept = 0;
  // True if aligned transfers of this file bypass the page cache (opened with
  // open_mode::direct on a file system that accepts O_DIRECT).
  virtual bool direct() const noexcept { return false; }

 protected:
  explicit file(std::string path) : path_(std::move(path)) {}

 private:
  std::string path_;
};

struct read_request {
  file* f;
  std::uint64_t offset;
  void* buf;
  std::size_t len;
};

struct write_request {
  file* f;
  std::uint64_t offset;
  const void* buf;
  std::size_t len;
};

class engine {
 public:
  virtual ~engine() = default;

  // "io_uring", "posix", "fault(io_uring)", ...
  virtual std::string name() const = 0;

  // --- files and directories -----------------------------------------------------------
  virtual std::unique_ptr<file> open(const std::string& path, open_mode mode) = 0;
  virtual bool exists(const std::string& path) = 0;
  virtual void create_dir(const std::string& path) = 0;  // errc::already_exists if present
  virtual void remove_file(const std::string& path) = 0;  // errc::not_found if missing
  virtual void remove_dir(const std::string& path) = 0;   // must be empty
  virtual void rename(const std::string& from, const std::string& to) = 0;
  virtual std::vector<std::string> list_dir(const std::string& path) = 0;  // names, no . ..
  // fsync of a directory: makes creations, removals and renames inside it durable.
  virtual void sync_dir(const std::string& path) = 0;

  // --- data ------------------------------------------------------------------------------
  // Batched transfers. Requests may target different files and run in any order; requests
  // of one batch must not overlap each other.
  virtual void read(std::span<const read_request> batch) = 0;
  virtual void write(std::span<const write_request> batch) = 0;
  // fdatasync. A failure means the data written since the last successful sync may be lost;
  // callers must not retry and then trust the file: after a failed fsync the kernel
  // may already have dropped the dirty pages, so a later successful sync proves nothing.
  virtual void sync(file& f) = 0;
  // sync() of several files, in parallel where the engine can (io_uring: all fdatasyncs in
  // one submission; the default syncs one after the other). Throws for the first failure
  // found; the others may or may not have been synced.
  virtual void sync_files(std::span<file* const> files) {
    for (file* f : files) sync(*f);
  }
  virtual std::uint64_t size(file& f) = 0;
  virtual void truncate(file& f, std::uint64_t size) = 0;
  // Deallocates [offset, offset+len): later reads return zeros, st_blocks shrinks.
  virtual void punch_hole(file& f, std::uint64_t offset, std::uint64_t len) = 0;
  // Bytes actually allocated on disk (st_blocks * 512).
  virtual std::uint64_t allocated_bytes(file& f) = 0;

  // Copies `src` to the new file `dst`: reflink (FICLONE) where the file system supports it,
  // otherwise a sparse copy (holes stay holes: SEEK_DATA/SEEK_HOLE). `dst` must not exist.
  // The copy is synced; the caller syncs dst's directory. Returns true if reflinked.
  virtual bool clone_file(const std::string& src, const std::string& dst) = 0;

  // Convenience for single transfers.
  void read_at(file& f, std::uint64_t offset, void* buf, std::size_t len) {
    read_request r{&f, offset, buf, len};
    read(std::span<const read_request>(&r, 1));
  }
  void write_at(file& f, std::uint64_t offset, const void* buf, std::size_t len) {
    write_request r{&f, offset, buf, len};
    write(std::span<const write_request>(&r, 1));
  }
};

// io_uring engine. `queue_depth` bounds in-flight requests per submitting thread.
// Throws errc::unavailable when io_uring cannot be set up here (the error says why).
std::shared_ptr<engine> make_uring_engine(unsigned queue_depth = 64);
std::shared_ptr<engine> make_posix_engine();

// Honours PHEAP_IO_ENGINE=uring|posix; otherwise io_uring with a logged fallback to posix.
// Returns one process-wide instance.
std::shared_ptr<engine> default_engine();

}  // namespace pheap::io
