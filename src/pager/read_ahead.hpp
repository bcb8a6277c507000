// src/pager/read_ahead.hpp — fault streams and the read-ahead windows they earn: the kernel's
// readahead state machine, for a pager that sees an access only when it faults.
//
// The difficulty. A page the pager read ahead and installed is never seen again: reading it
// costs the application nothing, and tells the pager nothing. So each window leaves one page
// out, its *marker* (the kernel's PG_readahead page), half-way through: the window's other
// pages are read in the background, the application runs through them without faulting and
// faults on the marker while the second half is still ahead of it. That fault is the signal
// that the stream is being followed, and the next window is planned then — twice as large, up
// to the ceiling — so the device has the next reads before the application needs them.
//
// A stream is {last fault, stride, run, window}. On a missing fault on page p (one the store
// has data for), on_fault() applies the first rule that matches:
//   R1  p is the marker of a stream's window, or the first page after the window (the
//       application went past the window without faulting on the marker: it was resident):
//       the stream is followed. Its next window starts after the last one (after p, when p
//       is the page after the window) with twice the last one's pages, at most the ceiling.
//   R2  p is last + stride of a stream (a step of at most kMaxStride pages either way, set
//       when the stream started; a window's stride is the stream's): the run grows; at
//       kTrigger faults in a row the first window (kFirstWindow pages, at most the ceiling)
//       starts after p.
//   R3  p is within kMaxStride pages of one of the last kRecent faults that started or
//       continued no stream: a stream starts with that step as its stride (run 2), in place
//       of the least recently used stream that has no window, or, when all have one, of the
//       least recently used of all.
//   R4  otherwise p joins the last kRecent faults (the oldest leaves).
// Faults that continue nothing only enter the ring of recent faults, never a stream's place:
// a scan whose faults come between many random ones (another thread's) still finds its
// previous fault there, and a stream, once it has a stride, is replaced only by another.
// A fault inside a window that is not its marker (the application overtook the background
// reads, or a page got no slot and waits in the prefetch queue) matches no rule and changes
// nothing.
//
// What the caller does with a window (pager_impl::start_read_ahead): claims its pages that are
// absent and hold data, as far as buffer slots below the high watermark allow, and has the
// fault workers read them; the rest waits in the prefetch queue for room. Never the marker.
//
// Counters (pager_stats): windows planned and their pages; pages *passed*: planned pages
// that lie before a fault the stream then took by R1 (the application reached past them, so
// it read them or did not need to). planned − passed bounds the pages read ahead in vain
// from above (a window still ahead of its stream at close counts as not passed).
//
// Caveats:
//   * kStreams streams at once: more concurrent scans than that replace a stream before its
//     window is followed, and that scan reads without read-ahead until its run is seen
//     again; a scan's first two faults must fall within kRecent faults of each other.
//   * A random pattern earns no window unless kTrigger faults fall stride-apart by chance
//     (a list spanning three pages does: its window is the one cost, at most kFirstWindow).
//   * Thread-safe: one mutex, held for the few comparisons of a fault; nothing else is taken
//     under it (a leaf of the pager's lock order).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>

namespace pheap::paging {

// Pages start, start + stride, …, start + (pages − 1)·stride; `marker` (an index < pages, or
// npos) is the one left out.
struct read_window {
  static constexpr std::size_t npos = ~std::size_t(0);
  std::size_t start = 0;
  std::ptrdiff_t stride = 1;
  std::size_t pages = 0;
  std::size_t marker = npos;
  std::size_t page(std::size_t i) const noexcept {
    return static_cast<std::size_t>(static_cast<std::ptrdiff_t>(start) + static_cast<std::ptrdiff_t>(i) * stride);
  }
};

class read_ahead {
 public:
  static constexpr std::size_t kStreams = 8;
  static constexpr std::size_t kRecent = 32;
  static constexpr std::ptrdiff_t kMaxStride = 8;
  static constexpr unsigned kTrigger = 3;
  static constexpr std::size_t kFirstWindow = 8;
  // A window of fewer pages has no marker (R1's "page after the window" follows it).
  static constexpr std::size_t kMinMarked = 4;

  // A region of `region_pages` pages, windows of at most `ceiling` pages (0: off).
  void configure(std::size_t region_pages, std::size_t ceiling) noexcept;
  bool on() const noexcept { return ceiling_ > 0; }
  std::size_t ceiling() const noexcept { return ceiling_; }

  // The window a missing fault on `page` earns (rules above), clipped to the region; nullopt
  // when none.
  std::optional<read_window> on_fault(std::size_t page);

  struct counts {
    std::uint64_t windows = 0, planned = 0, passed = 0;
  };
  counts totals() const;

 private:
  struct stream {
    bool used = false;
    std::size_t last = 0;        // the last fault
    std::ptrdiff_t stride = 0;   // the step of its run (set when it starts: R3)
    unsigned run = 0;            // faults in a row at `stride`
    std::uint64_t tick = 0;      // LRU
    bool window = false;         // w is planned and not followed yet
    read_window w;
    std::size_t counted = 0;     // read-ahead pages of w counted as passed
    std::size_t tail = 0;        // read-ahead pages of the previous window not counted yet
  };
  // The stream's next window of `pages` pages from `start` (within the region), or nullopt.
  std::optional<read_window> plan(stream& s, std::ptrdiff_t start, std::size_t pages);
  // The pages of s.w that lie before index `upto`, counted as passed once.
  void pass(stream& s, std::size_t upto);
  // The position of `page` in window w (index i with w.page(i) == page), or npos.
  static std::size_t index_in(const read_window& w, std::size_t page) noexcept;

  mutable std::mutex mu_;
  std::array<stream, kStreams> s_{};
  std::array<std::size_t, kRecent> recent_{};  // R4's ring; valid entries: min(seen_, kRecent)
  std::size_t seen_ = 0;
  std::uint64_t tick_ = 0;
  std::size_t region_pages_ = 0, ceiling_ = 0;
  counts c_;
};

}  // namespace pheap::paging
