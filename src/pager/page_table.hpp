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
//   bits 16+  pin count
//
// Invariants (checked by pager_impl::check_invariants when the pager is quiescent, and by
// assertions on transitions in debug builds):
//   I1  absent ⇔ no page-table entry for the page in the region (filling: being installed).
//   I2  evict, flush and wpclear are mutually exclusive and only set on resident pages.
//   I3  a page with evict or flush set is never filled by a fault worker: faults on it set
//       wanted and wait for the owner.
//   I4  pinned (pin count > 0) and resident ⇒ never claimed by the evictor.
//   I5  wp_sync: resident, not dirty, not owned ⇒ write-protected in the page tables.
//   I6  occupied == number of filling + resident pages.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

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
inline constexpr std::uint32_t owned = evict | flush | wpclear;
inline constexpr std::uint32_t pin_shift = 16;
inline constexpr std::uint32_t pin_one = 1u << pin_shift;
inline constexpr std::uint32_t pin_mask = 0xFFFFu << pin_shift;

constexpr std::uint32_t kind(std::uint32_t s) { return s & kind_mask; }
constexpr std::uint32_t pins(std::uint32_t s) { return s >> pin_shift; }
constexpr std::uint32_t with_kind(std::uint32_t s, std::uint32_t k) { return (s & ~kind_mask) | k; }
}  // namespace ps

class page_table {
 public:
  explicit page_table(std::size_t pages)
      : n_(pages), w_(std::make_unique<std::atomic<std::uint32_t>[]>(pages)) {
    for (std::size_t i = 0; i < pages; ++i) w_[i].store(ps::absent, std::memory_order_relaxed);
  }
  std::size_t size() const noexcept { return n_; }
  std::atomic<std::uint32_t>& operator[](std::size_t i) noexcept { return w_[i]; }
  const std::atomic<std::uint32_t>& operator[](std::size_t i) const noexcept { return w_[i]; }

  std::uint32_t load(std::size_t i) const noexcept { return w_[i].load(std::memory_order_acquire); }
  bool cas(std::size_t i, std::uint32_t& expected, std::uint32_t desired) noexcept {
    return w_[i].compare_exchange_weak(expected, desired, std::memory_order_acq_rel,
                                       std::memory_order_acquire);
  }

 private:
  std::size_t n_;
  std::unique_ptr<std::atomic<std::uint32_t>[]> w_;
};

}  // namespace pheap::paging
