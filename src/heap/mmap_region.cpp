// src/heap/mmap_region.cpp — see mmap_region.hpp.
#include "heap/mmap_region.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "pheap/error.hpp"

namespace pheap::heap {

namespace {

class mmap_region final : public region {
 public:
  mmap_region(std::unique_ptr<sparse_store> store, const std::string& path, const store_options& so,
              std::span<const std::byte> open_root, mmap_advice_kind advice)
      : store_(std::move(store)), path_(path), engine_(so.engine), ro_(store_->read_only()) {
    size_ = store_->capacity();
    page_ = store_->page_size();
    if (ro_) {
      if (!store_->direct_mapping_possible()) {
        throw error(errc::unavailable, path_, "open read-only (mmap backend)",
                    "the last commit is not laid out in the segment files yet (it was written "
                    "by the uffd backend); open the datastore read-write once (either backend) "
                    "or read-only with the uffd backend");
      }
    } else {
      // The mark goes to disk before the first byte can change in a segment; every segment
      // exists and holds the committed state at its fixed offsets.
      store_->prepare_direct_mapping(open_root);
    }
    const std::vector<direct_extent> extents = store_->direct_extents();

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
      for (const direct_extent& x : extents) {
        std::byte* at = b + x.region_offset;
        if (!x.file) {  // read-only and never written: stays zeros (anonymous, read-only)
          if (::mprotect(at, x.length, PROT_READ) != 0) throw_errno(errno, path_, "mmap backend: mprotect");
          continue;
        }
        if (::mmap(at, x.length, prot, MAP_SHARED | MAP_FIXED, x.file->fd(),
                   static_cast<off_t>(x.file_offset)) == MAP_FAILED) {
          throw_errno(errno, x.file->path(), "mmap backend: map segment");
        }
      }
      // Same fork() rule as the pager: a child does not inherit the mapping.
      ::madvise(base_, size_, MADV_DONTFORK);
      // mmap_advice_kind::random turns the kernel's fault read-around off (MADV_RANDOM), for
      // random-access heaps larger than memory; normal: the kernel's default policy.
      if (advice == mmap_advice_kind::random) ::madvise(base_, size_, MADV_RANDOM);
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
    // The kernel wrote the segment pages behind the store's back: the store's view of them
    // (checksums, which pages hold data) must match before the clean root publishes them (the
    // uffd backend verifies every page it reads).
    return store_->finish_direct_mapping(root);
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
    o.engine = engine_;
    auto s = sparse_store::open(dst, o);
    s->finish_direct_mapping(root);  // the copy's pages were written through the mapping
  }

  void prefetch(std::span<const std::pair<std::size_t, std::size_t>> ranges) override {
    if (closed_) return;
    const std::size_t ps = 4096;  // the kernel's pages
    for (const auto& [off, len] : ranges) {
      if (len == 0 || off >= size_) continue;
      const std::size_t first = off / ps * ps, end = std::min(size_, off + std::min(len, size_ - off));
      (void)::madvise(base_ + first, end - first, MADV_WILLNEED);  // a hint: errors ignored
    }
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
  std::shared_ptr<io::engine> engine_;  // the copy of a snapshot is opened with it too
  bool ro_;
  bool closed_ = false;
  std::byte* base_ = nullptr;
  std::uint64_t size_ = 0;
  std::uint32_t page_ = 0;
};

}  // namespace

std::unique_ptr<region> make_mmap_region(std::unique_ptr<sparse_store> store, const std::string& path,
                                         const store_options& so, std::span<const std::byte> open_root,
                                         mmap_advice_kind advice) {
  return std::make_unique<mmap_region>(std::move(store), path, so, open_root, advice);
}

}  // namespace pheap::heap
