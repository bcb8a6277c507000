// src/pager/buffer_budget.hpp — the bounded buffer's slots: how many pages of the region may
// be in memory, who waits for one, and when the evictor is woken.
//
// A fill takes a slot before it claims a page (absent → filling) and the slot is given back
// after the page has left memory again (evicted, fill abandoned, poisoned). `used` counts the
// slots of unpinned pages: occupied − pinned (pinned pages are outside the budget).
//
// Invariants:
//   B1  occupied ≥ filling + resident pages at every instant, equal when no fill, poisoning
//       or eviction is in flight (page_table.hpp I6): slots are taken before the claim and
//       returned after the page-table transition. One exception: the victims of the eviction
//       batch in flight give their slots back as soon as their bytes are out of the buffer
//       (evictor.cpp step 5; frames the staging range keeps a while are pheap's own memory
//       outside it, staging.hpp step 3); those judged clean go absent just after that, and are
//       `resident | evict` without a slot until then. (Those to write go absent just before,
//       `writing`, and may take a slot again after a failed write-back: retake().)
//   B2  a slot is granted only while used is below the limit asked for: the buffer for a
//       fault (which waits for the evictor when the buffer is full), the high watermark for
//       read-ahead and prefetch (which never wait). So resident pages never exceed the buffer
//       plus the pinned pages — with one exception: while write-back is failing, a fault that
//       finds the buffer full takes a slot beyond it (evicting would lose data, waiting would
//       hang the faulting thread); the error surfaces at the next flush().
//   B3  the evictor is woken whenever a grant or an unpin leaves used at or above the high
//       watermark of a region larger than the buffer, and on every round of a waiting fault;
//       it evicts down to the low watermark, and at least one page per round while a fault
//       waits on a full buffer (used at the target: a waiter that has room is only slow to
//       wake, and evicting for it would drain the buffer below the low watermark; nor does
//       the evictor stay kicked for it, which would spin it until the fault woke). A waiting
//       fault re-checks at least every 5 ms, so a missed notification delays it and never
//       hangs it.
//   B4  the buffer follows the memory limit (automatic buffer only, follow()): the buffer in
//       force, its *target*, is re-computed by the evictor thread — at the start of each
//       eviction round and before each batch, at most once per follow period, and every
//       period while the evictor is idle — from the limit and from what the rest of the
//       process uses now (the pager's sampler, pager.cpp follow_limit). The rule:
//         target = clamp(sampler(resident pages + lent pages) − lent pages (B5),
//                        min(min_pages, region), maximum)
//       where maximum is the buffer configured at open (never exceeded) and min_pages the
//       smallest working buffer (never gone below, even if the limit leaves less: the process
//       is then over its limit whatever pheap does). The watermarks are the same fractions
//       of the target. A lower target wakes the evictor when used is at its high watermark,
//       so pheap gives memory back within one period plus the eviction of the excess; a
//       higher one (the rest of the process shrank) lets faults fill again. B2 reads the
//       target of the instant of the grant: a grant racing a lowering may leave used one
//       slot per racing thread above the new target, which the evictor then takes back.
//   B5  lent memory (lend/give_back below): the target is the sample less what is lent, so
//       memory the pager touches only while flushing comes out of the buffer, not out of the
//       reserve that is kept for the rest of the process.
//   B6  a budget that shares its limit with other pagers (share(), limit_pool.hpp)
//       also takes each slot's bytes from the pool when it grants it (B2's overflow included)
//       and gives them back when the slot is released or the budget goes; a grant the pool
//       refuses (never one within the smallest working buffer, B4) waits as at a full buffer, and the evictor then evicts at least one page per
//       round for it (the pool is full: room comes only from evicting, its own or, after
//       their next sample, the other members'). A budget that needs slots it cannot have (a
//       fault waits, or the evictor runs) while it holds less than the pool's cap / members,
//       below its own maximum, tells the pool so (P3's contention, as a refusal would): the
//       others come down to their fair share at their next sample.
//   B7  the watermarks are the configured fractions of the target (B4), but, where the target
//       is smaller than the region, at least min(kAheadPages, target/8) pages below the
//       target (the high one) and min(kRoundPages, target/2) pages apart (the low one below
//       the high one; where the region fits, used may reach the target and no evictor runs
//       to bring it down to a high watermark below it). Out of core
//       the fractions give more (0.99 and 0.97 of a buffer of 800 pages or more); a small
//       buffer gets eviction rounds of several pages that start before the buffer is full.
//       At the fractions alone a buffer of 16 pages evicted one page per round once a fault
//       waited, and the evictor spent its CPU on each round's fixed costs (a harvest, a
//       staging drop, a TLB shootdown, a wake-up): 4 KiB pages, 16-page buffer, 81-83 µs of
//       evictor CPU per eviction and 63-69 s against 26-27 µs and 32-33 s now (bench/DECISIONS.md
//       "watermark gaps in pages").
// Locks: free_mu_, evict_mu_ and retarget_mu_ are leaves (nothing is taken while holding them); the sampler
// is called with no lock held.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>

#include "pager/limit_pool.hpp"

