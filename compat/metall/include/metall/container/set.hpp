// metall/container/set.hpp (pheap's Metall compatibility layer) — metall::container::set and multiset (Boost.Container).
//
// As Metall's alias, with one difference: the default allocator is
// pheap::container::default_allocator, the heap's allocator that nests (a scoped adaptor when
// the elements take an allocator themselves, pheap/container.hpp); an allocator given
// explicitly is used as it is.
#pragma once

#include <functional>

#include <boost/container/set.hpp>
#include <pheap/container.hpp>

#include <metall/metall.hpp>

namespace metall::container {

template <class T, class Compare = std::less<T>, class Allocator = pheap::container::default_allocator<T>>
using set = boost::container::set<T, Compare, Allocator>;
template <class T, class Compare = std::less<T>, class Allocator = pheap::container::default_allocator<T>>
using multiset = boost::container::multiset<T, Compare, Allocator>;

}  // namespace metall::container
