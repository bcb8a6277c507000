// sparse_store/creation.hpp — creation and locking: the datastore lock, and building a new
// datastore directory under a temporary name that is renamed into place once complete
// (FORMAT.md "Creation"; used by create, snapshot and upgrade), and removing one.
//
// Contracts:
//   * lock_datastore: flock of a dedicated read-only descriptor of pheap.super, LOCK_EX (one
//     writer) or LOCK_SH (readers), without waiting: a conflict is errc::locked at once. The
//     descriptor is never used for I/O, so no io_uring request (whose teardown the kernel
//     defers after a SIGKILL) holds the lock past the holder's death.
//   * A creation directory ".<name>.creating-XXXXXX" next to the destination is held LOCK_EX
//     while it is filled; leftovers of crashed creations of the same name (unlocked ones) are
//     removed by the next creation. publish_creation renames it over the destination (absent,
//     or an empty directory create() may replace), fsyncs the parent, and takes the new
//     datastore back out again if that fsync fails (its name might not survive a crash).
#pragma once

#include <memory>
#include <string>

#include "pheap/io.hpp"

namespace pheap::store {

// Takes the datastore lock on `lock` (see above); `op` names the caller in the error.
void lock_datastore(io::file& lock, const std::string& dir, bool shared, const char* op);

// Last path component of `path` / its parent directory, trailing slashes ignored.
std::string base_name(const std::string& path);
std::string parent_of(const std::string& path);
// Throws invalid_argument unless `path` ends in a directory name (not '.', '..' or '/').
void check_datastore_name(const std::string& path, const char* op);

// A locked creation directory; released (not removed) by its destructor.
class creation_dir {
 public:
  creation_dir() = default;
  creation_dir(creation_dir&&) noexcept;
  creation_dir& operator=(creation_dir&&) noexcept;
  ~creation_dir();
  const std::string& path() const { return path_; }

  // Removes leftovers of crashed creations of `dst`, then makes and locks a fresh creation
  // directory next to it. not_found (naming `dst`, op `op`) if dst's parent does not exist.
  static creation_dir make(io::engine& eng, const std::string& dst, const char* op);

  // Removes the creation directory and everything in it, subdirectories too (best effort).
  void discard(io::engine& eng) noexcept;

  // The publication point: renames the creation directory to `dst` and fsyncs dst's parent.
  // already_exists if dst was created meanwhile (or is not an empty directory); if the parent
  // fsync fails the datastore is taken back out (restoring the empty directory it replaced
  // when `replaces_empty_dir`) before the error is thrown. On any failure the creation
  // directory is gone.
  void publish(io::engine& eng, const std::string& dst, const char* op, bool replaces_empty_dir);

 private:
  std::string path_;
  int lock_fd_ = -1;
  bool try_lock(const std::string& path);
  void release() noexcept;
};

// Takes a just-published datastore back out of `dst` after a failure that leaves its use
// unknown (best effort): renamed to a fresh creation directory and removed; the empty
// directory it replaced restored when `replaces_empty_dir`.
void take_back(io::engine& eng, const std::string& dst, const char* op,
               bool replaces_empty_dir) noexcept;

// Removes the file or directory tree `path` through the engine (depth first).
void remove_entry(io::engine& eng, const std::string& path);

}  // namespace pheap::store
