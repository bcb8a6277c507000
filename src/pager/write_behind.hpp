// src/pager/write_behind.hpp — write-behind: a thread that writes dirty pages into the working
// epoch while the application runs, so that a flush writes only what changed since
// (pager_options::write_behind_ms; write_behind.cpp has a round as named steps). Owns its
// thread, its bounce buffer and the pages its last round found written. Shares the page
// table, the counters and the scan lock through pager_core; writes through the flusher
// (flusher::write_behind_chunk: the flush's claim, tear-free copy and write, one chunk per
// hold of the flusher's lock, so a flush waits for one chunk at most). wp_async tracking only:
// the page tables say which pages were written since a round write-protected them again, at
// no cost to the application but a write-protect fault on the next write to such a page.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "pager/flusher.hpp"
#include "pager/os/memory.hpp"
#include "pager/pager_core.hpp"

namespace pheap::paging {

class write_behind {
 public:
  write_behind(pager_core& core, flusher& flushes) noexcept : core_(core), flushes_(flushes) {}

  // set_geometry: asked for with a period (pager_options::write_behind_ms > 0) in a writable
  // region; choose_tracking: on where asked for and the region is tracked wp_async, off
  // otherwise (pager_stats::write_behind says which).
  void configure(unsigned period_ms) noexcept {
    asked_ = period_ms > 0 && !core_.ro;
    period_ = std::chrono::milliseconds(period_ms);
  }
  void resolve() noexcept { on_ = asked_ && core_.mode == dirty_tracking::wp_async; }
  bool on() const noexcept { return on_; }
  // Pages of its bounce buffer, one flush chunk, where asked for: memory outside the buffer
  // (pager_impl::own_bytes_outside_buffer, counted before the tracking is resolved).
  std::size_t bounce_pages() const noexcept { return asked_ ? flushes_.batch_pages() : 0; }
  // map_buffers: the bounce buffer, where on.
  void map_buffers();
  // start_threads: the thread (pheap-wbehind), where on; join: stop_threads, once the stop
  // flag is set (it wakes the thread).
  void start();
  void join() noexcept;
  // One round (write_behind.cpp, steps 1-4): the thread's, every period; white-box tests run
  // it by hand (test_access), with a period no round of the thread reaches.
  void round();

 private:
  void main();
  // Step 2: the pages written since the last scan or flush, sorted, now write-protected again
  // and recorded dirty in their words.
  std::vector<std::size_t> scan_written();

  pager_core& core_;
  flusher& flushes_;
  bool asked_ = false, on_ = false;
  std::chrono::milliseconds period_{0};
  std::thread thread_;
  std::mutex mu_;  // the wait between rounds (a leaf, unranked: nothing is taken under it)
  std::condition_variable cv_;
  anon_map bounce_;
  std::vector<std::size_t> written_;  // what the last round's scan found, sorted
  std::uint64_t evictions_seen_ = 0;  // core_.c.evictions at the last round
  std::uint64_t flushes_seen_ = 0;    // core_.c.flushes when a write failed
  bool failed_ = false;               // a write failed: nothing more until the next flush
};

}  // namespace pheap::paging
