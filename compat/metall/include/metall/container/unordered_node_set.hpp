// metall/container/unordered_node_set.hpp (pheap's Metall compatibility layer):
// metall::container::unordered_node_set, Boost >= 1.82 (detail/newer_unordered.hpp).
#pragma once
#include <boost/version.hpp>
#if BOOST_VERSION < 108200
#error "metall/container/unordered_node_set.hpp needs Boost 1.82 or later"
#endif
#include <metall/container/detail/newer_unordered.hpp>
