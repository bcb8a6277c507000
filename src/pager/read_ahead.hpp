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
// A stream is {thread, last fault, stride, run, window}. On a missing fault on page p (one
// the store has data for) by thread t (0: not known), on_fault() applies the first rule that
// matches (a thread matches t when either is 0 or they are equal):
//   R1  p is the marker of a stream's window, or the first page after the window (the
//       application went past the window without faulting on the marker: it was resident):
//       the stream is followed. Its next window starts after the last one (after p, when p
//       is the page after the window) with twice the last one's pages, at most the ceiling.
//   R2  p is last + stride of a stream of t's (a step of at most kMaxStride pages either way,
//       set when the stream started; a window's stride is the stream's): the run grows; at
//       kTrigger faults in a row the first window (kFirstWindow pages, at most the ceiling)
//       starts after p — unless the gate (below) is shut.
//   R3  p is within kMaxStride pages of one of t's last kSameThread faults among the last
//       kRecent that started or continued no stream: a stream of t's starts with that step as
//       its stride (run 2), in place of the least recently used stream that has no window,
//       or, when all have one, of the least recently used of all.
//   R4  otherwise p joins the last kRecent faults (the oldest leaves).
// Faults that continue nothing only enter the ring of recent faults, never a stream's place:
// a scan whose faults come between many random ones of other threads still finds its own
// previous fault there, and a stream, once it has a stride, is replaced only by another.
//
// The gate. A random pattern in a small region falls a stride apart by chance often enough
// to earn first windows nobody follows. So R2's first windows are counted in rounds of
// kGateRound: a round in which fewer than a quarter were followed (R1) shuts the gate, and
// while it is shut only every kGateSample-th first window is planned — enough to see a
// scan begin, whose followed windows open the gate again at the end of their round (the
// victim cache's sampling, for the same reason). Windows of followed streams are never gated.
// A window expires when kExpirePerPage × its pages faults (of any thread) came since it was
// planned without following it, or, where threads are known, when its thread took more than
// kExpireStrays faults that follow none of its windows and fall in none of them (a scan's
// next own fault is its marker, unless it also walks other data: a few strays are allowed):
// its stream keeps its run (R2 may plan again) but no window, so a random fault that lands
// on an old marker by chance is not taken for a follow. (Without the second rule random
// faults of three threads over 256 pages followed half their windows by chance, and the
// gate stayed open.)
// A fault inside a window that is not its marker (the application overtook the background
// reads, or a page got no slot and waits in the prefetch queue) matches no rule and changes
// nothing.
//
// What the caller does with a window (fault_service::start_read_ahead): claims its pages that are
// absent and hold data, as far as buffer slots below the high watermark allow, and has the
// fault workers read them, in batches of 1 MiB that several workers read at once; the rest
// waits in the prefetch queue for room. Never the marker.
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
//   * A random pattern earns no window unless kTrigger faults of one thread fall a stride
//     apart by chance (a list spanning three pages does: its window is the one cost, at most
//     kFirstWindow pages), and while the gate is shut only one such window in kGateSample.
//   * The thread is known with UFFD_FEATURE_THREAD_ID (workers) or on the faulting thread
//     (SIGBUS fills); without it every fault is "thread 0" and matches every stream.
//   * Thread-safe: one mutex, held for the few comparisons of a fault; nothing else is taken
//     under it (a leaf of the pager's lock order).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>

#include "pager/lock_rank.hpp"

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
  static constexpr std::size_t kRecent = 32, kSameThread = 4;
  static constexpr unsigned kGateRound = 32, kGateSample = 8;
  static constexpr std::uint64_t kExpirePerPage = 8;
  static constexpr unsigned kExpireStrays = 4;
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
  std::optional<read_window> on_fault(std::size_t page, std::uint32_t tid = 0);

  struct counts {
    std::uint64_t windows = 0, planned = 0, passed = 0;
    std::uint64_t gated = 0;  // first windows the shut gate did not plan
  };
  counts totals() const;

 private:
  struct stream {
    bool used = false;
    std::uint32_t tid = 0;
    std::size_t last = 0;        // the last fault
    std::ptrdiff_t stride = 0;   // the step of its run (set when it starts: R3)
    unsigned run = 0;            // faults in a row at `stride`
    std::uint64_t tick = 0;      // LRU
    bool window = false;         // w is planned and not followed yet
    read_window w;
    std::size_t counted = 0;     // read-ahead pages of w counted as passed
    std::size_t tail = 0;        // read-ahead pages of the previous window not counted yet
    bool first = false;          // w is the stream's first window (the gate counts its follow)
    unsigned strays = 0;         // faults of its thread since w was planned that did not follow it
  };
  static bool same_thread(std::uint32_t a, std::uint32_t b) noexcept { return a == 0 || b == 0 || a == b; }
  // R2's first window: whether the gate lets it be planned (counts the round).
  bool gate_allows();
  // The stream's next window of `pages` pages from `start` (within the region), or nullopt.
  std::optional<read_window> plan(stream& s, std::ptrdiff_t start, std::size_t pages);
  // The pages of s.w that lie before index `upto`, counted as passed once.
  void pass(stream& s, std::size_t upto);
  // The position of `page` in window w (index i with w.page(i) == page), or npos.
  static std::size_t index_in(const read_window& w, std::size_t page) noexcept;

  mutable ranked_mutex<lock_rank::leaf> mu_;  // a leaf (lock_rank.hpp)
  std::array<stream, kStreams> s_{};
  struct recent_fault {
    std::size_t page;
    std::uint32_t tid;
  };
  std::array<recent_fault, kRecent> recent_{};  // R4's ring; valid entries: min(seen_, kRecent)
  std::size_t seen_ = 0;
  unsigned round_first_ = 0, round_followed_ = 0, sample_ = 0;  // the gate's round
  bool shut_ = false;
  std::uint64_t tick_ = 0;
  std::size_t region_pages_ = 0, ceiling_ = 0;
  counts c_;
};

}  // namespace pheap::paging
