// metall/container/priority_queue.hpp (pheap's Metall compatibility layer) — metall::container::priority_queue (std::priority_queue over metall::container::vector).
//
// As Metall's alias, with one difference: the default allocator is
// pheap::container::default_allocator, the heap's allocator that nests (a scoped adaptor when
// the elements take an allocator themselves, pheap/container.hpp); an allocator given
// explicitly is used as it is.
#pragma once

#include <functional>
#include <queue>

#include <metall/container/vector.hpp>

namespace metall::container {

template <class T, class Container = vector<T>, class Compare = std::less<typename Container::value_type>>
using priority_queue = std::priority_queue<T, Container, Compare>;

}  // namespace metall::container