namespace pheap::paging {

class buffer_budget {
 public:
  // `stop`: the pager's stop flag; waits end when it is set.
  explicit buffer_budget(const std::atomic<bool>& stop) : stop_(stop) {}
  ~buffer_budget();  // gives the pool (B6) what the budget still holds, and leaves it

  // The smallest buffer, in pages, of a region of at least that many pages: one page filling
  // while another leaves. The pager refuses smaller buffers (pager.cpp choose_buffer).
  static constexpr std::size_t min_pages = 2;
  // B7: the smallest gaps, in pages, below the target (high watermark) and between the
  // watermarks (the eviction round).
  static constexpr std::size_t kAheadPages = 2, kRoundPages = 8;

  // Sizes the buffer for a region of `region_pages` pages: `buffer_pages` (≥ min_pages, or
  // the region when smaller), at most the region; the watermarks are fractions of it (high
  // rounded up, at least 1; low below high; B7). Called once, before any thread uses the budget.
  void configure(std::size_t region_pages, std::size_t buffer_pages, double high_watermark,
                 double low_watermark);
  // The buffer configured at open: the maximum of the target (B4).
  std::size_t pages() const noexcept { return max_pages_; }
  // The buffer in force now (== pages() unless following a memory limit, B4).
  std::size_t target_pages() const noexcept { return target_pages_.load(std::memory_order_relaxed); }
  // The target is smaller than the region: the evictor has work to do.
  bool evicts() const noexcept { return target_pages() < region_pages_; }

  // ---- following the memory limit (B4) -------------------------------------------------------
  // `sampler(resident pages)` returns the buffer, in pages, that the memory limit leaves now
  // for a pager holding that many pages. Called before the evictor thread starts.
  using sampler = std::function<std::size_t(std::size_t resident_pages)>;
  void follow(sampler s, std::chrono::milliseconds period);
  bool follows() const noexcept { return static_cast<bool>(sampler_); }
  // The evictor's side: re-computes the target if a period has passed since the last time.
  void follow_limit();
  std::uint64_t resamples() const noexcept { return resamples_.load(std::memory_order_relaxed); }
  std::size_t lowest_target() const noexcept { return lowest_target_.load(std::memory_order_relaxed); }
  // B5: memory of the pager's own that it touches only for a while (the flush bounce buffer
  // of a pager following a limit) is lent out of the buffer: lend(n) lowers the target by n
  // pages and waits, as a fault waits for a slot, until the evictor has brought used down to
  // the new high watermark (or write-back fails, or the pager stops); give_back(n) raises it
  // again. The caller touches the memory only after lend() returned and no longer after
  // give_back(). Following a limit only (else a no-op).
  void lend(std::size_t n);
  void give_back(std::size_t n);
  // B6: joins `pool`, holding `fixed` bytes in it at once (the pager's memory outside the
  // buffer) until the budget goes; from now on each slot also takes `unit` bytes from it.
  // False (and not shared) when the pool has no room for another member. Called before the
  // evictor starts.
  bool share(std::shared_ptr<limit_pool> pool, std::int64_t unit, std::int64_t fixed);
  // What this budget holds in its pool (B6): its slots' bytes and the fixed bytes.
  std::int64_t pooled() const noexcept {
    return std::max<std::int64_t>(0, occupied_.load(std::memory_order_acquire)) * unit_ + fixed_;
  }
  limit_pool* pool() const noexcept { return pool_.get(); }
  int member() const noexcept { return member_; }
  std::int64_t unit() const noexcept { return unit_; }
  // B6, P3: tells the pool this budget is short when it is held below its own maximum and
  // below cap / members (the others hold the rest). Called where it needs a slot it cannot
  // have: a fault that waits, and every round of the evictor (which runs because the
  // target is reached: a budget kept at a target the others leave it evicts without its
  // faults ever waiting).
  void note_if_short() noexcept;

  // ---- slots -------------------------------------------------------------------------------
  // A slot for a fault: waits for the evictor while the buffer is full (B2). False only when
  // the pager is stopping.
  bool reserve();
  // A slot for read-ahead or prefetch, only below the high watermark; never waits.
  bool try_reserve_below_high() { return try_reserve(high_pages_.load(std::memory_order_relaxed)); }
  // A slot below the buffer's target (as a fault's, but never waiting): for fills that cost no
  // I/O (zeros next to a zero-filled fault), which out of core find the buffer at its high
  // watermark and would otherwise never run.
  bool try_reserve_below_target() { return try_reserve(target_pages()); }
  // A scan's prefetch (fault_service::prefetch_stored): a slot only below the low watermark, so
  // that it never starts an eviction round (B3); room_below_low(): how many such slots are
  // free now (a hint: grants and releases move it at once).
  bool try_reserve_below_low() { return try_reserve(low_pages_.load(std::memory_order_relaxed)); }
  std::size_t room_below_low() const noexcept {
    const std::int64_t used = occupied_.load(std::memory_order_relaxed) - pinned_.load(std::memory_order_relaxed);
    const auto low = static_cast<std::int64_t>(low_pages_.load(std::memory_order_relaxed));
    return used < low ? static_cast<std::size_t>(low - used) : 0;
  }
  // Gives back n slots (pages that left memory, or claims that lost) and wakes waiting faults.
  void release(std::size_t n);
  // Takes n slots again, past the buffer if need be, for victims whose slots the evictor gave
  // back before their write-back (evictor.cpp step 5) and whose write-back then failed (B2's
  // exception).
  void retake(std::size_t n);
  std::int64_t used() const noexcept {
    return occupied_.load(std::memory_order_acquire) - pinned_.load(std::memory_order_acquire);
  }
  std::int64_t occupied() const noexcept { return occupied_.load(); }
  std::int64_t pinned() const noexcept { return pinned_.load(); }
  // A page's pin count went 0 → 1 / 1 → 0.
  void page_pinned() { pinned_.fetch_add(1); }
  void page_unpinned() { pinned_.fetch_sub(1); }
  // After unpins: wakes the evictor if used is at the high watermark (B3).
  void check_pressure() { kick_at_high(used()); }
  // Eviction write-back failing or working again (B2's exception).
  void set_writeback_failing(bool failing) noexcept {
    writeback_failing_.store(failing, std::memory_order_release);
  }

