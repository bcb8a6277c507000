// sparse_store/shared_map.hpp — the store's OS layer for the reader table (reader_table.hpp):
// a MAP_SHARED mapping of an open file, and open-file-description byte locks on it. The only
// file of the store that maps memory or takes byte-range locks (scripts/check_layers.sh).
//
// Byte locks are Linux OFD locks (F_OFD_SETLK): they belong to the open file description, so
// two opens of the same file in one process conflict like two processes do, a fork()ed child
// shares its parent's, and they are released when the last descriptor of the description is
// closed — in particular when a process is killed. Nothing a dead process held stays locked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace pheap::store::os {

// A shared mapping of the first `len` bytes of `fd` (the file must be at least that long).
// Throws errc::io naming `path` if mmap fails. Unmapped by the destructor.
class shared_map {
 public:
  shared_map() = default;
  shared_map(int fd, std::size_t len, bool writable, const std::string& path);
  shared_map(shared_map&&) noexcept;
  shared_map& operator=(shared_map&&) noexcept;
  ~shared_map();

  std::byte* data() const { return data_; }
  std::size_t size() const { return len_; }

 private:
  std::byte* data_ = nullptr;
  std::size_t len_ = 0;
};

// Writes zeros over [offset, offset + len) of `fd`, so that stores through a shared mapping of
// those bytes cannot fail: a store into a hole of a full file system is a SIGBUS, and so is one
// into an fallocate'd (unwritten) extent when converting it needs a block (seen on ext4 with the
// disk full). Written bytes had their blocks reserved by the write. False on ENOSPC / EDQUOT;
// other failures throw errc::io naming `path`.
bool allocate(int fd, std::uint64_t offset, std::uint64_t len, const std::string& path);

enum class lock_kind { read, write };

// Takes a lock of `kind` on byte `at` of `fd` without waiting: false if another open file
// description holds a conflicting one. Converting a held lock (read ↔ write) is atomic.
bool try_lock(int fd, std::uint64_t at, lock_kind kind, const std::string& path);
// The same, waiting for conflicting locks to go (EINTR retried).
void lock(int fd, std::uint64_t at, lock_kind kind, const std::string& path);
void unlock(int fd, std::uint64_t at, const std::string& path);
// True if another open file description holds any lock on byte `at` (F_OFD_GETLK). Works on
// a descriptor opened read-only.
bool held_elsewhere(int fd, std::uint64_t at, const std::string& path);

}  // namespace pheap::store::os
