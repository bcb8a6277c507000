// metall/container/unordered_set.hpp (pheap's Metall compatibility layer) — metall::container::unordered_set and unordered_multiset (Boost.Unordered).
//
// As Metall's alias, with one difference: the default allocator is
// pheap::container::default_allocator, the heap's allocator that nests (a scoped adaptor when
// the elements take an allocator themselves, pheap/container.hpp); an allocator given
// explicitly is used as it is.
#pragma once

#include <functional>

#include <boost/unordered_set.hpp>
#include <pheap/container.hpp>

#include <metall/metall.hpp>

namespace metall::container {

template <class Key, class Hash = std::hash<Key>, class KeyEqual = std::equal_to<Key>,
          class Allocator = pheap::container::default_allocator<Key>>
using unordered_set = boost::unordered_set<Key, Hash, KeyEqual, Allocator>;
template <class Key, class Hash = std::hash<Key>, class KeyEqual = std::equal_to<Key>,
          class Allocator = pheap::container::default_allocator<Key>>
using unordered_multiset = boost::unordered_multiset<Key, Hash, KeyEqual, Allocator>;

}  // namespace metall::container