  // ---- the evictor's side ------------------------------------------------------------------
  void kick_evictor();
  // The evictor sleeps until kicked (following a limit: waking every period to follow it,
  // B4); false when the pager is stopping.
  bool wait_for_kick();
  // Pages to evict now: down to the low watermark, at least one while a fault waits on a full
  // buffer (B3); follows the limit first (B4).
  std::size_t to_evict();
  // Wakes faults waiting for a slot (after a batch, or at shutdown).
  void notify_freed();
  // End of an eviction round: stays kicked if there is still work (or the round made no
  // progress: `idle_round`, the evictor backs off and tries again).
  void end_round(bool idle_round);
  // Not kicked and used at most the high watermark (the caller holds the eviction batch lock,
  // so no batch is in flight either).
  bool evictor_idle();
  // Shutdown: wakes the evictor and every waiting fault (they see the stop flag).
  void wake_all();

  // ---- statistics --------------------------------------------------------------------------
  void note_peak();  // records occupied as the peak if it is one
  std::uint64_t peak() const noexcept { return peak_.load(std::memory_order_relaxed); }
  std::uint64_t waits() const noexcept { return waits_.load(std::memory_order_relaxed); }

 private:
  bool try_reserve(std::size_t limit);
  // A fault waits for a slot that only an eviction can give (B3, B6): the buffer is at its
  // target or the pool refuses the grant. Not a waiter that has room and has not woken yet.
  bool waiter_needs_room(std::int64_t used_now) const noexcept;
  void kick_at_high(std::int64_t used_now) {
    if (used_now >= static_cast<std::int64_t>(high_pages_.load(std::memory_order_relaxed)) &&
        evicts()) {
      kick_evictor();
    }
  }
  // The target and its watermarks (B4); wakes the evictor if used is at the new high mark.
  // Called under retarget_mu_ (the evictor's follow_limit and a flush's lend/give_back).
  void retarget(std::size_t pages);
  // The target from the last sample, less what is lent (B5).
  std::size_t lent_target() const noexcept { return sampled_ > lent_ ? sampled_ - lent_ : 0; }
  std::int64_t low_pages() const noexcept {
    return static_cast<std::int64_t>(low_pages_.load(std::memory_order_relaxed));
  }
  std::int64_t high_pages() const noexcept {
    return static_cast<std::int64_t>(high_pages_.load(std::memory_order_relaxed));
  }

  const std::atomic<bool>& stop_;
  std::size_t region_pages_ = 0, max_pages_ = 0;
  double high_fraction_ = 1, low_fraction_ = 0;
  std::atomic<std::size_t> target_pages_{0}, high_pages_{0}, low_pages_{0};
  std::atomic<std::size_t> lowest_target_{0};
  sampler sampler_;  // set before the evictor starts; used by the evictor thread only
  std::mutex retarget_mu_;  // a leaf: serialises retarget(); guards sampled_ and lent_
  std::size_t sampled_ = 0, lent_ = 0;
  std::chrono::milliseconds period_{10};
  std::chrono::steady_clock::time_point last_sample_{};  // evictor thread only
  std::atomic<std::uint64_t> resamples_{0};
  std::atomic<std::int64_t> occupied_{0};  // filling + resident pages (B1)
  std::atomic<std::int64_t> pinned_{0};    // pages with pin count > 0
  std::atomic<bool> writeback_failing_{false};
  std::atomic<int> waiters_{0};            // faults waiting for a slot
  std::mutex free_mu_;                     // their sleep
  std::condition_variable free_cv_;
  std::mutex evict_mu_;                    // guards kicked_ (the evictor's sleep)
  std::condition_variable evict_cv_;
  bool kicked_ = false;
  std::atomic<std::uint64_t> peak_{0}, waits_{0};
  std::shared_ptr<limit_pool> pool_;  // B6 (null: not shared)
  int member_ = -1;
  std::int64_t unit_ = 0, fixed_ = 0;
};

}  // namespace pheap::paging
