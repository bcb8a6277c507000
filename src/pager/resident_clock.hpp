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
// The evictor may also claim a resident page out of the hand's order: a neighbour of a victim,
// so that victims leave in contiguous runs (one UFFDIO_MOVE and one TLB flush per run instead
// of one per page; bench/DECISIONS.md "victims in runs"). Such a page's entry stays where it is and
// becomes stale (claimed_out_of_order()); next() drops stale entries as it meets them.
//
// Invariants:
//   C1  every resident page has exactly one live entry, in the ring or published-and-not-yet-
//       taken: a page is published once per install, and its entry leaves the ring (or turns
//       stale, C3) only when the evictor claims it; a claimed page that stays resident (it did
//       not move out, or its write-back failed) is published again by the evictor.
//   C2  so the ring holds at most the resident pages (buffer + pinned pages, + B2's overflow)
//       plus the stale entries, at most a third of them (may_claim_out_of_order: a claim
//       only while stale entries are under a quarter of the ring):
//       victim selection costs O(1) per page examined, whatever the region's capacity (the
//       clock used to sweep page numbers over the whole region: O(capacity) per batch).
//   C3  stale_[p] counts page p's stale entries, and they are the first stale_[p] entries of
//       p the hand meets: a page's live entry is always its newest (it is published after the
//       claim that made the older one stale, and appended at the back; only entries just
//       popped are put back in front, and a stale entry is dropped, never passed).
// Locks: mu_ is a leaf (nothing is taken while holding it; lock_rank.hpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <utility>
#include <vector>

#include "pager/os/memory.hpp"
#include "pager/lock_rank.hpp"

namespace pheap::paging {

class resident_clock {
 public:
  // ---- fault workers -----------------------------------------------------------------------
  void publish(std::size_t page) {
    std::lock_guard lk(mu_);
    published_.push_back(page);
  }

  // ---- set-up ------------------------------------------------------------------------------
  // Room for the stale counts of pages [0, npages): one byte each, touched only where a page
  // was claimed out of order (a lazily backed mapping).
  void size_for(std::size_t npages) {
    stale_ = anon_map(npages == 0 ? 1 : npages, true);
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
  // Pops the page under the hand, dropping stale entries on the way (C3); false when the ring
  // is empty.
  bool next(std::size_t& page) {
    while (!ring_.empty()) {
      page = ring_.front();
      ring_.pop_front();
      std::uint8_t& st = stale(page);
      if (st == 0) return true;
      --st;
      --stale_total_;
    }
    return false;
  }
  // Whether resident page `page` may be claimed out of the hand's order now (C2's bound, and
  // a page's count saturating).
  bool may_claim_out_of_order(std::size_t page) {
    return stale_total_ * 4 < ring_.size() && stale(page) < 255;
  }
  // Resident page `page` was claimed out of the hand's order: its live entry (in the ring, in
  // the caller's hands to be put back, or published) is stale from now on.
  void claimed_out_of_order(std::size_t page) {
    ++stale(page);
    ++stale_total_;
  }
  // Resident page `page` leaves the region without the hand (released by the heap:
  // evictor::drop_released), whatever C2's bound: when a claim out of order is not allowed,
  // the ring first drops every stale entry (O(ring), once per ring's worth of such pages).
  // Only between take_published() and the hand's next pop (no entry in the caller's hands).
  void claimed_away(std::size_t page) {
    if (!may_claim_out_of_order(page)) drop_stale();
    claimed_out_of_order(page);
  }
  // Drops every stale entry of the ring (C3: in ring order, the first stale_[p] entries of p).
  void drop_stale() {
    std::deque<std::size_t> live;
    for (const std::size_t p : ring_) {
      std::uint8_t& st = stale(p);
      if (st == 0) {
        live.push_back(p);
        continue;
      }
      --st;
      --stale_total_;
    }
    ring_.swap(live);
  }
  // The smallest and largest page with an entry in the ring (live or stale); false when the
  // ring is empty. O(ring).
  bool span(std::size_t& first, std::size_t& last) const {
    if (ring_.empty()) return false;
    const auto [lo, hi] = std::minmax_element(ring_.begin(), ring_.end());
    first = *lo;
    last = *hi;
    return true;
  }
  // The pages with an entry in the ring as sorted runs of consecutive pages [first, last].
  // O(ring log ring).
  void runs(std::vector<std::pair<std::size_t, std::size_t>>& out) const {
    std::vector<std::size_t> p(ring_.begin(), ring_.end());
    std::sort(p.begin(), p.end());
    out.clear();
    for (const std::size_t q : p) {
      if (!out.empty() && q <= out.back().second + 1) {
        out.back().second = std::max(out.back().second, q);
      } else {
        out.emplace_back(q, q);
      }
    }
  }
  // A read-only region's refresh dropped pages[0..n) (sorted) from the region out of the
  // hand's order (pager_impl::invalidate, holding the evictor's batch lock: it is the
  // evictor meanwhile): every entry of theirs leaves the ring and the published list, live or
  // stale, and their stale counts go (C1: they are not resident; C3: none left). O(ring).
  void forget(const std::size_t* pages, std::size_t n) {
    if (n == 0) return;
    take_published();
    const auto gone = [&](std::size_t p) { return std::binary_search(pages, pages + n, p); };
    ring_.erase(std::remove_if(ring_.begin(), ring_.end(), gone), ring_.end());
    for (std::size_t k = 0; k < n; ++k) {
      std::uint8_t& st = stale(pages[k]);
      if (st == 0) continue;  // untouched: its byte stays unbacked
      stale_total_ -= st;
      st = 0;
    }
  }
  // Puts a page back behind the hand: it is looked at again after every other page.
  void pass(std::size_t page) { ring_.push_back(page); }
  // Puts pages back in front of the hand, in their order: the next ones looked at.
  void put_front(const std::vector<std::size_t>& pages) {
    ring_.insert(ring_.begin(), pages.begin(), pages.end());
  }

 private:
  ranked_mutex<lock_rank::leaf> mu_;
  std::vector<std::size_t> published_;  // guarded by mu_
  std::vector<std::size_t> taken_;      // the evictor's swap buffer
  std::deque<std::size_t> ring_;        // the evictor's
  anon_map stale_;                      // the evictor's: std::uint8_t per page (C3)
  std::size_t stale_total_ = 0;         // the evictor's: sum of stale_

  std::uint8_t& stale(std::size_t page) {
    return reinterpret_cast<std::uint8_t*>(stale_.data())[page];
  }
};

}  // namespace pheap::paging
