// src/pager/test_access.hpp — the white-box tests' way into a pager's internals (its
// invariant checker, the evictor's idle wait, where userfaultfd came from, and the actors'
// shared state and parts). Not for library code: the heap and the tools use only
// pheap/pager.hpp.
#pragma once

#include "pager/pager_impl.hpp"
#include "pheap/pager.hpp"

namespace pheap::paging {

struct test_access {
  static pager_impl& impl(pheap::pager& p) noexcept { return *p.impl_; }
  // What the actors share: the page table, the budget, the victim cache (pager_core.hpp).
  static pager_core& core(pheap::pager& p) noexcept { return p.impl_->core_; }
  static paging::evictor& evictor(pheap::pager& p) noexcept { return p.impl_->evictor_; }
  static fault_service& faults(pheap::pager& p) noexcept { return p.impl_->faults_; }
  // A zero-ahead fill's install (fault_workers.cpp install_huge, clean) of page p, claimed by
  // the caller, from `block` (a pool block holding the bytes the page is to have).
  static void install_huge_clean(pheap::pager& p, std::size_t page, std::byte* block) {
    p.impl_->faults_.install_huge(page, block, true);
  }
  // Queues pages [first, end) as a scan range (prefetch_stored's kind) without waking the
  // fault workers: asleep, they leave it for a fault to find.
  static void queue_scan_quietly(pheap::pager& p, std::size_t first, std::size_t end) {
    fault_service& f = p.impl_->faults_;
    std::lock_guard lk(f.pf_mu_);
    f.queue_range(first, end, fault_service::pf_kind::scan);
  }
  // One write-behind round now, on the calling thread (write_behind.cpp steps 1-4).
  static void write_behind_round(pheap::pager& p) { p.impl_->write_behind_.round(); }
  // One promoter round now, on the calling thread (promoter.cpp steps 1-3); pages promoted.
  static std::size_t promote_round(pheap::pager& p) { return p.impl_->promoter_.round(); }
};

}  // namespace pheap::paging
