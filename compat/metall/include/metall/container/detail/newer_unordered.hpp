// metall/container/detail/newer_unordered.hpp (pheap's Metall compatibility layer) — the
// Boost.Unordered containers newer than Debian 12's Boost 1.74, in namespace metall::container
// when the Boost in use has them: unordered_flat_map/set (1.81), unordered_node_map/set
// (1.82). Included by metall/container/unordered_{flat,node}_{map,set}.hpp, which refuse an
// older Boost. Default allocator: pheap::container::default_allocator (see vector.hpp).
// pheap's tests (Debian 12, Boost 1.74) compile this header but none of these aliases.
#pragma once

#include <functional>
#include <utility>

#include <boost/container_hash/hash.hpp>
#include <boost/version.hpp>
#include <pheap/container.hpp>

#include <metall/metall.hpp>

#if BOOST_VERSION >= 108100
#include <boost/unordered/unordered_flat_map.hpp>
#include <boost/unordered/unordered_flat_set.hpp>
#endif
#if BOOST_VERSION >= 108200
#include <boost/unordered/unordered_node_map.hpp>
#include <boost/unordered/unordered_node_set.hpp>
#endif

namespace metall::container::detail {
template <class Key, class T>
using map_allocator = pheap::container::default_allocator<std::pair<const Key, T>>;
}  // namespace metall::container::detail

namespace metall::container {

#if BOOST_VERSION >= 108100
template <class Key, class T, class Hash = boost::hash<Key>, class KeyEqual = std::equal_to<Key>,
          class Allocator = detail::map_allocator<Key, T>>
using unordered_flat_map = boost::unordered_flat_map<Key, T, Hash, KeyEqual, Allocator>;
template <class Key, class Hash = boost::hash<Key>, class KeyEqual = std::equal_to<Key>,
          class Allocator = pheap::container::default_allocator<Key>>
using unordered_flat_set = boost::unordered_flat_set<Key, Hash, KeyEqual, Allocator>;
#endif

#if BOOST_VERSION >= 108200
template <class Key, class T, class Hash = boost::hash<Key>, class KeyEqual = std::equal_to<Key>,
          class Allocator = detail::map_allocator<Key, T>>
using unordered_node_map = boost::unordered_node_map<Key, T, Hash, KeyEqual, Allocator>;
template <class Key, class Hash = boost::hash<Key>, class KeyEqual = std::equal_to<Key>,
          class Allocator = pheap::container::default_allocator<Key>>
using unordered_node_set = boost::unordered_node_set<Key, Hash, KeyEqual, Allocator>;
#endif

}  // namespace metall::container
