// The page wake-ups every actor uses (pager_core.hpp): the UFFDIO_WAKE of a faulting range,
// and the futex words that faulting-thread fills sleep on (fault_workers.cpp).
#include "pager/pager_core.hpp"

#include <cstdio>

#include "pager/os/threads.hpp"

namespace pheap::paging {

void pager_core::wake_workers() const noexcept {
  os::wake_event_signal(wake_fd);
}

void pager_core::wake_page(std::size_t page) noexcept {
  (void)uffd_wake(uffd, page_addr(page), ps);
  wake_fill_sleepers(page);
}

void pager_core::wake_fill_sleepers(std::size_t page) noexcept {
  if (!thread_fill) return;
  std::atomic_thread_fence(std::memory_order_seq_cst);  // the page's change, then the count
  if (fill_sleepers_.load(std::memory_order_relaxed) == 0) return;
  std::atomic<std::uint32_t>& w = fill_wait_[page % kFillWaitWords];
  w.fetch_add(1, std::memory_order_release);
  os::futex_wake_all(w);
}

void pager_core::sleep_for_page(std::size_t page) noexcept {
  std::atomic<std::uint32_t>& w = fill_wait_[page % kFillWaitWords];
  fill_sleepers_.fetch_add(1, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);  // the count, then the page
  const std::uint32_t seen = w.load(std::memory_order_acquire);
  // Look again, as a new fault would (which also marks an owned page `wanted` again: an owner
  // that took it after the last owner let go wakes on release too).
  const missing_fault now = table.on_missing_fault(page);
  if (now == missing_fault::being_filled || now == missing_fault::owner_wakes ||
      now == missing_fault::evictor_wakes) {
    // A bound, not the expected wake-up: every way a wait ends wakes it, as a worker's faulting
    // thread has no bound at all in the kernel's queue.
    os::futex_wait(w, seen, 100'000'000);  // 100 ms
  }
  fill_sleepers_.fetch_sub(1, std::memory_order_relaxed);
}

void pager_core::count_every_page_written(const char* scan, const char* why) {
  std::fprintf(stderr, "pheap: pager %s: %s failed (%s): every resident page counts as dirty\n", name.c_str(),
               scan, why);
  for (std::size_t q = 0; q < npages; ++q) (void)table.note_written(q);
}

void pager_core::release_owned(std::size_t page, std::uint32_t clear_bits, std::uint32_t set_bits) {
  if (table.release(page, clear_bits, set_bits) & ps::wanted) wake_page(page);
}

}  // namespace pheap::paging
