// The pager's OS layer, files (files.hpp).
#include "pager/os/files.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace pheap::paging::os {

std::string read_small_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

bool file_exists(const std::string& path) noexcept { return ::access(path.c_str(), F_OK) == 0; }

int shared_file_open(const std::string& path, std::size_t len, bool create, void** map) noexcept {
  const int fd = create ? ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600)
                        : ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return -1;
  struct stat st {};
  const auto size = static_cast<off_t>(len);
  const bool usable = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() &&
                      (st.st_size == size ||
                       (create && st.st_size == 0 && ::ftruncate(fd, size) == 0));
  void* m = usable ? ::mmap(nullptr, len, create ? (PROT_READ | PROT_WRITE) : PROT_READ,
                            MAP_SHARED, fd, 0)
                   : MAP_FAILED;
  if (m == MAP_FAILED) {
    ::close(fd);
    return -1;
  }
  *map = m;
  return fd;
}

void shared_file_close(int fd, void* map, std::size_t len) noexcept {
  if (map) ::munmap(map, len);
  if (fd >= 0) ::close(fd);
}

void file_lock(int fd) noexcept {
  while (::flock(fd, LOCK_EX) != 0 && errno == EINTR) {
  }
}

bool file_try_lock(int fd) noexcept { return ::flock(fd, LOCK_EX | LOCK_NB) == 0; }

void file_unlock(int fd) noexcept { (void)::flock(fd, LOCK_UN); }

bool file_linked(int fd) noexcept {
  struct stat st {};
  return ::fstat(fd, &st) == 0 && st.st_nlink > 0;
}

bool remove_file(const std::string& path) noexcept { return ::unlink(path.c_str()) == 0; }

}  // namespace pheap::paging::os
