// metall/container/vector.hpp (pheap's Metall compatibility layer) — metall::container::vector (boost::container::vector).
//
// As Metall's alias, with one difference: the default allocator is
// pheap::container::default_allocator, the heap's allocator that nests (a scoped adaptor when
// the elements take an allocator themselves, pheap/container.hpp); an allocator given
// explicitly is used as it is.
#pragma once

#include <boost/container/vector.hpp>
#include <pheap/container.hpp>

#include <metall/metall.hpp>

namespace metall::container {

template <class T, class Allocator = pheap::container::default_allocator<T>>
using vector = boost::container::vector<T, Allocator>;

}  // namespace metall::container
