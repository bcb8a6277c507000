// src/pager/os/files.hpp — the pager's OS layer, files: the small files it reads (/proc, the
// cgroup interface) and the small files it shares with the other processes of its user (the
// limit pool's state under /dev/shm), mapped MAP_SHARED and locked with flock. See memory.hpp
// for what the OS layer is. None of these is datastore data: nothing here is synced.
//
// Caveats:
//  * A shared file is used only if it is a regular file of this user (O_NOFOLLOW: a symlink
//    planted under /dev/shm is refused) of exactly the expected size, or empty when created.
//  * Every call returns a failure instead of throwing: the callers run without the file.
#pragma once

#include <cstddef>
#include <string>

namespace pheap::paging::os {

// The whole of a small file ("" when it cannot be read).
std::string read_small_file(const std::string& path);

// True if `path` exists (access F_OK).
bool file_exists(const std::string& path) noexcept;

// Opens `path` and maps its `len` bytes MAP_SHARED: with `create`, creating it (0600) and
// sizing it when it is empty, mapped read/write; without, an existing file mapped read-only.
// The descriptor, with *map set, or -1 (nothing left open) when it is missing, not this
// user's regular file, of another size, or the kernel refuses.
int shared_file_open(const std::string& path, std::size_t len, bool create, void** map) noexcept;
// Unmaps and closes what shared_file_open returned.
void shared_file_close(int fd, void* map, std::size_t len) noexcept;

// flock(2) on the whole file: exclusive, waiting (EINTR retried); or trying once.
void file_lock(int fd) noexcept;
bool file_try_lock(int fd) noexcept;
void file_unlock(int fd) noexcept;

// False once the file has no name left (st_nlink == 0: the last member unlinked it).
bool file_linked(int fd) noexcept;
// Unlinks `path`; true if it was removed.
bool remove_file(const std::string& path) noexcept;

}  // namespace pheap::paging::os
