// src/pager/staging.hpp — UFFDIO_MOVE staging: a private range, registered with the pager's
// userfaultfd, into which region pages are moved so that no thread can write them while they
// are judged or copied; they are then dropped (eviction: a failed write-back reinstalls its
// pages from the evictor's bounce buffer, evictor.cpp step 6) or moved back (flush copies).
//
// Protocol:
//   1. move_out(pages): one UFFDIO_MOVE per run of consecutive pages, page k to slot k. The
//      move is atomic per page: after it the region page is missing, and an access faults to a
//      worker, which finds the page owned (evict/flush bit) and waits for the owner (I3). The
//      slot holds every byte ever written to the page.
//   2. Where each page went is read back from the page tables (PAGEMAP_SCAN), not from the
//      ioctl's result: on Linux 6.18 it was seen to return EEXIST (move = -EEXIST) for a page it
//      had moved, while PAGEMAP_SCAN write-protected ptes concurrently (wp_async). A UPage that
//      arrived in part is moved back frame by frame, so every UPage ends up whole on one side.
//   3. drop(n) (the bytes are out of the frames: in the store, a bounce buffer or the victim
//      cache) or move_back(pages, moved) (they are not, or were only copied). move_back
//      empties the batch's slots at once. drop only moves the batch's start past them: the
//      frames stay mapped until more than `retain` of them are behind it, and then one
//      MADV_DONTNEED empties them all. Emptying costs a TLB shootdown, whatever the length:
//      an IPI to the other CPUs running the process, a trap to the host on this VM; a tiny buffer's evictor moves out
//      two or three pages per batch, and emptying per batch was 9 % of its CPU
//      (bench/DECISIONS.md "staging emptied once for small batches"). The next batch starts at the
//      first empty slot.
//
// Caveats:
//   * The range is registered MISSING only so that UFFDIO_MOVE may target it; the pager never
//     reads a missing staging page (a fault there is reported as a bug and resolved with
//     zeros by the fault worker).
//   * A PAGEMAP_SCAN failure here aborts the process: without knowing where a page is, any
//     next step could lose data.
//   * Memory: at most `retain` UPages stay mapped after drop(); they are pheap's own memory
//     outside the buffer (their pages have given their slots back), and the pager counts
//     them beside its bounce buffers (pager.cpp own_bytes_outside_buffer). staged_frames()
//     says how many 4 KiB frames are mapped; check_invariants holds them to `retain` UPages
//     when quiescent.
//   * Huge pages (`pool` given to open: huge_pool.hpp): the range is aligned to the PMD size
//     and MADV_HUGEPAGE, so that a 2 MiB page moved out and back stays one PMD mapping; with
//     `recycle`, drop() moves each dropped slot's huge page whole into an empty pool block
//     (up to the pool's keep) instead of emptying it, for the next huge fill — only a slot
//     that PAGEMAP_SCAN says is still one PMD mapping (a write may have split it: wp_async).
//   * Not thread-safe: each range has one user at a time (the evictor under its batch lock, a
//     flush under the flusher's mu_).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "pager/huge_pool.hpp"
#include "pager/os/memory.hpp"

namespace pheap::paging {

class staging {
 public:
  staging() = default;
  // Maps `slots` + `retain` UPages of `page_size` bytes and registers them with `uffd`
  // (MISSING mode), to stage batches of up to `slots` pages of the region at `region`,
  // keeping up to `retain` dropped frames mapped (step 3). `pagemap_fd` must stay open while
  // the range is used. Throws like uffd_register, naming `name`.
  void open(int uffd, int pagemap_fd, std::byte* region, std::size_t page_size,
            std::size_t slots, std::size_t retain, const std::string& name,
            huge_pool* pool = nullptr, bool recycle = true);
  // Where drop() counts the huge pages it gave to the pool.
  // and the pages it found split into 4 KiB entries (not recycled).
  void count_recycled(std::atomic<std::uint64_t>* c, std::atomic<std::uint64_t>* split) noexcept {
    recycled_ = c;
    split_ = split;
  }
  // Unregisters the range from the uffd (the mapping goes with the object).
  void close() noexcept;
  bool is_open() const noexcept { return map_.p != nullptr; }

  // Slot k of the batch in progress (slot 0 is the batch's start, step 3).
  std::byte* slot(std::size_t k) const noexcept { return map_.data() + (start_ + k) * ps_; }
  // Steps 1-2: moves pages[0..n) (sorted, n ≤ slots) to slots 0..n; says per slot whether the
  // whole UPage arrived (a page that did not stays in the region, untouched).
  std::vector<bool> move_out(const std::size_t* pages, std::size_t n);
  // Step 3: moves every slot that `moved` says arrived back to its page, copies in any frame
  // still staged after that (a move back that failed, or failed in part), and empties the
  // batch's slots.
  void move_back(const std::size_t* pages, const std::vector<bool>& moved);
  // Step 3: the batch's slots 0..n are done with (their bytes are elsewhere now); their
  // frames are emptied with the next MADV_DONTNEED, at once if more than `retain` UPages are
  // waiting.
  void drop(std::size_t n) noexcept;
  // Frames mapped in the range now, from PAGEMAP_SCAN (the invariant checker, tests).
  std::size_t staged_frames() const;
  std::size_t retain() const noexcept { return retain_; }

 private:
  std::byte* page_addr(std::size_t p) const noexcept { return region_ + p * ps_; }
  void empty_dropped() noexcept;
  std::vector<bool> arrived(const std::size_t* pages, std::size_t slots);
  // Per 4 KiB frame of [addr, addr+len): mapped or not, from PAGEMAP_SCAN (the truth).
  void present_frames(const std::byte* addr, std::size_t len, std::vector<bool>& out) const;

  void recycle(std::size_t n) noexcept;

  anon_map map_;
  huge_pool* pool_ = nullptr;  // huge: dropped slots' pages go here
  std::atomic<std::uint64_t>* recycled_ = nullptr;
  std::atomic<std::uint64_t>* split_ = nullptr;
  int uffd_ = -1, pagemap_fd_ = -1;
  std::byte* region_ = nullptr;
  std::size_t ps_ = 0;
  std::size_t slots_ = 0, retain_ = 0;
  std::size_t start_ = 0;  // the batch's slot 0; the frames of the slots before it are dropped
  std::string name_;
};

}  // namespace pheap::paging
