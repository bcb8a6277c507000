// src/pager/page_table.hpp — per-page state of a pager region: one 32-bit atomic word per
// UPage, changed only by compare-and-swap, so the fault path takes no lock.
//
// Word layout:
//   bits 0-1  kind      absent | filling | resident | poisoned
//   bit  2    dirty     known dirty (wp_sync: first write seen; any mode: must be written even
//                       if the page tables say clean, e.g. after a failed write-back)
//   bit  3    evict     owned by the evictor (moving out / writing back)
//   bit  4    flush     owned by a flush (copying out)
//   bit  5    wanted    a fault arrived while evict/flush owned the page: the owner wakes the
//                       faulting range when it lets go
//   bit  6    ref       referenced since the evictor's clock hand last passed (second chance)
//   bit  7    wpclear   wp_sync: a worker is between "set dirty" and "write-unprotect"
//   bit  8    kept      absent or filling only: when the page was evicted, a copy of its bytes
//                       (those the store has) was kept in the victim cache (victim_cache.hpp);
//                       the kernel may have dropped it since
//   bit  9    writing   absent, or filled again since: the page's eviction is writing its
//                       bytes to the store right now, from the evictor's bounce buffer, which a
//                       fill copies them from (I8; evictor.cpp steps 5-6)
//   bits 10-11 turns    turns of the clock hand still owed to a page that came back soon
//                       after its eviction (its fill took the victim cache's copy or the
//                       evictor's bounce buffer): the hand passes it that many more times
//                       before it may claim it (evictor.cpp step 1, I9)
//   bits 16+  pin count
//
// Invariants (checked by pager_impl::check_invariants when the pager is quiescent, and by
// assertions on transitions in debug builds):
//   I1  absent ⇔ no page-table entry for the page in the region (filling: being installed).
//   I2  evict, flush and wpclear are mutually exclusive and only set on resident pages. (flush
//       is also the promoter's owner bit, claim_promote: it holds the lock the flushes hold.)
//   I3  a page with evict or flush set is never filled by a fault worker: faults on it set
//       wanted and wait for the owner.
//   I4  pinned (pin count > 0) and resident ⇒ never claimed by the evictor. (A read-only
//       region's refresh claims pinned pages too when their copy changed, claim_invalidate:
//       their bytes are the old watermark's; the pin count stays and the next access reads
//       the new copy, which the pin then keeps.)
//   I5  wp_sync: resident, not dirty, not owned ⇒ write-protected in the page tables.
//   I6  occupied == number of filling + resident pages, plus the victims of an eviction
//       batch that went absent before lend_victim_slots gave their slots back (those to
//       write), less those whose slots it gave back before they went absent (the clean ones;
//       evictor.cpp step 5, buffer_budget.hpp B1): equal outside step 5.
//   I7  kept only on absent and filling pages, and only while the store's bytes for the page
//       are the ones kept: set by the eviction that wrote or judged them (finish_eviction),
//       cleared when the page is installed or poisoned. The store's copy of a page changes
//       only by its eviction or by a flush, and both need the page resident. (And by
//       sparse_store::discard of a released range, to zeros the region never promised: a
//       resident page keeps its old bytes across a discard too, and a page the store no
//       longer has data for is zero-filled without looking at the cache. And, on a read-only
//       region, by the store's refresh() to a newer watermark: the refresh clears `kept` on
//       every page whose copy changed, forget_kept, before any fill can take the copy.)
//   I8  writing only while the eviction batch that set it is between its step 5 and the end
//       of its step 6, and only on a page that batch writes back: set when the page goes
//       absent (lend_for_write), kept through a fill and its install, cleared when the write
//       landed (write_landed) or failed (take_back_failed); none while quiescent. While it is
//       set, the store's copy of the page is older than the page: a fill takes the bytes from
//       the evictor's bounce buffer (evictor::copy_from_write_back), never from the store,
//       the victim cache or the zero page; a flush does not claim the page (its write could
//       land before the older one in flight: flush_claim::in_write_back); the evictor does not
//       claim it either (evictable).
//   I9  turns only on filling and resident pages: set by note_came_back on a filling page,
//       spent one per pass of the hand (spend_turn), zeroed by claim_evict and when a fill
//       installs nothing; the evictor claims no page that still has turns (evictable()
//       allows it; claim_victims and claim_neighbours pass such a page over).
//   I10 a read-only region kept read-only by write-protection (huge pages on a read-only open,
//       pager_core::ro_wp): every frame present in the region is write-protected by
//       userfaultfd, but for a huge fill between its move and its protect, before the page is
//       resident (fault_service::protect_installed), and a promotion's page between its move
//       (or back) and its protect, while the promoter owns it (promoter.cpp P4-P5); a page a
//       write was refused on is PROT_READ besides (refuse_write). A write into the region is
//       never let through by the pager: it is a write-protect fault, answered by the kernel's
//       SIGSEGV.
//
// Every change of a word is one of the named transitions of page_table below; each says which
// invariants it keeps and what its caller must do around it (the page-table operation that
// makes I1/I5 true, the buffer slot of I6, the wake-up that `wanted` asks for). All of them
// read with acquire and swap with acq_rel (acquire on failure), so the bytes a transition's
// owner wrote before it are visible to whoever sees its result.
#pragma once

