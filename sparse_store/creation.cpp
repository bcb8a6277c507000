#include "creation.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <utility>
#include <vector>

#include "pheap/error.hpp"
#include "layout.hpp"
#include "superblock.hpp"

namespace pheap::store {

namespace {

// Prefix of the creation directories of `name`: ".<name>.creating-".
std::string creation_prefix(const std::string& name) { return "." + name + ".creating-"; }

}  // namespace

void lock_datastore(io::file& lock, const std::string& dir, bool shared, const char* op) {
  const int how = (shared ? LOCK_SH : LOCK_EX) | LOCK_NB;
  while (::flock(lock.fd(), how) != 0) {
    if (errno == EINTR) continue;
    if (errno == EWOULDBLOCK) {
      throw error(errc::locked, dir, op,
                  shared ? "datastore " + dir + " is open read-write by another process"
                         : "datastore " + dir +
                               " is open by another process (read-write or read-only)");
    }
    throw_errno(errno, lock.path(), "flock");
  }
}

std::string base_name(const std::string& path) {
  std::filesystem::path p(path);
  while (p.has_relative_path() && !p.has_filename()) p = p.parent_path();
  return p.filename().string();
}

std::string parent_of(const std::string& path) {
  std::filesystem::path p(path);
  while (p.has_relative_path() && !p.has_filename()) p = p.parent_path();  // strip "dir/"
  auto parent = p.parent_path();
  return parent.empty() ? "." : parent.string();
}

void check_datastore_name(const std::string& path, const char* op) {
  const std::string name = base_name(path);
  if (name.empty() || name == "." || name == "..") {
    throw error(errc::invalid_argument, path, op,
                "the datastore path must end in a directory name (not '.', '..' or '/')");
  }
}

creation_dir::creation_dir(creation_dir&& o) noexcept
    : path_(std::move(o.path_)), lock_fd_(std::exchange(o.lock_fd_, -1)) {}

creation_dir& creation_dir::operator=(creation_dir&& o) noexcept {
  if (this != &o) {
    release();
    path_ = std::move(o.path_);
    lock_fd_ = std::exchange(o.lock_fd_, -1);
  }
  return *this;
}

creation_dir::~creation_dir() { release(); }

void creation_dir::release() noexcept {
  if (lock_fd_ >= 0) ::close(lock_fd_);
  lock_fd_ = -1;
}

// Opens and locks `path` without blocking; false if it is gone, locked or already removed (a
// cleaner that removed it first is detected by st_nlink == 0).
bool creation_dir::try_lock(const std::string& path) {
  release();
  lock_fd_ = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (lock_fd_ < 0) return false;
  int rc;
  do {
    rc = ::flock(lock_fd_, LOCK_EX | LOCK_NB);
  } while (rc != 0 && errno == EINTR);
  struct stat st {};
  if (rc != 0 || ::fstat(lock_fd_, &st) != 0 || st.st_nlink == 0) {
    release();
    return false;
  }
  path_ = path;
  return true;
}

void creation_dir::discard(io::engine& eng) noexcept {
  try {
    // Depth first: a creation directory may hold whole datastores (pheap::mpi's ranks).
    for (const auto& n : eng.list_dir(path_)) remove_entry(eng, join(path_, n));
    eng.remove_dir(path_);
  } catch (const error&) {
  }
}

creation_dir creation_dir::make(io::engine& eng, const std::string& dst, const char* op) {
  const std::string name = base_name(dst), parent = parent_of(dst);
  const std::string prefix = creation_prefix(name);
  // Leftovers of crashed creations of the same name; a locked one belongs to a live creation.
  std::vector<std::string> names;
  try {
    names = eng.list_dir(parent);
  } catch (const error&) {
    // the create_dir below reports an unusable parent properly
  }
  for (const auto& n : names) {
    if (n.size() <= prefix.size() || n.compare(0, prefix.size(), prefix) != 0) continue;
    creation_dir stale;
    if (stale.try_lock(join(parent, n))) stale.discard(eng);
  }
  static constexpr char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  for (int attempt = 0; attempt < 100; ++attempt) {
    const uuid r = new_uuid();
    std::string suffix;
    for (int i = 0; i < 6; ++i) suffix += alphabet[r[static_cast<std::size_t>(i)] % 36];
    const std::string path = join(parent, prefix + suffix);
    try {
      eng.create_dir(path);
    } catch (const error& e) {
      if (e.code() == errc::already_exists) continue;
      if (e.code() == errc::not_found) {
        throw error(errc::not_found, dst, op, "parent directory " + parent + " does not exist",
                    e.sys_errno());
      }
      // Told as of the datastore: its creation directory is a name the user never gave.
      const std::string what = e.what(), after = path + ": ";
      const auto at = what.find(after);
      throw error(e.code(), dst, op,
                  "cannot make its creation directory in " + parent + ": " +
                      (at == std::string::npos ? what : what.substr(at + after.size())),
                  e.sys_errno());
    }
    // Lost only to a concurrent cleaner that got there first: try a new name.
    creation_dir c;
    if (c.try_lock(path)) return c;
  }
  throw error(errc::io, parent, op,
              "could not make a temporary creation directory for '" + name + "' after 100 attempts");
}

void creation_dir::publish(io::engine& eng, const std::string& dst, const char* op,
                           bool replaces_empty_dir) {
  try {
    eng.rename(path_, dst);  // the creation point
  } catch (const error& e) {
    discard(eng);
    const int en = e.sys_errno();
    if (en == ENOTEMPTY || en == EEXIST || en == ENOTDIR || en == EISDIR) {
      throw error(errc::already_exists, dst, op,
                  "path was created by someone else while the datastore was being built (" +
                      std::string(e.what()) + ")");
    }
    if (en == EBUSY) {
      throw error(errc::invalid_argument, dst, op,
                  "cannot replace a mount point or busy directory; create the datastore in a "
                  "subdirectory of it");
    }
    throw;
  }
  const std::string parent = parent_of(dst);
  try {
    eng.sync_dir(parent);  // the name dst
  } catch (const error& e) {
    // The name may not be durable: take the datastore back out rather than hand out one whose
    // existence a crash could undo. Told as of the datastore, the cause kept.
    take_back(eng, dst, op, replaces_empty_dir);
    throw error(e.code(), dst, op,
                "taken back out, its name could not be made durable (" + std::string(e.what()) + ")",
                e.sys_errno());
  } catch (...) {
    take_back(eng, dst, op, replaces_empty_dir);
    throw;
  }
}

// What is left is nothing, the empty directory it replaced, or a complete datastore.
void take_back(io::engine& eng, const std::string& dst, const char* op,
               bool replaces_empty_dir) noexcept {
  try {
    creation_dir back = creation_dir::make(eng, dst, op);
    eng.rename(dst, back.path());  // over the empty creation directory
    back.discard(eng);
    if (replaces_empty_dir) eng.create_dir(dst);
  } catch (const error&) {
  }
}

void remove_entry(io::engine& eng, const std::string& path) {
  try {
    eng.remove_file(path);
  } catch (const error& e) {
    if (e.sys_errno() != EISDIR && e.sys_errno() != EPERM) throw;
    for (const auto& n : eng.list_dir(path)) remove_entry(eng, join(path, n));
    eng.remove_dir(path);
  }
}

}  // namespace pheap::store
