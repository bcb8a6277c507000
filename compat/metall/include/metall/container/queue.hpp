// metall/container/queue.hpp (pheap's Metall compatibility layer) — metall::container::queue (std::queue over metall::container::deque).
//
// As Metall's alias, with one difference: the default allocator is
// pheap::container::default_allocator, the heap's allocator that nests (a scoped adaptor when
// the elements take an allocator themselves, pheap/container.hpp); an allocator given
// explicitly is used as it is.
#pragma once

#include <queue>

#include <metall/container/deque.hpp>

namespace metall::container {

template <class T, class Container = deque<T>>
using queue = std::queue<T, Container>;

}  // namespace metall::container