#include <atomic>
#include <cassert>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <thread>

#include "pager/os/memory.hpp"

namespace pheap::paging {

namespace ps {  // page state
inline constexpr std::uint32_t kind_mask = 0x3;
inline constexpr std::uint32_t absent = 0;
inline constexpr std::uint32_t filling = 1;
inline constexpr std::uint32_t resident = 2;
inline constexpr std::uint32_t poisoned = 3;
inline constexpr std::uint32_t dirty = 1u << 2;
inline constexpr std::uint32_t evict = 1u << 3;
inline constexpr std::uint32_t flush = 1u << 4;
inline constexpr std::uint32_t wanted = 1u << 5;
inline constexpr std::uint32_t ref = 1u << 6;
inline constexpr std::uint32_t wpclear = 1u << 7;
inline constexpr std::uint32_t kept = 1u << 8;
inline constexpr std::uint32_t writing = 1u << 9;
inline constexpr std::uint32_t turns_shift = 10;
inline constexpr std::uint32_t turns_mask = 3u << turns_shift;
inline constexpr std::uint32_t max_turns = turns_mask >> turns_shift;
inline constexpr std::uint32_t owned = evict | flush | wpclear;
inline constexpr std::uint32_t pin_shift = 16;
inline constexpr std::uint32_t pin_one = 1u << pin_shift;
inline constexpr std::uint32_t pin_mask = 0xFFFFu << pin_shift;

constexpr std::uint32_t kind(std::uint32_t s) { return s & kind_mask; }
constexpr std::uint32_t pins(std::uint32_t s) { return s >> pin_shift; }
constexpr std::uint32_t turns(std::uint32_t s) { return (s & turns_mask) >> turns_shift; }
constexpr std::uint32_t with_kind(std::uint32_t s, std::uint32_t k) { return (s & ~kind_mask) | k; }
// The evictor may claim the page: resident, no owner (I2), not pinned (I4), its last
// eviction's write not in flight (I8).
constexpr bool evictable(std::uint32_t s) {
  return kind(s) == resident && !(s & (owned | writing)) && pins(s) == 0;
}
}  // namespace ps

// What a fault worker does about a missing-page fault (page_table::on_missing_fault).
enum class missing_fault {
  being_filled,  // another worker fills it; its UFFDIO_COPY wakes this fault
  poisoned,      // wake: the retry gets SIGBUS
  installed,     // resident since the fault was queued: wake it
  owner_wakes,   // a flush owns it; `wanted` is set and the owner wakes the fault (I3)
  evictor_wakes, // the evictor owns it (moved out, not let go yet); as owner_wakes
  absent,        // nobody has it: take a buffer slot, then claim_fill()
};

// What a flush does about a candidate page (page_table::claim_flush).
enum class flush_claim {
  claimed,        // resident → flush: copy it, write it, release
  skipped,        // nothing to write, or the evictor owns it (it writes the page; flush step 4)
  in_write_back,  // filled again while its eviction's write is in flight (I8): claim it after
};

// What a fault worker does about a write-protect fault (page_table::on_wp_fault).
enum class wp_fault {
  gone,         // not resident any more: wake, the retry faults as missing
  owner_wakes,  // evict/flush owns it; `wanted` is set and the owner wakes the fault (I3)
  in_progress,  // another worker is un-protecting it; its ioctl wakes the fault
  unprotect,    // claimed with dirty|ref|wpclear: write-unprotect, then release(wpclear)
};

// The words live in an anonymous mapping, not in the heap: a word of a page never touched is
// never written, so the mapping's untouched pages stay the kernel's zero page (ps::absent is
// 0) and the table costs memory for the heap's used pages only — 4 KiB per 1 024 pages of the
// region around them — not 4 bytes for every page of the capacity (64 MiB at 64 GiB).
class page_table {
 public:
  page_table() = default;
  explicit page_table(std::size_t pages) : map_(pages * sizeof(std::uint32_t), true) {
    static_assert(ps::absent == 0, "an untouched (zero) word must read as absent");
    static_assert(std::atomic_ref<std::uint32_t>::required_alignment <= alignof(std::uint32_t));
  }
  std::uint32_t load(std::size_t i) const noexcept { return word(i).load(std::memory_order_acquire); }

