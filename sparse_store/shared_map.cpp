#include "shared_map.hpp"

#include <fcntl.h>
#include <sys/mman.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "pheap/error.hpp"

namespace pheap::store::os {

shared_map::shared_map(int fd, std::size_t len, bool writable, const std::string& path) {
  const int prot = PROT_READ | (writable ? PROT_WRITE : 0);
  void* p = ::mmap(nullptr, len, prot, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) throw_errno(errno, path, "mmap");
  data_ = static_cast<std::byte*>(p);
  len_ = len;
}

shared_map::shared_map(shared_map&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), len_(std::exchange(o.len_, 0)) {}

shared_map& shared_map::operator=(shared_map&& o) noexcept {
  if (this != &o) {
    if (data_ != nullptr) ::munmap(data_, len_);
    data_ = std::exchange(o.data_, nullptr);
    len_ = std::exchange(o.len_, 0);
  }
  return *this;
}

shared_map::~shared_map() {
  if (data_ != nullptr) ::munmap(data_, len_);
}

bool allocate(int fd, std::uint64_t offset, std::uint64_t len, const std::string& path) {
  static const char zeros[64 << 10] = {};
  while (len > 0) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(len, sizeof zeros));
    const ssize_t w = ::pwrite(fd, zeros, n, static_cast<off_t>(offset));
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == ENOSPC || errno == EDQUOT) return false;
      throw_errno(errno, path, "pwrite");
    }
    offset += static_cast<std::uint64_t>(w);
    len -= static_cast<std::uint64_t>(w);
  }
  return true;
}

namespace {

struct flock byte(std::uint64_t at, short type) {
  struct flock fl {};
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  fl.l_start = static_cast<off_t>(at);
  fl.l_len = 1;
  fl.l_pid = 0;  // required by OFD locks
  return fl;
}

short type_of(lock_kind k) { return k == lock_kind::read ? F_RDLCK : F_WRLCK; }

}  // namespace

bool try_lock(int fd, std::uint64_t at, lock_kind kind, const std::string& path) {
  struct flock fl = byte(at, type_of(kind));
  while (::fcntl(fd, F_OFD_SETLK, &fl) != 0) {
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EACCES) return false;
    throw_errno(errno, path, "fcntl(F_OFD_SETLK)");
  }
  return true;
}

void lock(int fd, std::uint64_t at, lock_kind kind, const std::string& path) {
  struct flock fl = byte(at, type_of(kind));
  while (::fcntl(fd, F_OFD_SETLKW, &fl) != 0) {
    if (errno == EINTR) continue;
    throw_errno(errno, path, "fcntl(F_OFD_SETLKW)");
  }
}

void unlock(int fd, std::uint64_t at, const std::string& path) {
  struct flock fl = byte(at, F_UNLCK);
  while (::fcntl(fd, F_OFD_SETLK, &fl) != 0) {
    if (errno == EINTR) continue;
    throw_errno(errno, path, "fcntl(F_OFD_SETLK, F_UNLCK)");
  }
}

bool held_elsewhere(int fd, std::uint64_t at, const std::string& path) {
  struct flock fl = byte(at, F_WRLCK);
  while (::fcntl(fd, F_OFD_GETLK, &fl) != 0) {
    if (errno == EINTR) continue;
    throw_errno(errno, path, "fcntl(F_OFD_GETLK)");
  }
  return fl.l_type != F_UNLCK;
}

}  // namespace pheap::store::os
