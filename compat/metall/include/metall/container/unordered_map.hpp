// metall/container/unordered_map.hpp (pheap's Metall compatibility layer) — metall::container::unordered_map and unordered_multimap (Boost.Unordered).
//
// As Metall's alias, with one difference: the default allocator is
// pheap::container::default_allocator, the heap's allocator that nests (a scoped adaptor when
// the elements take an allocator themselves, pheap/container.hpp); an allocator given
// explicitly is used as it is.
#pragma once

#include <functional>
#include <utility>

#include <boost/unordered_map.hpp>
#include <pheap/container.hpp>

#include <metall/metall.hpp>

namespace metall::container {

template <class Key, class T, class Hash = std::hash<Key>, class KeyEqual = std::equal_to<Key>,
          class Allocator = pheap::container::default_allocator<std::pair<const Key, T>>>
using unordered_map = boost::unordered_map<Key, T, Hash, KeyEqual, Allocator>;
template <class Key, class T, class Hash = std::hash<Key>, class KeyEqual = std::equal_to<Key>,
          class Allocator = pheap::container::default_allocator<std::pair<const Key, T>>>
using unordered_multimap = boost::unordered_multimap<Key, T, Hash, KeyEqual, Allocator>;

}  // namespace metall::container
