// metall/utility/fallback_allocator_adaptor.hpp (pheap's Metall compatibility layer) — the
// fallback allocator under its older Metall spelling, metall::utility::fallback_allocator_adaptor.
#pragma once

#include <metall/container/fallback_allocator.hpp>

namespace metall::utility {

template <class StatefulAllocator>
using fallback_allocator_adaptor = metall::container::fallback_allocator_adaptor<StatefulAllocator>;

}  // namespace metall::utility
