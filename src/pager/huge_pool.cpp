// The huge pool (huge_pool.hpp).
#include "pager/huge_pool.hpp"

#include "pager/os/memory.hpp"
#include "pager/os/uffd.hpp"

namespace pheap::paging {

namespace {
constexpr unsigned kMaxFailures = 8;  // fresh blocks refused in a row before the pool backs off
constexpr unsigned kRetryEvery = 64;  // then one attempt per this many asks, until one succeeds
constexpr std::size_t kMaxEmpty = 64;  // empty blocks kept (address space only)
}  // namespace

huge_pool::~huge_pool() {
  for (std::byte* b : full_) os::unmap(b, block_);
  for (std::byte* b : empty_) os::unmap(b, block_);
}

void huge_pool::open(int uffd, int pagemap_fd, std::size_t block, std::size_t keep,
                     const std::string& name) {
  uffd_ = uffd;
  pagemap_fd_ = pagemap_fd;
  block_ = block;
  keep_ = keep;
  name_ = name;
}

std::byte* huge_pool::make_block(bool populate) {
  auto* b = static_cast<std::byte*>(os::reserve_aligned(block_, os::pmd_size(), true, true));
  if (!b) return nullptr;
  bool ok = true;
  if (populate) {
    // Before registering: a populate of a registered range would raise missing userfaults.
    ok = os::populate_write(b, block_) == 0;
    if (ok && pagemap_fd_ >= 0) {
      // Every byte PMD-mapped, else the kernel gave 4 KiB pages (THP off for this process,
      // or no free 2 MiB block): such a block would move in as 512 entries, no gain.
      ok = pagemap_bytes(pagemap_fd_, b, b + block_, page_is_huge | page_is_present) ==
           static_cast<long long>(block_);
    }
  }
  if (ok) {
    try {
      (void)uffd_register(uffd_, b, block_, UFFDIO_REGISTER_MODE_MISSING, name_);
    } catch (...) {
      ok = false;
    }
  }
  if (!ok) {
    os::unmap(b, block_);
    return nullptr;
  }
  return b;
}

std::byte* huge_pool::take_full() {
  {
    std::lock_guard lk(mu_);
    if (!full_.empty()) {
      std::byte* b = full_.back();
      full_.pop_back();
      return b;
    }
  }
  if (failures_.load(std::memory_order_relaxed) >= kMaxFailures &&
      skipped_.fetch_add(1, std::memory_order_relaxed) % kRetryEvery != kRetryEvery - 1) {
    return nullptr;  // backing off: the kernel had no huge page for the last attempts
  }
  std::byte* b = make_block(true);
  if (!b) {
    failures_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  failures_.store(0, std::memory_order_relaxed);
  skipped_.store(0, std::memory_order_relaxed);
  fresh_.fetch_add(1, std::memory_order_relaxed);
  return b;
}

void huge_pool::give_empty(std::byte* b) noexcept {
  {
    std::lock_guard lk(mu_);
    if (empty_.size() < kMaxEmpty) {
      empty_.push_back(b);
      return;
    }
  }
  os::unmap(b, block_);
}

std::byte* huge_pool::take_empty() { return empty_block(true); }

std::byte* huge_pool::take_scratch() { return empty_block(false); }

std::byte* huge_pool::empty_block(bool within_keep) {
  {
    std::lock_guard lk(mu_);
    if (within_keep && full_.size() >= keep_) return nullptr;
    if (!empty_.empty()) {
      std::byte* b = empty_.back();
      empty_.pop_back();
      return b;
    }
  }
  return make_block(false);
}

void huge_pool::give_full(std::byte* b) noexcept {
  {
    std::lock_guard lk(mu_);
    if (full_.size() < keep_) {
      full_.push_back(b);
      return;
    }
  }
  os::drop(b, block_);  // beyond keep: the page goes back to the kernel, the block stays
  give_empty(b);
}

void huge_pool::discard(std::byte* b) noexcept { os::unmap(b, block_); }

std::size_t huge_pool::full_blocks() const {
  std::lock_guard lk(mu_);
  return full_.size();
}

}  // namespace pheap::paging
