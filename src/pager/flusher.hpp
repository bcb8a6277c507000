// src/pager/flusher.hpp — the flusher: flush(), prepare() and confirm() (flush.cpp is the
// protocol), with its dirty tracker (dirty_tracker.hpp). Owns its lock (mu_: flushes are
// serialized), its bounce buffer and, through the tracker, its staging range. Shares the page
// table, the budget, the store and the error channel through pager_core; waits for the
// evictor's batch in flight (evictor::wait_for_eviction_batch), and never for a fault.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>
#include <vector>

#include "pager/os/memory.hpp"
#include "pager/dirty_tracker.hpp"
#include "pager/evictor.hpp"
#include "pager/lock_rank.hpp"
#include "pager/pager_core.hpp"

namespace pheap::paging {

class flusher {
 public:
  flusher(pager_core& core, evictor& evictions) noexcept
      : core_(core), evictions_(evictions), tracker_(core) {}

  // set_geometry: pages per chunk (of the bounce buffer, and of the tracker's staging runs);
  // lend_bounce(true): the buffer follows a memory limit, and a flush lends its bounce
  // buffer's pages out of it (buffer_budget.hpp B5).
  void configure(std::size_t batch_pages) noexcept {
    batch_pages_ = batch_pages;
    tracker_.configure(batch_pages);
  }
  void lend_bounce(bool on) noexcept { lends_bounce_ = on; }
  // The lock every flush holds: the promoter's too (promoter.hpp, "Ownership").
  ranked_mutex<lock_rank::flush>& lock() noexcept { return mu_; }
  std::size_t batch_pages() const noexcept { return batch_pages_; }
  // map_buffers, writable regions only: the staging range (`move`: where UFFDIO_MOVE exists)
  // and the bounce buffer.
  void map_buffers(bool move);
  void close() noexcept { tracker_.close(); }  // teardown, threads stopped

  std::uint64_t flush(std::span<const std::byte> root);
  std::uint64_t flush_if_changed(std::span<const std::byte> root);
  std::uint64_t prepare(std::span<const std::byte> root);  // flush, ending in store prepare()
  std::uint64_t confirm();
  // Write-behind's write (write_behind.cpp step 4), under mu_: of pages[0..n) (sorted, at most
  // batch_pages()), those still dirty and not in an eviction's write-back are claimed, copied
  // tear-free into `bounce` and written into the working epoch, as a flush's step 3 does,
  // with no commit. Nothing while an epoch is prepared. Returns the pages written; a store
  // error is thrown once its pages are dirty again.
  std::size_t write_behind_chunk(const std::size_t* pages, std::size_t n, std::byte* bounce);

 private:
  // flush() and prepare(): write every dirty page, then end the epoch with `finish`
  // (sparse_store::commit or sparse_store::prepare).
  std::uint64_t flush_ending(std::span<const std::byte> root, const char* op,
                             std::uint64_t (sparse_store::*finish)(std::span<const std::byte>));
  // Claims, copies out and writes one chunk of candidate pages; returns pages written.
  std::size_t flush_chunk(const std::size_t* cand, std::size_t n);
  // Copies the claimed pages tear-free into `into` (a slot each), writes the copies with one
  // write_pages(), then releases the claims (marked dirty again if the write throws, which it
  // passes on); the pages written are counted in `written` (and bytes_written).
  void write_claimed(const std::vector<std::size_t>& claimed, std::byte* into,
                     std::atomic<std::uint64_t>& written);

  pager_core& core_;
  evictor& evictions_;
  ranked_mutex<lock_rank::flush> mu_;  // held by every flush, prepare and confirm
  std::size_t batch_pages_ = 1;
  bool lends_bounce_ = false;
  anon_map bounce_;
  dirty_tracker tracker_;
};

}  // namespace pheap::paging
