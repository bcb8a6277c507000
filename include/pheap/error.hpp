// pheap/error.hpp — the one exception type every pheap layer throws.
//
// Contract: a message always names the datastore (or file) path, the operation and the cause,
// e.g. "pheap: open /data/g1: superblock slot 0 and 1 both corrupt (crc mismatch)".
// `code()` lets callers branch without parsing text; `sys_errno()` keeps the OS error (0 when
// the failure is not an OS error).
//
// A full heap is not an error code: like any allocator, allocate() returns nullptr and
// pheap::allocator / construct throw std::bad_alloc (pheap/manager.hpp). A full disk is
// errc::no_space.
#pragma once

// pheap.hpp (and so every header above the heap) and io.hpp / sparse_store.hpp reach this one
// before anything C++20-only: a consumer built as C++17 is told so first, in one line, instead
// of with errors deep in the headers.
#if __cplusplus < 202002L
#error "pheap needs C++20: compile with -std=c++20 (CMake: linking pheap::pheap sets cxx_std_20)"
#endif

#include <stdexcept>
#include <string>

namespace pheap {

enum class errc {
  io,                // an OS call failed (EIO, EBADF, ...); sys_errno() says which
  no_space,          // ENOSPC / EDQUOT
  not_found,         // datastore directory or a required file does not exist
  already_exists,    // create on a path that already holds something
  not_a_datastore,   // directory exists but is not a pheap datastore (foreign)
  newer_format,      // written by a newer pheap format version
  older_format,      // written by an older format version this build no longer reads
  corrupt,           // checksum mismatch, torn or truncated metadata, impossible values
  locked,            // another process holds the datastore (flock)
  read_only,         // mutation attempted through a read-only handle
  invalid_argument,  // bad option or argument (zero capacity, page out of range, ...)
  type_mismatch,     // named object found with a different type
  unavailable,       // a kernel facility (userfaultfd, io_uring) is missing or refused
  poisoned,          // an earlier fatal error ended this epoch; reopen to continue
  stale,             // a reader's watermark was released by the writer; refresh or reopen
};

const char* to_string(errc code) noexcept;

class error : public std::runtime_error {
 public:
  // `path`: datastore or file concerned; `op`: what was being done ("open", "commit",
  // "write segment-00003"); `cause`: human-readable reason; `sys_errno`: errno or 0.
  error(errc code, std::string path, std::string op, std::string cause, int sys_errno = 0);

  errc code() const noexcept { return code_; }
  const std::string& path() const noexcept { return path_; }
  const std::string& op() const noexcept { return op_; }
  int sys_errno() const noexcept { return errno_; }

 private:
  errc code_;
  std::string path_;
  std::string op_;
  int errno_;
};

// Throws error{io or no_space (for ENOSPC/EDQUOT), path, op, strerror(err), err}.
[[noreturn]] void throw_errno(int err, const std::string& path, const std::string& op);

}  // namespace pheap
