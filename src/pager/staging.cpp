// UFFDIO_MOVE staging (see staging.hpp for the protocol).
#include "pager/staging.hpp"


#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "pager/page_table.hpp"
#include "pager/os/uffd.hpp"
#include "pheap/error.hpp"

namespace pheap::paging {

void staging::open(int uffd, int pagemap_fd, std::byte* region, std::size_t page_size,
                   std::size_t slots, std::size_t retain, const std::string& name,
                   huge_pool* pool, bool recycle) {
  if (pool) {
    const std::size_t bytes = (slots + retain) * page_size;
    void* p = os::reserve_aligned(bytes, os::pmd_size(), true, true);
    if (!p) throw_errno(errno, name, "mmap huge staging range");
    map_ = anon_map();
    map_.p = p;  // anon_map unmaps it
    map_.len = bytes;
    pool_ = recycle ? pool : nullptr;
  } else {
    map_ = anon_map((slots + retain) * page_size, true);
  }
  uffd_register(uffd, map_.p, map_.len, UFFDIO_REGISTER_MODE_MISSING, name);
  uffd_ = uffd;
  pagemap_fd_ = pagemap_fd;
  region_ = region;
  ps_ = page_size;
  slots_ = slots;
  retain_ = retain;
  start_ = 0;
  name_ = name;
}

void staging::close() noexcept {
  if (map_.p) uffd_unregister(uffd_, map_.p, map_.len);
}

std::vector<bool> staging::move_out(const std::size_t* pages, std::size_t n) {
  // drop() keeps start_ ≤ retain_, and a batch has n ≤ slots_: it fits behind the frames kept.
  assert(start_ <= retain_ && n <= slots_);
  for_each_run(pages, n, n, [&](std::size_t i, std::size_t j) {
    std::size_t done = 0;
    (void)uffd_move(uffd_, slot(i), page_addr(pages[i]), (j - i) * ps_, &done);
  });
  return arrived(pages, n);
}

void staging::drop(std::size_t n) noexcept {
  if (pool_) recycle(n);
  start_ += n;
  if (start_ > retain_) empty_dropped();
}

void staging::recycle(std::size_t n) noexcept {
  if (pagemap_fd_ < 0) return;  // cannot tell a huge page from 512 small ones: drop them all
  bool full = false;
  for (std::size_t k = 0; k < n; ++k) {
    // Only a slot still mapped by one PMD entry: a page whose mapping a write split (wp_async,
    // pheap/pager_options.hpp) would move as 512 small pages, and a fill from that block would
    // not be PMD-mapped either. Such a slot, or an empty one, is dropped as usual.
    const long long huge = pagemap_bytes(pagemap_fd_, slot(k), slot(k) + ps_, page_is_huge | page_is_present);
    if (huge < 0 || static_cast<std::size_t>(huge) != ps_) {
      if (huge >= 0 && split_ && pagemap_bytes(pagemap_fd_, slot(k), slot(k) + ps_, page_is_present) > 0) {
        split_->fetch_add(1, std::memory_order_relaxed);  // split, not empty
      }
      continue;
    }
    std::byte* b = full ? nullptr : pool_->take_empty();
    if (!b) {  // the pool is full (or cannot map): the rest is emptied as usual
      full = true;
      continue;
    }
    std::size_t moved = 0;
    const int rc = uffd_move_whole(uffd_, b, slot(k), ps_, &moved);
    if (rc == 0 && moved == ps_) {
      pool_->give_full(b);
      if (recycled_) recycled_->fetch_add(1, std::memory_order_relaxed);
    } else if (moved == 0) {
      pool_->give_empty(b);  // nothing there (a slot not moved out), or refused whole
    } else {
      pool_->discard(b);  // half moved: the block's bytes are of no use, the slot's rest is dropped
    }
  }
}

void staging::empty_dropped() noexcept {
  if (start_ > 0) os::drop(map_.p, start_ * ps_);
  start_ = 0;
}

std::size_t staging::staged_frames() const {
  std::vector<bool> frames;
  present_frames(map_.data(), map_.len, frames);
  return static_cast<std::size_t>(std::count(frames.begin(), frames.end(), true));
}

void staging::present_frames(const std::byte* addr, std::size_t len,
                             std::vector<bool>& out) const {
  const std::size_t frame = os_page_size();
  out.assign(len / frame, false);
  const long r = pagemap_walk<128>(
      pagemap_fd_, const_cast<std::byte*>(addr), const_cast<std::byte*>(addr + len), 0,
      page_is_present, 0, [&](const page_region& reg) {
        for (std::uint64_t x = reg.start; x < reg.end; x += frame) {
          out[(x - reinterpret_cast<std::uintptr_t>(addr)) / frame] = true;
        }
      });
  if (r < 0) {
    std::fprintf(stderr, "pheap: pager %s: PAGEMAP_SCAN failed: %s\n", name_.c_str(),
                 std::strerror(static_cast<int>(-r)));
    std::abort();  // cannot tell where a page is: continuing could lose data
  }
}

std::vector<bool> staging::arrived(const std::size_t* pages, std::size_t slots) {
  const std::size_t frame = os_page_size(), fpp = ps_ / frame;
  std::vector<bool> frames;
  present_frames(slot(0), slots * ps_, frames);
  std::vector<bool> moved(slots, false);
  for (std::size_t i = 0; i < slots; ++i) {
    std::size_t have = 0;
    for (std::size_t f = 0; f < fpp; ++f) have += frames[i * fpp + f];
    if (have == fpp) {
      moved[i] = true;
    } else if (have > 0) {  // split UPage: make it whole in the region again
      for (std::size_t f = 0; f < fpp; ++f) {
        if (!frames[i * fpp + f]) continue;
        std::byte* from = slot(i) + f * frame;
        std::byte* to = page_addr(pages[i]) + f * frame;
        std::size_t back = 0;
        if (uffd_move(uffd_, to, from, frame, &back) != 0 && back == 0) {
          std::vector<bool> chk;
          present_frames(from, frame, chk);
          if (chk[0] && uffd_copy(uffd_, to, from, frame, 0) == 0) os::drop(from, frame);
        }
      }
    }
  }
  return moved;
}

void staging::move_back(const std::size_t* pages, const std::vector<bool>& moved) {
  const std::size_t n = moved.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (!moved[i]) continue;
    std::size_t back = 0;
    (void)uffd_move(uffd_, page_addr(pages[i]), slot(i), ps_, &back);
  }
  // Whatever is still staged (a move back that failed, or failed in part): copy it in.
  std::vector<bool> frames;
  present_frames(slot(0), n * ps_, frames);
  const std::size_t frame = os_page_size();
  for (std::size_t f = 0; f < frames.size(); ++f) {
    if (!frames[f]) continue;
    const std::size_t i = f / (ps_ / frame);
    std::byte* to = page_addr(pages[i]) + (f % (ps_ / frame)) * frame;
    const int rc = uffd_copy(uffd_, to, slot(0) + f * frame, frame, 0);
    if (rc != 0 && rc != EEXIST) {
      std::fprintf(stderr, "pheap: pager %s: cannot reinstall page %zu: %s\n", name_.c_str(),
                   pages[i], std::strerror(rc));
    }
  }
  os::drop(slot(0), n * ps_);  // the batch's slots are empty again at once
}

}  // namespace pheap::paging