  // ---- fault workers ---------------------------------------------------------------------------
  // Classifies a missing fault on page i; on an owned page sets `wanted` (I3).
  missing_fault on_missing_fault(std::size_t i) noexcept {
    std::uint32_t s = load(i);
    for (;;) {
      switch (ps::kind(s)) {
        case ps::filling: return missing_fault::being_filled;
        case ps::poisoned: return missing_fault::poisoned;
        case ps::resident:
          if (!(s & (ps::evict | ps::flush))) return missing_fault::installed;
          if (cas(i, s, s | ps::wanted)) {
            return (s & ps::evict) ? missing_fault::evictor_wakes : missing_fault::owner_wakes;
          }
          continue;
        default: return missing_fault::absent;
      }
    }
  }

  // absent → filling, `kept` kept (I7: the filler may take the kept copy). The caller holds a
  // buffer slot for it (I6) and now owns the install (I1); false when the page was not absent
  // (the caller gives the slot back).
  bool claim_fill(std::size_t i) noexcept {
    std::uint32_t s = load(i);
    while (ps::kind(s) == ps::absent) {
      if (cas(i, s, ps::with_kind(s, ps::filling))) return true;
    }
    return false;
  }

  // filling → resident | extra, after the page-table entry was installed (I1); kept cleared (I7).
  void install(std::size_t i, std::uint32_t extra) noexcept {
    std::uint32_t s = load(i);
    assert(ps::kind(s) == ps::filling);
    while (!cas(i, s, (ps::with_kind(s, ps::resident) & ~ps::kept) | extra)) {
    }
  }

  // filling → absent: the fill installed nothing (I1); the caller releases its slot (I6) and
  // wakes the page (a fault that saw `filling` waits for an install that will not come).
  void abandon_fill(std::size_t i) noexcept { leave_filling(i, ps::absent); }

  // A filling page whose bytes came from the victim cache or from its eviction's write in
  // flight (I7, I8): it was evicted while still in use, and gets `turns` more passes of the
  // hand once installed (I9; install keeps them).
  void note_came_back(std::size_t i, std::uint32_t turns) noexcept {
    assert(turns <= ps::max_turns);
    std::uint32_t s = load(i);
    assert(ps::kind(s) == ps::filling);
    while (!cas(i, s, (s & ~ps::turns_mask) | (turns << ps::turns_shift))) {
    }
  }

  // filling → poisoned, after UFFDIO_POISON installed the poison marker; the caller releases
  // the slot (I6: a poisoned page holds no memory). kept cleared (I7).
  void mark_poisoned(std::size_t i) noexcept { leave_filling(i, ps::poisoned); }

  // A write-protect fault on page i (wp_sync). On an unowned resident page sets dirty before
  // the page becomes writable (I5) and wpclear, which keeps flush and evictor off the page
  // until the un-protect is done (I2); on an owned one sets `wanted` (I3).
  wp_fault on_wp_fault(std::size_t i) noexcept {
    std::uint32_t s = load(i);
    for (;;) {
      if (ps::kind(s) != ps::resident) return wp_fault::gone;
      if (s & (ps::evict | ps::flush)) {
        if (cas(i, s, s | ps::wanted)) return wp_fault::owner_wakes;
        continue;
      }
      if (s & ps::wpclear) return wp_fault::in_progress;
      if (cas(i, s, s | ps::dirty | ps::ref | ps::wpclear)) return wp_fault::unprotect;
    }
  }

