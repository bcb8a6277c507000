// metall/container/scoped_allocator.hpp (pheap's Metall compatibility layer) —
// metall::container::scoped_allocator_adaptor (Boost.Container's), for containers of
// containers with an explicit allocator.
#pragma once

#include <boost/container/scoped_allocator.hpp>

namespace metall::container {

template <class OuterAlloc, class... InnerAllocs>
using scoped_allocator_adaptor = boost::container::scoped_allocator_adaptor<OuterAlloc, InnerAllocs...>;

}  // namespace metall::container
