// metall/container/unordered_flat_map.hpp (pheap's Metall compatibility layer):
// metall::container::unordered_flat_map, Boost >= 1.81 (detail/newer_unordered.hpp).
#pragma once
#include <boost/version.hpp>
#if BOOST_VERSION < 108100
#error "metall/container/unordered_flat_map.hpp needs Boost 1.81 or later"
#endif
#include <metall/container/detail/newer_unordered.hpp>
