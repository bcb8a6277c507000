// src/pager/test_access.hpp — the white-box tests' way into a pager's internals (its
// invariant checker, the evictor's idle wait, where userfaultfd came from). Not for library
// code: the heap and the tools use only pheap/pager.hpp.
#pragma once

#include "pager/pager_impl.hpp"
#include "pheap/pager.hpp"

namespace pheap::paging {

struct test_access {
  static pager_impl& impl(pheap::pager& p) noexcept { return *p.impl_; }
};

}  // namespace pheap::paging