  // ---- evictor ---------------------------------------------------------------------------------
  // wp_async: the page tables said page i was written, and the scan that said so has just
  // write-protected it again: the write is recorded here (dirty, so no flush or eviction
  // misses it) and counts as a reference (ref). Also on a `filling` page (a write fill is
  // mapped writable by its UFFDIO_COPY before install() runs; install keeps these bits). False
  // when the page is neither (the caller must then treat the write as unrecorded).
  bool note_written(std::size_t i) noexcept {
    std::uint32_t s = load(i);
    for (;;) {
      const std::uint32_t k = ps::kind(s);
      if (k != ps::resident && k != ps::filling) return false;
      if ((s & (ps::dirty | ps::ref)) == (ps::dirty | ps::ref)) return true;
      if (cas(i, s, s | ps::dirty | ps::ref)) return true;
    }
  }

  // Second chance: clears `ref` if the word is still `seen` (one attempt; losing a race only
  // means the page is looked at again on the next pass).
  void clear_ref(std::size_t i, std::uint32_t seen) noexcept { (void)cas(i, seen, seen & ~ps::ref); }
  // The hand passes a page with turns left: one fewer (I9), if the word is still `seen` (one
  // attempt, as clear_ref).
  void spend_turn(std::size_t i, std::uint32_t seen) noexcept {
    assert(ps::turns(seen) > 0);
    (void)cas(i, seen, seen - (1u << ps::turns_shift));
  }

  // An evictable page (resident, unowned: I2, unpinned: I4) → evict, ref cleared. `was` gets
  // the word before the claim (its dirty bit).
  bool claim_evict(std::size_t i, std::uint32_t& was) noexcept {
    std::uint32_t s = load(i);
    while (ps::evictable(s)) {
      if (cas(i, s, (s | ps::evict) & ~(ps::ref | ps::turns_mask))) {
        was = s;
        return true;
      }
    }
    return false;
  }

  // evict → absent, keeping only the pin count, once the page has left the region (I1: moved
  // out or dropped; its bytes are in the store). `kept`: ps::kept when the victim cache holds
  // those bytes (I7), else 0. Returns the word before: the caller wakes the page if it was
  // `wanted` (I3) and releases the slot (I6).
  std::uint32_t finish_eviction(std::size_t i, std::uint32_t kept) noexcept {
    std::uint32_t s = load(i);
    assert(s & ps::evict);
    assert(kept == 0 || kept == ps::kept);
    while (!cas(i, s, (s & ps::pin_mask) | ps::absent | kept)) {
    }
    return s;
  }

  // ---- a read-only region's refresh (pager_impl::invalidate, refresh.cpp) -----------------------
  // The store moved to a newer watermark and page i's copy changed: a resident page, unowned
  // (I2; a read-only region has no flush or wp_sync owner, and the caller holds the evictor's
  // batch lock, so no `evict` either) → evict, ref and turns cleared, pins kept (I4's
  // exception above). `was`: the word before. The caller drops the page from the region
  // (I1), then finish_eviction(i, 0) and releases the slot (I6). False when the page was not
  // resident or is owned.
  bool claim_invalidate(std::size_t i, std::uint32_t& was) noexcept {
    std::uint32_t s = load(i);
    while (ps::kind(s) == ps::resident && !(s & (ps::owned | ps::writing))) {
      if (cas(i, s, (s | ps::evict) & ~(ps::ref | ps::turns_mask))) {
        was = s;
        return true;
      }
    }
    return false;
  }
  // The store's copy of absent page i changed: a copy the victim cache kept is the old one
  // and must never be taken (I7). Clears `kept`; false when the page was not absent.
  bool forget_kept(std::size_t i) noexcept {
    std::uint32_t s = load(i);
    while (ps::kind(s) == ps::absent) {
      if (!(s & ps::kept)) return true;
      if (cas(i, s, s & ~ps::kept)) return true;
    }
    return false;
  }
  // poisoned → absent, pins kept, once the caller removed the poison marker from the region
  // (I1: no entry for the page): the next access reads the store again (a reader whose
  // watermark the writer released, errc::stale, reads its new watermark after a refresh).
  // The poisoned page held no slot (I6). False when the page was not poisoned.
  bool unpoison(std::size_t i) noexcept {
    std::uint32_t s = load(i);
    while (ps::kind(s) == ps::poisoned) {
      if (cas(i, s, ps::with_kind(s, ps::absent) & ~(ps::kept | ps::wanted))) return true;
    }
    return false;
  }

