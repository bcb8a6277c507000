// src/heap/mmap_region.cpp — see mmap_region.hpp.
#include "heap/mmap_region.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "pheap/env.hpp"
#include "pheap/error.hpp"

namespace pheap::heap {

namespace {

std::string segment_path(const std::string& dir, std::uint64_t i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "/segment-%06llu", static_cast<unsigned long long>(i));
  return dir + buf;
}

struct fd_guard {
  int fd = -1;
  ~fd_guard() {
    if (fd >= 0) ::close(fd);
  }
};

void fsync_dir(const std::string& dir) {
  fd_guard d{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (d.fd < 0 || ::fsync(d.fd) != 0) throw_errno(errno, dir, "mmap backend: fsync directory");
}

// Journal length L of the superblock slot holding `epoch` (FORMAT.md: slots at 0 and 8192,
// magic at 0, epoch at 32, L at 56). The store has already validated the slots.
std::uint64_t committed_journal_length(const std::string& dir, std::uint64_t epoch) {
  const std::string sp = dir + "/pheap.super";
  fd_guard f{::open(sp.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) throw_errno(errno, sp, "mmap backend: open");
  for (int slot = 0; slot < 2; ++slot) {
    unsigned char b[64];
    if (::pread(f.fd, b, sizeof b, slot * 8192) != static_cast<ssize_t>(sizeof b)) continue;
    if (std::memcmp(b, "PHEAPSB\0", 8) != 0) continue;
    std::uint64_t e = 0, len = 0;
    for (int i = 7; i >= 0; --i) {
      e = (e << 8) | b[32 + i];
      len = (len << 8) | b[56 + i];
    }
    if (e == epoch) return len;
  }
  throw error(errc::corrupt, dir, "mmap backend: open", "no superblock slot holds epoch " + std::to_string(epoch));
}

class mmap_region final : public region {
 public:
  mmap_region(std::unique_ptr<sparse_store> store, const std::string& path, const store_options& so,
              std::span<const std::byte> open_root)
      : store_(std::move(store)), path_(path), ro_(store_->read_only()) {
    size_ = store_->capacity();
    page_ = store_->page_size();
    seg_ = store_->segment_size();
    const std::uint64_t nseg = (size_ + seg_ - 1) / seg_;
    if (ro_) {
      if (committed_journal_length(path_, store_->epoch()) != 0) {
        throw error(errc::unavailable, path_, "open read-only (mmap backend)",
                    "the last commit was written by the uffd backend and may still live in its "
                    "journal; open the datastore read-write once (either backend) or read-only with "
                    "the uffd backend");
      }
    } else {
      // Every segment must exist before mapping, and the store must know it (so its next
      // commit declares it and read-only opens map it): create the missing ones, then reopen
      // the store, which adopts them (FORMAT.md, Recovery step 2).
      bool created = false;
      for (std::uint64_t i = 0; i < nseg; ++i) {
        const std::string p = segment_path(path_, i);
        struct stat st {};
        if (::stat(p.c_str(), &st) == 0) continue;
        fd_guard f{::open(p.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644)};
        if (f.fd < 0) throw_errno(errno, p, "mmap backend: create segment");
        if (::ftruncate(f.fd, static_cast<off_t>(seg_)) != 0) throw_errno(errno, p, "mmap backend: size segment");
        created = true;
      }
      if (created) {
        fsync_dir(path_);
        store_.reset();
        store_options o = so;
        o.read_only = false;
        store_ = sparse_store::open(path_, o);
      }
      // The mark goes to disk before the first byte can change in a segment.
      store_->commit(open_root);
    }

    // Reserve capacity (aligned to max(page, 2 MiB)), then map each segment over its slot.
    const std::uint64_t align = std::max<std::uint64_t>(page_, 2u << 20);
    void* r = ::mmap(nullptr, size_ + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (r == MAP_FAILED) throw_errno(errno, path_, "mmap backend: reserve address space");
    auto* raw = static_cast<std::byte*>(r);
    auto* b = reinterpret_cast<std::byte*>((reinterpret_cast<std::uintptr_t>(raw) + align - 1) & ~(align - 1));
    if (b > raw) ::munmap(raw, static_cast<std::size_t>(b - raw));
    const std::size_t tail = static_cast<std::size_t>((raw + size_ + align) - (b + size_));
    if (tail > 0) ::munmap(b + size_, tail);
    base_ = b;
    try {
      const int prot = ro_ ? PROT_READ : PROT_READ | PROT_WRITE;
      for (std::uint64_t i = 0; i < nseg; ++i) {
        const std::uint64_t len = std::min(seg_, size_ - i * seg_);
        const std::string p = segment_path(path_, i);
        fd_guard f{::open(p.c_str(), (ro_ ? O_RDONLY : O_RDWR) | O_CLOEXEC)};
        if (f.fd < 0) {
          if (ro_ && errno == ENOENT) {  // never written: stays zeros (anonymous, read-only)
            if (::mprotect(b + i * seg_, len, PROT_READ) != 0) throw_errno(errno, p, "mmap backend: mprotect");
            continue;
          }
          throw_errno(errno, p, "mmap backend: open segment");
        }
        if (::mmap(b + i * seg_, len, prot, MAP_SHARED | MAP_FIXED, f.fd, 0) == MAP_FAILED) {
          throw_errno(errno, p, "mmap backend: map segment");
        }
      }
      // Same fork() rule as the pager: a child does not inherit the mapping.
      ::madvise(base_, size_, MADV_DONTFORK);
      // PHEAP_MMAP_ADVICE=random turns the kernel's fault read-around off (MADV_RANDOM), for
      // random-access heaps larger than memory; default: the kernel's normal policy.
      if (env::word(env::var::mmap_advice) == "random") ::madvise(base_, size_, MADV_RANDOM);
    } catch (...) {
      ::munmap(base_, size_);
      throw;
    }
  }

  ~mmap_region() override {
    if (base_) ::munmap(base_, size_);
  }

  std::byte* base() const noexcept override { return base_; }
  std::size_t size() const noexcept override { return size_; }
  std::size_t page_size() const noexcept override { return page_; }
  bool read_only() const noexcept override { return ro_; }
  backend_kind backend() const noexcept override { return backend_kind::mmap; }

  std::uint64_t flush(std::span<const std::byte>) override {
    if (ro_) throw error(errc::read_only, path_, "flush", "the datastore is open read-only");
    sync("flush (msync)");
    return store_->epoch();
  }

  std::uint64_t close(std::span<const std::byte> root) override {
    if (ro_) return store_->epoch();
    sync("close (msync)");
    // Nothing may change the files any more: a stray write now faults instead of tearing a
    // datastore about to be marked clean.
    ::mprotect(base_, size_, PROT_READ);
    closed_ = true;
    // The kernel wrote the segment pages behind the store's back: their checksums must match
    // before the clean root publishes them (the uffd backend verifies every page it reads).
    store_->rebuild_checksums();
    return store_->commit(root);
  }

  void discard(std::uint64_t off, std::uint64_t len) override {
    if (ro_ || closed_) return;
    const std::uint64_t ps = 4096;
    const std::uint64_t first = (off + ps - 1) / ps * ps, end = (off + len) / ps * ps;
    if (end <= first) return;
    if (::madvise(base_ + first, end - first, MADV_REMOVE) != 0) {
      throw_errno(errno, path_, "discard (madvise MADV_REMOVE)");
    }
  }

  void snapshot(const std::string& dst, std::span<const std::byte> root) override {
    if (!ro_) sync("snapshot (msync)");
    // The store clones the segment files as they are now; its superblock still carries the
    // "open" mark, so the copy is committed once more with the clean root.
    store_->snapshot(dst);
    store_options o;
    o.read_only = false;
    auto s = sparse_store::open(dst, o);
    s->rebuild_checksums();  // the copy's pages were written through the mapping
    s->commit(root);
  }

  sparse_store& store() noexcept override { return *store_; }
  dirty_tracking tracking() const noexcept override { return dirty_tracking::automatic; }
  pager_stats stats() const override { return {}; }

 private:
  void sync(const char* op) {
    if (::msync(base_, size_, MS_SYNC) != 0) throw_errno(errno, path_, op);
  }

  std::unique_ptr<sparse_store> store_;
  std::string path_;
  bool ro_;
  bool closed_ = false;
  std::byte* base_ = nullptr;
  std::uint64_t size_ = 0, seg_ = 0;
  std::uint32_t page_ = 0;
};

}  // namespace

std::unique_ptr<region> make_mmap_region(std::unique_ptr<sparse_store> store, const std::string& path,
                                         const store_options& so, std::span<const std::byte> open_root) {
  return std::make_unique<mmap_region>(std::move(store), path, so, open_root);
}

}  // namespace pheap::heap
