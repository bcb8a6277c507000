// Metall's C API (<metall/c_api/metall.h>) over metall::manager, pheap's Metall C++ drop-in:
// the behaviour and errno values of Metall's own implementation, listed in the header. The
// C++ layer is noexcept and logs the cause of every failure (metall/logger.hpp); this file only
// turns its answers into Metall's errno. Nothing throws across the boundary: every pheap call
// made here directly is inside a try block.
#include <metall/c_api/metall.h>
#include <metall/metall.hpp>

#include <cerrno>
#include <filesystem>
#include <memory>
#include <new>
#include <string>

namespace {

metall::manager* native(metall_manager* m) noexcept { return reinterpret_cast<metall::manager*>(m); }

template <class Tag>
metall_manager* open_as(Tag tag, const char* path) noexcept {
  if (path == nullptr) {
    errno = EINVAL;
    return nullptr;
  }
  auto* m = new (std::nothrow) metall::manager(tag, path);
  if (m == nullptr) {
    errno = ENOMEM;
    return nullptr;
  }
  if (!m->check_sanity()) {  // the cause is logged by the manager
    delete m;
    errno = ENOTRECOVERABLE;
    return nullptr;
  }
  return reinterpret_cast<metall_manager*>(m);
}

}  // namespace

extern "C" {

metall_manager* metall_open(const char* path) { return open_as(metall::open_only, path); }

metall_manager* metall_open_read_only(const char* path) { return open_as(metall::open_read_only, path); }

metall_manager* metall_create(const char* path) {
  if (path == nullptr) {
    errno = EINVAL;
    return nullptr;
  }
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {  // Metall's C API never overwrites
    errno = EEXIST;
    return nullptr;
  }
  return open_as(metall::create_only, path);
}

bool metall_snapshot(metall_manager* manager, const char* dst_path) {
  if (manager == nullptr || dst_path == nullptr) {
    errno = EINVAL;
    return false;
  }
  return native(manager)->snapshot(dst_path);
}

void metall_flush(metall_manager* manager) {
  if (manager == nullptr) {
    errno = EINVAL;
    return;
  }
  native(manager)->flush();
}

void metall_close(metall_manager* manager) { delete native(manager); }

bool metall_remove(const char* path) {
  if (path == nullptr) {
    errno = EINVAL;
    return false;
  }
  try {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      errno = ENOENT;
      return false;
    }
    pheap::manager::remove(path);
    return true;
  } catch (const pheap::error& e) {
    metall::logger::out(metall::logger::level::error, __FILE__, __LINE__, e.what());
    errno = e.code() == pheap::errc::locked ? EADDRINUSE : e.code() == pheap::errc::not_found ? ENOENT : EINVAL;
  } catch (const std::exception& e) {
    metall::logger::out(metall::logger::level::error, __FILE__, __LINE__, e.what());
    errno = ENOMEM;
  }
  return false;
}

void* metall_malloc(metall_manager* manager, size_t size) {
  if (manager == nullptr) {
    errno = EINVAL;
    return nullptr;
  }
  void* p = native(manager)->allocate(size);
  if (p == nullptr) errno = ENOMEM;
  return p;
}

void metall_free(metall_manager* manager, void* ptr) {
  if (manager == nullptr) {
    errno = EINVAL;
    return;
  }
  native(manager)->deallocate(ptr);
}

void* metall_named_malloc(metall_manager* manager, const char* name, size_t size) {
  if (manager == nullptr || name == nullptr) {
    errno = EINVAL;
    return nullptr;
  }
  void* p = native(manager)->construct<unsigned char>(name)[size]();
  if (p == nullptr) errno = ENOMEM;
  return p;
}

void* metall_find(metall_manager* manager, const char* name) {
  if (manager == nullptr || name == nullptr) {
    errno = EINVAL;
    return nullptr;
  }
  void* p = native(manager)->find<unsigned char>(name).first;
  if (p == nullptr) errno = ENOENT;
  return p;
}

bool metall_named_free(metall_manager* manager, const char* name) {
  if (manager == nullptr || name == nullptr) {
    errno = EINVAL;
    return false;
  }
  const bool freed = native(manager)->destroy<unsigned char>(name);
  if (!freed) errno = ENOENT;
  return freed;
}

}  // extern "C"