  // ---- write-back in flight (I8) -----------------------------------------------------------------
  // evict → absent|writing, keeping only the pin count, once the page has left the region and
  // its bytes are in the evictor's bounce buffer (evictor.cpp step 5): from here a fault fills
  // it from there instead of waiting for the write (I8). Returns the word before: the caller
  // wakes the page if it was `wanted` (I3).
  std::uint32_t lend_for_write(std::size_t i) noexcept {
    std::uint32_t s = load(i);
    assert((s & ps::evict) && ps::kind(s) == ps::resident);
    while (!cas(i, s, (s & ps::pin_mask) | ps::absent | ps::writing)) {
    }
    return s;
  }

  // The write landed: `writing` and `wanted` cleared in whatever state the faults left the
  // page; an absent one gets `kept` when the victim cache holds its bytes (I7: the store has
  // them now too). Returns the word before: the caller wakes the page if it was `wanted`.
  std::uint32_t write_landed(std::size_t i, std::uint32_t kept) noexcept {
    std::uint32_t s = load(i);
    for (;;) {
      assert(s & ps::writing);
      std::uint32_t t = s & ~(ps::writing | ps::wanted);
      if (ps::kind(s) == ps::absent) t |= kept;
      if (cas(i, s, t)) return s;
    }
  }

  // The write failed, so the page's newest bytes are in the region only (filled again) or in
  // the bounce buffer only (absent). Waits out a fill first (a fill of a `writing` page copies
  // from the bounce buffer, no I/O: I8). Then either marks a page filled again dirty, `writing`
  // and `wanted` cleared (false: the caller wakes it), or claims an absent one for its
  // reinstall, absent → filling with `writing`, `kept` and `wanted` cleared (true: the caller
  // takes a slot, copies the bytes in, installs the page dirty and wakes it).
  bool take_back_failed(std::size_t i) noexcept {
    std::uint32_t s = load(i);
    for (;;) {
      assert(s & ps::writing);
      if (ps::kind(s) == ps::filling) {
        wait_not_filling(i);
        s = load(i);
        continue;
      }
      if (ps::kind(s) == ps::absent) {
        const std::uint32_t gone = ps::writing | ps::kept | ps::wanted;
        if (cas(i, s, ps::with_kind(s, ps::filling) & ~gone)) return true;
        continue;
      }
      assert(ps::kind(s) == ps::resident);
      if (cas(i, s, (s & ~(ps::writing | ps::wanted)) | ps::dirty)) return false;
    }
  }

  // ---- flush -----------------------------------------------------------------------------------
  // A resident page → flush, dirty cleared (it is being taken for this epoch; a write after
  // the copy dirties it again). Waits out the passing states first: filling (its fill may have
  // woken a writer whose write precedes the flush) and wpclear (I2). Skipped when the page is
  // not resident, the evictor owns it (it writes the page itself; I2), or `dirty_only` and the
  // page is clean; in_write_back when its eviction's write is in flight (I8: the caller waits
  // for the batch, then asks again).
  flush_claim claim_flush(std::size_t i, bool dirty_only) noexcept {
    std::uint32_t s = load(i);
    for (;;) {
      if (ps::kind(s) == ps::filling) {
        wait_not_filling(i);
        s = load(i);
        continue;
      }
      if (ps::kind(s) != ps::resident || (s & ps::evict)) return flush_claim::skipped;
      if (s & ps::writing) return flush_claim::in_write_back;
      if (s & ps::wpclear) {
        std::this_thread::yield();
        s = load(i);
        continue;
      }
      assert(!(s & ps::flush));
      if (dirty_only && !(s & ps::dirty)) return flush_claim::skipped;
      if (cas(i, s, (s & ~ps::dirty) | ps::flush)) return flush_claim::claimed;
    }
  }

