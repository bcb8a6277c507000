// src/pager/dirty_tracker.hpp — the flusher's dirty tracker: which pages a flush must write,
// and their tear-free copy, per tracking mode (dirty_tracker.cpp describes each). Used by the
// flusher only, under its lock; shares the page table and the wp_async scan lock
// (pager_core::scan_mu) with the evictor's harvest through pager_core.
#pragma once

#include <cstddef>
#include <vector>

#include "pager/pager_core.hpp"
#include "pager/staging.hpp"

namespace pheap::paging {

class dirty_tracker {
 public:
  explicit dirty_tracker(pager_core& core) noexcept : core_(core) {}

  // set_geometry: take_by_move's runs are of at most `batch_pages` pages (the flush's chunk).
  void configure(std::size_t batch_pages) noexcept { batch_pages_ = batch_pages; }
  // map_buffers, where UFFDIO_MOVE exists: the staging range of those runs (all_resident, and
  // wp_async's retakes).
  void open_staging();
  void close() noexcept { staging_.close(); }  // teardown, threads stopped

  // The pages a flush must write, sorted (per tracking mode; no claims taken).
  std::vector<std::size_t> collect_dirty();
  // Copies claimed pages[0..n) into dst[0..n), each copy taken at one instant w.r.t. writers,
  // the way the tracking mode allows: copy_write_protected (wp_sync), copy_and_verify
  // (wp_async) or take_by_move (all_resident).
  void take_copies(const std::size_t* pages, std::size_t n, std::byte* const* dst);

 private:
  void copy_write_protected(const std::size_t* pages, std::size_t n, std::byte* const* dst);
  void copy_and_verify(const std::size_t* pages, std::size_t n, std::byte* const* dst);
  // Moves each run out to staging_ and back, copying in between.
  void take_by_move(const std::size_t* pages, std::size_t n, std::byte* const* dst);
  // Per page of [first, first+count): written since last re-protected (wp_async; all true when
  // PAGEMAP_SCAN fails).
  void written_bitmap(std::size_t first, std::size_t count, std::vector<bool>& out);

  pager_core& core_;
  std::size_t batch_pages_ = 1;  // pages per run of take_by_move (the flush's batch)
  staging staging_;  // pages are moved here for a tear-free copy, then back
};

}  // namespace pheap::paging
