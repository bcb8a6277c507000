// Write-behind (write_behind.hpp; pager_options::write_behind_ms). Every period the thread
// runs a round:
//   1. in core only: when the evictor evicted since the last round, the round does nothing
//      and forgets what the last one found. Out of core the evictor writes dirty victims
//      itself, its harvest reads the same written bits, and the disk is busy with faults:
//      write-behind adds no scan, no write and no write-protect fault there. After a failed
//      write it waits for a flush (which reports the error) before it writes again.
//   2. scan_written: one PAGEMAP_SCAN over the region, under scan_mu, collects the pages written
//      since they were last write-protected (by the last round, a flush or the harvest) and
//      protects them again, recording each in its word (dirty|ref: page_table::note_written,
//      as the evictor's harvest does), so that no flush or eviction misses the write.
//   3. idle pages: those the last round's scan found written and this one did not — written,
//      then untouched for a whole period. A page written in every period is never chosen, so
//      hot pages are not written over and over; what it costs them is one write-protect fault
//      (resolved in the kernel, wp_async) on their first write of each period.
//   4. write them through flusher::write_behind_chunk, a flush chunk at a time: claimed only
//      while still dirty (a flush may have written them since), copied tear-free, written
//      into the working epoch's home (the store rewrites a page in place within an epoch; a
//      crash still recovers the last commit), then released; a write after the copy is found
//      by the next scan or flush. A store error ends the round: its pages are dirty again
//      (flusher::write_claimed) and the error is left for the next flush (error_channel.hpp).
// Nothing here is durable before the next flush's commit. While an epoch is prepared
// (two-phase commit) nothing is written.
#include "pager/write_behind.hpp"

#include <pthread.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <iterator>

#include "pheap/error.hpp"

namespace pheap::paging {

void write_behind::map_buffers() {
  if (on_) bounce_ = anon_map(flushes_.batch_pages() * core_.ps, true);
}

void write_behind::start() {
  if (!on_) return;
  evictions_seen_ = core_.c.evictions.load(std::memory_order_relaxed);
  thread_ = std::thread([this] { main(); });
  ::pthread_setname_np(thread_.native_handle(), "pheap-wbehind");
}

void write_behind::join() noexcept {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lk(mu_);  // the stop flag is set: the wait sees it or gets this notify
  }
  cv_.notify_all();
  thread_.join();
}

void write_behind::main() {
  for (;;) {
    {
      std::unique_lock lk(mu_);
      if (cv_.wait_for(lk, period_, [&] { return core_.stop.load(); })) return;
    }
    const std::uint64_t t0 = now_ns();
    round();
    core_.c.write_behind_rounds.fetch_add(1, std::memory_order_relaxed);
    core_.c.write_behind_ns.fetch_add(now_ns() - t0, std::memory_order_relaxed);
  }
}

void write_behind::round() {
  // 1. In core only; after a failed write, not before a flush.
  const std::uint64_t evictions = core_.c.evictions.load(std::memory_order_relaxed);
  if (evictions != evictions_seen_) {
    evictions_seen_ = evictions;
    written_.clear();
    return;
  }
  if (failed_) {
    if (core_.c.flushes.load(std::memory_order_relaxed) == flushes_seen_) return;
    failed_ = false;
  }
  // 2. What was written since the last scan.
  std::vector<std::size_t> now = scan_written();
  // 3. Written before the last scan, not since.
  std::vector<std::size_t> idle;
  std::set_difference(written_.begin(), written_.end(), now.begin(), now.end(), std::back_inserter(idle));
  written_.swap(now);
  // 4. Written back, a chunk per hold of the flusher's lock.
  const std::size_t chunk = flushes_.batch_pages();
  for (std::size_t i = 0; i < idle.size() && !core_.stop.load(std::memory_order_relaxed); i += chunk) {
    try {
      flushes_.write_behind_chunk(idle.data() + i, std::min(chunk, idle.size() - i), bounce_.data());
    } catch (...) {
      core_.errors.record(std::current_exception());  // its pages are dirty again
      failed_ = true;
      flushes_seen_ = core_.c.flushes.load(std::memory_order_relaxed);
      return;
    }
  }
}

std::vector<std::size_t> write_behind::scan_written() {
  std::vector<std::size_t> found;
  std::lock_guard lk(core_.scan_mu);
  bool lost = false;
  const long r = pagemap_walk<512>(core_.pagemap_fd, core_.base, core_.base + core_.cap,
                                   pm_scan_wp_matching | pm_scan_check_wpasync,
                                   page_is_written | page_is_present, 0, [&](const page_region& reg) {
                                     const auto [a, b] = core_.pages_of(reg);
                                     for (std::size_t p = a; p <= b; ++p) {
                                       if (!core_.table.note_written(p)) lost = true;
                                       if (found.empty() || found.back() != p) found.push_back(p);
                                     }
                                   });
  if (r < 0 || lost) {
    core_.count_every_page_written("write-behind scan",
                                   r < 0 ? std::strerror(static_cast<int>(-r)) : "page not resident");
  }
  return found;
}

}  // namespace pheap::paging