  // ---- the promoter (promoter.hpp), holding the lock of the flush bit's other owners ------
  // resident → flush, nothing else changed (dirty stays: the promotion writes nothing), for a
  // page no one owns (I2), not pinned (I4) and not in an eviction's write-back (I8). `was`:
  // the word before. Faults on the page set `wanted` and wait (I3); release() lets it go.
  bool claim_promote(std::size_t i, std::uint32_t& was) noexcept {
    std::uint32_t s = load(i);
    while (ps::evictable(s)) {
      if (cas(i, s, s | ps::flush)) {
        was = s;
        return true;
      }
    }
    return false;
  }

  // Waits until page i is not `filling` (a fill takes one store read).
  void wait_not_filling(std::size_t i) const noexcept {
    for (unsigned spins = 0; ps::kind(load(i)) == ps::filling; ++spins) {
      if (spins < 64) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    }
  }

  // ---- any owner -------------------------------------------------------------------------------
  // The owner lets go: clears `clear_bits` (its owner bit, I2) and `wanted`, sets `set_bits`
  // (dirty after a failed write-back). Returns the word before: the caller wakes the page if
  // it was `wanted` (I3).
  std::uint32_t release(std::size_t i, std::uint32_t clear_bits, std::uint32_t set_bits) noexcept {
    std::uint32_t s = load(i);
    assert(s & clear_bits);
    while (!cas(i, s, (s & ~(clear_bits | ps::wanted)) | set_bits)) {
    }
    return s;
  }

  // ---- pins (I4) -------------------------------------------------------------------------------
  // Adds one pin in any state; false when the count is at its maximum. `was`: the word before.
  bool add_pin(std::size_t i, std::uint32_t& was) noexcept {
    std::uint32_t s = load(i);
    for (;;) {
      if (ps::pins(s) == 0xFFFF) return false;
      if (cas(i, s, s + ps::pin_one)) break;
    }
    was = s;
    return true;
  }
  // Removes one pin; false when the page is not pinned. `was`: the word before.
  bool drop_pin(std::size_t i, std::uint32_t& was) noexcept {
    std::uint32_t s = load(i);
    for (;;) {
      if (ps::pins(s) == 0) return false;
      if (cas(i, s, s - ps::pin_one)) break;
    }
    was = s;
    return true;
  }

 private:
  std::atomic_ref<std::uint32_t> word(std::size_t i) const noexcept {
    return std::atomic_ref<std::uint32_t>(reinterpret_cast<std::uint32_t*>(map_.data())[i]);
  }
  bool cas(std::size_t i, std::uint32_t& expected, std::uint32_t desired) noexcept {
    return word(i).compare_exchange_weak(expected, desired, std::memory_order_acq_rel,
                                         std::memory_order_acquire);
  }
  // filling → `k`, the pin count kept; `kept` too only when going back to absent (the fill
  // changed nothing, I7); turns never (I9).
  void leave_filling(std::size_t i, std::uint32_t k) noexcept {
    std::uint32_t s = load(i);
    assert(ps::kind(s) == ps::filling);
    while (!cas(i, s, (k == ps::absent ? ps::with_kind(s, k) : ps::with_kind(s, k) & ~ps::kept) &
                          ~ps::turns_mask)) {
    }
  }

  anon_map map_;  // the words, std::uint32_t each, read and written through atomic_ref
};

// Calls fn(i, j) for each run pages[i..j) of consecutive page numbers in `pages` (sorted),
// at most `max_run` long: the unit of one ioctl over the region.
template <class Fn>
void for_each_run(const std::size_t* pages, std::size_t n, std::size_t max_run, Fn&& fn) {
  for (std::size_t i = 0; i < n;) {
    std::size_t j = i + 1;
    while (j < n && pages[j] == pages[j - 1] + 1 && j - i < max_run) ++j;
    fn(i, j);
    i = j;
  }
}

}  // namespace pheap::paging
