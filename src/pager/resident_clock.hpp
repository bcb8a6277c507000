// src/pager/resident_clock.hpp — the evictor's clock: the resident pages in the order they
// were installed, and a hand that goes round them giving each a second chance.
//
// Fault workers publish every page they install (publish(): a short leaf lock, amortised
// O(1)); the evictor takes the published pages into its ring before each sweep
// (take_published()) and is the only user of the ring itself. The hand pops the page in front
// (next()); the evictor either claims it as a victim (it leaves the ring), or puts it back
// behind the hand (pass(): referenced, owned, pinned) or in front of it (unclaimed candidates,
// which stay the oldest).
//
// Invariants:
//   C1  every resident page is in the ring or published-and-not-yet-taken, exactly once: a
//       page is published once per install, and leaves the ring only when the evictor claims
//       it; a claimed page that stays resident (it did not move out, or its write-back
//       failed) is put back by the evictor.
//   C2  so the ring holds at most the resident pages (buffer + pinned pages, + B2's overflow):
//       victim selection costs O(1) per page examined, whatever the region's capacity (the
//       clock used to sweep page numbers over the whole region: O(capacity) per batch).
// Locks: mu_ is a leaf (nothing is taken while holding it).
#pragma once

#include <cstddef>
#include <deque>
#include <mutex>
#include <vector>

namespace pheap::paging {

class resident_clock {
 public:
  // ---- fault workers -----------------------------------------------------------------------
  void publish(std::size_t page) {
    std::lock_guard lk(mu_);
    published_.push_back(page);
  }

  // ---- the evictor (single thread) ---------------------------------------------------------
  // Appends the pages published since the last call behind the hand (they are the newest).
  void take_published() {
    {
      std::lock_guard lk(mu_);
      taken_.swap(published_);
    }
    ring_.insert(ring_.end(), taken_.begin(), taken_.end());
    taken_.clear();
  }
  std::size_t size() const noexcept { return ring_.size(); }
  // Pops the page under the hand; false when the ring is empty.
  bool next(std::size_t& page) {
    if (ring_.empty()) return false;
    page = ring_.front();
    ring_.pop_front();
    return true;
  }
  // Puts a page back behind the hand: it is looked at again after every other page.
  void pass(std::size_t page) { ring_.push_back(page); }
  // Puts pages back in front of the hand, in their order: the next ones looked at.
  void put_front(const std::vector<std::size_t>& pages) {
    ring_.insert(ring_.begin(), pages.begin(), pages.end());
  }

 private:
  std::mutex mu_;
  std::vector<std::size_t> published_;  // guarded by mu_
  std::vector<std::size_t> taken_;      // the evictor's swap buffer
  std::deque<std::size_t> ring_;        // the evictor's
};

}  // namespace pheap::paging
