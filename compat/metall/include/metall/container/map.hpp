// metall/container/map.hpp (pheap's Metall compatibility layer) — metall::container::map and multimap (Boost.Container).
//
// As Metall's alias, with one difference: the default allocator is
// pheap::container::default_allocator, the heap's allocator that nests (a scoped adaptor when
// the elements take an allocator themselves, pheap/container.hpp); an allocator given
// explicitly is used as it is.
#pragma once

#include <functional>
#include <utility>

#include <boost/container/map.hpp>
#include <pheap/container.hpp>

#include <metall/metall.hpp>

namespace metall::container {

template <class Key, class T, class Compare = std::less<Key>,
          class Allocator = pheap::container::default_allocator<std::pair<const Key, T>>>
using map = boost::container::map<Key, T, Compare, Allocator>;
template <class Key, class T, class Compare = std::less<Key>,
          class Allocator = pheap::container::default_allocator<std::pair<const Key, T>>>
using multimap = boost::container::multimap<Key, T, Compare, Allocator>;

}  // namespace metall::container
